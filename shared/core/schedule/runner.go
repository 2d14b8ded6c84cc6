package schedule

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Channel is the reply channel of check-in runs: their answers go to the
// job's record (Replier), and from there to its delivery target.
const Channel = "cron"

// Runner starts the agent turn of a claimed firing through the normal
// loop: the job's message is the user input of one run, in the owner's
// session of the job, replying on Channel. Locally the Poller calls it;
// on AWS the check-in function does, after Claim.
type Runner struct {
	Engine Engine
	Loop   *agent.Loop
	Lane   agent.Lane
}

// SessionID is the session of a job's turns: the job's SessionID when
// set, else the owner's session with the job's session key, apart from
// the owner's other channels.
func SessionID(j Job) string {
	if j.SessionID != "" {
		return j.SessionID
	}
	return agent.SessionID(j.Agent, "cron:"+j.Owner+"/"+j.Session())
}

// Start starts the run of a claimed firing (Run.Job set). Starting it
// again starts nothing new: the agent run's id is the firing's, so a run
// resumed after a crash continues where it stopped. A run that had ended
// without its end recorded is told to the loop's replier now, which
// delivers its answer and records it (Replier: a Telegram target's
// outbox keeps one copy by run id); a run that cannot start (the agent
// is gone, the session belongs to another owner) is recorded as failed.
func (r *Runner) Start(ctx context.Context, run Run) error {
	j := run.Job
	if j.ID == "" {
		return fmt.Errorf("start %s: the run carries no job", run.Firing)
	}
	in := agent.Input{
		RunID: run.RunID(), SessionID: SessionID(j), Agent: j.Agent, Owner: j.Owner,
		Messages: []chat.Message{{Role: chat.User, Content: j.Message}},
		Autonomy: tool.Supervised,
		// Nobody answers approvals on a timer: tools that need one are
		// refused and the model is told so.
		Interactive: false,
		Reply:       agent.Reply{Channel: Channel, To: run.Firing.String()},
	}
	in.Options.TokenBudget = j.Limits.TokensPerRun
	if j.Heartbeat != nil {
		msg, skip, err := r.heartbeat(ctx, run)
		if err != nil {
			return fmt.Errorf("start %s: %w", run.Firing, err)
		}
		if skip != "" {
			return r.Engine.Finish(ctx, run.Firing, Result{Status: RunSkipped, Reason: skip})
		}
		in.Messages[0].Content = msg
	}
	st, err := r.Loop.Enqueue(ctx, in)
	var inputErr *agent.InputError
	if errors.Is(err, agent.ErrUnknownAgent) || errors.Is(err, store.ErrForbidden) || errors.As(err, &inputErr) {
		return r.Engine.Finish(ctx, run.Firing, Result{Status: RunFailed, Reason: err.Error()})
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", run.Firing, err)
	}
	if st.Step == agent.StepDone {
		st, res, err := r.Loop.Outcome(ctx, st.RunID)
		if err != nil {
			return fmt.Errorf("start %s: %w", run.Firing, err)
		}
		if res == nil {
			res = &agent.Result{}
		}
		if r.Loop.Replier == nil {
			return r.Engine.Finish(ctx, run.Firing, result(st, *res, ""))
		}
		// The step that ended the run commits before it tells the reply
		// channel: a crash in between leaves the firing unfinished and its
		// answer undelivered. The channel (Replier) delivers it and
		// records the firing now.
		r.Loop.Replier.Finish(st, *res)
		return nil
	}
	if err := r.Lane.Kick(ctx, st.SessionID); err != nil {
		return fmt.Errorf("start %s: %w", run.Firing, err)
	}
	return nil
}

