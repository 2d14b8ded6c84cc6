package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// crashStore is a store whose AppendMessage fails while failing is set
// (the result of a call that ran is lost, and its step fails), and which
// counts StartCall.
type crashStore struct {
	store.Store
	failing atomic.Bool
	starts  atomic.Int64
}

func (s *crashStore) AppendMessage(ctx context.Context, m store.Message) (bool, error) {
	if s.failing.Load() {
		return false, errors.New("disk full")
	}
	return s.Store.AppendMessage(ctx, m)
}

func (s *crashStore) StartCall(ctx context.Context, runID, callID string) error {
	s.starts.Add(1)
	return s.Store.StartCall(ctx, runID, callID)
}

// A call that started and has no result when its act step runs again (a
// kill -9, a shutdown while it ran, a step retried after the tool ran) is
// not run again unless its tool may be retried: the model gets
// Interrupted and the run carries on. The marker is written before the
// tool runs, for calls that may not be retried only.
func TestInterruptedCall(t *testing.T) {
	actions := tool.Policy{Effect: tool.External, ActionArg: "action", Actions: map[string]tool.Effect{"get": tool.Read}}
	type call struct {
		policy tool.Policy
		args   string
	}
	calls := []struct {
		name  string
		call  call
		rerun bool
	}{
		{name: "external", call: call{tool.Policy{Effect: tool.External}, `{"text":"hi"}`}},
		{name: "shared write", call: call{tool.Policy{Effect: tool.WriteShared}, `{"text":"hi"}`}},
		{name: "own write", call: call{tool.Policy{Effect: tool.WriteOwn}, `{"text":"hi"}`}},
		{name: "idempotent", call: call{tool.Policy{Effect: tool.External, Idempotent: true}, `{"text":"hi"}`}, rerun: true},
		{name: "read", call: call{tool.Policy{Effect: tool.Read}, `{"text":"hi"}`}, rerun: true},
		{name: "a read action", call: call{actions, `{"action":"get","text":"hi"}`}, rerun: true},
		{name: "a write action", call: call{actions, `{"action":"put","text":"hi"}`}},
	}
	crashes := []struct {
		name string
		// crash takes a run at act to where the crash leaves it, and
		// returns how many times the tool ran.
		crash func(t *testing.T, f *fixture, s *crashStore, st RunState, c call) int
	}{
		{name: "kill -9 while it ran", crash: func(t *testing.T, f *fixture, s *crashStore, st RunState, c call) int {
			// What the killed process left: the marker of a call that may
			// not be retried, and no result.
			if !c.policy.Retryable(json.RawMessage(c.args)) {
				if err := s.StartCall(t.Context(), st.RunID, "c1"); err != nil {
					t.Fatal(err)
				}
			}
			return 0
		}},
		{name: "shutdown while it ran", crash: func(t *testing.T, f *fixture, _ *crashStore, st RunState, _ call) int {
			ctx, cancel := context.WithCancel(t.Context())
			during := f.echo.during
			f.echo.during = func() { during(); cancel() }
			if _, err := f.loop.Step(ctx, st); !errors.Is(err, context.Canceled) {
				t.Fatalf("act during shutdown: %v, want context.Canceled", err)
			}
			return 1
		}},
		{name: "step retried after the tool ran", crash: func(t *testing.T, f *fixture, s *crashStore, st RunState, _ call) int {
			s.failing.Store(true)
			if _, err := f.loop.Step(t.Context(), st); err == nil {
				t.Fatal("act whose result could not be written succeeded")
			}
			s.failing.Store(false)
			return 1
		}},
	}
	for _, cr := range crashes {
		for _, tt := range calls {
			t.Run(cr.name+"/"+tt.name, func(t *testing.T) {
				f := newFixture(t, 5)
				s := &crashStore{Store: f.store}
				f.loop.Store = s
				ev := &events{}
				f.loop.Events = ev
				f.echo.policy = tt.call.policy
				f.llm.script = append(f.llm.script, callTool("echo", tt.call.args), say("carried on"))
				st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("go")}, Autonomy: tool.Full})
				if err != nil {
					t.Fatal(err)
				}
				for st.Step != StepAct {
					if st, err = f.loop.Step(t.Context(), st); err != nil {
						t.Fatal(err)
					}
				}
				// The marker is there by the time the tool runs: asked for
				// it again then, the store says it exists.
				var marked []bool
				f.echo.during = func() {
					err := f.store.StartCall(t.Context(), st.RunID, "c1")
					marked = append(marked, errors.Is(err, store.ErrExists))
				}
				ran := cr.crash(t, f, s, st, tt.call)
				starts := s.starts.Load()
				f.echo.during = func() {}
				if got := f.runToEnd(t, st); got.Failed() {
					t.Fatalf("run failed: %s", got.Error)
				}

				want, wantRuns, wantEvents := Interrupted, ran, 1
				if tt.rerun {
					want, wantRuns, wantEvents = "hi", ran+1, 0
				}
				if f.echo.n != wantRuns {
					t.Errorf("the tool ran %d times, want %d", f.echo.n, wantRuns)
				}
				hist := f.history(t, "s")
				if len(hist) != 4 || hist[2].Role != chat.Tool || hist[3].Content != "carried on" {
					t.Fatalf("history = %+v, want the call, its result and the answer", hist)
				}
				if hist[2].Content != want {
					t.Errorf("result = %q, want %q", hist[2].Content, want)
				}
				seen := f.llm.seen[len(f.llm.seen)-1].Messages
				if got := seen[len(seen)-1].Content; got != want {
					t.Errorf("the model got %q, want %q", got, want)
				}
				var got []map[string]string
				for _, e := range ev.got {
					if e.Type == obs.ToolCallInterrupted {
						got = append(got, attrStrings(e.Attrs))
					}
				}
				if len(got) != wantEvents || wantEvents > 0 && !cmp.Equal(got[0], map[string]string{"tool_name": "echo", "call_id": "c1"}) {
					t.Errorf("%s events = %v, want %d for echo c1", obs.ToolCallInterrupted, got, wantEvents)
				}
				// Calls that may be retried write no marker: reads cost
				// nothing more.
				if tt.rerun && s.starts.Load() != 0 {
					t.Errorf("StartCall called %d times for a call that may be retried", s.starts.Load())
				}
				if !tt.rerun && ran > 0 && (len(marked) == 0 || !marked[0] || starts != 1) {
					t.Errorf("marked started before the tool ran = %v (StartCall called %d times), want true, once", marked, starts)
				}
			})
		}
	}
}

