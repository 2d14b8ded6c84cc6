package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule/scheduletest"
)

func TestScheduleConformance(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T, clock *scheduletest.Clock) scheduletest.Harness {
		db, err := Open(filepath.Join(t.TempDir(), "db.sqlite"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s := db.Schedule(clock.Now)
		return scheduletest.Harness{Engine: s, Due: func(ctx context.Context) ([]schedule.Firing, error) { return s.Due(ctx, 100) }, MinEvery: MinEvery, Lease: s.Lease}
	})
}

// A job keeps a bounded record of its runs: the latest 100, and every run
// of the last two days (which its daily limit counts).
func TestSchedulePrunesRuns(t *testing.T) {
	tests := []struct {
		name    string
		every   time.Duration
		firings int
		want    int
	}{
		{"hourly: the latest 100", time.Hour, 150, keepRuns},
		{"every minute: all of the last two days", time.Minute, 150, 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			db, err := Open(filepath.Join(t.TempDir(), "db.sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			clock := scheduletest.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
			s := db.Schedule(clock.Now)
			j, err := s.Create(ctx, schedule.Job{Owner: "user:a", Agent: "default", Message: "check in", Schedule: schedule.Schedule{Every: schedule.Duration(tt.every)}})
			if err != nil {
				t.Fatal(err)
			}
			for range tt.firings {
				clock.Advance(tt.every)
				due, err := s.Due(ctx, 10)
				if err != nil || len(due) != 1 {
					t.Fatalf("Due = %v, %v; want one firing", due, err)
				}
				if _, err := s.Claim(ctx, due[0]); err != nil {
					t.Fatal(err)
				}
				if err := s.Finish(ctx, due[0], schedule.Result{Status: schedule.RunDone}); err != nil {
					t.Fatal(err)
				}
			}
			runs, err := s.Runs(ctx, j.Owner, j.ID, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != tt.want {
				t.Errorf("%d runs kept; want %d", len(runs), tt.want)
			}
			if _, err := s.Claim(ctx, runs[len(runs)-1].Firing); !errors.Is(err, schedule.ErrDone) {
				t.Errorf("claiming the oldest kept firing again: %v; want ErrDone", err)
			}
		})
	}
}
