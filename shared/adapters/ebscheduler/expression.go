package ebscheduler

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// MinEvery is the shortest interval EventBridge Scheduler fires: it
// invokes targets with one-minute precision, and rate() counts whole
// minutes.
const MinEvery = time.Minute

// parser reads the 5-field cron expressions (and descriptors such as
// @daily) the core accepts.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's mark of a field written as * or ?.
const starBit = 1 << 63

// Expression returns the EventBridge Scheduler expression of s and its
// time zone: rate(N minutes) for every (a whole number of minutes, at
// least one; no time zone, ""), cron(…) with six fields for a cron expression (its fields
// as explicit lists, day-of-week counted from 1 = Sunday), at(…) in UTC
// for a one-shot, to the second. A schedule EventBridge Scheduler cannot
// keep is an error wrapping schedule.ErrInvalid.
func Expression(s schedule.Schedule) (expr, tz string, err error) {
	switch {
	case s.Every != 0:
		d := time.Duration(s.Every)
		if d < MinEvery || d%time.Minute != 0 {
			return "", "", fmt.Errorf("%w: schedule: every %s: on AWS an interval is a whole number of minutes, at least %s (EventBridge Scheduler fires once a minute at most)", schedule.ErrInvalid, d, MinEvery)
		}
		n := int64(d / time.Minute)
		if n == 1 {
			return "rate(1 minute)", "", nil
		}
		return "rate(" + strconv.FormatInt(n, 10) + " minutes)", "", nil
	case s.Cron != "":
		expr, err := awsCron(s.Cron)
		if err != nil {
			return "", "", fmt.Errorf("%w: schedule: cron %q: %w", schedule.ErrInvalid, s.Cron, err)
		}
		return expr, cmp.Or(s.TZ, "UTC"), nil
	case !s.At.IsZero():
		return "at(" + s.At.UTC().Format("2006-01-02T15:04:05") + ")", "UTC", nil
	}
	return "", "", fmt.Errorf("%w: schedule: give exactly one of every, cron and at", schedule.ErrInvalid)
}

// awsCron translates a 5-field cron expression into EventBridge
// Scheduler's cron(minutes hours day-of-month month day-of-week year).
// Standard cron fires when either restricted day field matches; AWS takes
// one day field only (the other is ?), so an expression restricting both
// is refused.
func awsCron(expr string) (string, error) {
	parsed, err := parser.Parse(expr)
	if err != nil {
		return "", err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return "", fmt.Errorf("@every is no cron expression on AWS: give an interval instead")
	}
	dom, dow := "?", "?"
	domStar, dowStar := spec.Dom&starBit != 0, spec.Dow&starBit != 0
	switch {
	case !domStar && !dowStar:
		return "", fmt.Errorf("EventBridge Scheduler cannot restrict both the day of the month and the day of the week (standard cron fires on either): restrict one")
	case dowStar:
		dom = field(spec.Dom, 1, 31, 0)
	default:
		dow = field(spec.Dow, 0, 6, 1) // AWS counts 1 = Sunday
	}
	return fmt.Sprintf("cron(%s %s %s %s %s *)", field(spec.Minute, 0, 59, 0), field(spec.Hour, 0, 23, 0), dom, field(spec.Month, 1, 12, 0), dow), nil
}

// field writes the values lo…hi set in bits as * or a list of values and
// ranges, each value plus shift.
func field(b uint64, lo, hi, shift int) string {
	b &^= starBit
	var all uint64
	for v := lo; v <= hi; v++ {
		all |= 1 << v
	}
	if b&all == all {
		return "*"
	}
	var parts []string
	for v := lo; v <= hi; {
		if b&(1<<v) == 0 {
			v++
			continue
		}
		end := v
		for end+1 <= hi && b&(1<<(end+1)) != 0 {
			end++
		}
		switch {
		case end == v:
			parts = append(parts, strconv.Itoa(v+shift))
		case end == v+1:
			parts = append(parts, strconv.Itoa(v+shift), strconv.Itoa(end+shift))
		default:
			parts = append(parts, strconv.Itoa(v+shift)+"-"+strconv.Itoa(end+shift))
		}
		v = end + 1
	}
	return strings.Join(parts, ",")
}
