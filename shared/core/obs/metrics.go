package obs

import (
	"log/slog"
	"time"
)

// The metrics derived from the events, the same locally (Prometheus) and
// on AWS (CloudWatch embedded metric format). Durations are in seconds.
const (
	// MetricTurns counts finished runs, by outcome (ok or error).
	MetricTurns = "lambdaclaw_turns_total"
	// MetricTokens counts the model's tokens, by direction (in or out).
	MetricTokens = "lambdaclaw_tokens_total"
	// MetricToolCalls counts tool calls, by tool and outcome.
	MetricToolCalls = "lambdaclaw_tool_calls_total"
	// MetricErrors counts failures, by kind (turn, llm or tool).
	MetricErrors = "lambdaclaw_errors_total"
	// MetricApprovalWaits counts tool calls that waited for a person.
	MetricApprovalWaits = "lambdaclaw_approval_waits_total"
	// MetricTurnSeconds is the time of a run, from its start to its
	// answer.
	MetricTurnSeconds = "lambdaclaw_turn_seconds"
	// MetricLLMSeconds is the time of a model call.
	MetricLLMSeconds = "lambdaclaw_llm_seconds"
)

// MetricDef describes one metric: a counter, or a distribution of
// values, and the names of its labels.
type MetricDef struct {
	Name, Help   string
	Distribution bool
	Labels       []string
}

// MetricDefs are the metrics Metrics records.
var MetricDefs = []MetricDef{
	{Name: MetricTurns, Help: "Finished runs, by outcome (ok or error).", Labels: []string{"outcome"}},
	{Name: MetricTokens, Help: "Tokens of the model calls, by direction (in or out).", Labels: []string{"direction"}},
	{Name: MetricToolCalls, Help: "Tool calls, by tool and outcome.", Labels: []string{"tool", "outcome"}},
	{Name: MetricErrors, Help: "Failures, by kind (turn, llm or tool).", Labels: []string{"kind"}},
	{Name: MetricApprovalWaits, Help: "Tool calls that waited for a person's approval."},
	{Name: MetricTurnSeconds, Help: "Time of a run from its start to its answer, in seconds.", Distribution: true},
	{Name: MetricLLMSeconds, Help: "Time of a model call, in seconds.", Distribution: true},
}

// Label is one dimension of an observation.
type Label struct{ Name, Value string }

// Sink records metric observations: counters grow by Add, distributions
// take each Observe. Implementations must be safe for concurrent use.
type Sink interface {
	Add(name string, v float64, labels ...Label)
	Observe(name string, v float64, labels ...Label)
}

// Metrics turns events into observations of Sink. Metrics.Emit never
// blocks for long: the sinks only update memory or write one line.
type Metrics struct{ Sink Sink }

// Emit records what ev says of the metrics.
func (m Metrics) Emit(ev Event) {
	if m.Sink == nil {
		return
	}
	a := attrs(ev.Attrs)
	switch ev.Type {
	case TurnComplete:
		outcome := a.outcome()
		m.Sink.Add(MetricTurns, 1, Label{"outcome", outcome})
		if outcome == "error" {
			m.Sink.Add(MetricErrors, 1, Label{"kind", "turn"})
		}
		m.Sink.Add(MetricTokens, float64(a.int("prompt_tokens")), Label{"direction", "in"})
		m.Sink.Add(MetricTokens, float64(a.int("completion_tokens")), Label{"direction", "out"})
		m.Sink.Observe(MetricTurnSeconds, a.seconds("total_duration_ms"))
	case LLMResponse:
		if a.outcome() == "error" {
			m.Sink.Add(MetricErrors, 1, Label{"kind", "llm"})
		}
		m.Sink.Observe(MetricLLMSeconds, a.seconds("duration_ms"))
	case ToolCallResult:
		outcome := a.outcome()
		m.Sink.Add(MetricToolCalls, 1, Label{"tool", a.str("tool_name")}, Label{"outcome", outcome})
		if outcome == "error" {
			m.Sink.Add(MetricErrors, 1, Label{"kind", "tool"})
		}
	case ApprovalRequested:
		m.Sink.Add(MetricApprovalWaits, 1)
	}
}

// attrs reads an event's attributes by key.
type attrs []slog.Attr

func (a attrs) get(key string) (slog.Value, bool) {
	for _, x := range a {
		if x.Key == key {
			return x.Value.Resolve(), true
		}
	}
	return slog.Value{}, false
}

func (a attrs) str(key string) string {
	v, _ := a.get(key)
	if v.Kind() != slog.KindString {
		return ""
	}
	return v.String()
}

func (a attrs) int(key string) int64 {
	v, ok := a.get(key)
	if !ok || v.Kind() != slog.KindInt64 {
		return 0
	}
	return v.Int64()
}

func (a attrs) seconds(key string) float64 {
	return (time.Duration(a.int(key)) * time.Millisecond).Seconds()
}

// outcome is "ok" unless the event's success attribute is false.
func (a attrs) outcome() string {
	if v, ok := a.get("success"); ok && v.Kind() == slog.KindBool && !v.Bool() {
		return "error"
	}
	return "ok"
}
