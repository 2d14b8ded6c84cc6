package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// runsShown is how many runs `runs list` prints unless --limit says.
const runsShown = 50

// stuckRun is a row of `runs list`: a run that holds its session's
// queue without progressing, or whose failed invocation waits in the
// stack's RunFailures queue.
type stuckRun struct {
	RunID     string    `json:"run_id"`
	Owner     string    `json:"owner"`
	SessionID string    `json:"session_id"`
	Agent     string    `json:"agent"`
	Step      string    `json:"step"`
	Status    string    `json:"status"`
	UpdatedAt time.Time `json:"updated_at"`
	Idle      string    `json:"idle"`
	Reason    string    `json:"reason"`
	// Messages counts its messages in RunFailures (--stack).
	Messages int `json:"failure_messages,omitempty"`
}

// runsAt is where the runs commands act: the local database, or a
// deployed stack's table, state machine, step function and RunFailures
// queue (runsstack.go).
type runsAt struct {
	loop *agent.Loop
	// failures lists the runs of the RunFailures queue's messages; nil
	// locally.
	failures func(ctx context.Context) (map[string]failedRun, error)
	// retry steps a run again; abandon ends it failed, telling its user.
	// Each says what it did.
	retry   func(ctx context.Context, run store.Run, st agent.RunState) (string, error)
	abandon func(ctx context.Context, run store.Run, st agent.RunState) (string, error)
	// drop deletes the messages of the runs ids holds true from
	// RunFailures and says how many (none locally).
	drop  func(ctx context.Context, ids map[string]bool) (int, error)
	close func()
}

// failedRun is what RunFailures holds of a run: its messages and the
// last error Lambda recorded.
type failedRun struct {
	messages int
	attempts int
	err      string
	at       time.Time
}

