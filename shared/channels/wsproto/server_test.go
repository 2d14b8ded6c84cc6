package wsproto

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// What a fakeConn was asked to do besides sending frames, in its trace.
type (
	delivered struct{ In agent.Input }
	started   struct{}
	followed  struct{ RunID string }
	resetDone struct{ SessionID string }
	closed    struct{}
)

// fakeConn is a transport that records, in order, the frames sent and the
// calls made.
type fakeConn struct {
	key      store.APIKey
	keyErr   error
	deliver  func(agent.Input) (agent.RunState, error)
	startErr error
	resetErr error
	trace    []any
}

func (c *fakeConn) ID() string { return "c1" }

func (c *fakeConn) Key(context.Context) (store.APIKey, error) { return c.key, c.keyErr }

func (c *fakeConn) Send(frame any) { c.trace = append(c.trace, frame) }

func (c *fakeConn) Close(context.Context) { c.trace = append(c.trace, closed{}) }

func (c *fakeConn) Reply() agent.Reply { return agent.Reply{Channel: Channel, To: "to-c1"} }

func (c *fakeConn) Deliver(_ context.Context, in agent.Input) (agent.RunState, error) {
	c.trace = append(c.trace, delivered{in})
	if c.deliver != nil {
		return c.deliver(in)
	}
	return agent.RunState{RunID: in.RunID, SessionID: in.SessionID}, nil
}

func (c *fakeConn) Start(context.Context) error {
	c.trace = append(c.trace, started{})
	return c.startErr
}

func (c *fakeConn) Follow(_ context.Context, runID string) {
	c.trace = append(c.trace, followed{runID})
}

func (c *fakeConn) Reset(_ context.Context, sessionID string) error {
	c.trace = append(c.trace, resetDone{sessionID})
	return c.resetErr
}

// fakeRuns is a store of runs by id; err, when set, fails every lookup.
type fakeRuns struct {
	runs map[string]store.Run
	err  error
}

func (r fakeRuns) GetRun(_ context.Context, id string) (store.Run, error) {
	if r.err != nil {
		return store.Run{}, r.err
	}
	run, ok := r.runs[id]
	if !ok {
		return store.Run{}, store.ErrNotFound
	}
	return run, nil
}

// fakeLimiter refuses every frame while wait is set.
type fakeLimiter struct{ wait time.Duration }

func (l fakeLimiter) Allow(string, int) (bool, time.Duration) { return l.wait == 0, l.wait }

func session(agentName, keyID, user string) string {
	_, s := agent.Identity{}.Session(agentName, Channel, keyID, user)
	return s
}

