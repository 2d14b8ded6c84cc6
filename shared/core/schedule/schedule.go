// Package schedule is scheduled check-ins: jobs that run an agent turn at
// set times, the rules of their firing (every, cron with a time zone,
// at), and the Engine port that keeps their timers (SQLite locally,
// EventBridge Scheduler on AWS).
//
// A firing is named by its job and its scheduled time. It runs at most
// once: it is claimed atomically before it runs (Engine.Claim), a second
// claim of it is refused, and a claim whose run died is taken over after
// its lease, to resume the same agent run (RunID), not to start another.
package schedule

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on a job's fields.
const (
	MaxName       = 64
	MaxSessionKey = 128
	MaxMessage    = 16 << 10
	// MaxReply is how much of a run's reply its record keeps, in bytes.
	MaxReply = 4 << 10
)

// Errors of the port. Engines wrap them.
var (
	// ErrNotFound: no such job (or run) for this owner. A job of another
	// owner is not found either.
	ErrNotFound = errors.New("no such job")
	// ErrInvalid wraps every validation error of a job.
	ErrInvalid = errors.New("invalid job")
	// ErrCursor: a page's cursor or limit that Page cannot take.
	ErrCursor = errors.New("invalid page of jobs")
	// ErrClaimed: the firing is claimed by a run that is still within its
	// lease.
	ErrClaimed = errors.New("firing already claimed")
	// ErrDone: the firing has run (or was skipped) already.
	ErrDone = errors.New("firing already ran")
	// ErrNotDue: the firing is not the job's to run now: the job is
	// paused, not due yet, or has moved past it (it was coalesced).
	ErrNotDue = errors.New("firing not due")
)

// CatchUp says what happens to firings missed while nothing could run
// them (the local server was stopped).
type CatchUp string

// CatchUp policies.
const (
	// CatchUpOne runs one catch-up turn for any number of missed firings.
	CatchUpOne CatchUp = "one"
	// CatchUpSkip records missed firings as skipped and waits for the
	// next one.
	CatchUpSkip CatchUp = "skip"
)

// Grace is how late a firing may be claimed and still count as on time;
// a later one is missed (see CatchUp).
const Grace = time.Minute

