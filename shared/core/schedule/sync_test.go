package schedule_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule/scheduletest"
)

// SyncHeartbeats keeps one job per configured heartbeat: an unchanged
// one keeps its timer, a changed one is updated, one no longer configured
// is deleted; people's jobs are not touched.
func TestSyncHeartbeats(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clock := scheduletest.NewClock(time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
	e := db.Schedule(clock.Now)
	ctx := context.Background()
	mine, err := e.Create(ctx, schedule.Job{Owner: "user:local", Agent: "a", Message: "m", Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	type beat struct {
		Agent, Every, Hours, Deliver string
		Next                         time.Time
	}
	state := func() []beat {
		jobs, err := e.List(ctx, schedule.HeartbeatOwner)
		if err != nil {
			t.Fatal(err)
		}
		var out []beat
		for _, j := range jobs {
			if j.ID != schedule.HeartbeatID(j.Agent) {
				t.Errorf("job %s of agent %s", j.ID, j.Agent)
			}
			out = append(out, beat{j.Agent, time.Duration(j.Schedule.Every).String(), j.Heartbeat.ActiveHours, j.Deliver.String(), j.Next})
		}
		return out
	}
	sync := func(m map[string]schedule.HeartbeatConfig) {
		t.Helper()
		if err := schedule.SyncHeartbeats(ctx, e, m); err != nil {
			t.Fatal(err)
		}
	}
	t0 := clock.Now()
	sync(map[string]schedule.HeartbeatConfig{
		"a": {Every: 30 * time.Minute},
		"b": {Every: time.Hour, Heartbeat: schedule.Heartbeat{ActiveHours: "08:00-22:00"}, Deliver: schedule.Target{Kind: "telegram", To: "1"}},
	})
	want := []beat{{"a", "30m0s", "", "none", t0.Add(30 * time.Minute)}, {"b", "1h0m0s", "08:00-22:00", "telegram:1", t0.Add(time.Hour)}}
	if diff := cmp.Diff(want, state()); diff != "" {
		t.Fatalf("after the first sync (-want +got):\n%s", diff)
	}

	clock.Advance(10 * time.Minute)
	sync(map[string]schedule.HeartbeatConfig{"a": {Every: 30 * time.Minute}, "b": {Every: 2 * time.Hour}})
	want = []beat{{"a", "30m0s", "", "none", t0.Add(30 * time.Minute)}, {"b", "2h0m0s", "", "none", clock.Now().Add(2 * time.Hour)}}
	if diff := cmp.Diff(want, state()); diff != "" {
		t.Errorf("after a change of b (-want +got):\n%s", diff)
	}

	sync(map[string]schedule.HeartbeatConfig{"b": {Every: 2 * time.Hour}})
	if got := state(); len(got) != 1 || got[0].Agent != "b" {
		t.Errorf("after a's heartbeat left the configuration: %+v", got)
	}
	if err := schedule.SyncHeartbeats(ctx, e, map[string]schedule.HeartbeatConfig{"b": {Every: time.Millisecond}}); err == nil {
		t.Error("a heartbeat every millisecond was accepted")
	}
	sync(nil)
	if got := state(); len(got) != 0 {
		t.Errorf("after every heartbeat left: %+v", got)
	}
	if _, err := e.Get(ctx, "user:local", mine.ID); err != nil {
		t.Errorf("a person's job after the syncs: %v", err)
	}
}