// attrStrings are the string attributes of an event.
func attrStrings(attrs []slog.Attr) map[string]string {
	out := map[string]string{}
	for _, a := range attrs {
		if a.Value.Kind() == slog.KindString {
			out[a.Key] = a.Value.String()
		}
	}
	return out
}

// failFinish is a store whose commits that finish a run fail n times
// (a full disk), then succeed.
type failFinish struct {
	store.Store
	n int
}

func (s *failFinish) CommitRun(ctx context.Context, c store.Commit) error {
	if c.Run.Status.Finished() && s.n > 0 {
		s.n--
		return errors.New("disk full")
	}
	return s.Store.CommitRun(ctx, c)
}

// A step that finishes a run and whose commit is retried counts the turn
// once, after the commit that finishes the run, and tells the user once,
// after that commit: the finish step of a failed run, and a think that
// got an answer, which finishes the run in its own commit. That think,
// retried after its commit failed, asks the model again (nothing of the
// failed commit is kept): history keeps the answer the user was told.
func TestTurnCompleteOnce(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reply  func(i int) func(llm.Request) (llm.Response, error)
		before string // the step whose commit fails
		asked  func(fails int) int
	}{
		{name: "an answer", reply: func(i int) func(llm.Request) (llm.Response, error) { return say(fmt.Sprintf("hello %d", i)) },
			before: StepBegin, asked: func(fails int) int { return fails + 1 }},
		{name: "a failed run", reply: func(int) func(llm.Request) (llm.Response, error) { return fail(errors.New("boom")) },
			before: StepFinish, asked: func(int) int { return 1 }},
	} {
		for _, fails := range []int{0, 1, 8} {
			t.Run(fmt.Sprintf("%s/%d failing commits", tt.name, fails), func(t *testing.T) {
				f := newFixture(t, 5)
				s := &failFinish{Store: f.store, n: fails}
				f.loop.Store = s
				ev := &events{}
				f.loop.Events = ev
				rec := recordingReplier{told: make(chan string, 100)}
				f.loop.Replier = rec
				for i := range fails + 1 {
					f.llm.script = append(f.llm.script, tt.reply(i))
				}
				st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}, Autonomy: tool.Full})
				if err != nil {
					t.Fatal(err)
				}
				for st.Step != tt.before {
					if st, err = f.loop.Step(t.Context(), st); err != nil {
						t.Fatal(err)
					}
				}
				count := func() int {
					n := 0
					for _, e := range ev.got {
						if e.Type == obs.TurnComplete {
							n++
						}
					}
					return n
				}
				for i := range fails {
					if _, err := f.loop.Step(t.Context(), st); err == nil {
						t.Fatalf("step %d succeeded", i+1)
					}
					if n := count(); n != 0 {
						t.Errorf("%d %s events after failed step %d, want none", n, obs.TurnComplete, i+1)
					}
					if got := drain(rec.told); len(got) != 0 {
						t.Errorf("told %q after failed step %d, want nothing", got, i+1)
					}
				}
				if st, err = f.loop.Step(t.Context(), st); err != nil || st.Step != StepDone {
					t.Fatalf("step: %v at %s, want done", err, st.Step)
				}
				if n := count(); n != 1 {
					t.Errorf("%d %s events, want 1", n, obs.TurnComplete)
				}
				if got, want := f.llm.calls(), tt.asked(fails); got != want {
					t.Errorf("the model was asked %d times, want %d", got, want)
				}
				told := drain(rec.told)
				if len(told) != 1 {
					t.Fatalf("the replier was told %q, want once", told)
				}
				if tt.name == "an answer" {
					answer := fmt.Sprintf("hello %d", fails)
					if hist := f.history(t, "s"); len(hist) != 2 || hist[1].Content != answer || told[0] != st.RunID+" finish "+answer {
						t.Errorf("history = %+v, told %q; want the input and the answer told, %q", hist, told, answer)
					}
				}
			})
		}
	}
}