// heartbeat returns the message of a heartbeat's turn, or why the firing
// is skipped: the session is busy, or HEARTBEAT.md is missing or empty.
// A run started already (resumed after a restart) goes on with the message
// it was given.
func (r *Runner) heartbeat(ctx context.Context, run Run) (msg, skip string, err error) {
	j := run.Job
	if _, err := r.Loop.Store.GetRun(ctx, run.RunID()); err == nil {
		return HeartbeatFile, "", nil // enqueued already: Enqueue keeps its input
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", "", err
	}
	if next, err := r.Loop.Store.NextRun(ctx, SessionID(j)); err == nil {
		return "", "session busy: run " + next.ID + " is queued or running", nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", "", err
	}
	a, ok := r.Loop.Agents.Agent(j.Agent)
	if !ok {
		return "", fmt.Sprintf("no agent %q", j.Agent), nil
	}
	if a.Workspace == nil {
		return "", "the agent has no workspace, so no " + HeartbeatFile, nil
	}
	data, e, err := a.Workspace.ReadFile(ctx, HeartbeatFile, MaxMessage)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", HeartbeatFile + " is missing", nil
	case err != nil:
		return "", "", fmt.Errorf("read %s: %w", HeartbeatFile, err)
	case e.Size > MaxMessage:
		return "", fmt.Sprintf("%s is %d bytes long; at most %d are read", HeartbeatFile, e.Size, MaxMessage), nil
	}
	list := checklist(string(data))
	if list == "" {
		return "", HeartbeatFile + " is empty", nil
	}
	return heartbeatPrompt(list), "", nil
}

// result is the record of a run's end.
func result(st agent.RunState, res agent.Result, delivered string) Result {
	out := Result{Status: RunDone, Tokens: st.Usage.TotalTokens, Reply: res.Content, Delivered: delivered}
	if res.Error != "" || st.Failed() {
		out.Status, out.Reason = RunFailed, res.Error
	}
	return out
}

// Answer is a check-in's answer on its way to the job's target.
type Answer struct {
	Job    Job
	Firing Firing
	Run    agent.RunState
	Result agent.Result
}

// Delivery sends answers to the targets of one kind (Target.Kind).
type Delivery func(ctx context.Context, a Answer) error

// Via delivers through a channel's replier, as if the run had come from
// the target's address on that channel: a Telegram chat.
func Via(r agent.Replier, channel string) Delivery {
	return func(_ context.Context, a Answer) error {
		st := a.Run
		st.Reply = agent.Reply{Channel: channel, To: a.Job.Deliver.To}
		r.Finish(st, a.Result)
		return nil
	}
}

// Replier is the agent.Replier of Channel: it delivers a run's answer to
// the job's target and records how the run ended. Nothing streams, and
// check-in runs never ask for approvals.
type Replier struct {
	Engine Engine
	// Jobs reads a job by id for any owner (the engine's own lookup).
	Jobs func(ctx context.Context, id string) (Job, error)
	// Deliver holds the deliveries of the kinds this process can deliver
	// to (DeliverTelegram, DeliverWebhook); a target without one is
	// recorded as not delivered.
	Deliver map[string]Delivery
	Log     *slog.Logger
}

var _ agent.Replier = (*Replier)(nil)

// Delta implements agent.Replier.
func (*Replier) Delta(agent.RunState, string) {}

// Approval implements agent.Replier.
func (*Replier) Approval(agent.RunState, store.Approval) {}

