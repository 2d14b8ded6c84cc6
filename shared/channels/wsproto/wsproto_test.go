package wsproto

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

func TestDecode(t *testing.T) {
	long := strings.Repeat("x", MaxField+1)
	for _, tc := range []struct {
		in, code, id string
	}{
		{in: `{"type":"message","id":"c1","text":"hi"}`},
		{in: `{"type":"reset","id":"c2"}`},
		{in: `nope`, code: "invalid_json"},
		{in: `{"type":"message","id":"` + long + `","text":"hi"}`, code: "invalid_message"},
		{in: `{"type":"message","id":"c3","user":"` + long + `","text":"hi"}`, code: "invalid_message", id: "c3"},
		{in: `{"type":"message","id":"c4","text":" "}`, code: "invalid_message", id: "c4"},
		{in: `{"type":"message","id":"c7","user":"a\tb","text":"hi"}`, code: "invalid_message", id: "c7"},
		{in: `{"type":"reset","id":"c8","user":"a\u0000b"}`, code: "invalid_message", id: "c8"},
		{in: `{"type":"message","id":"c9","user":"Zoë 日本","text":"hi"}`},
		{in: `{"id":"c5"}`, code: "unknown_type", id: "c5"},
		{in: `{"type":"dance","id":"c6"}`, code: "unknown_type", id: "c6"},
	} {
		_, bad := Decode([]byte(tc.in))
		switch {
		case tc.code == "" && bad != nil:
			t.Errorf("%s: %+v", tc.in, bad)
		case tc.code != "" && (bad == nil || bad.Code != tc.code || bad.ID != tc.id || bad.Type != TypeError):
			t.Errorf("%.60s: %+v, want code %s id %q", tc.in, bad, tc.code, tc.id)
		}
	}
}

func TestEventFrame(t *testing.T) {
	encode := func(ev agent.Event) string {
		f, ok := EventFrame(ev)
		if !ok {
			return ""
		}
		b, _ := json.Marshal(f)
		return string(b)
	}
	got := []string{
		encode(agent.Event{RunID: "r", Delta: "He"}),
		encode(agent.Event{RunID: "r", Approval: &store.Approval{ID: "a", Tools: []string{"t"}, Prompt: "ok?"}}),
		encode(agent.Event{RunID: "r", Result: &agent.Result{Content: "Hello", Usage: chat.Usage{PromptTokens: 2, CompletionTokens: 3}}}),
		encode(agent.Event{RunID: "r", Result: &agent.Result{Error: "the model provider failed to answer; try again in a moment (run r)", ErrorCode: agent.CodeUpstream}}),
		encode(agent.Event{RunID: "r"}),
	}
	want := []string{
		`{"type":"delta","run_id":"r","text":"He"}`,
		`{"type":"approval","run_id":"r","approval_id":"a","tools":["t"],"prompt":"ok?"}`,
		`{"type":"final","run_id":"r","text":"Hello","usage":{"prompt_tokens":2,"completion_tokens":3,"total_tokens":5}}`,
		`{"type":"error","run_id":"r","code":"upstream_error","message":"the model provider failed to answer; try again in a moment (run r)"}`,
		``,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	first, again, other := RunID("k", "u", "a", "c1"), RunID("k", "u", "a", "c1"), RunID("k", "u", "a", "c2")
	if first != again || first == other {
		t.Error("RunID is not a function of its inputs")
	}
}
