// Package scheduletool is the schedule tool: an agent creates, lists and
// deletes reminders for the person it talks with ("remind me tomorrow at
// 9"). A reminder is a schedule.Job of the calling session's owner
// (tool.Env.Owner) and agent; it fires into that same session
// (Job.SessionID, set here from the call's environment, never from the
// model's arguments) and its answer is delivered to the channel the
// reminder was asked on (a Telegram chat; elsewhere it stays in the
// session's history). List and delete see only the owner's reminders with
// this agent, and an owner holds at most Config.MaxJobsPerOwner jobs.
package scheduletool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Defaults and limits.
const (
	// DefaultMaxJobsPerOwner is the default of Config.MaxJobsPerOwner.
	DefaultMaxJobsPerOwner = 20
	// DefaultMinEvery is the default shortest interval of a repeating
	// reminder: each firing is a model call.
	DefaultMinEvery = time.Minute
	// MaxMessage is the longest reminder message, in bytes.
	MaxMessage = 4 << 10
	// telegramChannel is telegram.ChannelName (tools do not import
	// channels).
	telegramChannel = "tg"
)

// Config configures the tool.
type Config struct {
	// Engine keeps the jobs. Required.
	Engine schedule.Engine
	// MaxJobsPerOwner caps the jobs one owner has (DefaultMaxJobsPerOwner
	// when zero).
	MaxJobsPerOwner int
	// MinEvery is the shortest interval of a repeating reminder
	// (DefaultMinEvery when zero); the engine may ask for more.
	MinEvery time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// New returns the schedule tool.
func New(c Config) (tool.Tool, error) {
	if c.Engine == nil {
		return nil, errors.New("scheduletool: nil engine")
	}
	if c.MaxJobsPerOwner < 0 || c.MinEvery < 0 {
		return nil, errors.New("scheduletool: negative limits")
	}
	if c.MaxJobsPerOwner == 0 {
		c.MaxJobsPerOwner = DefaultMaxJobsPerOwner
	}
	if c.MinEvery == 0 {
		c.MinEvery = DefaultMinEvery
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return scheduleTool{c}, nil
}

type scheduleTool struct{ c Config }

type args struct {
	Action  string `json:"action"`
	Message string `json:"message"`
	At      string `json:"at"`
	In      string `json:"in"`
	Every   string `json:"every"`
	Cron    string `json:"cron"`
	TZ      string `json:"tz"`
	Name    string `json:"name"`
	ID      string `json:"id"`
}

var argNames = []string{"action", "message", "at", "in", "every", "cron", "tz", "name", "id"}

// Reminder is a reminder as the model sees it.
type Reminder struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Schedule string `json:"schedule"`
	// Next is the next firing, RFC 3339 in the reminder's time zone.
	Next    string `json:"next,omitempty"`
	Message string `json:"message"`
	Paused  bool   `json:"paused,omitempty"`
}

func (scheduleTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "schedule",
		Description: "Reminders and check-ins for the person you are talking with. " +
			"action \"create\": at the time given, message becomes a message to you in this same conversation, and your answer then is sent to the person " +
			"(so write message as an instruction to your future self, e.g. \"Remind them to call the dentist\"). " +
			"Give exactly one of: at (one time: RFC 3339 such as 2026-05-02T09:00:00+02:00, or a local time 2026-05-02T09:00 with tz), " +
			"in (one time, after a delay such as 90m or 24h), every (repeating, such as 24h; at least a minute) or cron (5 fields, such as \"0 9 * * 1-5\", with tz). " +
			"tz is an IANA time zone such as Europe/Berlin (the person's, when you know it; UTC otherwise). " +
			"action \"list\": the person's reminders with you, and the current time (call it first when you do not know the date). action \"delete\": remove the reminder with that id.",
		Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["create", "list", "delete"]},
    "message": {"type": "string", "maxLength": %d, "description": "create: what you are to do or say when it fires."},
    "at": {"type": "string", "description": "create, once: RFC 3339 time, or YYYY-MM-DDTHH:MM in tz."},
    "in": {"type": "string", "description": "create, once: a delay from now, such as 10m, 2h or 36h."},
    "every": {"type": "string", "description": "create, repeating: an interval such as 1h or 24h."},
    "cron": {"type": "string", "description": "create, repeating: minute hour day-of-month month day-of-week, read in tz."},
    "tz": {"type": "string", "description": "IANA time zone of at (local form) and cron."},
    "name": {"type": "string", "maxLength": %d, "description": "create: a short name for the list."},
    "id": {"type": "string", "description": "delete: the reminder's id, from create or list."}
  },
  "required": ["action"],
  "additionalProperties": false
}`, MaxMessage, schedule.MaxName)),
	}
}

// Policy: reminders act only for the person asking, in their own
// conversation, within a per-owner limit, and their turns run without
// anyone to approve (so a tool that needs approval is refused then): a
// write of the agent's own state like memory_store, which needs autonomy
// supervised but no approval.
func (scheduleTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.WriteOwn}
}

func (s scheduleTool) Call(ctx context.Context, env tool.Env, raw json.RawMessage) (string, error) {
	var in args
	if err := tool.DecodeArgs(raw, &in, argNames...); err != nil {
		return "", err
	}
	if err := whose(env); err != nil {
		return "", err
	}
	switch in.Action {
	case "create":
		return s.create(ctx, env, in)
	case "list":
		if err := only(in, "list"); err != nil {
			return "", err
		}
		return s.list(ctx, env)
	case "delete":
		if err := only(in, "delete", in.ID); err != nil {
			return "", err
		}
		return s.delete(ctx, env, in.ID)
	case "":
		return "", errors.New(`"action" is required: create, list or delete`)
	}
	return "", fmt.Errorf(`"action" is %q; want create, list or delete`, in.Action)
}

// whose refuses calls that have no person to remind.
func whose(env tool.Env) error {
	switch {
	case strings.TrimSpace(env.Agent) == "":
		return errors.New("reminders need to know which agent calls them, and this call names none")
	case env.Owner == "" || strings.HasPrefix(env.Owner, "system:"):
		return errors.New("reminders are made for the person you are talking with, and this conversation has none (it is a heartbeat or internal turn)")
	case env.SessionID == "" || strings.HasPrefix(env.SessionID, agent.EphemeralPrefix):
		return errors.New("this conversation is not kept (a stateless request): a reminder would have no conversation to come back to. Ask the person to use a session")
	}
	return nil
}

// only refuses the create arguments on list and delete.
func only(in args, action string, id ...string) error {
	if in.Message != "" || in.At != "" || in.In != "" || in.Every != "" || in.Cron != "" || in.TZ != "" || in.Name != "" {
		return fmt.Errorf("%s takes no message, time or name", action)
	}
	if len(id) == 0 && in.ID != "" {
		return fmt.Errorf("%s takes no id", action)
	}
	if len(id) > 0 && strings.TrimSpace(id[0]) == "" {
		return fmt.Errorf(`%s needs "id", the reminder's id from create or list`, action)
	}
	return nil
}