// runsCommand runs `lambdaclaw runs list|retry|abandon`: the operator's
// way out for runs that hold their sessions' queues. It acts on the
// store directly, as every owner's runs are in it: an operator's command,
// not a client's.
func runsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("runs", []string{"list", "retry", "abandon"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	about := map[string]string{
		"list": "List the stuck runs: unfinished, waiting for nobody and without a step for --idle, each holding its\n" +
			"session's next messages back; with --stack also the runs whose invocations Lambda gave up on (the RunFailures queue).",
		"retry": "Step a stuck run again from its last committed step. On a stack: an execution of the state machine,\n" +
			"and its messages leave RunFailures (--all: every run of the queue). Locally the server steps it: a running one\n" +
			"retries a failing step by itself, a stopped one resumes the run when it starts.",
		"abandon": "End a stuck run as failed: its user is told, and the session's next message runs. Repeating it changes nothing.\n" +
			"On a stack the step function does it at once; locally the server does at its next attempt, or when it starts.",
	}
	fs, args0 := newFlags("runs "+sub, "RUN_ID", about[sub], stderr), 1
	if sub == "list" {
		fs, args0 = newFlags("runs list", "", about[sub], stderr), 0
	}
	loadConfig := fs.withConfig()
	st := fs.withStack()
	idle := fs.Duration("idle", agent.StuckAfter, "how long without a step makes an unfinished run stuck")
	var all, asJSON *bool
	var limit *int
	var agentName *string
	switch sub {
	case "list":
		limit = fs.Int("limit", runsShown, "list at most this many runs")
		asJSON = fs.Bool("json", false, "print the runs as a JSON array")
		agentName = fs.String("agent", "", "only the runs of this agent")
	case "retry":
		all = fs.Bool("all", false, "retry every run of the stack's RunFailures queue (--stack), dropping the messages of runs that ended")
	}
	min, max := args0, args0
	if all != nil {
		min = 0
	}
	pos, err := fs.parse(args[1:], min, max, stdout)
	if err != nil {
		return err
	}
	if err := st.check(fs); err != nil {
		return err
	}
	switch {
	case *idle < 0:
		return errors.New("--idle is negative")
	case limit != nil && (*limit < 1 || *limit > 1000):
		return fmt.Errorf("--limit %d: want 1 to 1000", *limit)
	case all != nil && *all == (len(pos) == 1):
		return errors.New("runs retry: give a RUN_ID or --all")
	case all != nil && *all && !st.remote():
		return errors.New("--all retries the runs of a stack's RunFailures queue: name the stack (--stack)")
	}
	at, err := openRuns(ctx, st, loadConfig)
	if err != nil {
		return err
	}
	defer at.close()
	switch {
	case sub == "list":
		rows, err := at.list(ctx, *idle, *agentName, *limit)
		if err != nil {
			return err
		}
		return printRuns(rows, *asJSON, stdout)
	case all != nil && *all:
		return at.retryAll(ctx, stdout)
	}
	msg, err := at.actOn(ctx, sub, pos[0], *idle)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

// list returns the stuck runs at idle, and the runs of RunFailures,
// the longest idle first, at most limit.
func (a *runsAt) list(ctx context.Context, idle time.Duration, agentName string, limit int) ([]stuckRun, error) {
	stuck, err := a.loop.StuckRuns(ctx, idle, maxStuckScanned)
	if err != nil {
		return nil, err
	}
	failed := map[string]failedRun{}
	if a.failures != nil {
		if failed, err = a.failures(ctx); err != nil {
			return nil, err
		}
	}
	now := time.Now()
	var rows []stuckRun
	seen := map[string]bool{}
	for _, s := range stuck {
		seen[s.Run.ID] = true
		rows = append(rows, row(s.Run, s.State, now, s.Reason(), failed[s.Run.ID]))
	}
	for id, f := range failed {
		if seen[id] {
			continue
		}
		run, err := a.loop.Store.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			rows = append(rows, stuckRun{RunID: id, Status: "gone", Reason: "no longer in the table (its session was reset); only its message is left", Messages: f.messages, UpdatedAt: f.at})
			continue
		}
		if err != nil {
			return nil, err
		}
		st, err := agent.DecodeState(run)
		if err != nil {
			return nil, err
		}
		reason := "its inline run failed"
		if run.Status.Finished() {
			reason = "ended since; only its message is left"
		}
		rows = append(rows, row(run, st, now, reason, f))
	}
	if agentName != "" {
		rows = slices.DeleteFunc(rows, func(r stuckRun) bool { return r.Agent != agentName })
	}
	slices.SortStableFunc(rows, func(x, y stuckRun) int { return x.UpdatedAt.Compare(y.UpdatedAt) })
	if len(rows) > limit {
		rows = rows[:limit]
	}
	return rows, nil
}

// maxStuckScanned bounds the stuck runs a listing reads.
const maxStuckScanned = 1000

// row describes run for `runs list`.
func row(run store.Run, st agent.RunState, now time.Time, reason string, f failedRun) stuckRun {
	if f.messages > 0 {
		reason += fmt.Sprintf("; Lambda gave up after %d attempts: %s", f.attempts, oneLine(f.err, 200))
	}
	return stuckRun{RunID: run.ID, Owner: st.Owner, SessionID: run.SessionID, Agent: st.Agent, Step: st.Step, Status: string(run.Status),
		UpdatedAt: run.UpdatedAt, Idle: now.Sub(run.UpdatedAt).Round(time.Second).String(), Reason: reason, Messages: f.messages}
}

// printRuns prints the rows as a table, or as JSON.
func printRuns(rows []stuckRun, asJSON bool, stdout io.Writer) error {
	if asJSON {
		if rows == nil {
			rows = []stuckRun{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no stuck runs")
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tOWNER\tSESSION\tAGENT\tSTEP\tIDLE\tREASON")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, dash(r.Owner), dash(r.SessionID), dash(r.Agent), dash(r.Step), dash(r.Idle), r.Reason)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// act retries or abandons the run id, of which RunFailures holds failed
// (locally nothing); done says that its messages may leave the queue. A
// run that ended already, or is gone, only has its messages dropped; one
// that is neither stuck at idle nor in RunFailures is refused, since
// something is stepping it.
func (a *runsAt) act(ctx context.Context, sub, id string, idle time.Duration, failed failedRun) (msg string, done bool, err error) {
	run, err := a.loop.Store.GetRun(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound) && failed.messages > 0:
		return fmt.Sprintf("run %s is gone (its session was reset)", id), true, nil
	case errors.Is(err, store.ErrNotFound):
		return "", false, fmt.Errorf("no run %s", id)
	case err != nil:
		return "", false, err
	case run.Status.Finished():
		return fmt.Sprintf("run %s has ended (%s): nothing to do", id, run.Status), true, nil
	}
	st, err := agent.DecodeState(run)
	if err != nil {
		return "", false, err
	}
	if s, ok := agent.IsStuck(run, time.Now(), idle); !ok && failed.messages == 0 {
		if st.Parked() {
			return "", false, fmt.Errorf("run %s waits for an answer (approval or a client's tool results), which ends it or times out: not stuck", id)
		}
		return "", false, fmt.Errorf("run %s made its last step %s ago, less than --idle %s: it is not stuck", id, s.Idle.Round(time.Second), idle)
	}
	if sub == "retry" {
		msg, err = a.retry(ctx, run, st)
	} else {
		msg, err = a.abandon(ctx, run, st)
	}
	return msg, err == nil, err
}

// actOn is act on one run, whose messages then leave RunFailures.
func (a *runsAt) actOn(ctx context.Context, sub, id string, idle time.Duration) (string, error) {
	var failed failedRun
	if a.failures != nil {
		all, err := a.failures(ctx)
		if err != nil {
			return "", err
		}
		failed = all[id]
	}
	msg, done, err := a.act(ctx, sub, id, idle, failed)
	if err != nil || !done || failed.messages == 0 {
		return msg, err
	}
	n, err := a.drop(ctx, map[string]bool{id: true})
	return fmt.Sprintf("%s; dropped its %d RunFailures messages", msg, n), err
}

// retryAll retries every run of the RunFailures queue, and then drops
// the messages of those it handled, in one pass over the queue.
func (a *runsAt) retryAll(ctx context.Context, stdout io.Writer) error {
	failed, err := a.failures(ctx)
	if err != nil {
		return err
	}
	if len(failed) == 0 {
		fmt.Fprintln(stdout, "RunFailures is empty: nothing to retry")
		return nil
	}
	var errs []error
	handled := map[string]bool{}
	for _, id := range slices.Sorted(maps.Keys(failed)) {
		msg, done, err := a.act(ctx, "retry", id, agent.StuckAfter, failed[id])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintln(stdout, msg)
		handled[id] = done
	}
	n, err := a.drop(ctx, handled)
	fmt.Fprintf(stdout, "dropped %d RunFailures messages\n", n)
	return errors.Join(append(errs, err)...)
}

// openRuns opens the runs of the stack st names, or of the local server.
func openRuns(ctx context.Context, st *stackFlags, loadConfig func() (*config.Config, error)) (*runsAt, error) {
	if st.remote() {
		return openStackRuns(ctx, st)
	}
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	db, err := openExistingDB(cfg)
	if err != nil {
		return nil, err
	}
	loop := &agent.Loop{Store: db}
	return &runsAt{loop: loop, close: func() { db.Close() },
		drop: func(context.Context, map[string]bool) (int, error) { return 0, nil },
		retry: func(context.Context, store.Run, agent.RunState) (string, error) {
			return "the server steps it: a running one retries a failing step by itself (every 5 s at most; after five failures the run ends failed and its user is told), " +
				"a stopped one resumes it when it starts (`lambdaclaw serve`)", nil
		},
		abandon: func(ctx context.Context, run store.Run, st agent.RunState) (string, error) {
			if st.Parked() {
				return "", fmt.Errorf("run %s waits for an answer: answer it (/no), or reset the session", run.ID)
			}
			if err := loop.SaveFailure(ctx, st, errAbandoned); err != nil {
				return "", err
			}
			return fmt.Sprintf("run %s saved as failed: the server tells its user and runs the session's next message at its next attempt, or when it starts", run.ID), nil
		}}, nil
}

// errAbandoned is why an abandoned run failed, for the log.
var errAbandoned = errors.New("abandoned by the operator (lambdaclaw runs abandon)")
