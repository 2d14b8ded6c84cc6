package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Stack outputs of the check-ins (infra/stack.go).
const (
	outScheduleGroup     = "ScheduleGroup"
	outSchedulerRole     = "SchedulerRoleArn"
	outSchedulerFunction = "SchedulerFunctionArn"
	outScheduleFailures  = "ScheduleFailuresArn"
)

// Endpoint overrides of EventBridge Scheduler and Lambda, for tests (as
// in the Lambda functions).
const (
	envSchedulerEndpoint = "SCHEDULER_ENDPOINT"
	envLambdaEndpoint    = "LAMBDA_ENDPOINT"
)

// jobsAt is where the cron commands act: the local database, or a
// deployed stack's table and schedule group (--stack).
type jobsAt struct {
	engine schedule.Engine
	// runNow fires the owner's job now and says what follows.
	runNow func(ctx context.Context, owner, id string) (string, error)
	close  func()
}

// openJobs opens the jobs of the stack st names, or of the local server
// configured by loadConfig. With forAgent set, a job of that agent is to
// be made: the agent must exist, and the local database is made if need
// be; without, it must exist.
func openJobs(ctx context.Context, st *stackFlags, loadConfig func() (*config.Config, error), forAgent string) (*jobsAt, error) {
	if st.remote() {
		return openStackJobs(ctx, st, forAgent)
	}
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	var db *sqlite.DB
	if forAgent != "" {
		if err := checkAgent(forAgent, func() ([]string, error) { return buildAgentNames(cfg) }); err != nil {
			return nil, err
		}
		db, err = sqlite.Open(cfg.DBPath())
	} else {
		db, err = openExistingDB(cfg)
	}
	if err != nil {
		return nil, err
	}
	jobs := db.Schedule(nil)
	return &jobsAt{engine: jobs, close: func() { db.Close() },
		runNow: func(ctx context.Context, owner, id string) (string, error) {
			r, err := jobs.Trigger(ctx, owner, id)
			if err != nil {
				return "", jobError(err, id, owner)
			}
			if r.Status == schedule.RunSkipped {
				return "", fmt.Errorf("job %s not fired: %s", id, r.Reason)
			}
			return fmt.Sprintf("fired %s at %s: a running server starts the turn within a second (`lambdaclaw cron runs %s` shows it)", id, r.At.Local().Format(time.DateTime), id), nil
		}}, nil
}

// openStackJobs opens the jobs of a deployed stack: the engine of the
// Lambda functions on its table and schedule group, so that a job made
// here is a schedule like one an agent makes. `cron run` asks the
// stack's scheduler function to fire the job, as its schedule would.
func openStackJobs(ctx context.Context, st *stackFlags, forAgent string) (*jobsAt, error) {
	d, err := st.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.need(outTable, outScheduleGroup, outSchedulerRole, outSchedulerFunction, outScheduleFailures); err != nil {
		return nil, err
	}
	if forAgent != "" {
		if err := checkAgent(forAgent, func() ([]string, error) { return d.agents(ctx) }); err != nil {
			return nil, err
		}
	}
	db, err := d.store(ctx)
	if err != nil {
		return nil, err
	}
	client, err := awsapi.NewScheduler(d.aws, getenv(envSchedulerEndpoint))
	if err != nil {
		return nil, err
	}
	timers := &ebscheduler.Schedules{API: client, Group: d.outputs[outScheduleGroup], Role: d.outputs[outSchedulerRole], Target: d.outputs[outSchedulerFunction],
		DeadLetter: d.outputs[outScheduleFailures]}
	fn, err := d.lambda()
	if err != nil {
		return nil, err
	}
	return &jobsAt{engine: db.Schedule(timers, nil), close: func() {},
		runNow: func(ctx context.Context, owner, id string) (string, error) {
			return invokeRunNow(ctx, fn, d, checkin.RunNow{Owner: owner, Job: id})
		}}, nil
}

// lambda is a Lambda client of d's account and Region (LAMBDA_ENDPOINT
// in tests).
func (d *deployment) lambda() (*awsapi.Lambda, error) {
	return awsapi.NewLambda(d.aws, getenv(envLambdaEndpoint))
}

// checkAgent checks that name is one of the agents list returns.
func checkAgent(name string, list func() ([]string, error)) error {
	known, err := list()
	if err != nil {
		return err
	}
	if !slices.Contains(known, name) {
		return fmt.Errorf("--agent: %w", noAgent(name, known))
	}
	return nil
}

// lambdaAPI is the Lambda call `cron run --stack` makes: a synchronous
// invocation.
type lambdaAPI interface {
	Invoke(ctx context.Context, function string, payload []byte) (*awsapi.Invocation, error)
}

// invokeRunNow asks the stack's scheduler function to fire a job now,
// and waits for its answer: the run started, or why not.
func invokeRunNow(ctx context.Context, fn lambdaAPI, d *deployment, r checkin.RunNow) (string, error) {
	payload, err := json.Marshal(map[string]checkin.RunNow{"run_now": r})
	if err != nil {
		return "", err
	}
	out, err := fn.Invoke(ctx, d.outputs[outSchedulerFunction], payload)
	if err != nil {
		return "", fmt.Errorf("%s: invoke the scheduler function: %w", d.where(), err)
	}
	if out.FunctionError != "" {
		var fe struct {
			Message string `json:"errorMessage"`
		}
		_ = json.Unmarshal(out.Payload, &fe)
		return "", fmt.Errorf("%s: the scheduler function failed: %s", d.where(), fe.Message)
	}
	var fired checkin.Fired
	if err := json.Unmarshal(out.Payload, &fired); err != nil {
		return "", fmt.Errorf("%s: the scheduler function's answer: %w", d.where(), err)
	}
	switch fired.Outcome {
	case "started", "resumed":
		return fmt.Sprintf("fired %s on %s: run %s started (`lambdaclaw cron runs %s --stack %s` shows it)", r.Job, d.where(), fired.RunID, r.Job, d.name), nil
	case "not found":
		return "", jobError(schedule.ErrNotFound, r.Job, r.Owner)
	default:
		return "", fmt.Errorf("job %s not fired: %s %s", r.Job, fired.Outcome, fired.Reason)
	}
}