// Job is a scheduled check-in: at each firing of Schedule, Message becomes
// the user input of one agent turn in the job's session.
type Job struct {
	ID string `json:"id"`
	// Owner is the principal the job belongs to ("key:<id>", "tg:<chat>",
	// "user:<name>"); only it sees and changes the job, and the runs are
	// in its sessions.
	Owner    string   `json:"owner"`
	Agent    string   `json:"agent"`
	Name     string   `json:"name,omitempty"`
	Schedule Schedule `json:"schedule"`
	Message  string   `json:"message"`
	// SessionKey names the owner's session the turns run in; empty means a
	// session of the job's own (SessionKey returns it).
	SessionKey string `json:"session_key,omitempty"`
	// SessionID, when set, is the exact session the turns run in,
	// whatever SessionKey says. Only trusted code sets it, never a
	// person's or a model's words: the schedule tool, to the session the
	// reminder was asked for in (of the same owner).
	SessionID string `json:"session_id,omitempty"`
	Deliver   Target `json:"deliver"`
	Limits    Limits `json:"limits,omitzero"`
	// CatchUp is CatchUpOne when empty.
	CatchUp CatchUp `json:"catch_up,omitempty"`
	// Heartbeat, when set, makes the job an agent's heartbeat: its turns'
	// message is the agent's HEARTBEAT.md (Message is unused), and its
	// rules apply (see Heartbeat).
	Heartbeat *Heartbeat `json:"heartbeat,omitempty"`

	// Set by the engine.
	Paused    bool      `json:"paused,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Next is the next firing; zero when there is none (a one-shot that
	// fired).
	Next time.Time `json:"next,omitzero"`
}

// Limits bound what a job spends.
type Limits struct {
	// RunsPerDay caps the firings run per day (the day of the schedule's
	// time zone, UTC for every and at); later ones are skipped. Zero: no
	// cap.
	RunsPerDay int `json:"runs_per_day,omitempty"`
	// TokensPerRun is the token budget of each run: prompt and
	// completion tokens of all its model calls (agent.Options.TokenBudget).
	// Zero: no budget.
	TokensPerRun int `json:"tokens_per_run,omitempty"`
}

// Session returns the session key of the job's turns.
func (j Job) Session() string {
	if j.SessionKey != "" {
		return j.SessionKey
	}
	return "job:" + j.ID
}

// catchUp returns the job's policy, CatchUpOne by default.
func (j Job) catchUp() CatchUp {
	if j.CatchUp == "" {
		return CatchUpOne
	}
	return j.CatchUp
}

// Validate checks the job as given by its creator at now; minEvery is the
// shortest interval the engine supports. The errors wrap ErrInvalid and
// name the field.
func (j Job) Validate(now time.Time, minEvery time.Duration) error {
	var problems []error
	bad := func(format string, args ...any) {
		problems = append(problems, fmt.Errorf(format, args...))
	}
	if j.Owner == "" {
		bad("owner is empty")
	} else if err := text("owner", j.Owner, 200); err != nil {
		problems = append(problems, err)
	}
	if j.Agent == "" {
		bad("agent is empty")
	} else if err := text("agent", j.Agent, 64); err != nil {
		problems = append(problems, err)
	}
	if err := text("name", j.Name, MaxName); err != nil {
		problems = append(problems, err)
	}
	if err := text("session", j.SessionKey, MaxSessionKey); err != nil {
		problems = append(problems, err)
	}
	if err := text("session id", j.SessionID, MaxSessionKey); err != nil {
		problems = append(problems, err)
	}
	if j.Heartbeat != nil {
		if err := j.Heartbeat.Validate(); err != nil {
			problems = append(problems, err)
		}
	}
	switch {
	case j.Heartbeat != nil && j.Message == "":
	case strings.TrimSpace(j.Message) == "":
		bad("message is empty")
	case len(j.Message) > MaxMessage:
		bad("message is %d bytes long; at most %d are allowed", len(j.Message), MaxMessage)
	case !utf8.ValidString(j.Message):
		bad("message is not valid UTF-8")
	}
	if err := j.Schedule.Validate(now, minEvery); err != nil {
		problems = append(problems, err)
	}
	if _, err := ParseTarget(j.Deliver.String()); err != nil {
		problems = append(problems, err)
	}
	if j.Limits.RunsPerDay < 0 {
		bad("runs per day is %d; want 0 (no cap) or more", j.Limits.RunsPerDay)
	}
	if j.Limits.TokensPerRun < 0 {
		bad("tokens per run is %d; want 0 (no cap) or more", j.Limits.TokensPerRun)
	}
	if j.CatchUp != "" && j.CatchUp != CatchUpOne && j.CatchUp != CatchUpSkip {
		bad("catch-up %q: want %q or %q", j.CatchUp, CatchUpOne, CatchUpSkip)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(problems...))
}

// text checks a short single-line field.
func text(field, s string, max int) error {
	switch {
	case utf8.RuneCountInString(s) > max:
		return fmt.Errorf("%s is longer than %d characters", field, max)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%s %q has control characters or invalid UTF-8", field, s)
	}
	return nil
}

// Target is where a run's reply is delivered besides the job's record.
type Target struct {
	// Kind is "" or "none", "telegram", "webhook" or "ws".
	Kind string `json:"kind,omitempty"`
	// To is the Telegram chat id, the webhook URL or the WebSocket user.
	To string `json:"to,omitempty"`
}

// Delivery kinds.
const (
	DeliverNone     = "none"
	DeliverTelegram = "telegram"
	DeliverWebhook  = "webhook"
	DeliverWS       = "ws"
)

// String is the target as ParseTarget reads it.
func (t Target) String() string {
	if t.Kind == "" || t.Kind == DeliverNone {
		return DeliverNone
	}
	return t.Kind + ":" + t.To
}

// ParseTarget reads "none", "telegram:<chat id>", "webhook:<http(s) URL>"
// or "ws:<user>". The empty string is "none". A webhook's address is
// checked against the web_fetch rules when it is delivered to, not here.
func ParseTarget(s string) (Target, error) {
	if s == "" || s == DeliverNone {
		return Target{}, nil
	}
	kind, to, ok := strings.Cut(s, ":")
	if !ok || to == "" {
		return Target{}, fmt.Errorf("delivery target %q: want none, telegram:<chat id>, webhook:<url> or ws:<user>", s)
	}
	switch kind {
	case DeliverTelegram:
		if _, err := strconv.ParseInt(to, 10, 64); err != nil {
			return Target{}, fmt.Errorf("delivery target %q: the chat id is not a number", s)
		}
	case DeliverWebhook:
		u, err := url.Parse(to)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return Target{}, fmt.Errorf("delivery target %q: want an http or https URL without credentials", s)
		}
		if len(to) > 2048 {
			return Target{}, fmt.Errorf("delivery target: the URL is longer than 2048 characters")
		}
	case DeliverWS:
		if err := text("delivery target's user", to, 128); err != nil {
			return Target{}, err
		}
	default:
		return Target{}, fmt.Errorf("delivery target %q: unknown kind %q; want none, telegram, webhook or ws", s, kind)
	}
	return Target{Kind: kind, To: to}, nil
}
