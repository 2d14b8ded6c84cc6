package cloud

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
)

// Scheduled check-ins on AWS: jobs and runs in the table
// (dynamo.Schedule), one EventBridge Scheduler schedule per job in the
// stack's group (ebscheduler), whose deliveries the scheduler function
// claims and starts (Root.Jobs); the step function, where runs end,
// records and delivers their answers (schedule.Replier on the "cron"
// channel, cloud/turns): to webhooks, Telegram chats and, with WS_ENDPOINT, WebSocket
// users (apigw.CheckIns, over the index of connections the ws function
// keeps in the table).
//
//	SCHEDULE_GROUP        the schedule group of the jobs' schedules
//	SCHEDULER_ROLE_ARN    the role the schedules invoke their target as
//	SCHEDULER_TARGET_ARN  the scheduler function, the schedules' target (not
//	                      set in the scheduler function itself, which makes
//	                      no schedules and deletes only those left behind)
//	SCHEDULER_DEAD_LETTER_ARN  the queue of the deliveries the target did
//	                      not take after the retries (with SCHEDULER_TARGET_ARN)
//	SCHEDULER_ENDPOINT    EventBridge Scheduler endpoint override (tests)

// newSchedule builds the engine of jobs on the table and the stack's
// schedule group.
func newSchedule(db *dynamo.Store, awsCfg aws.Config, getenv func(string) string) (*dynamo.Schedule, *ebscheduler.Schedules, error) {
	client, err := awsapi.NewScheduler(awsCfg, getenv("SCHEDULER_ENDPOINT"))
	if err != nil {
		return nil, nil, fmt.Errorf("cloud: %w", err)
	}
	timers := &ebscheduler.Schedules{API: client, Group: getenv("SCHEDULE_GROUP"), Role: getenv("SCHEDULER_ROLE_ARN"), Target: getenv("SCHEDULER_TARGET_ARN"),
		DeadLetter: getenv("SCHEDULER_DEAD_LETTER_ARN")}
	return db.Schedule(timers, nil), timers, nil
}

// routeCheckIns adds the replier of check-in runs to r's router: it
// records their answers and delivers them to webhooks, Telegram chats
// (with the Telegram channel) and WebSocket users (with WS_ENDPOINT).
func (r *Root) routeCheckIns() error {
	replier, err := agentset.CheckIns(r.Config, r.Schedule, r.Log)
	if err != nil {
		return err
	}
	if r.Telegram != nil {
		replier.Deliver[schedule.DeliverTelegram] = schedule.Via(r.Telegram, telegram.ChannelName)
	}
	if r.Conns.API != nil {
		replier.Deliver[schedule.DeliverWS] = apigw.CheckIns(r.Conns, r.Store, r.Identity)
	}
	r.Router[schedule.Channel] = replier
	return nil
}

// Jobs returns the handler of the scheduler function's deliveries of
// jobs' firings.
func (r *Root) Jobs() *checkin.Jobs {
	return &checkin.Jobs{Engine: r.Schedule, Runner: &schedule.Runner{Engine: r.Schedule, Loop: r.Loop, Lane: r.Driver},
		Gone: r.timers.Remove, Log: r.Log}
}

var _ dynamo.ScheduleTimers = (*ebscheduler.Schedules)(nil)

// Scheduler returns the handler of the scheduler function, the target of
// EventBridge Scheduler. It takes three kinds of event:
//
//   - the delivery of a job's firing, {"job","scheduled_time"}, which the
//     schedule of each job (ebscheduler) sends, its scheduled time from
//     <aws.scheduler.scheduled-time>: the firing is claimed (a second
//     delivery of it starts nothing) and its run started through the
//     loop's driver (checkin.Jobs.Fire);
//   - {"run_now":{"owner","job"}} from `lambdaclaw cron run --stack`: the
//     owner's job fires now (checkin.Jobs.Trigger);
//   - a free-form check-in ({"agent","user","channel","text"}), which
//     becomes a run in that user's session whose replies go to the
//     channel (checkin.Handler).
func (r *Root) Scheduler() func(ctx context.Context, event json.RawMessage) (any, error) {
	checkIns, jobs := r.CheckIn(), r.Jobs()
	return Flushed(r, func(ctx context.Context, event json.RawMessage) (any, error) {
		var d struct {
			ebscheduler.Delivery
			RunNow *checkin.RunNow `json:"run_now"`
		}
		if err := json.Unmarshal(event, &d); err != nil {
			return nil, fmt.Errorf("scheduler: event: %w", err)
		}
		switch {
		case d.RunNow != nil:
			return jobs.Trigger(ctx, *d.RunNow)
		case d.Job != "":
			f, err := d.Firing()
			if err != nil {
				return nil, err
			}
			return jobs.Fire(ctx, f)
		}
		var ev checkin.Event
		if err := json.Unmarshal(event, &ev); err != nil {
			return nil, fmt.Errorf("scheduler: check-in: %w", err)
		}
		return checkIns.Handle(ctx, ev)
	})
}
