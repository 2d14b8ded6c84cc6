package agent

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// recordingReplier keeps what it is told, in order.
type recordingReplier struct{ told chan string }

func (r recordingReplier) Delta(st RunState, text string)         { r.told <- st.RunID + " delta " + text }
func (r recordingReplier) Approval(st RunState, _ store.Approval) { r.told <- st.RunID + " approval" }
func (r recordingReplier) Finish(st RunState, res Result) {
	r.told <- st.RunID + " finish " + res.Content
}

func drain(c chan string) []string {
	var out []string
	for {
		select {
		case s := <-c:
			out = append(out, s)
		default:
			return out
		}
	}
}

func TestBatchDeltas(t *testing.T) {
	rec := recordingReplier{told: make(chan string, 100)}
	b := BatchDeltas(rec, time.Hour, nil)
	a, c := RunState{RunID: "a"}, RunState{RunID: "c"}
	b.Delta(a, "He") // the first goes at once
	for _, s := range []string{"l", "lo", " wor", "ld"} {
		b.Delta(a, s)
	}
	b.Delta(c, "other run")
	b.Finish(a, Result{Content: "Hello world"})
	b.Approval(c, store.Approval{})
	want := []string{"a delta He", "c delta other run", "a delta llo world", "a finish Hello world", "c approval"}
	if diff := cmp.Diff(want, drain(rec.told)); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
}

// Text left pending goes out when the model's reply ends, through a
// Router too.
func TestFlushDeltas(t *testing.T) {
	rec := recordingReplier{told: make(chan string, 100)}
	r := Router{"ws": BatchDeltas(rec, time.Hour, nil), "http": rec}
	a := RunState{RunID: "a", Reply: Reply{Channel: "ws"}}
	r.Delta(a, "one")
	r.Delta(a, " two")
	r.FlushDeltas(a)
	r.FlushDeltas(RunState{RunID: "h", Reply: Reply{Channel: "http"}})
	if diff := cmp.Diff([]string{"a delta one", "a delta  two"}, drain(rec.told)); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
}

// Text left pending goes out when the interval ends.
func TestBatchDeltasTimer(t *testing.T) {
	rec := recordingReplier{told: make(chan string, 100)}
	b := BatchDeltas(rec, 5*time.Millisecond, nil)
	a := RunState{RunID: "a"}
	b.Delta(a, "one")
	b.Delta(a, " two")
	if got := <-rec.told; got != "a delta one" {
		t.Fatalf("first = %q", got)
	}
	select {
	case got := <-rec.told:
		if got != "a delta  two" {
			t.Errorf("second = %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pending text was not sent when the interval ended")
	}
}

// The think step flushes what a batching replier holds once the model's
// reply has ended, before the step returns.
func TestThinkFlushesDeltas(t *testing.T) {
	f := newFixture(t, 5)
	rec := recordingReplier{told: make(chan string, 100)}
	f.loop.Replier = BatchDeltas(rec, time.Hour, nil)
	f.llm.script = append(f.llm.script, say("first"))
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	// A delta told before this run's, still within the interval, holds
	// the next one back.
	f.loop.Replier.Delta(st, "warm-up ")
	// One step thinks and, the reply being an answer, finishes.
	if st, err = f.loop.Step(t.Context(), st); err != nil || st.Step != StepDone {
		t.Fatalf("step: %v at %s, want done", err, st.Step)
	}
	if diff := cmp.Diff([]string{st.RunID + " delta warm-up ", st.RunID + " delta first", st.RunID + " finish first"}, drain(rec.told)); diff != "" {
		t.Errorf("told after think (-want +got):\n%s", diff)
	}
}

// The manual clock calls what falls due in order of time, once, and not
// what was stopped.
func TestManualClock(t *testing.T) {
	c := NewManualClock(time.Unix(0, 0))
	var got []string
	at := func(name string) func() {
		return func() { got = append(got, fmt.Sprintf("%s@%s", name, c.Now().Sub(time.Unix(0, 0)))) }
	}
	c.AfterFunc(300*time.Millisecond, at("b"))
	c.AfterFunc(100*time.Millisecond, at("a"))
	stop := c.AfterFunc(200*time.Millisecond, at("stopped"))
	c.AfterFunc(900*time.Millisecond, at("late"))
	if !stop() || stop() {
		t.Errorf("stop reported wrongly")
	}
	c.Advance(250 * time.Millisecond)
	c.Advance(250 * time.Millisecond)
	if diff := cmp.Diff([]string{"a@100ms", "b@300ms"}, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if d := c.Now().Sub(time.Unix(0, 0)); d != 500*time.Millisecond {
		t.Errorf("now = %s, want 500ms", d)
	}
}

// Pieces streamed 40 ms apart on a manual clock are posted once per 250
// ms, whatever the machine's load.
func TestBatchDeltasOnClock(t *testing.T) {
	rec := recordingReplier{told: make(chan string, 100)}
	c := NewManualClock(time.Unix(0, 0))
	b := BatchDeltas(rec, 250*time.Millisecond, c)
	st := RunState{RunID: "r"}
	for i := range 20 {
		c.Advance(40 * time.Millisecond)
		b.Delta(st, strconv.Itoa(i%10))
	}
	b.(deltaFlusher).FlushDeltas(st)
	want := []string{"r delta 0", "r delta 123456", "r delta 789012", "r delta 345678", "r delta 9"}
	if diff := cmp.Diff(want, drain(rec.told)); diff != "" {
		t.Errorf("posts (-want +got):\n%s", diff)
	}
}
