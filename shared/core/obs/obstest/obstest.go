// Package obstest is the conformance suite of obs.Sink: both adapters
// (prometheus locally, emf on AWS) must record the same metrics from the
// same events.
package obstest

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// Totals are what a sink recorded: for a counter, its value by
// `name{label=value,…}` (labels sorted by name); for a
// distribution, `name_count{…}` and `name_sum{…}`.
type Totals map[string]float64

// RunSink checks a sink against a run of events. newSink returns a fresh
// sink and a function that reads back what it recorded.
func RunSink(t *testing.T, newSink func(t *testing.T) (obs.Sink, func() Totals)) {
	sink, read := newSink(t)
	m := obs.Metrics{Sink: sink}
	turn := func(success bool, in, out int, ms int64) obs.Event {
		return obs.Event{Type: obs.TurnComplete, Attrs: []slog.Attr{slog.Int64("total_duration_ms", ms), slog.Int("iterations", 1),
			slog.Bool("success", success), slog.Int("prompt_tokens", in), slog.Int("completion_tokens", out)}}
	}
	tool := func(name string, success bool) obs.Event {
		return obs.Event{Type: obs.ToolCallResult, Attrs: []slog.Attr{slog.String("tool_name", name), slog.Int64("duration_ms", 3), slog.Bool("success", success)}}
	}
	llm := func(success bool, ms int64) obs.Event {
		return obs.Event{Type: obs.LLMResponse, Attrs: []slog.Attr{slog.Int64("duration_ms", ms), slog.Bool("success", success)}}
	}
	for _, ev := range []obs.Event{
		turn(true, 100, 20, 1500), turn(true, 50, 5, 500), turn(false, 10, 0, 250),
		tool("read_file", true), tool("read_file", true), tool("web_fetch", false),
		llm(true, 1200), llm(false, 300),
		{Type: obs.ApprovalRequested, Attrs: []slog.Attr{slog.String("tool_name", "write_file")}},
		{Type: obs.AgentStart}, {Type: obs.SessionEnd},
	} {
		m.Emit(ev)
	}
	want := Totals{
		`lambdaclaw_turns_total{outcome=ok}`:                        2,
		`lambdaclaw_turns_total{outcome=error}`:                     1,
		`lambdaclaw_tokens_total{direction=in}`:                     160,
		`lambdaclaw_tokens_total{direction=out}`:                    25,
		`lambdaclaw_tool_calls_total{outcome=ok,tool=read_file}`:    2,
		`lambdaclaw_tool_calls_total{outcome=error,tool=web_fetch}`: 1,
		`lambdaclaw_errors_total{kind=turn}`:                        1,
		`lambdaclaw_errors_total{kind=tool}`:                        1,
		`lambdaclaw_errors_total{kind=llm}`:                         1,
		`lambdaclaw_approval_waits_total{}`:                         1,
		`lambdaclaw_turn_seconds_count{}`:                           3,
		`lambdaclaw_turn_seconds_sum{}`:                             2.25,
		`lambdaclaw_llm_seconds_count{}`:                            2,
		`lambdaclaw_llm_seconds_sum{}`:                              1.5,
	}
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("recorded metrics (-want +got):\n%s", diff)
	}
}