// lostAck is a store whose first commit that finishes a run applies but
// reports an error, as a reply lost on its way back or a crash right
// after the commit.
type lostAck struct {
	store.Store
	lost bool
}

func (s *lostAck) CommitRun(ctx context.Context, c store.Commit) error {
	err := s.Store.CommitRun(ctx, c)
	if err == nil && c.Run.Status.Finished() && !s.lost {
		s.lost = true
		return errors.New("connection reset")
	}
	return err
}

// A think that finished the run in a commit whose success it did not see
// tells the answer when it is retried, and counts the turn once; the
// model is asked once.
func TestFinishedThinkRetried(t *testing.T) {
	f := newFixture(t, 5)
	f.loop.Store = &lostAck{Store: f.store}
	ev := &events{}
	f.loop.Events = ev
	rec := recordingReplier{told: make(chan string, 100)}
	f.loop.Replier = rec
	f.llm.script = append(f.llm.script, say("hello"))
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}, Autonomy: tool.Full})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.loop.Step(t.Context(), st); err == nil {
		t.Fatal("the step whose commit reported an error succeeded")
	}
	if got := drain(rec.told); len(got) != 0 {
		t.Errorf("told %q before the commit was seen, want nothing", got)
	}
	done, err := f.loop.Step(t.Context(), st)
	if err != nil || done.Step != StepDone {
		t.Fatalf("retried step: %v at %s, want done", err, done.Step)
	}
	if diff := cmp.Diff([]string{st.RunID + " finish hello"}, drain(rec.told)); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
	n := 0
	for _, e := range ev.got {
		if e.Type == obs.TurnComplete {
			n++
		}
	}
	if n != 1 || f.llm.calls() != 1 {
		t.Errorf("%d %s events and %d model calls, want 1 and 1", n, obs.TurnComplete, f.llm.calls())
	}
}

