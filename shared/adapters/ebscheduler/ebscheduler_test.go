package ebscheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule/scheduletest"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

const (
	roleARN   = cloudtest.SchedulerRoleARN
	targetARN = cloudtest.SchedulerTargetARN
)

// engine returns the AWS engine on a fresh table in DynamoDB Local and a
// fake EventBridge Scheduler, both on clock.
func engine(t *testing.T, clock *scheduletest.Clock) (*dynamo.Schedule, *cloudtest.Scheduler) {
	table := cloudtest.NewTable(t)
	fake := cloudtest.NewScheduler(t, clock.Now)
	timers := &ebscheduler.Schedules{API: fake.Client(), Group: cloudtest.SchedulerGroup, Role: roleARN, Target: targetARN, DeadLetter: cloudtest.SchedulerDeadLetterARN}
	return table.Store.Schedule(timers, clock.Now), fake
}

// deliveries reads the fake's due deliveries as the scheduler function
// does.
func deliveries(t *testing.T, fake *cloudtest.Scheduler) ([]schedule.Firing, error) {
	var out []schedule.Firing
	for _, in := range fake.Due() {
		var d ebscheduler.Delivery
		if err := json.Unmarshal(in, &d); err != nil {
			t.Fatalf("delivery %s: %v", in, err)
		}
		f, err := d.Firing()
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// TestConformance runs the engines' suite on the AWS engine: its timers
// are the fake Scheduler's, whose deliveries are the due firings.
func TestConformance(t *testing.T) {
	scheduletest.Run(t, func(t *testing.T, clock *scheduletest.Clock) scheduletest.Harness {
		e, fake := engine(t, clock)
		return scheduletest.Harness{Engine: e, MinEvery: ebscheduler.MinEvery, Lease: e.Lease,
			Due: func(context.Context) ([]schedule.Firing, error) { return deliveries(t, fake) }}
	})
}

// TestSchedules checks the schedule each job gets, as the fake Scheduler
// received it through the real client, and what pausing, deleting and
// refusing a job do to it.
func TestSchedules(t *testing.T) {
	clock := scheduletest.NewClock(time.Date(2025, 1, 6, 9, 0, 20, 0, time.UTC))
	e, fake := engine(t, clock)
	ctx := t.Context()
	job := func(s schedule.Schedule) schedule.Job {
		j, err := e.Create(ctx, schedule.Job{Owner: "user:ada", Agent: "default", Message: "check in", Schedule: s})
		if err != nil {
			t.Fatalf("Create %v: %v", s, err)
		}
		return j
	}
	hourly := job(schedule.Schedule{Every: schedule.Duration(time.Hour)})
	daily := job(schedule.Schedule{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"})
	once := job(schedule.Schedule{At: time.Date(2025, 1, 7, 8, 0, 0, 0, time.UTC)})
	if want := time.Date(2025, 1, 6, 10, 1, 0, 0, time.UTC); !hourly.Next.Equal(want) {
		t.Errorf("hourly job's first firing %v, want %v (an hour after the next whole minute)", hourly.Next, want)
	}
	input := func(id string) string {
		return `{"job":"` + id + `","scheduled_time":"<aws.scheduler.scheduled-time>"}`
	}
	want := map[string]cloudtest.FakeSchedule{
		hourly.ID: {Name: hourly.ID, Expression: "rate(60 minutes)", Timezone: "UTC", StartDate: hourly.Next, ActionAfterCompletion: "NONE"},
		daily.ID:  {Name: daily.ID, Expression: "cron(0 9 ? * 2-6 *)", Timezone: "Europe/Berlin", ActionAfterCompletion: "NONE"},
		once.ID:   {Name: once.ID, Expression: "at(2025-01-07T08:00:00)", Timezone: "UTC", ActionAfterCompletion: "DELETE"},
	}
	for id, w := range want {
		w.Group, w.State, w.FlexibleMode, w.TargetArn, w.RoleArn, w.Input = cloudtest.SchedulerGroup, "ENABLED", "OFF", targetARN, roleARN, input(id)
		// Every target retries for an hour, then sends the delivery to
		// the dead-letter queue.
		w.RetryAttempts, w.RetryAgeSeconds, w.DeadLetterArn = 10, 3600, cloudtest.SchedulerDeadLetterARN
		want[id] = w
	}
	if diff := cmp.Diff(want, fake.Schedules(), cmpopts.IgnoreUnexported(cloudtest.FakeSchedule{})); diff != "" {
		t.Errorf("schedules (-want +got):\n%s", diff)
	}

	if _, err := e.SetPaused(ctx, "user:ada", daily.ID, true); err != nil {
		t.Fatal(err)
	}
	if s := fake.Schedules()[daily.ID]; s.State != "DISABLED" {
		t.Errorf("paused job's schedule is %s, want DISABLED", s.State)
	}
	if _, err := e.SetPaused(ctx, "user:ada", daily.ID, false); err != nil {
		t.Fatal(err)
	}
	if s := fake.Schedules()[daily.ID]; s.State != "ENABLED" {
		t.Errorf("resumed job's schedule is %s, want ENABLED", s.State)
	}
	if err := e.Delete(ctx, "user:ada", daily.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.Schedules()[daily.ID]; ok {
		t.Error("the deleted job's schedule is left")
	}

	// The one-shot fires once and its schedule goes; its job stays, done.
	clock.Set(once.Next.Add(30 * time.Second))
	fs, err := deliveries(t, fake)
	i := slices.IndexFunc(fs, func(f schedule.Firing) bool { return f.JobID == once.ID })
	if err != nil || i < 0 || !fs[i].At.Equal(once.Next) {
		t.Fatalf("deliveries = %v, %v; want the one-shot's", fs, err)
	}
	if _, err := e.Claim(ctx, fs[i]); err != nil {
		t.Fatal(err)
	}
	if _, ok := fake.Schedules()[once.ID]; ok {
		t.Error("the one-shot's schedule is left after it fired")
	}
	if j, err := e.Get(ctx, "user:ada", once.ID); err != nil || !j.Next.IsZero() {
		t.Errorf("one-shot after its firing = %+v, %v; want it kept with no next firing", j, err)
	}
	// Deleting it deletes a schedule that is gone already.
	if err := e.Delete(ctx, "user:ada", once.ID); err != nil {
		t.Errorf("Delete of a one-shot that ran: %v", err)
	}
}

// TestRefused checks that a job EventBridge Scheduler cannot keep, or
// whose schedule cannot be made, is refused with nothing left behind.
func TestRefused(t *testing.T) {
	clock := scheduletest.NewClock(time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC))
	e, fake := engine(t, clock)
	ctx := t.Context()
	base := schedule.Job{Owner: "user:ada", Agent: "default", Message: "check in"}
	for name, c := range map[string]struct {
		s    schedule.Schedule
		id   string
		want string
	}{
		"under a minute":  {s: schedule.Schedule{Every: schedule.Duration(30 * time.Second)}, want: "shorter than 1m0s"},
		"odd seconds":     {s: schedule.Schedule{Every: schedule.Duration(90 * time.Second)}, want: "whole number of minutes"},
		"both day fields": {s: schedule.Schedule{Cron: "0 9 13 * 5"}, want: "both the day of the month and the day of the week"},
		"bad name":        {s: schedule.Schedule{Every: schedule.Duration(time.Hour)}, id: "my job", want: "letters, digits"},
	} {
		j := base
		j.Schedule, j.ID = c.s, c.id
		_, err := e.Create(ctx, j)
		if !errors.Is(err, schedule.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Create error %v, want ErrInvalid saying %q", name, err, c.want)
		}
	}
	// A group that does not exist: ResourceNotFoundException, and the
	// job is taken back.
	other := &ebscheduler.Schedules{API: fake.Client(), Group: "no-such-group", Role: roleARN, Target: targetARN}
	e2 := cloudtest.NewTable(t).Store.Schedule(other, clock.Now)
	j := base
	j.Schedule = schedule.Schedule{Every: schedule.Duration(time.Hour)}
	_, err := e2.Create(ctx, j)
	if !awsapi.HasCode(err, "ResourceNotFoundException") {
		t.Errorf("Create in a missing group: %v, want ResourceNotFoundException", err)
	}
	for _, eng := range []*dynamo.Schedule{e, e2} {
		if js, err := eng.List(ctx, "user:ada"); err != nil || len(js) != 0 {
			t.Errorf("jobs after refusals = %v, %v; want none", js, err)
		}
	}
	if s := fake.Schedules(); len(s) != 0 {
		t.Errorf("schedules after refusals = %v; want none", s)
	}

	// A schedule left by a delete that did not finish (ConflictException)
	// is taken over by the job that gets its name.
	left := awsapi.Schedule{Name: "job_left", GroupName: cloudtest.SchedulerGroup, ScheduleExpression: "rate(5 minutes)",
		Target: awsapi.ScheduleTarget{Arn: targetARN, RoleArn: roleARN, Input: "{}"}}
	left.FlexibleTimeWindow.Mode = "OFF"
	if err := fake.Client().CreateSchedule(ctx, left); err != nil {
		t.Fatal(err)
	}
	if err := fake.Client().CreateSchedule(ctx, left); !awsapi.HasCode(err, "ConflictException") {
		t.Fatalf("creating a schedule twice: %v, want ConflictException", err)
	}
	bad := left
	bad.Name, bad.ScheduleExpression, bad.Target.Input = "job_bad", "rate(1 minutes)", ""
	if err := fake.Client().CreateSchedule(ctx, bad); !awsapi.HasCode(err, "ValidationException") {
		t.Errorf("rate(1 minutes): %v, want ValidationException", err)
	}
	j.ID = "job_left"
	if _, err := e.Create(ctx, j); err != nil {
		t.Fatalf("Create over a left schedule: %v", err)
	}
	if s := fake.Schedules()["job_left"]; s.Expression != "rate(60 minutes)" || !strings.Contains(s.Input, "job_left") {
		t.Errorf("the left schedule was not taken over: %+v", s)
	}
}

// TestDuplicateDelivery delivers one firing twice, as EventBridge
// Scheduler may: the second claim is refused.
func TestDuplicateDelivery(t *testing.T) {
	clock := scheduletest.NewClock(time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC))
	e, fake := engine(t, clock)
	j, err := e.Create(t.Context(), schedule.Job{Owner: "user:ada", Agent: "default", Message: "hi", Schedule: schedule.Schedule{Cron: "*/5 * * * *"}})
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(j.Next.Add(20 * time.Second))
	in := fake.Input(j.ID, j.Next, 0)
	for i, want := range []error{nil, schedule.ErrClaimed} {
		var d ebscheduler.Delivery
		if err := json.Unmarshal(in, &d); err != nil {
			t.Fatal(err)
		}
		f, err := d.Firing()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Claim(t.Context(), f); !errors.Is(err, want) && (want != nil || err != nil) {
			t.Errorf("delivery %d: claim error %v, want %v", i+1, err, want)
		}
	}
}
