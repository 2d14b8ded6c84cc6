// Package ebscheduler keeps the timers of scheduled check-ins on AWS: one
// EventBridge Scheduler schedule per job, in the stack's schedule group,
// whose target is the scheduler function, with an input naming the job
// and the firing's scheduled time. The jobs themselves and the claims of
// their firings are in the table (dynamo.Schedule, which calls Schedules
// as its timers); the scheduler function turns a delivery (Delivery) into
// a claim.
package ebscheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// API is the part of the EventBridge Scheduler API the timers use
// (implemented by awsapi.Scheduler); its errors carry the service's codes
// (awsapi.Code).
type API interface {
	CreateSchedule(ctx context.Context, s awsapi.Schedule) error
	UpdateSchedule(ctx context.Context, s awsapi.Schedule) error
	DeleteSchedule(ctx context.Context, group, name string) error
}

// Schedules are the jobs' schedules in one schedule group.
type Schedules struct {
	API API
	// Group is the schedule group (SCHEDULE_GROUP); Role the role the
	// schedules invoke their target as (SCHEDULER_ROLE_ARN); Target the
	// ARN of the scheduler function (SCHEDULER_TARGET_ARN).
	Group, Role, Target string
	// DeadLetter is the ARN of the SQS queue that receives a delivery the
	// target did not take within the retry policy
	// (SCHEDULER_DEAD_LETTER_ARN); without one such a delivery is dropped.
	DeadLetter string
}

// The retry policy of every schedule's target: EventBridge Scheduler
// tries to deliver a firing (to invoke the scheduler function, which it
// does asynchronously) for at most RetryAge, at most RetryAttempts times
// after the first, then sends it to the dead-letter queue. A check-in more
// than an hour late is better reported than run.
const (
	RetryAttempts = 10
	RetryAge      = time.Hour
)

// names are what EventBridge Scheduler allows as a schedule's name.
var names = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9A-Za-z_.-]{1,64}$`) })

// Check refuses a job EventBridge Scheduler cannot keep: an id that is no
// schedule name, an interval under a minute or not of whole minutes, a
// cron expression restricting both day fields. The error wraps
// schedule.ErrInvalid.
func (s *Schedules) Check(j schedule.Job) error {
	if !names().MatchString(j.ID) {
		return fmt.Errorf("%w: job id %q: on AWS an id is 1 to 64 letters, digits, '-', '_' or '.'", schedule.ErrInvalid, j.ID)
	}
	_, _, err := Expression(j.Schedule)
	return err
}

// Set creates or replaces the job's schedule (create says which to try
// first; a schedule found missing is created, one found existing is
// replaced): its expression and time zone, enabled unless the job is
// paused, a one-shot deleted after it ran, no flexible window.
func (s *Schedules) Set(ctx context.Context, j schedule.Job, create bool) error {
	expr, tz, err := Expression(j.Schedule)
	if err != nil {
		return err
	}
	// No time zone (omitted) for rate(): EventBridge refuses an empty one.
	sc := awsapi.Schedule{Name: j.ID, GroupName: s.Group, ScheduleExpression: expr, ScheduleExpressionTimezone: tz,
		State: "ENABLED", ActionAfterCompletion: "NONE", Description: "lambdaclaw check-in of agent " + j.Agent,
		Target: awsapi.ScheduleTarget{Arn: s.Target, RoleArn: s.Role, Input: Input(j.ID),
			RetryPolicy: &awsapi.RetryPolicy{MaximumRetryAttempts: RetryAttempts, MaximumEventAgeInSeconds: int(RetryAge / time.Second)}}}
	sc.FlexibleTimeWindow.Mode = "OFF"
	if j.Paused {
		sc.State = "DISABLED"
	}
	if s.DeadLetter != "" {
		sc.Target.DeadLetterConfig = &awsapi.DeadLetterConfig{Arn: s.DeadLetter}
	}
	if !j.Schedule.At.IsZero() {
		sc.ActionAfterCompletion = "DELETE"
	}
	if j.Schedule.Every > 0 && !j.Schedule.Anchor.IsZero() {
		sc.StartDate = &awsapi.Time{Time: j.Schedule.Anchor.UTC()}
	}
	if create {
		if err = s.API.CreateSchedule(ctx, sc); awsapi.HasCode(err, "ConflictException") {
			err = s.API.UpdateSchedule(ctx, sc) // left by a delete that did not finish
		}
	} else if err = s.API.UpdateSchedule(ctx, sc); awsapi.HasCode(err, "ResourceNotFoundException") {
		err = s.API.CreateSchedule(ctx, sc) // a one-shot that ran, or a create that did not finish
	}
	if err != nil {
		return fmt.Errorf("ebscheduler: schedule %s: %w", j.ID, err)
	}
	return nil
}

// Remove deletes the job's schedule; one already gone (a one-shot that
// ran) is no error.
func (s *Schedules) Remove(ctx context.Context, id string) error {
	if err := s.API.DeleteSchedule(ctx, s.Group, id); err != nil && !awsapi.HasCode(err, "ResourceNotFoundException") {
		return fmt.Errorf("ebscheduler: delete schedule %s: %w", id, err)
	}
	return nil
}

// Delivery is the input a schedule sends the scheduler function: the job
// and the firing's scheduled time, which EventBridge Scheduler fills in
// from its context attribute <aws.scheduler.scheduled-time>.
type Delivery struct {
	Job           string `json:"job"`
	ScheduledTime string `json:"scheduled_time"`
}

// Input is the target input of job id's schedule. The context attribute
// is written as is: EventBridge Scheduler replaces only its literal text,
// not a JSON escape of its angle brackets.
func Input(id string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(Delivery{Job: id, ScheduledTime: "<aws.scheduler.scheduled-time>"})
	return strings.TrimSpace(b.String())
}

// Firing returns the firing the delivery names.
func (d Delivery) Firing() (schedule.Firing, error) {
	if d.Job == "" {
		return schedule.Firing{}, errors.New("ebscheduler: delivery names no job")
	}
	at, err := time.Parse(time.RFC3339, d.ScheduledTime)
	if err != nil {
		return schedule.Firing{}, fmt.Errorf("ebscheduler: delivery of %s: scheduled time %q: %w", d.Job, d.ScheduledTime, err)
	}
	return schedule.Firing{JobID: d.Job, At: at.UTC()}, nil
}