// A compaction run again after its memory flush (the step failed before
// the summary was written) does not flush again.
func TestFlushNotRepeated(t *testing.T) {
	f, mem := compactFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	summaries := 0
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		switch {
		case isFlush(req):
			return callTool("workspace_memory", `{"action":"append","content":"likes tea"}`)(req)
		case isSummary(req):
			if summaries++; summaries == 1 {
				cancel() // the process goes down while the model summarizes
				return llm.Response{}, context.Canceled
			}
			return say("the user asked q0 to q2")(req)
		}
		return say("a " + req.Messages[len(req.Messages)-1].Content)(req)
	}
	turns(t, f, 3) // 6 messages: the next run sees 7 > 6 and compacts first
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("q3")}, Autonomy: tool.Full})
	if err != nil {
		t.Fatal(err)
	}
	for st.Step != StepCompact {
		if st.Step == StepDone {
			t.Fatalf("the run did not compact; history %+v", f.history(t, "s"))
		}
		if st, err = f.loop.Step(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.loop.Step(ctx, st); err == nil {
		t.Fatal("compact succeeded while shutting down")
	}
	f.runToEnd(t, st)
	if summaries != 2 {
		t.Errorf("%d summaries asked, want 2 (the compaction ran again)", summaries)
	}
	if diff := cmp.Diff([]string{`{"action":"append","content":"likes tea"}`}, mem.saved); diff != "" {
		t.Errorf("flush saved (-want +got):\n%s", diff)
	}
}

// outboxReplier keeps replies in the commit (Outboxer).
type outboxReplier struct{ recordingReplier }

func (r outboxReplier) Outbox(st RunState, res Result) []store.OutboxMessage {
	return []store.OutboxMessage{{ID: "run-" + st.RunID, Text: res.Content + res.Error}}
}

func (r outboxReplier) Committed(st RunState, res Result) {
	r.told <- st.RunID + " committed " + res.Content + res.Error
}

func (r outboxReplier) ApprovalOutbox(_ RunState, a store.Approval) []store.OutboxMessage {
	return []store.OutboxMessage{{ID: "ap-" + a.ID, Text: a.Tools[0]}}
}

// outboxStore keeps the outbox of each commit it applies (memstore keeps
// none), noting what its replier had been told by then; a refusing one
// refuses every commit that ends or parks a run, as a lease lost.
type outboxStore struct {
	store.Store
	refuse bool
	told   chan string
	kept   []string
}

func (s *outboxStore) CommitRun(ctx context.Context, c store.Commit) error {
	if st, _ := DecodeState(c.Run); s.refuse && (c.Run.Status.Finished() || st.Parked()) {
		return store.ErrLeaseLost
	}
	out := c.Outbox
	c.Outbox = nil
	if err := s.Store.CommitRun(ctx, c); err != nil {
		return err
	}
	for _, m := range out {
		s.kept = append(s.kept, m.ID+" "+m.Text)
	}
	if len(s.told) > 0 {
		s.kept = append(s.kept, "told before the commit")
	}
	return nil
}

// The step that ends a run gives its reply to a channel that delivers
// from the store (Outboxer) to the commit that ends the run, and tells
// that channel Committed once the commit applied: an answer's think and
// a failed run's finish. The step that parks a run for a person's
// approval gives the prompt to the commit that parks it, and tells
// Approval after it. A refused commit keeps no reply and tells none.
func TestOutboxInCommit(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reply  func(llm.Request) (llm.Response, error)
		refuse bool
		kept   []string
		told   []string
	}{
		{name: "an approval", reply: callTool("echo", `{"text":"hi"}`), kept: []string{"ap-r1-0 echo"}, told: []string{"r1 approval"}},
		{name: "a refused approval", reply: callTool("echo", `{"text":"hi"}`), refuse: true},
		{name: "an answer", reply: say("hello"), kept: []string{"run-r1 hello"}, told: []string{"r1 committed hello"}},
		{name: "a failed run", reply: fail(errors.New("boom")), kept: []string{"run-r1 the model provider failed to answer; try again in a moment (run r1)"},
			told: []string{"r1 committed the model provider failed to answer; try again in a moment (run r1)"}},
		{name: "a refused commit", reply: say("hello"), refuse: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.echo.policy = tool.Policy{Effect: tool.External} // asked of a person
			rec := outboxReplier{recordingReplier{told: make(chan string, 100)}}
			s := &outboxStore{Store: f.store, refuse: tt.refuse, told: rec.told}
			f.loop.Store = s
			f.loop.Replier = Router{"tg": rec}
			f.llm.script = append(f.llm.script, tt.reply)
			st, err := f.loop.Enqueue(t.Context(), Input{RunID: "r1", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")},
				Autonomy: tool.Supervised, Interactive: true, Reply: Reply{Channel: "tg", To: "7"}})
			if err != nil {
				t.Fatal(err)
			}
			for st.Step != StepDone && !st.Parked() {
				if st, err = f.loop.Step(t.Context(), st); err != nil {
					break
				}
			}
			if tt.refuse != errors.Is(err, store.ErrLeaseLost) {
				t.Errorf("step: %v", err)
			}
			if diff := cmp.Diff(tt.kept, s.kept); diff != "" {
				t.Errorf("outbox kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.told, drain(rec.told)); diff != "" {
				t.Errorf("told (-want +got):\n%s", diff)
			}
		})
	}
}