func TestServerHandle(t *testing.T) {
	key := store.APIKey{ID: "k1", Autonomy: "supervised", RatePerMinute: 10}
	writerOnly := store.APIKey{ID: "k2", Agents: []string{"writer"}}
	now := time.Now()
	revoked := key
	revoked.RevokedAt = &now

	aliceRun := RunID("k1", "alice", "default", "m1")
	aliceSession := session("default", "k1", "alice")
	input := func(runID, agentName, user, text string) agent.Input {
		return agent.Input{
			RunID: runID, SessionID: session(agentName, "k1", user), Agent: agentName, Owner: "key:k1",
			Messages: []chat.Message{{Role: chat.User, Content: text}},
			Autonomy: tool.Supervised, Stream: true, Interactive: true,
			Reply: agent.Reply{Channel: Channel, To: "to-c1"},
		}
	}
	ack := func(id, runID, sessionID string) Ack {
		return Ack{Type: TypeAck, ID: id, RunID: runID, SessionID: sessionID}
	}
	dup := func(id, runID, sessionID string) Ack {
		a := ack(id, runID, sessionID)
		a.Duplicate = true
		return a
	}
	const hi = `{"type":"message","id":"m1","user":"alice","text":"hi"}`

	tests := []struct {
		name    string
		conn    fakeConn
		runs    *fakeRuns
		limiter Limiter
		frame   string
		binary  bool
		want    []any
	}{
		{
			name:  "message",
			conn:  fakeConn{key: key},
			frame: hi,
			want:  []any{delivered{input(aliceRun, "default", "alice", "hi")}, ack("m1", aliceRun, aliceSession), started{}},
		},
		{
			name:  "message without an id, to another agent, as the key's own user",
			conn:  fakeConn{key: key},
			runs:  &fakeRuns{},
			frame: `{"type":"message","agent":"lambdaclaw/coder","text":"hi"}`,
			want:  []any{delivered{input("", "coder", "k1", "hi")}, ack("", "", session("coder", "k1", "k1")), started{}},
		},
		{
			name:  "an unknown autonomy gets read-only",
			conn:  fakeConn{key: store.APIKey{ID: "k1", Autonomy: "godlike"}},
			frame: `{"type":"message","text":"hi"}`,
			want: []any{
				delivered{func() agent.Input { in := input("", "default", "k1", "hi"); in.Autonomy = tool.ReadOnly; return in }()},
				ack("", "", session("default", "k1", "k1")), started{},
			},
		},
		{
			name:  "a run the store knows is a duplicate, followed while it goes on",
			conn:  fakeConn{key: key},
			runs:  &fakeRuns{runs: map[string]store.Run{aliceRun: {ID: aliceRun, SessionID: aliceSession, Status: store.RunRunning}}},
			frame: hi,
			want:  []any{followed{aliceRun}, dup("m1", aliceRun, aliceSession)},
		},
		{
			name:  "a duplicate whose run is done is not followed",
			conn:  fakeConn{key: key},
			runs:  &fakeRuns{runs: map[string]store.Run{aliceRun: {ID: aliceRun, SessionID: aliceSession, Status: store.RunDone}}},
			frame: hi,
			want:  []any{dup("m1", aliceRun, aliceSession)},
		},
		{
			name:  "the run store fails",
			conn:  fakeConn{key: key},
			runs:  &fakeRuns{err: errors.New("table gone")},
			frame: hi,
			want:  []any{NewError("m1", "", "internal_error", "could not start the run")},
		},
		{
			name:  "the run does not start after the ack",
			conn:  fakeConn{key: key, startErr: errors.New("no execution")},
			frame: hi,
			want: []any{
				delivered{input(aliceRun, "default", "alice", "hi")}, ack("m1", aliceRun, aliceSession), started{},
				NewError("m1", aliceRun, "internal_error", "the message is queued but its run could not start yet; it starts with the conversation's next message"),
			},
		},
		{
			name: "an approval answer names the parked run",
			conn: fakeConn{key: key, deliver: func(in agent.Input) (agent.RunState, error) {
				return agent.RunState{RunID: "parked", SessionID: in.SessionID}, nil
			}},
			frame: hi,
			want:  []any{delivered{input(aliceRun, "default", "alice", "hi")}, ack("m1", "parked", aliceSession), started{}},
		},
		{
			name: "the loop does not know the agent",
			conn: fakeConn{key: key, deliver: func(agent.Input) (agent.RunState, error) {
				return agent.RunState{}, agent.ErrUnknownAgent
			}},
			frame: hi,
			want:  []any{delivered{input(aliceRun, "default", "alice", "hi")}, NewError("m1", "", "model_not_found", agent.ErrUnknownAgent.Error())},
		},
		{
			name: "the key may not approve",
			conn: fakeConn{key: key, deliver: func(agent.Input) (agent.RunState, error) {
				return agent.RunState{}, agent.ErrMayNotApprove
			}},
			frame: hi,
			want:  []any{delivered{input(aliceRun, "default", "alice", "hi")}, NewError("m1", "", "permission_denied", agent.ErrMayNotApprove.Error())},
		},
		{
			name: "delivery fails",
			conn: fakeConn{key: key, deliver: func(agent.Input) (agent.RunState, error) {
				return agent.RunState{}, errors.New("store down")
			}},
			frame: hi,
			want:  []any{delivered{input(aliceRun, "default", "alice", "hi")}, NewError("m1", "", "internal_error", "could not start the run")},
		},
		{
			name:  "reset",
			conn:  fakeConn{key: key},
			frame: `{"type":"reset","id":"r1","agent":"writer","user":"fay"}`,
			want:  []any{resetDone{session("writer", "k1", "fay")}, ack("r1", "", session("writer", "k1", "fay"))},
		},
		{
			name:  "reset while busy",
			conn:  fakeConn{key: key, resetErr: agent.ErrBusy},
			frame: `{"type":"reset","id":"r1","user":"fay"}`,
			want:  []any{resetDone{session("default", "k1", "fay")}, NewError("r1", "", "busy", agent.ErrBusy.Error())},
		},
		{
			name:  "reset fails",
			conn:  fakeConn{key: key, resetErr: errors.New("disk full")},
			frame: `{"type":"reset","id":"r1","user":"fay"}`,
			want:  []any{resetDone{session("default", "k1", "fay")}, NewError("r1", "", "internal_error", "could not reset the conversation")},
		},
		{
			name:  "unknown agent",
			conn:  fakeConn{key: key},
			frame: `{"type":"message","id":"x","agent":"ghost","text":"hi"}`,
			want:  []any{NewError("x", "", "model_not_found", `the agent "ghost" does not exist or this key may not use it`)},
		},
		{
			name:  "an agent the key may not use",
			conn:  fakeConn{key: writerOnly},
			frame: `{"type":"reset","id":"x"}`,
			want:  []any{NewError("x", "", "model_not_found", `the agent "default" does not exist or this key may not use it`)},
		},
		{
			name:  "revoked key",
			conn:  fakeConn{key: revoked},
			frame: hi,
			want:  []any{NewError("m1", "", "invalid_api_key", "the API key was revoked"), closed{}},
		},
		{
			name:  "the key is gone",
			conn:  fakeConn{keyErr: store.ErrNotFound},
			frame: hi,
			want:  []any{NewError("m1", "", "invalid_api_key", "the API key was revoked"), closed{}},
		},
		{
			name:  "the key lookup fails",
			conn:  fakeConn{keyErr: errors.New("timeout")},
			frame: hi,
			want:  []any{NewError("m1", "", "internal_error", "could not check the API key")},
		},
		{
			name:    "rate limited",
			conn:    fakeConn{key: key},
			limiter: fakeLimiter{wait: 2500 * time.Millisecond},
			frame:   hi,
			want:    []any{NewError("m1", "", "rate_limit_exceeded", "rate limit of 10 requests per minute reached; retry in 3 s")},
		},
		{
			name:   "binary frame",
			conn:   fakeConn{key: key},
			frame:  hi,
			binary: true,
			want:   []any{NewError("", "", "invalid_frame", "send JSON text frames, not binary ones")},
		},
		{
			name:  "a frame that does not decode",
			conn:  fakeConn{key: key},
			frame: `{"type":"dance","id":"d1"}`,
			want:  []any{NewError("d1", "", "unknown_type", `unknown frame type "dance": send "message" or "reset"`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{
				HasAgent: func(name string) bool { return slices.Contains([]string{"default", "coder", "writer"}, name) },
				Limiter:  tt.limiter,
			}
			if tt.runs != nil {
				s.Runs = tt.runs
			}
			c := tt.conn
			s.Handle(t.Context(), &c, []byte(tt.frame), tt.binary)
			if diff := cmp.Diff(tt.want, c.trace); diff != "" {
				t.Errorf("trace (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServerRecent repeats client ids with a memory of recent ones.
func TestServerRecent(t *testing.T) {
	key := store.APIKey{ID: "k1", Autonomy: "full"}
	runID := RunID("k1", "k1", "default", "m1")
	sid := session("default", "k1", "k1")
	const m1 = `{"type":"message","id":"m1","text":"/yes"}`
	parked := func(in agent.Input) (agent.RunState, error) {
		return agent.RunState{RunID: "parked", SessionID: in.SessionID}, nil
	}
	fail := func(agent.Input) (agent.RunState, error) { return agent.RunState{}, errors.New("store down") }
	in := agent.Input{
		RunID: runID, SessionID: sid, Agent: "default", Owner: "key:k1",
		Messages: []chat.Message{{Role: chat.User, Content: "/yes"}},
		Autonomy: tool.Full, Stream: true, Interactive: true, Reply: agent.Reply{Channel: Channel, To: "to-c1"},
	}
	dup := func(runID string) Ack {
		return Ack{Type: TypeAck, ID: "m1", RunID: runID, SessionID: sid, Duplicate: true}
	}

	tests := []struct {
		name string
		runs RunFinder
		// deliveries are the loop's answers to the frames m1 sent one
		// after the other, on connections of their own.
		deliveries []func(agent.Input) (agent.RunState, error)
		want       [][]any
	}{
		{
			name:       "an approval answer sent twice delivers once; the repeat follows the parked run",
			deliveries: []func(agent.Input) (agent.RunState, error){parked, parked},
			want: [][]any{
				{delivered{in}, Ack{Type: TypeAck, ID: "m1", RunID: "parked", SessionID: sid}, started{}},
				{followed{"parked"}, dup("parked")},
			},
		},
		{
			name:       "the store says the remembered run has ended",
			runs:       fakeRuns{runs: map[string]store.Run{"parked": {ID: "parked", Status: store.RunFailed}}},
			deliveries: []func(agent.Input) (agent.RunState, error){parked, parked},
			want: [][]any{
				{delivered{in}, Ack{Type: TypeAck, ID: "m1", RunID: "parked", SessionID: sid}, started{}},
				{dup("parked")},
			},
		},
		{
			name:       "a failed delivery may be retried",
			deliveries: []func(agent.Input) (agent.RunState, error){fail, parked},
			want: [][]any{
				{delivered{in}, NewError("m1", "", "internal_error", "could not start the run")},
				{delivered{in}, Ack{Type: TypeAck, ID: "m1", RunID: "parked", SessionID: sid}, started{}},
			},
		},
		{
			name:       "a failed store lookup may be retried",
			runs:       fakeRuns{err: errors.New("timeout")},
			deliveries: []func(agent.Input) (agent.RunState, error){parked, parked},
			want: [][]any{
				{NewError("m1", "", "internal_error", "could not start the run")},
				{NewError("m1", "", "internal_error", "could not start the run")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{HasAgent: func(string) bool { return true }, Runs: tt.runs, Recent: NewRecent(8)}
			var got [][]any
			for _, d := range tt.deliveries {
				c := &fakeConn{key: key, deliver: d}
				s.Handle(t.Context(), c, []byte(m1), false)
				got = append(got, c.trace)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("traces (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecent(t *testing.T) {
	r := NewRecent(2)
	ctx := t.Context()

	// A repeat waits for the first delivery: until it settles, a claim
	// whose context ends gets nothing.
	a, first := r.claim(ctx, "a")
	if a == nil || !first {
		t.Fatalf("first claim of a: %v, %v", a, first)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if e, _ := r.claim(ended, "a"); e != nil {
		t.Errorf("claim while a is under way, context ended: %+v, want nil", e)
	}
	r.settle("a", a, "run-a", "s", true)
	if e, first := r.claim(ctx, "a"); e == nil || first || e.runID != "run-a" {
		t.Errorf("claim of a settled id: %+v, %v; want run-a, not first", e, first)
	}

	// The oldest id is forgotten beyond the size.
	for _, id := range []string{"b", "c"} {
		e, first := r.claim(ctx, id)
		if !first {
			t.Fatalf("first claim of %s: not first", id)
		}
		r.settle(id, e, "run-"+id, "s", true)
	}
	if _, first := r.claim(ctx, "a"); !first {
		t.Error("a is remembered beyond the size")
	}
	if e, first := r.claim(ctx, "c"); first || e.runID != "run-c" {
		t.Errorf("c: %+v, %v; want remembered", e, first)
	}
}
