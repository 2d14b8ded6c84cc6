package ebscheduler

import (
	"errors"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

func TestExpression(t *testing.T) {
	at := time.Date(2025, 3, 1, 9, 30, 15, 500e6, time.UTC)
	for _, c := range []struct {
		name     string
		s        schedule.Schedule
		expr, tz string
	}{
		{"a minute", schedule.Schedule{Every: schedule.Duration(time.Minute)}, "rate(1 minute)", ""},
		{"90 minutes", schedule.Schedule{Every: schedule.Duration(90 * time.Minute)}, "rate(90 minutes)", ""},
		{"daily at 9 in Berlin", schedule.Schedule{Cron: "0 9 * * *", TZ: "Europe/Berlin"}, "cron(0 9 * * ? *)", "Europe/Berlin"},
		{"weekdays, Sunday is 1", schedule.Schedule{Cron: "30 8 * * 1-5"}, "cron(30 8 ? * 2-6 *)", "UTC"},
		{"Sunday as 7 and 0", schedule.Schedule{Cron: "0 0 * * 0,6"}, "cron(0 0 ? * 1,7 *)", "UTC"},
		{"weekend by name", schedule.Schedule{Cron: "0 10 * * SAT,SUN"}, "cron(0 10 ? * 1,7 *)", "UTC"},
		{"steps as lists", schedule.Schedule{Cron: "*/15 9-17 * * *"}, "cron(0,15,30,45 9-17 * * ? *)", "UTC"},
		{"first of the quarter", schedule.Schedule{Cron: "0 6 1 1,4,7,10 *"}, "cron(0 6 1 1,4,7,10 ? *)", "UTC"},
		{"descriptor", schedule.Schedule{Cron: "@daily"}, "cron(0 0 * * ? *)", "UTC"},
		{"every minute", schedule.Schedule{Cron: "* * * * *"}, "cron(* * * * ? *)", "UTC"},
		{"one-shot to the second", schedule.Schedule{At: at}, "at(2025-03-01T09:30:15)", "UTC"},
	} {
		t.Run(c.name, func(t *testing.T) {
			expr, tz, err := Expression(c.s)
			if err != nil || expr != c.expr || tz != c.tz {
				t.Errorf("Expression = %q, %q, %v; want %q, %q", expr, tz, err, c.expr, c.tz)
			}
		})
	}
	for name, s := range map[string]schedule.Schedule{
		"under a minute":    {Every: schedule.Duration(30 * time.Second)},
		"not whole minutes": {Every: schedule.Duration(90 * time.Second)},
		"both day fields":   {Cron: "0 9 13 * 5"},
		"@every is no cron": {Cron: "@every 5m"},
		"nothing":           {},
	} {
		if _, _, err := Expression(s); !errors.Is(err, schedule.ErrInvalid) {
			t.Errorf("%s: error %v, want ErrInvalid", name, err)
		}
	}
}