func (s scheduleTool) create(ctx context.Context, env tool.Env, in args) (string, error) {
	if in.ID != "" {
		return "", errors.New(`create takes no "id": the new reminder gets one`)
	}
	if strings.TrimSpace(in.Message) == "" {
		return "", errors.New(`create needs "message": what you are to do or say when the reminder fires`)
	}
	if len(in.Message) > MaxMessage {
		return "", fmt.Errorf(`"message" is %d bytes long; at most %d are allowed: keep a reminder short`, len(in.Message), MaxMessage)
	}
	now := s.c.Now().UTC()
	sched, err := s.when(in, now)
	if err != nil {
		return "", err
	}
	jobs, err := s.c.Engine.List(ctx, env.Owner)
	if err != nil {
		return "", fmt.Errorf("could not read the reminders: %w", err)
	}
	if len(jobs) >= s.c.MaxJobsPerOwner {
		return "", fmt.Errorf("the person has %d scheduled jobs, the most allowed (%d): delete one first (action list shows them)", len(jobs), s.c.MaxJobsPerOwner)
	}
	j := schedule.Job{
		Owner: env.Owner, Agent: env.Agent, Name: in.Name, Schedule: sched, Message: in.Message,
		SessionID: env.SessionID, Deliver: deliverTo(env),
	}
	j, err = s.c.Engine.Create(ctx, j)
	if err != nil {
		return "", fmt.Errorf("could not create the reminder: %w", err)
	}
	return toJSON(map[string]any{"created": reminder(j), "now": now.In(sched.Location()).Format(time.RFC3339)})
}