// Finish implements agent.Replier.
func (p *Replier) Finish(st agent.RunState, res agent.Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := ParseFiring(st.Reply.To)
	if err != nil {
		p.Log.Error("check-in reply", "run_id", st.RunID, "error", err)
		return
	}
	j, err := p.Jobs(ctx, f.JobID)
	quietBeat := err == nil && j.Heartbeat != nil && quiet(res.Content) && res.Error == ""
	delivered, undelivered := "", ""
	if err == nil && !quietBeat && j.Deliver.Kind != "" && j.Deliver.Kind != DeliverNone {
		d, ok := p.Deliver[j.Deliver.Kind]
		if !ok {
			undelivered = "delivery to " + j.Deliver.Kind + " is not available here"
		} else if err := d(ctx, Answer{Job: j, Firing: f, Run: st, Result: res}); err != nil {
			undelivered = "not delivered: " + err.Error()
		} else {
			delivered = j.Deliver.String()
		}
	}
	out := result(st, res, delivered)
	switch {
	case quietBeat:
		out.Reason = HeartbeatOK + ": not delivered"
	case undelivered != "":
		p.Log.Warn("check-in not delivered", "firing", f.String(), "target", j.Deliver.Kind, "reason", undelivered)
		out.Reason = strings.TrimPrefix(out.Reason+"; "+undelivered, "; ")
	}
	if err := p.Engine.Finish(ctx, f, out); err != nil && !errors.Is(err, ErrNotFound) {
		p.Log.Error("record check-in run", "firing", f.String(), "error", err)
	}
}

// Poller fires the jobs of an engine that keeps its own timers (the local
// server): it reads the next due time cheaply, claims due firings and
// starts their runs, and starts runs claimed elsewhere (`cron run` from
// the CLI) or left unfinished by a previous process. Jobs created,
// changed or deleted by another process are seen within Poll.
type Poller struct {
	Timers Timers
	Runner *Runner
	Log    *slog.Logger
	// Now and After are the clock (time.Now and time.After by default).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
	// Poll is the longest wait between two reads of the timers (1 s).
	Poll time.Duration

	started map[Firing]bool
}

// Run fires jobs until ctx is done.
func (p *Poller) Run(ctx context.Context) {
	p.started = map[Firing]bool{}
	for {
		p.Tick(ctx)
		wait := p.Poll
		if wait <= 0 {
			wait = time.Second
		}
		if next, ok, err := p.Timers.NextDue(ctx); err != nil {
			p.Log.Error("read check-in timers", "error", err)
		} else if ok {
			wait = max(0, min(wait, next.Sub(p.now())))
		}
		select {
		case <-ctx.Done():
			return
		case <-p.after(wait):
		}
	}
}

func (p *Poller) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Poller) after(d time.Duration) <-chan time.Time {
	if p.After != nil {
		return p.After(d)
	}
	return time.After(d)
}

// Tick starts the runs claimed and not started by this poller, then
// claims and starts the due firings.
func (p *Poller) Tick(ctx context.Context) {
	if p.started == nil {
		p.started = map[Firing]bool{}
	}
	runs, err := p.Timers.Unfinished(ctx)
	if err != nil {
		p.Log.Error("read unfinished check-ins", "error", err)
	}
	running := map[Firing]bool{}
	for _, run := range runs {
		running[run.Firing] = true
		if !p.started[run.Firing] {
			p.start(ctx, run)
		}
	}
	for f := range p.started {
		if !running[f] {
			delete(p.started, f)
		}
	}
	due, err := p.Timers.Due(ctx, 100)
	if err != nil {
		p.Log.Error("read due check-ins", "error", err)
		return
	}
	for _, f := range due {
		run, err := p.Timers.Claim(ctx, f)
		switch {
		case errors.Is(err, ErrClaimed), errors.Is(err, ErrDone), errors.Is(err, ErrNotDue), errors.Is(err, ErrNotFound):
			continue // another claimer, or the job changed meanwhile
		case err != nil:
			p.Log.Error("claim check-in", "firing", f.String(), "error", err)
			continue
		case run.Status == RunSkipped:
			p.Log.Info("check-in skipped", "job", f.JobID, "at", f.At, "reason", run.Reason)
			continue
		}
		p.start(ctx, run)
	}
}

func (p *Poller) start(ctx context.Context, run Run) {
	if err := p.Runner.Start(ctx, run); err != nil {
		p.Log.Error("start check-in", "firing", run.Firing.String(), "error", err)
		return
	}
	p.started[run.Firing] = true
	p.Log.Info("check-in started", "job", run.JobID, "at", run.At, "run_id", run.RunID(), "resumed", run.Resumed)
}
