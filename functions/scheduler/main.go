// Command scheduler is the target of EventBridge Scheduler. It takes two
// kinds of event:
//
//   - the delivery of a job's firing, {"job","scheduled_time"}, which the
//     schedule of each job (ebscheduler) sends, its scheduled time from
//     <aws.scheduler.scheduled-time>: the firing is claimed (a second
//     delivery of it starts nothing) and its run started through the
//     loop's driver (checkin.Jobs);
//   - a free-form check-in ({"agent","user","channel","text"}), which
//     becomes a run in that user's session whose replies go to the
//     channel (checkin.Handler).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// Handler handles the function's events.
type Handler struct {
	CheckIns *checkin.Handler
	Jobs     *checkin.Jobs
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (*Handler, error) {
	root, err := cloud.New(ctx)
	if err != nil {
		return nil, err
	}
	return &Handler{CheckIns: root.CheckIn(), Jobs: root.Jobs()}, nil
}

// Handle runs one event: a job's firing when it names a job, else a
// check-in.
func (h *Handler) Handle(ctx context.Context, event json.RawMessage) (any, error) {
	var d ebscheduler.Delivery
	if err := json.Unmarshal(event, &d); err != nil {
		return nil, fmt.Errorf("scheduler: event: %w", err)
	}
	if d.Job != "" {
		f, err := d.Firing()
		if err != nil {
			return nil, err
		}
		return h.Jobs.Fire(ctx, f)
	}
	var ev checkin.Event
	if err := json.Unmarshal(event, &ev); err != nil {
		return nil, fmt.Errorf("scheduler: check-in: %w", err)
	}
	return h.CheckIns.Handle(ctx, ev)
}
