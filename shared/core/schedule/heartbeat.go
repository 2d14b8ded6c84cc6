package schedule

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Heartbeats: each agent configured with one has a job of HeartbeatOwner,
// id HeartbeatID(agent), that the server keeps in step with the
// configuration (SyncHeartbeats). At each firing:
//
//   - outside ActiveHours the firing is skipped (Decide);
//   - while the heartbeat's session is busy (a run queued or running), it
//     is skipped (Runner);
//   - a missing or empty HEARTBEAT.md in the agent's workspace skips it
//     without calling the model (Runner);
//   - otherwise the checklist is the message of one turn, and a reply
//     starting with HeartbeatOK is recorded but not delivered (Replier).
const (
	// HeartbeatOwner owns the heartbeat jobs: no person sees or changes
	// them.
	HeartbeatOwner = "system:heartbeat"
	// OperatorOwner owns the jobs the operator makes on the command line
	// (`lambdaclaw cron add`, locally or with --stack): the person who
	// runs the server, whose admin keys also see and change them in the
	// web console.
	OperatorOwner = "user:local"
	// HeartbeatFile is the workspace file that holds the checklist.
	HeartbeatFile = "HEARTBEAT.md"
	// HeartbeatOK starts a reply that says nothing needs attention.
	HeartbeatOK = "HEARTBEAT_OK"
)

// HeartbeatID is the id of an agent's heartbeat job.
func HeartbeatID(agent string) string { return "heartbeat-" + agent }

// Heartbeat holds the rules of a heartbeat job.
type Heartbeat struct {
	// ActiveHours is "HH:MM-HH:MM" in TZ: firings outside it are skipped.
	// An end before the start spans midnight ("22:00-06:00"); "24:00" is
	// the end of the day. Empty: always active.
	ActiveHours string `json:"active_hours,omitempty"`
	// TZ is the IANA time zone of ActiveHours; UTC when empty.
	TZ string `json:"tz,omitempty"`
}

var hoursRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([01][0-9]|2[0-4]):([0-5][0-9])-([01][0-9]|2[0-4]):([0-5][0-9])$`)
})

// window returns the active hours as minutes of the day.
func (h Heartbeat) window() (from, to int, err error) {
	m := hoursRE().FindStringSubmatch(strings.ReplaceAll(h.ActiveHours, " ", ""))
	if m == nil {
		return 0, 0, fmt.Errorf("heartbeat: active hours %q: want HH:MM-HH:MM, such as 08:00-22:00", h.ActiveHours)
	}
	var v [4]int
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1]) // two digits, by the expression
	}
	from, to = v[0]*60+v[1], v[2]*60+v[3]
	if from > 24*60 || to > 24*60 {
		return 0, 0, fmt.Errorf("heartbeat: active hours %q: a time is past 24:00", h.ActiveHours)
	}
	if from == to {
		return 0, 0, fmt.Errorf("heartbeat: active hours %q: the start and the end are the same; leave active_hours out to be always active", h.ActiveHours)
	}
	return from, to, nil
}

// Validate checks the active hours and the time zone.
func (h Heartbeat) Validate() error {
	if h.ActiveHours != "" {
		if _, _, err := h.window(); err != nil {
			return err
		}
	}
	if strings.EqualFold(h.TZ, "local") {
		return fmt.Errorf("heartbeat: time zone %q: name an IANA zone such as Europe/Berlin", h.TZ)
	}
	if _, err := time.LoadLocation(h.TZ); err != nil {
		return fmt.Errorf("heartbeat: time zone %q: not an IANA time zone (such as Europe/Berlin): %w", h.TZ, err)
	}
	return nil
}

func (h Heartbeat) zone() *time.Location {
	loc, err := time.LoadLocation(h.TZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Active reports whether t is within the active hours.
func (h Heartbeat) Active(t time.Time) bool {
	if h.ActiveHours == "" {
		return true
	}
	from, to, err := h.window()
	if err != nil {
		return false
	}
	l := t.In(h.zone())
	m := l.Hour()*60 + l.Minute()
	if from < to {
		return from <= m && m < to
	}
	return m >= from || m < to
}

// HeartbeatConfig is an agent's configured heartbeat.
type HeartbeatConfig struct {
	Every time.Duration
	Heartbeat
	Deliver Target
}

// heartbeatJob is the job of an agent's heartbeat.
func heartbeatJob(agent string, c HeartbeatConfig) Job {
	h := c.Heartbeat
	return Job{
		ID: HeartbeatID(agent), Owner: HeartbeatOwner, Agent: agent, Name: "heartbeat",
		Schedule: Schedule{Every: Duration(c.Every)}, Deliver: c.Deliver, Heartbeat: &h,
		// A heartbeat missed while the server was down is not caught up:
		// the next one comes soon enough.
		CatchUp: CatchUpSkip,
	}
}

// SyncHeartbeats makes the heartbeat jobs of e those of agents: it
// creates the missing ones, updates those whose settings changed (an
// unchanged one keeps its timer) and deletes those of agents without a
// heartbeat.
func SyncHeartbeats(ctx context.Context, e Engine, agents map[string]HeartbeatConfig) error {
	have, err := e.List(ctx, HeartbeatOwner)
	if err != nil {
		return fmt.Errorf("heartbeats: %w", err)
	}
	byID := map[string]Job{}
	for _, j := range have {
		if c, ok := agents[j.Agent]; !ok || j.ID != HeartbeatID(j.Agent) || c.Every <= 0 {
			if err := e.Delete(ctx, HeartbeatOwner, j.ID); err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("heartbeat of %s: %w", j.Agent, err)
			}
			continue
		}
		byID[j.ID] = j
	}
	names := make([]string, 0, len(agents))
	for n := range agents {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		c := agents[name]
		if c.Every <= 0 {
			continue
		}
		want := heartbeatJob(name, c)
		old, ok := byID[want.ID]
		switch {
		case !ok:
			_, err = e.Create(ctx, want)
		case old.Heartbeat == nil || *old.Heartbeat != *want.Heartbeat || old.Schedule.Every != want.Schedule.Every || old.Deliver != want.Deliver || old.CatchUp != want.CatchUp:
			_, err = e.Update(ctx, want)
		}
		if err != nil {
			return fmt.Errorf("heartbeat of %s: %w", name, err)
		}
	}
	return nil
}

// checklist returns the heartbeat checklist of a HEARTBEAT.md: its text,
// or "" when it holds nothing but blank lines, headings and HTML comments
// (a file left as a template asks for nothing).
func checklist(text string) string {
	rest := text
	var b strings.Builder
	for {
		i := strings.Index(rest, "<!--")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.Index(rest[i:], "-->")
		if j < 0 {
			break
		}
		rest = rest[i+j+3:]
	}
	for _, line := range strings.Split(b.String(), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			return strings.TrimSpace(text)
		}
	}
	return ""
}

// heartbeatPrompt is the message of a heartbeat turn.
func heartbeatPrompt(list string) string {
	return "Heartbeat: a periodic check-in nobody asked for just now. Go through the checklist from " + HeartbeatFile +
		" below. If nothing needs attention, reply with " + HeartbeatOK + " and nothing else; otherwise reply with what needs attention " +
		"(your reply is passed on to the person).\n\n" + list
}

// quiet reports whether a heartbeat's reply says nothing needs attention.
func quiet(reply string) bool {
	return strings.HasPrefix(strings.TrimSpace(reply), HeartbeatOK)
}
