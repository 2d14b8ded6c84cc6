package agent

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// responsesInput is a run of the Responses API in session s: it ends when
// it hands the client calls of its tools.
func responsesInput(s string, msgs ...chat.Message) Input {
	in := clientInput(s, "")
	in.Messages = msgs
	in.Options.EndWithClientCalls = true
	return in
}

// The outcome of a run is what it told its client, also once it is done:
// its answer, or the client calls it ended with; nil while it works.
func TestResponsesOutcome(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth, say("Rain in Oslo."))
	st, err := f.loop.Enqueue(t.Context(), responsesInput("s", user("weather?")))
	if err != nil {
		t.Fatal(err)
	}
	if _, res, err := f.loop.Outcome(t.Context(), st.RunID); err != nil || res != nil {
		t.Errorf("outcome of a queued run = %+v, %v; want none yet", res, err)
	}
	first := f.runToEnd(t, st)
	_, res, err := f.loop.Outcome(t.Context(), first.RunID)
	if err != nil {
		t.Fatal(err)
	}
	// The arguments are those history keeps: the run is over, and the
	// raw ones went with it.
	want := &Result{Content: "Checking.", ToolCalls: []chat.ToolCall{{ID: "c2", Name: "get_weather", Arguments: `{"city":"Oslo","key":"[REDACTED]"}`}},
		Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}, FinishReason: "tool_calls"}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("outcome of a run that ended with client calls (-want +got):\n%s", diff)
	}

	st, err = f.loop.Enqueue(t.Context(), responsesInput("s", chat.Message{Role: chat.Tool, ToolCallID: "c2", Content: "rain"}))
	if err != nil {
		t.Fatal(err)
	}
	second := f.runToEnd(t, st)
	_, res, err = f.loop.Outcome(t.Context(), second.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&Result{Content: "Rain in Oslo.", Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 2}, FinishReason: "stop"}, res); diff != "" {
		t.Errorf("outcome of the next run (-want +got):\n%s", diff)
	}
	// The first run's outcome has not changed.
	if _, again, _ := f.loop.Outcome(t.Context(), first.RunID); !cmp.Equal(want, again) {
		t.Errorf("outcome of the first run changed to %+v", again)
	}
	if _, _, err := f.loop.Outcome(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("outcome of an unknown run: %v, want ErrNotFound", err)
	}
}

// A run has its outcome once it reaches its finish step, which tells its
// client before it records the run as done: whoever the client tells
// next finds the answer there.
func TestResponsesOutcomeAtFinish(t *testing.T) {
	for _, tt := range []struct {
		name   string
		script func(llm.Request) (llm.Response, error)
		want   *Result
	}{
		{"an answer", say("hi"), &Result{Content: "hi", Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 2}, FinishReason: "stop"}},
		{"client calls", callBoth, &Result{Content: "Checking.", ToolCalls: []chat.ToolCall{{ID: "c2", Name: "get_weather", Arguments: weatherArgs}},
			Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}, FinishReason: "tool_calls"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.llm.script = append(f.llm.script, tt.script)
			st, err := f.loop.Enqueue(t.Context(), responsesInput("s", user("hi")))
			if err != nil {
				t.Fatal(err)
			}
			for st.Step != StepFinish && st.Step != StepDone {
				if st, err = f.loop.Step(t.Context(), st); err != nil {
					t.Fatal(err)
				}
			}
			_, res, err := f.loop.Outcome(t.Context(), st.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("outcome at finish (-want +got):\n%s", diff)
			}
		})
	}
}

// A failed run's outcome is its error; a run parked for a person's
// approval has its prompt as outcome until it is answered.
func TestResponsesOutcomeFailedAndParked(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, fail(errors.New("boom")))
	st, err := f.loop.Enqueue(t.Context(), responsesInput("s", user("hi")))
	if err != nil {
		t.Fatal(err)
	}
	st = f.runToEnd(t, st)
	_, res, err := f.loop.Outcome(t.Context(), st.RunID)
	if err != nil || res == nil || res.ErrorCode != CodeUpstream || res.Error == "" || res.Content != "" {
		t.Errorf("outcome of a failed run = %+v, %v; want its upstream error", res, err)
	}

	f.echo.policy = tool.Policy{Effect: tool.External}
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"x"}`))
	in := responsesInput("s2", user("echo x"))
	in.Autonomy = tool.Supervised
	st, err = f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	for !st.Parked() && st.Step != StepDone {
		if st, err = f.loop.Step(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	if !st.Parked() {
		t.Fatalf("the run did not park for an approval: %+v", st)
	}
	got, res, err := f.loop.Outcome(t.Context(), st.RunID)
	if err != nil || res == nil || res.Content == "" || res.FinishReason != "stop" || !got.Parked() {
		t.Errorf("outcome of a parked run = %+v, %+v, %v; want its prompt", got, res, err)
	}
}

// Thread is the conversation up to a run, and says whether a later run
// exists.
func TestResponsesThread(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, say("one"), say("two"))
	var seqs []int64
	for _, text := range []string{"first", "second"} {
		st, err := f.loop.Enqueue(t.Context(), responsesInput("s", user(text)))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, f.runToEnd(t, st).Seq)
	}
	tests := []struct {
		seq    int64
		want   []chat.Message
		latest bool
	}{
		{seqs[0], []chat.Message{user("first"), {Role: chat.Assistant, Content: "one"}}, false},
		{seqs[1], []chat.Message{user("first"), {Role: chat.Assistant, Content: "one"}, user("second"), {Role: chat.Assistant, Content: "two"}}, true},
	}
	for _, tt := range tests {
		got, latest, err := f.loop.Thread(t.Context(), "s", tt.seq)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" || latest != tt.latest {
			t.Errorf("thread up to %d (latest %v, want %v) (-want +got):\n%s", tt.seq, latest, tt.latest, diff)
		}
	}
	if _, _, err := f.loop.Thread(t.Context(), "nope", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("thread of an unknown session: %v, want ErrNotFound", err)
	}
}
