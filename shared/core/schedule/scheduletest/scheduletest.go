// Package scheduletest is the conformance suite of schedule.Engine, which
// every engine passes (SQLite locally, EventBridge Scheduler on AWS),
// driven by a fake clock: no test sleeps.
package scheduletest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// Clock is a fake clock the engine under test reads.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Harness is an engine under test.
type Harness struct {
	Engine schedule.Engine
	// Due returns the firings the engine's timers deliver at the clock's
	// now (locally Timers.Due; on AWS what the fake Scheduler delivers).
	Due func(ctx context.Context) ([]schedule.Firing, error)
	// MinEvery is the shortest interval the engine supports; Lease how
	// long a claim holds a firing.
	MinEvery, Lease time.Duration
}

// Run runs the suite; newEngine returns an empty engine that reads clock.
func Run(t *testing.T, newEngine func(t *testing.T, clock *Clock) Harness) {
	for _, c := range []struct {
		name string
		test func(t *testing.T, s *suite)
	}{
		{"Validation", testValidation},
		{"CreateAndFire", testCreateAndFire},
		{"ConcurrentClaimers", testConcurrentClaimers},
		{"LeaseTakeover", testLeaseTakeover},
		{"PauseResume", testPauseResume},
		{"DeleteWhileRunning", testDeleteWhileRunning},
		{"OneShot", testOneShot},
		{"Trigger", testTrigger},
		{"Update", testUpdate},
		{"TimeZonesAndDST", testDST},
		{"CatchUpOne", testCatchUpOne},
		{"CatchUpSkip", testCatchUpSkip},
		{"DailyLimit", testDailyLimit},
		{"Ownership", testOwnership},
		{"Page", testPage},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := NewClock(time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC))
			h := newEngine(t, clock)
			c.test(t, &suite{Harness: h, clock: clock, ctx: t.Context(), tick: max(10*time.Second, h.MinEvery)})
		})
	}
}

type suite struct {
	Harness
	clock *Clock
	ctx   context.Context
	// tick is the interval of the suite's short jobs: 10 s, or the
	// engine's MinEvery when that is longer.
	tick time.Duration
}

const owner = "user:ada"

// job returns a valid job of owner firing every d.
func job(d time.Duration) schedule.Job {
	return schedule.Job{Owner: owner, Agent: "default", Message: "check in", Schedule: schedule.Schedule{Every: schedule.Duration(d)}}
}

func (s *suite) create(t *testing.T, j schedule.Job) schedule.Job {
	t.Helper()
	got, err := s.Engine.Create(s.ctx, j)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return got
}

func (s *suite) due(t *testing.T) []schedule.Firing {
	t.Helper()
	fs, err := s.Due(s.ctx)
	if err != nil {
		t.Fatalf("Due: %v", err)
	}
	return fs
}

func (s *suite) claim(t *testing.T, f schedule.Firing) schedule.Run {
	t.Helper()
	r, err := s.Engine.Claim(s.ctx, f)
	if err != nil {
		t.Fatalf("Claim(%v): %v", f, err)
	}
	return r
}

func (s *suite) finish(t *testing.T, f schedule.Firing) {
	t.Helper()
	if err := s.Engine.Finish(s.ctx, f, schedule.Result{Status: schedule.RunDone, Tokens: 7, Reply: "ok"}); err != nil {
		t.Fatalf("Finish(%v): %v", f, err)
	}
}