// when reads the schedule of a create.
func (s scheduleTool) when(in args, now time.Time) (schedule.Schedule, error) {
	n := 0
	for _, v := range []string{in.At, in.In, in.Every, in.Cron} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return schedule.Schedule{}, errors.New(`give exactly one of "at", "in", "every" and "cron"`)
	}
	loc := time.UTC
	if in.TZ != "" {
		if strings.EqualFold(in.TZ, "local") {
			return schedule.Schedule{}, fmt.Errorf(`"tz" %q: name an IANA time zone such as Europe/Berlin`, in.TZ)
		}
		l, err := time.LoadLocation(in.TZ)
		if err != nil {
			return schedule.Schedule{}, fmt.Errorf(`"tz" %q is not an IANA time zone such as Europe/Berlin or America/New_York`, in.TZ)
		}
		loc = l
	}
	var sc schedule.Schedule
	switch {
	case in.At != "":
		t, err := parseAt(in.At, loc)
		if err != nil {
			return sc, err
		}
		if !t.After(now) {
			return sc, fmt.Errorf(`"at" %s is in the past (it is now %s)`, t.Format(time.RFC3339), now.In(loc).Format(time.RFC3339))
		}
		sc.At = t
	case in.In != "":
		d, err := time.ParseDuration(in.In)
		if err != nil || d <= 0 {
			return sc, fmt.Errorf(`"in" %q: want a positive duration such as 10m, 2h or 36h`, in.In)
		}
		sc.At = now.Add(d)
	case in.Every != "":
		d, err := time.ParseDuration(in.Every)
		if err != nil || d <= 0 {
			return sc, fmt.Errorf(`"every" %q: want a positive duration such as 1h or 24h`, in.Every)
		}
		if d < s.c.MinEvery {
			return sc, fmt.Errorf(`"every" %s is shorter than %s, the shortest interval of a reminder`, d, s.c.MinEvery)
		}
		sc.Every = schedule.Duration(d)
	default:
		sc.Cron, sc.TZ = in.Cron, in.TZ
		if err := sc.Validate(now, s.c.MinEvery); err != nil {
			return sc, err
		}
		if first := sc.Next(now); !first.IsZero() {
			if second := sc.Next(first); !second.IsZero() && second.Sub(first) < s.c.MinEvery {
				return sc, fmt.Errorf(`"cron" %q fires more often than every %s, the shortest interval of a reminder`, in.Cron, s.c.MinEvery)
			}
		}
	}
	if in.TZ != "" && sc.Cron == "" && in.At == "" {
		return sc, errors.New(`"tz" goes with "at" or "cron" only`)
	}
	return sc, nil
}

// parseAt reads an RFC 3339 time, or a local time without an offset in
// loc.
func parseAt(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf(`"at" %q: want an RFC 3339 time such as 2026-05-02T09:00:00+02:00, or 2026-05-02T09:00 with "tz"`, s)
}

// deliverTo is where a reminder's answer goes: the Telegram chat the
// reminder was asked in; elsewhere nothing is pushed, and the answer is
// in the conversation's history.
func deliverTo(env tool.Env) schedule.Target {
	if env.Channel == telegramChannel {
		if t, err := schedule.ParseTarget(schedule.DeliverTelegram + ":" + env.ReplyTo); err == nil {
			return t
		}
	}
	return schedule.Target{}
}

func (s scheduleTool) list(ctx context.Context, env tool.Env) (string, error) {
	jobs, err := s.c.Engine.List(ctx, env.Owner)
	if err != nil {
		return "", fmt.Errorf("could not read the reminders: %w", err)
	}
	out := []Reminder{}
	for _, j := range jobs {
		if j.Agent == env.Agent {
			out = append(out, reminder(j))
		}
	}
	return toJSON(map[string]any{"reminders": out, "now": s.c.Now().UTC().Format(time.RFC3339)})
}

func (s scheduleTool) delete(ctx context.Context, env tool.Env, id string) (string, error) {
	j, err := s.c.Engine.Get(ctx, env.Owner, id)
	if err == nil && j.Agent != env.Agent {
		err = schedule.ErrNotFound // another agent's job of the same person
	}
	if err == nil {
		err = s.c.Engine.Delete(ctx, env.Owner, id)
	}
	if errors.Is(err, schedule.ErrNotFound) {
		return "", fmt.Errorf("there is no reminder with id %q (action list shows them)", id)
	}
	if err != nil {
		return "", fmt.Errorf("could not delete the reminder: %w", err)
	}
	return toJSON(map[string]any{"deleted": id})
}

// reminder is the model's view of a job.
func reminder(j schedule.Job) Reminder {
	r := Reminder{ID: j.ID, Name: j.Name, Schedule: j.Schedule.String(), Message: clip(j.Message, 200), Paused: j.Paused}
	if !j.Next.IsZero() {
		r.Next = j.Next.In(j.Schedule.Location()).Format(time.RFC3339)
	}
	return r
}

// clip shortens s to at most n bytes at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// toJSON renders v on one line without HTML escaping, for the model.
func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
