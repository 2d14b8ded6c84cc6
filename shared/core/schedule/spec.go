package schedule

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule says when a job fires: exactly one of Every, Cron and At.
type Schedule struct {
	// Every fires at Anchor + k·Every.
	Every Duration `json:"every,omitzero"`
	// Anchor is the first firing of Every; the job's creation by default.
	Anchor time.Time `json:"anchor,omitzero"`
	// Cron is a 5-field expression (minute hour day-of-month month
	// day-of-week) read in TZ.
	Cron string `json:"cron,omitempty"`
	// TZ is an IANA time zone name; UTC when empty.
	TZ string `json:"tz,omitempty"`
	// At fires once.
	At time.Time `json:"at,omitzero"`
}

// Duration is a time.Duration written as "90s", "1h30m".
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = Duration(v)
	return err
}

// cronParser reads the 5 standard fields, and descriptors like @daily.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// String describes the schedule as the CLI takes it.
func (s Schedule) String() string {
	switch {
	case s.Every > 0:
		return "every " + time.Duration(s.Every).String()
	case s.Cron != "":
		return fmt.Sprintf("cron %q %s", s.Cron, s.Location())
	case !s.At.IsZero():
		return "at " + s.At.Format(time.RFC3339)
	}
	return "never"
}

// horizon is how many years ahead a cron expression must fire at least
// once: "0 0 31 2 *" (February 31st) never does.
const horizon = 5

// Validate checks the schedule at now: exactly one kind, an interval of at
// least minEvery, a valid cron expression and time zone that fires within
// horizon years (as Next computes firings, on the zone's clock), a one-shot
// in the future.
func (s Schedule) Validate(now time.Time, minEvery time.Duration) error {
	kinds := 0
	for _, set := range []bool{s.Every != 0, s.Cron != "", !s.At.IsZero()} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("schedule: give exactly one of every, cron and at")
	}
	if s.TZ != "" && s.Cron == "" {
		return fmt.Errorf("schedule: a time zone goes with a cron expression only")
	}
	switch {
	case s.Every != 0:
		if time.Duration(s.Every) < minEvery {
			return fmt.Errorf("schedule: every %s is shorter than %s, the shortest interval this engine supports", time.Duration(s.Every), minEvery)
		}
	case s.Cron != "":
		if strings.Contains(s.Cron, "TZ=") {
			return fmt.Errorf("schedule: cron %q: give the time zone apart (--tz), not in the expression", s.Cron)
		}
		if !strings.HasPrefix(s.Cron, "@") && len(strings.Fields(s.Cron)) != 5 {
			return fmt.Errorf("schedule: cron %q: want 5 fields (minute hour day-of-month month day-of-week)", s.Cron)
		}
		if _, err := cronParser.Parse(s.Cron); err != nil {
			return fmt.Errorf("schedule: cron %q: %w", s.Cron, err)
		}
		if strings.EqualFold(s.TZ, "local") {
			return fmt.Errorf("schedule: time zone %q: name an IANA zone such as Europe/Berlin", s.TZ)
		}
		if _, err := time.LoadLocation(s.TZ); err != nil {
			return fmt.Errorf("schedule: time zone %q: not an IANA time zone (such as Europe/Berlin): %w", s.TZ, err)
		}
		if next := s.Next(now); next.IsZero() || next.After(now.AddDate(horizon, 0, 0)) {
			return fmt.Errorf("schedule: cron %q never fires: no time in the %d years after %s matches it in %s",
				s.Cron, horizon, now.In(s.Location()).Format(time.DateOnly), s.Location())
		}
	default:
		if !s.At.After(now) {
			return fmt.Errorf("schedule: at %s is in the past", s.At.Format(time.RFC3339))
		}
	}
	return nil
}

// Location is the schedule's time zone; UTC when unset or unknown.
func (s Schedule) Location() *time.Location {
	if s.TZ == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(s.TZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Next returns the first firing strictly after t, or the zero time when
// there is none. Times are to the millisecond, in UTC.
//
// A cron schedule follows its time zone's clock (as EventBridge Scheduler
// does): a time that does not exist on the day clocks spring forward is
// skipped that day, and a time that occurs twice when they fall back fires
// once, at its first occurrence.
func (s Schedule) Next(t time.Time) time.Time {
	t = t.Truncate(time.Millisecond)
	switch {
	case s.Every > 0:
		every := time.Duration(s.Every)
		if t.Before(s.Anchor) {
			return s.Anchor.UTC()
		}
		k := t.Sub(s.Anchor)/every + 1
		return s.Anchor.Add(k * every).UTC()
	case s.Cron != "":
		sched, err := cronParser.Parse(s.Cron)
		if err != nil {
			return time.Time{}
		}
		loc := s.Location()
		x := t.In(loc)
		for range 4 { // at most one repeated wall time per fall-back
			x = sched.Next(x)
			if x.IsZero() || !repeated(x) {
				return x.UTC()
			}
		}
		return x.UTC()
	case !s.At.IsZero():
		if s.At.After(t) {
			return s.At.UTC().Truncate(time.Millisecond)
		}
	}
	return time.Time{}
}

// repeated reports whether the wall time of x occurred earlier the same
// night, before the clocks fell back.
func repeated(x time.Time) bool {
	_, off := x.Zone()
	_, before := x.Add(-3 * time.Hour).Zone()
	if before <= off {
		return false
	}
	first := x.Add(-time.Duration(before-off) * time.Second)
	_, firstOff := first.Zone()
	return firstOff == before && first.Format(time.DateTime) == x.Format(time.DateTime)
}

// maxScan bounds the firings Latest steps through (a minutely cron
// missed for two years).
const maxScan = 1 << 20

// Latest returns the last firing at or before now, starting from next
// (the job's next firing, at or before now), and how many firings before
// it were also due.
func (s Schedule) Latest(next, now time.Time) (latest time.Time, missed int) {
	if s.Every > 0 {
		every := time.Duration(s.Every)
		n := int(now.Sub(next) / every)
		return next.Add(time.Duration(n) * every), n
	}
	latest = next
	for range maxScan {
		n := s.Next(latest)
		if n.IsZero() || n.After(now) {
			break
		}
		latest = n
		missed++
	}
	return latest, missed
}

// Day returns the bounds of the day of t in the schedule's time zone
// (UTC for every and at): the day a per-day limit counts runs in.
func (s Schedule) Day(t time.Time) (start, end time.Time) {
	loc := time.UTC
	if s.Cron != "" {
		loc = s.Location()
	}
	l := t.In(loc)
	start = time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
	end = time.Date(l.Year(), l.Month(), l.Day()+1, 0, 0, 0, 0, loc)
	return start.UTC(), end.UTC()
}