func (s *suite) get(t *testing.T, id string) schedule.Job {
	t.Helper()
	j, err := s.Engine.Get(s.ctx, owner, id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return j
}

// fireAll runs every firing due now (claim and finish) and returns them.
func (s *suite) fireAll(t *testing.T) []schedule.Run {
	t.Helper()
	var runs []schedule.Run
	for _, f := range s.due(t) {
		r := s.claim(t, f)
		if r.Status == schedule.RunRunning {
			s.finish(t, f)
		}
		runs = append(runs, r)
	}
	return runs
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}

func testValidation(t *testing.T, s *suite) {
	now := s.clock.Now()
	bad := map[string]func(j *schedule.Job){
		"no owner":          func(j *schedule.Job) { j.Owner = "" },
		"no agent":          func(j *schedule.Job) { j.Agent = "" },
		"no message":        func(j *schedule.Job) { j.Message = "  " },
		"huge message":      func(j *schedule.Job) { j.Message = string(make([]byte, schedule.MaxMessage+1)) },
		"no schedule":       func(j *schedule.Job) { j.Schedule = schedule.Schedule{} },
		"two schedules":     func(j *schedule.Job) { j.Schedule.Cron = "* * * * *" },
		"too short":         func(j *schedule.Job) { j.Schedule.Every = schedule.Duration(s.MinEvery - time.Millisecond) },
		"negative every":    func(j *schedule.Job) { j.Schedule.Every = -1 },
		"bad cron":          func(j *schedule.Job) { j.Schedule = schedule.Schedule{Cron: "61 * * * *"} },
		"six fields":        func(j *schedule.Job) { j.Schedule = schedule.Schedule{Cron: "0 0 * * * *"} },
		"bad zone":          func(j *schedule.Job) { j.Schedule = schedule.Schedule{Cron: "0 9 * * *", TZ: "Mars/Olympus"} },
		"zone without cron": func(j *schedule.Job) { j.Schedule.TZ = "Europe/Berlin" },
		"past at":           func(j *schedule.Job) { j.Schedule = schedule.Schedule{At: now.Add(-time.Second)} },
		"bad target":        func(j *schedule.Job) { j.Deliver = schedule.Target{Kind: "pigeon", To: "x"} },
		"bad chat":          func(j *schedule.Job) { j.Deliver = schedule.Target{Kind: "telegram", To: "abc"} },
		"bad webhook":       func(j *schedule.Job) { j.Deliver = schedule.Target{Kind: "webhook", To: "ftp://x"} },
		"negative limit":    func(j *schedule.Job) { j.Limits.RunsPerDay = -1 },
		"bad catch-up":      func(j *schedule.Job) { j.CatchUp = "all" },
		"control in name":   func(j *schedule.Job) { j.Name = "a\nb" },
	}
	for name, change := range bad {
		j := job(time.Hour)
		change(&j)
		if _, err := s.Engine.Create(s.ctx, j); !errors.Is(err, schedule.ErrInvalid) {
			t.Errorf("%s: Create error %v, want ErrInvalid", name, err)
		}
	}
	if js, err := s.Engine.List(s.ctx, owner); err != nil || len(js) != 0 {
		t.Errorf("List after refused creations = %v, %v; want none", js, err)
	}
}

func testCreateAndFire(t *testing.T, s *suite) {
	t0 := s.clock.Now()
	j := s.create(t, job(s.tick))
	if j.ID == "" || !j.Next.Equal(t0.Add(s.tick)) || !j.CreatedAt.Equal(t0) {
		t.Fatalf("created %+v; want an id, created now and next in one tick", j)
	}
	if got, err := s.Engine.Get(s.ctx, owner, j.ID); err != nil || got.Message != "check in" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	s.clock.Advance(s.tick / 2)
	if fs := s.due(t); len(fs) != 0 {
		t.Fatalf("Due before the firing = %v", fs)
	}
	s.clock.Advance(s.tick / 2)
	fs := s.due(t)
	want := []schedule.Firing{{JobID: j.ID, At: t0.Add(s.tick)}}
	if diff := cmp.Diff(want, fs); diff != "" {
		t.Fatalf("Due (-want +got):\n%s", diff)
	}
	r := s.claim(t, fs[0])
	if r.Status != schedule.RunRunning || r.Resumed || !r.At.Equal(want[0].At) {
		t.Fatalf("Claim = %+v, want running", r)
	}
	_, err := s.Engine.Claim(s.ctx, fs[0])
	wantErr(t, "second claim", err, schedule.ErrClaimed)
	if fs := s.due(t); len(fs) != 0 {
		t.Errorf("Due after the claim = %v", fs)
	}
	if err := s.Engine.Finish(s.ctx, fs[0], schedule.Result{Status: schedule.RunDone, Tokens: 42, Reply: "all good", Delivered: "telegram:1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Engine.Finish(s.ctx, fs[0], schedule.Result{Status: schedule.RunFailed}); err != nil {
		t.Errorf("second Finish: %v", err)
	}
	_, err = s.Engine.Claim(s.ctx, fs[0])
	wantErr(t, "claim after finish", err, schedule.ErrDone)
	runs, err := s.Engine.Runs(s.ctx, owner, j.ID, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs = %v, %v", runs, err)
	}
	got := runs[0]
	if got.Status != schedule.RunDone || got.Tokens != 42 || got.Reply != "all good" || got.Delivered != "telegram:1" || got.FinishedAt.IsZero() {
		t.Errorf("run = %+v; want done, 42 tokens, the reply and its target", got)
	}
	if next := s.get(t, j.ID).Next; !next.Equal(t0.Add(2 * s.tick)) {
		t.Errorf("next = %v, want %v", next, t0.Add(2*s.tick))
	}
}

func testConcurrentClaimers(t *testing.T, s *suite) {
	j := s.create(t, job(time.Minute))
	s.clock.Set(j.Next)
	f := schedule.Firing{JobID: j.ID, At: j.Next}
	const n = 8
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := s.Engine.Claim(s.ctx, f)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, schedule.ErrClaimed) && !errors.Is(err, schedule.ErrNotDue):
			t.Errorf("a losing claim: %v, want ErrClaimed", err)
		}
	}
	if won != 1 {
		t.Errorf("%d claims won, want exactly 1", won)
	}
}