// A driver that finds a run finished (its step died between the commit
// and the telling, and was retried) tells its outcome again, as the step
// would have: Committed to a channel that delivers from the store, whose
// reply the commit holds, Finish to another; and a parked run's
// approval. A run abandoned without telling anyone, or at another step,
// is told nothing.
func TestRetell(t *testing.T) {
	for _, tt := range []struct {
		name    string
		channel string
		reply   func(llm.Request) (llm.Response, error)
		abandon bool
		reset   bool
		stop    string
		told    []string
	}{
		{name: "an answer to an outbox", channel: "tg", reply: say("hello"), told: []string{"r1 committed hello"}},
		{name: "an answer", channel: "ws", reply: say("hello"), told: []string{"r1 finish hello"}},
		{name: "a failed run", channel: "tg", reply: fail(errors.New("boom")),
			told: []string{"r1 committed the model provider failed to answer; try again in a moment (run r1)"}},
		{name: "an abandoned run", channel: "tg", reply: say("hello"), abandon: true},
		{name: "a parked run", channel: "tg", reply: callTool("echo", `{"text":"hi"}`), told: []string{"r1 approval"}},
		{name: "an unfinished run", channel: "tg", reply: callTool("echo", `{"text":"hi"}`), stop: StepApprove},
		{name: "a run of a session reset since", channel: "tg", reply: say("hello"), reset: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.echo.policy = tool.Policy{Effect: tool.External}
			f.llm.script = append(f.llm.script, tt.reply)
			st, err := f.loop.Enqueue(t.Context(), Input{RunID: "r1", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")},
				Autonomy: tool.Supervised, Interactive: true, Reply: Reply{Channel: tt.channel, To: "7"}})
			if err != nil {
				t.Fatal(err)
			}
			// The process dies after each commit, before it tells.
			f.loop.Replier = nil
			if tt.abandon {
				if st, err = f.loop.Abandon(t.Context(), st, errors.New("the state machine gave up")); err != nil {
					t.Fatal(err)
				}
			}
			for st.Step != StepDone && !st.Parked() && st.Step != tt.stop {
				if st, err = f.loop.Step(t.Context(), st); err != nil {
					t.Fatal(err)
				}
			}
			rec := recordingReplier{told: make(chan string, 100)}
			f.loop.Replier = Router{"tg": outboxReplier{rec}, "ws": rec}
			run, err := f.store.GetRun(t.Context(), "r1")
			if err != nil {
				t.Fatal(err)
			}
			if tt.reset {
				if err := f.loop.Reset(t.Context(), "s"); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.loop.Retell(t.Context(), run); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.told, drain(rec.told)); diff != "" {
				t.Errorf("told (-want +got):\n%s", diff)
			}
		})
	}
}
