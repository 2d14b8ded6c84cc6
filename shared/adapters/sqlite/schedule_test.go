package sqlite

import (
	"context"
	"path/filepath"
	"testing"

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