func testLeaseTakeover(t *testing.T, s *suite) {
	j := s.create(t, job(time.Hour))
	s.clock.Set(j.Next)
	f := schedule.Firing{JobID: j.ID, At: j.Next}
	first := s.claim(t, f)
	s.clock.Advance(s.Lease - time.Millisecond)
	_, err := s.Engine.Claim(s.ctx, f)
	wantErr(t, "claim within the lease", err, schedule.ErrClaimed)
	s.clock.Advance(2 * time.Millisecond)
	again := s.claim(t, f)
	if !again.Resumed || again.Status != schedule.RunRunning || again.RunID() != first.RunID() {
		t.Errorf("claim after the lease = %+v; want the same run, resumed", again)
	}
	_, err = s.Engine.Claim(s.ctx, f)
	wantErr(t, "claim within the new lease", err, schedule.ErrClaimed)
	s.finish(t, f)
	if runs, _ := s.Engine.Runs(s.ctx, owner, j.ID, 10); len(runs) != 1 {
		t.Errorf("runs = %+v, want one", runs)
	}
}

func testPauseResume(t *testing.T, s *suite) {
	t0 := s.clock.Now()
	j := s.create(t, job(s.tick))
	p, err := s.Engine.SetPaused(s.ctx, owner, j.ID, true)
	if err != nil || !p.Paused {
		t.Fatalf("SetPaused = %+v, %v", p, err)
	}
	s.clock.Advance(3*s.tick + s.tick/2)
	if fs := s.due(t); len(fs) != 0 {
		t.Errorf("Due while paused = %v", fs)
	}
	_, err = s.Engine.Claim(s.ctx, schedule.Firing{JobID: j.ID, At: t0.Add(s.tick)})
	wantErr(t, "claim while paused", err, schedule.ErrNotDue)
	r, err := s.Engine.SetPaused(s.ctx, owner, j.ID, false)
	if err != nil || r.Paused {
		t.Fatalf("resume = %+v, %v", r, err)
	}
	if want := t0.Add(4 * s.tick); !r.Next.Equal(want) {
		t.Errorf("next after resume = %v, want %v (no catch-up of the pause)", r.Next, want)
	}
	if fs := s.due(t); len(fs) != 0 {
		t.Errorf("Due right after resume = %v", fs)
	}
	s.clock.Advance(s.tick / 2)
	if runs := s.fireAll(t); len(runs) != 1 || runs[0].Status != schedule.RunRunning {
		t.Errorf("fired after resume = %+v, want one run", runs)
	}
}

func testDeleteWhileRunning(t *testing.T, s *suite) {
	j := s.create(t, job(s.tick))
	s.clock.Set(j.Next)
	f := s.due(t)[0]
	s.claim(t, f)
	if err := s.Engine.Delete(s.ctx, owner, j.ID); err != nil {
		t.Fatal(err)
	}
	err := s.Engine.Finish(s.ctx, f, schedule.Result{Status: schedule.RunDone})
	if err != nil && !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Finish of a deleted job's run: %v", err)
	}
	for range 3 {
		s.clock.Advance(s.tick)
		if fs := s.due(t); len(fs) != 0 {
			t.Errorf("Due after delete = %v", fs)
		}
		_, err := s.Engine.Claim(s.ctx, schedule.Firing{JobID: j.ID, At: s.clock.Now()})
		wantErr(t, "claim after delete", err, schedule.ErrNotFound)
	}
	_, err = s.Engine.Get(s.ctx, owner, j.ID)
	wantErr(t, "Get after delete", err, schedule.ErrNotFound)
	wantErr(t, "second Delete", s.Engine.Delete(s.ctx, owner, j.ID), schedule.ErrNotFound)
}

