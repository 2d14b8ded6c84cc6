package ebscheduler_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule/scheduletest"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

const (
	roleARN   = "arn:aws:iam::123456789012:role/Lambdaclaw-SchedulerRole"
	targetARN = "arn:aws:lambda:us-east-1:123456789012:function:Lambdaclaw-scheduler"
)

// engine returns the AWS engine on a fresh table in DynamoDB Local and a
// fake EventBridge Scheduler, both on clock.
func engine(t *testing.T, clock *scheduletest.Clock) (*dynamo.Schedule, *cloudtest.Scheduler) {
	table := cloudtest.NewTable(t)
	fake := cloudtest.NewScheduler(t, clock.Now)
	timers := &ebscheduler.Schedules{API: fake.Client(), Group: cloudtest.SchedulerGroup, Role: roleARN, Target: targetARN}
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
