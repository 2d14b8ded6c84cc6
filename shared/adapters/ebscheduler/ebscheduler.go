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

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// API is the part of the EventBridge Scheduler client the timers use.
type API interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
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
	state := types.ScheduleStateEnabled
	if j.Paused {
		state = types.ScheduleStateDisabled
	}
	target := &types.Target{Arn: aws.String(s.Target), RoleArn: aws.String(s.Role), Input: aws.String(Input(j.ID)),
		RetryPolicy: &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(RetryAttempts), MaximumEventAgeInSeconds: aws.Int32(int32(RetryAge / time.Second))}}
	if s.DeadLetter != "" {
		target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(s.DeadLetter)}
	}
	window := &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}
	after := types.ActionAfterCompletionNone
	if !j.Schedule.At.IsZero() {
		after = types.ActionAfterCompletionDelete
	}
	var zone *string // none for rate(): EventBridge refuses an empty one
	if tz != "" {
		zone = aws.String(tz)
	}
	var start *time.Time
	if j.Schedule.Every > 0 && !j.Schedule.Anchor.IsZero() {
		start = aws.Time(j.Schedule.Anchor.UTC())
	}
	desc := aws.String("lambdaclaw check-in of agent " + j.Agent)
	createIt := func() error {
		_, err := s.API.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
			Name: aws.String(j.ID), GroupName: aws.String(s.Group), ScheduleExpression: aws.String(expr),
			ScheduleExpressionTimezone: zone, StartDate: start, State: state, Target: target,
			FlexibleTimeWindow: window, ActionAfterCompletion: after, Description: desc,
		})
		return err
	}
	updateIt := func() error {
		_, err := s.API.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
			Name: aws.String(j.ID), GroupName: aws.String(s.Group), ScheduleExpression: aws.String(expr),
			ScheduleExpressionTimezone: zone, StartDate: start, State: state, Target: target,
			FlexibleTimeWindow: window, ActionAfterCompletion: after, Description: desc,
		})
		return err
	}
	var conflict *types.ConflictException
	var missing *types.ResourceNotFoundException
	if create {
		if err = createIt(); errors.As(err, &conflict) {
			err = updateIt() // left by a delete that did not finish
		}
	} else if err = updateIt(); errors.As(err, &missing) {
		err = createIt() // a one-shot that ran, or a create that did not finish
	}
	if err != nil {
		return fmt.Errorf("ebscheduler: schedule %s: %w", j.ID, err)
	}
	return nil
}

// Remove deletes the job's schedule; one already gone (a one-shot that
// ran) is no error.
func (s *Schedules) Remove(ctx context.Context, id string) error {
	_, err := s.API.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(id), GroupName: aws.String(s.Group)})
	var missing *types.ResourceNotFoundException
	if err != nil && !errors.As(err, &missing) {
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