func testOneShot(t *testing.T, s *suite) {
	at := s.clock.Now().Add(90 * time.Minute)
	j := job(0)
	j.Schedule = schedule.Schedule{At: at}
	j = s.create(t, j)
	if !j.Next.Equal(at) {
		t.Fatalf("next = %v, want %v", j.Next, at)
	}
	s.clock.Set(at.Add(time.Second))
	if runs := s.fireAll(t); len(runs) != 1 || !runs[0].At.Equal(at) {
		t.Fatalf("fired = %+v, want one run at %v", runs, at)
	}
	if got := s.get(t, j.ID); !got.Next.IsZero() {
		t.Errorf("next after the one-shot = %v, want none", got.Next)
	}
	s.clock.Advance(24 * time.Hour)
	if fs := s.due(t); len(fs) != 0 {
		t.Errorf("Due after the one-shot = %v", fs)
	}
}

func testTrigger(t *testing.T, s *suite) {
	j := s.create(t, job(time.Hour))
	if _, err := s.Engine.SetPaused(s.ctx, owner, j.ID, true); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Minute)
	r, err := s.Engine.Trigger(s.ctx, owner, j.ID)
	if err != nil || r.Status != schedule.RunRunning || !r.Manual || !r.At.Equal(s.clock.Now()) {
		t.Fatalf("Trigger = %+v, %v; want a manual run now", r, err)
	}
	if got := s.get(t, j.ID); !got.Next.Equal(j.Next) || !got.Paused {
		t.Errorf("job after Trigger = %+v; want next %v and still paused", got, j.Next)
	}
	_, err = s.Engine.Trigger(s.ctx, "user:bob", j.ID)
	wantErr(t, "Trigger by another owner", err, schedule.ErrNotFound)
}

func testUpdate(t *testing.T, s *suite) {
	j := s.create(t, job(time.Hour))
	s.clock.Advance(10 * time.Minute)
	j.Schedule = schedule.Schedule{Cron: "0 9 * * *", TZ: "Europe/Berlin"}
	j.Message = "good morning"
	u, err := s.Engine.Update(s.ctx, j)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, 1, 7, 8, 0, 0, 0, time.UTC); !u.Next.Equal(want) || u.Message != "good morning" {
		t.Errorf("updated = %+v; want next %v", u, want)
	}
	if got := s.get(t, j.ID); got.Message != "good morning" || !got.Next.Equal(u.Next) {
		t.Errorf("Get after Update = %+v", got)
	}
	bad := j
	bad.Message = ""
	_, err = s.Engine.Update(s.ctx, bad)
	wantErr(t, "invalid Update", err, schedule.ErrInvalid)
	other := j
	other.Owner = "user:bob"
	_, err = s.Engine.Update(s.ctx, other)
	wantErr(t, "Update by another owner", err, schedule.ErrNotFound)
	if got := s.get(t, j.ID); got.Message != "good morning" {
		t.Errorf("refused updates changed the job: %+v", got)
	}
}

