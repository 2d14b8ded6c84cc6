package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// recorder keeps the exchanges it is told of.
type recorder struct {
	mu  sync.Mutex
	got []Exchange
	err error
}

func (r *recorder) Record(_ context.Context, xs []Exchange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, xs...)
	return r.err
}

func TestRecorder(t *testing.T) {
	tests := []struct {
		name      string
		in        Input
		script    []func(llm.Request) (llm.Response, error)
		recordErr error
		want      []Exchange
	}{{
		name:   "durable session",
		in:     Input{RunID: "r1", SessionID: "s", Agent: "a", Messages: []chat.Message{user("my sister is called Ada")}},
		script: []func(llm.Request) (llm.Response, error){say("noted: Ada")},
		want:   []Exchange{{Agent: "a", SessionID: "s", RunID: "r1", Input: "my sister is called Ada", Answer: "noted: Ada"}},
	}, {
		name:   "after a tool call",
		in:     Input{RunID: "r2", SessionID: "s", Agent: "a", Messages: []chat.Message{user("ping")}, Autonomy: tool.Full},
		script: []func(llm.Request) (llm.Response, error){callTool("echo", `{"text":"pong"}`), say("pong")},
		want:   []Exchange{{Agent: "a", SessionID: "s", RunID: "r2", Input: "ping", Answer: "pong"}},
	}, {
		name:   "ephemeral session",
		in:     Input{RunID: "r3", Agent: "a", Ephemeral: true, Messages: []chat.Message{user("hi")}},
		script: []func(llm.Request) (llm.Response, error){say("hello")},
	}, {
		name:   "failed run",
		in:     Input{RunID: "r4", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}},
		script: []func(llm.Request) (llm.Response, error){fail(&llm.Error{Provider: "fake", Status: 400, Err: errors.New("bad request")})},
	}, {
		name:      "recorder failure does not fail the run",
		in:        Input{RunID: "r5", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}},
		script:    []func(llm.Request) (llm.Response, error){say("hello")},
		recordErr: errors.New("memory down"),
		want:      []Exchange{{Agent: "a", SessionID: "s", RunID: "r5", Input: "hi", Answer: "hello"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			rec := &recorder{err: tt.recordErr}
			f.loop.Recorder = rec
			f.llm.script = tt.script
			st, err := f.loop.Enqueue(context.Background(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			st = f.runToEnd(t, st)
			if tt.recordErr != nil && st.Failed() {
				t.Errorf("run failed: %s", st.Error)
			}
			if len(rec.got) != 0 {
				t.Errorf("the recorder was told during the run: %+v; want only from RecordQueued", rec.got)
			}
			jobs, err := f.loop.Store.Jobs(context.Background(), RecordJob, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				// The job refers to the history; it does not copy it.
				for _, x := range tt.want {
					if strings.Contains(string(j.Payload), x.Answer) {
						t.Errorf("job %s carries the answer: %s", j.ID, j.Payload)
					}
				}
			}
			if _, err := f.loop.RecordQueued(context.Background()); err != nil {
				t.Fatalf("RecordQueued: %v", err)
			}
			if diff := cmp.Diff(tt.want, rec.got, cmpopts.IgnoreFields(Exchange{}, "At")); diff != "" {
				t.Errorf("exchanges (-want +got):\n%s", diff)
			}
			for _, x := range rec.got {
				if !x.At.Equal(st.StartedAt) {
					t.Errorf("exchange at %v, want the run's start %v", x.At, st.StartedAt)
				}
			}
		})
	}
}

// A step that finished the run, retried after a crash, finds the run
// finished and queues nothing again: the recorder is told once. The
// queue outlives the loop that filled it, as a restarted process finds
// it.
func TestRecorderRetriedFinish(t *testing.T) {
	f := newFixture(t, 5)
	rec := &recorder{}
	f.loop.Recorder = rec
	f.llm.script = append(f.llm.script, say("hello"))
	st, err := f.loop.Enqueue(context.Background(), Input{RunID: "r", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f.runToEnd(t, st)
	for range 2 {
		if again, err := f.loop.Step(ctx, st); err != nil || again.Step != StepDone {
			t.Fatalf("step retried: %v at %s, want done", err, again.Step)
		}
	}
	restarted := *f.loop
	n, err := restarted.RecordQueued(ctx)
	if err != nil || n != 1 {
		t.Fatalf("RecordQueued = %d, %v; want 1", n, err)
	}
	if len(rec.got) != 1 || rec.got[0].RunID != "r" {
		t.Errorf("exchanges = %+v, want one, of run r", rec.got)
	}
	if n, err := restarted.RecordQueued(ctx); err != nil || n != 0 {
		t.Errorf("RecordQueued again = %d, %v; want nothing left", n, err)
	}
}

// The job refers to the exchange in the session's history: a session
// deleted (reset) before the recorder runs ends the job with nothing
// told, and the queue is empty after.
func TestRecorderSessionGone(t *testing.T) {
	f := newFixture(t, 5)
	rec := &recorder{}
	f.loop.Recorder = rec
	f.llm.script = append(f.llm.script, say("hello"))
	ctx := context.Background()
	st, err := f.loop.Enqueue(ctx, Input{RunID: "r", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	if err := f.loop.Store.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if n, err := f.loop.RecordQueued(ctx); err != nil || n != 0 {
		t.Fatalf("RecordQueued = %d, %v; want 0, nil", n, err)
	}
	if len(rec.got) != 0 {
		t.Errorf("exchanges = %+v, want none", rec.got)
	}
	if jobs, err := f.loop.Store.Jobs(ctx, RecordJob, 10); err != nil || len(jobs) != 0 {
		t.Errorf("jobs left = %+v, %v; want none", jobs, err)
	}
}