// testDST fires cron jobs across the changes of the clocks.
func testDST(t *testing.T, s *suite) {
	utc := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	for _, c := range []struct {
		name, cron, tz, from string
		want                 []string
	}{
		{"Berlin spring forward skips the missing time", "30 2 * * *", "Europe/Berlin", "2025-03-29T00:00:00Z",
			[]string{"2025-03-29T01:30:00Z", "2025-03-31T00:30:00Z", "2025-04-01T00:30:00Z"}},
		{"Berlin fall back fires the repeated time once", "30 2 * * *", "Europe/Berlin", "2025-10-25T00:00:00Z",
			[]string{"2025-10-25T00:30:00Z", "2025-10-26T00:30:00Z", "2025-10-27T01:30:00Z"}},
		{"Berlin hourly over fall back", "0 * * * *", "Europe/Berlin", "2025-10-25T23:30:00Z",
			[]string{"2025-10-26T00:00:00Z", "2025-10-26T02:00:00Z", "2025-10-26T03:00:00Z"}},
		{"New York spring forward", "30 2 * * *", "America/New_York", "2025-03-08T12:00:00Z",
			[]string{"2025-03-10T06:30:00Z", "2025-03-11T06:30:00Z"}},
		{"New York fall back", "30 1 * * *", "America/New_York", "2025-11-01T12:00:00Z",
			[]string{"2025-11-02T05:30:00Z", "2025-11-03T06:30:00Z"}},
		{"weekdays at 9 in Tokyo", "0 9 * * 1-5", "Asia/Tokyo", "2025-01-03T12:00:00Z",
			[]string{"2025-01-06T00:00:00Z", "2025-01-07T00:00:00Z"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s.clock.Set(utc(c.from))
			j := job(0)
			j.Schedule = schedule.Schedule{Cron: c.cron, TZ: c.tz}
			j = s.create(t, j)
			var got []string
			for range c.want {
				s.clock.Set(j.Next)
				for _, r := range s.fireAll(t) {
					if r.JobID == j.ID {
						got = append(got, r.At.UTC().Format(time.RFC3339))
					}
				}
				j = s.get(t, j.ID)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("firings (-want +got):\n%s", diff)
			}
			if err := s.Engine.Delete(s.ctx, owner, j.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func testCatchUpOne(t *testing.T, s *suite) {
	t0 := s.clock.Now()
	j := s.create(t, job(s.tick))
	s.clock.Advance(5*s.tick + s.tick/2) // five firings missed
	runs := s.fireAll(t)
	if len(runs) != 1 || runs[0].Status != schedule.RunRunning || !runs[0].At.Equal(t0.Add(5*s.tick)) {
		t.Fatalf("after five missed firings: %+v; want one catch-up run of the latest", runs)
	}
	if runs := s.fireAll(t); len(runs) != 0 {
		t.Errorf("a second round of catch-up: %+v", runs)
	}
	if next := s.get(t, j.ID).Next; !next.Equal(t0.Add(6 * s.tick)) {
		t.Errorf("next = %v, want the first firing after now", next)
	}
	// A stale delivery of a coalesced firing does not run.
	_, err := s.Engine.Claim(s.ctx, schedule.Firing{JobID: j.ID, At: t0.Add(2 * s.tick)})
	wantErr(t, "claim of a coalesced firing", err, schedule.ErrNotDue)
}

func testCatchUpSkip(t *testing.T, s *suite) {
	t0 := s.clock.Now()
	j := job(s.tick)
	j.CatchUp = schedule.CatchUpSkip
	j = s.create(t, j)
	s.clock.Advance(5*s.tick + s.tick/2)
	runs := s.fireAll(t)
	if len(runs) != 1 || runs[0].Status != schedule.RunSkipped || runs[0].Reason == "" {
		t.Fatalf("after missed firings with skip: %+v; want one skipped record", runs)
	}
	s.clock.Set(t0.Add(6 * s.tick))
	if runs := s.fireAll(t); len(runs) != 1 || runs[0].Status != schedule.RunRunning {
		t.Errorf("the next firing on time: %+v; want it run", runs)
	}
}

func testDailyLimit(t *testing.T, s *suite) {
	s.clock.Set(time.Date(2025, 1, 6, 21, 30, 0, 0, time.UTC))
	j := job(time.Hour)
	j.Limits.RunsPerDay = 2
	j = s.create(t, j) // fires 22:30, 23:30, 00:30, …
	var got []string
	for range 4 {
		s.clock.Set(j.Next)
		for _, r := range s.fireAll(t) {
			got = append(got, fmt.Sprintf("%s %s", r.At.Format("15:04"), r.Status))
		}
		j = s.get(t, j.ID)
	}
	// Two runs on the 6th, two on the 7th, then the 7th is full.
	want := []string{"22:30 running", "23:30 running", "00:30 running", "01:30 running"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("firings (-want +got):\n%s", diff)
	}
	s.clock.Set(j.Next)
	if runs := s.fireAll(t); len(runs) != 1 || runs[0].Status != schedule.RunSkipped {
		t.Errorf("third firing of the day: %+v; want skipped", runs)
	}
	s.clock.Advance(time.Second)
	r, err := s.Engine.Trigger(s.ctx, owner, j.ID)
	if err != nil || r.Status != schedule.RunSkipped {
		t.Errorf("Trigger over the limit = %+v, %v; want skipped", r, err)
	}
}

func testOwnership(t *testing.T, s *suite) {
	j := s.create(t, job(time.Hour))
	const other = "user:bob"
	if _, err := s.Engine.Get(s.ctx, other, j.ID); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Get by another owner: %v, want ErrNotFound", err)
	}
	if js, err := s.Engine.List(s.ctx, other); err != nil || len(js) != 0 {
		t.Errorf("List by another owner = %v, %v; want none", js, err)
	}
	if _, err := s.Engine.Runs(s.ctx, other, j.ID, 10); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Runs by another owner: %v, want ErrNotFound", err)
	}
	if _, err := s.Engine.SetPaused(s.ctx, other, j.ID, true); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("SetPaused by another owner: %v, want ErrNotFound", err)
	}
	if err := s.Engine.Delete(s.ctx, other, j.ID); !errors.Is(err, schedule.ErrNotFound) {
		t.Errorf("Delete by another owner: %v, want ErrNotFound", err)
	}
	got := s.get(t, j.ID)
	if got.Paused || !got.Next.Equal(j.Next) {
		t.Errorf("the job after another owner's attempts = %+v", got)
	}
	mine, err := s.Engine.List(s.ctx, owner)
	if err != nil || len(mine) != 1 || mine[0].ID != j.ID {
		t.Errorf("List by the owner = %v, %v", mine, err)
	}
	// An id chosen by another owner's job is not reused across owners.
	dup := job(time.Hour)
	dup.ID, dup.Owner = j.ID, other
	if _, err := s.Engine.Create(s.ctx, dup); err == nil {
		t.Error("Create with another owner's job id succeeded")
	}
}

// Page walks the owner's jobs in List's order, a page at a time: nothing
// repeated or missed, ties of creation time ordered by id, a job deleted
// or made between pages neither shifting the pages nor lost, another
// owner's jobs never in them.
func testPage(t *testing.T, s *suite) {
	var made []string
	for i := range 12 {
		made = append(made, s.create(t, job(time.Hour)).ID)
		if i%3 == 2 { // three jobs per millisecond, then the clock moves
			s.clock.Advance(time.Second)
		}
	}
	other := job(time.Hour)
	other.Owner = "user:bob"
	s.create(t, other)
	all, err := s.Engine.List(s.ctx, owner)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var want []string
	for _, j := range all {
		want = append(want, j.ID)
	}
	if len(want) != len(made) {
		t.Fatalf("List = %d jobs, want %d", len(want), len(made))
	}

	var got []string
	var sizes []int
	cursor := ""
	for page := 0; ; page++ {
		if page > len(made) {
			t.Fatalf("no end after %d pages", page)
		}
		js, next, err := s.Engine.Page(s.ctx, owner, cursor, 5)
		if err != nil {
			t.Fatalf("Page(%q): %v", cursor, err)
		}
		sizes = append(sizes, len(js))
		for _, j := range js {
			got = append(got, j.ID)
		}
		if page == 0 {
			// Between pages: one of the next page's jobs is deleted, and
			// a job is made, which comes last.
			if err := s.Engine.Delete(s.ctx, owner, want[6]); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			want = append(want[:6], want[7:]...)
			s.clock.Advance(time.Second)
			want = append(want, s.create(t, job(time.Hour)).ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("jobs paged (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int{5, 5, 2}, sizes); d != "" {
		t.Errorf("page sizes (-want +got):\n%s", d)
	}
	// A page that fills exactly ends the list with no cursor after it.
	if js, next, err := s.Engine.Page(s.ctx, owner, "", len(want)); err != nil || len(js) != len(want) || next != "" {
		t.Errorf("Page of all %d: %d jobs, next %q, %v; want all, no next", len(want), len(js), next, err)
	}
	if js, next, err := s.Engine.Page(s.ctx, "user:nobody", "", 5); err != nil || len(js) != 0 || next != "" {
		t.Errorf("Page of an owner without jobs = %v, %q, %v", js, next, err)
	}
	for _, bad := range []struct {
		cursor string
		limit  int
	}{{"not-a-cursor!", 5}, {"bm9zbGFzaA", 5}, {"", 0}} {
		if _, _, err := s.Engine.Page(s.ctx, owner, bad.cursor, bad.limit); !errors.Is(err, schedule.ErrCursor) {
			t.Errorf("Page(%q, %d): %v, want ErrCursor", bad.cursor, bad.limit, err)
		}
	}
}
