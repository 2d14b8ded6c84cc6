package llm

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

func TestToolChoiceCheck(t *testing.T) {
	tools := []chat.ToolDef{{Name: "get_time"}, {Name: "get_weather"}}
	tests := []struct {
		name   string
		choice *ToolChoice
		tools  []chat.ToolDef
		want   string // the error, "" for none
	}{
		{"no choice", nil, nil, ""},
		{"auto", &ToolChoice{Mode: ToolsAuto}, tools, ""},
		{"auto without tools", &ToolChoice{Mode: ToolsAuto}, nil, ""},
		{"none", &ToolChoice{Mode: ToolsNone}, tools, ""},
		{"none without tools", &ToolChoice{Mode: ToolsNone}, nil, ""},
		{"required", &ToolChoice{Mode: ToolsRequired}, tools, ""},
		{"required without tools", &ToolChoice{Mode: ToolsRequired}, nil, "tool_choice requires a tool call, but no tools are offered"},
		{"function offered", &ToolChoice{Mode: ToolsFunction, Name: "get_weather"}, tools, ""},
		{"function not offered", &ToolChoice{Mode: ToolsFunction, Name: "rm_rf"}, tools,
			`tool_choice names the function "rm_rf", which is not among the tools offered`},
		{"function without tools", &ToolChoice{Mode: ToolsFunction, Name: "get_time"}, nil,
			`tool_choice names the function "get_time", which is not among the tools offered`},
		{"unknown mode", &ToolChoice{Mode: "any"}, tools, `unknown tool_choice mode "any"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := tt.choice.Check(tt.tools); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

// checkingProvider is a provider that refuses a seed.
type checkingProvider struct{ *fakeProvider }

func (c checkingProvider) CheckParams(p Params) error {
	if p.Seed != nil {
		return &UnsupportedError{Provider: c.name, Param: "seed", Reason: "no seed here"}
	}
	return nil
}

// TestCheckParamsThroughWrappers checks that the retry, breaker and chain
// wrappers ask the providers they wrap, and that a chain refuses what any
// of its providers refuses, since any may answer.
func TestCheckParamsThroughWrappers(t *testing.T) {
	seed := int64(7)
	refusing := checkingProvider{newFake("strict")}
	lenient := newFake("lenient")
	tests := []struct {
		name     string
		provider Provider
		params   Params
		want     *UnsupportedError
	}{
		{"provider that checks nothing", lenient, Params{Seed: &seed}, nil},
		{"provider that refuses", refusing, Params{Seed: &seed}, &UnsupportedError{Provider: "strict", Param: "seed", Reason: "no seed here"}},
		{"provider that accepts", refusing, Params{MaxTokens: 5}, nil},
		{"retrier", WithRetry(refusing, 3, time.Millisecond, time.Millisecond), Params{Seed: &seed},
			&UnsupportedError{Provider: "strict", Param: "seed", Reason: "no seed here"}},
		{"breaker", WithBreaker(refusing, 3, time.Second), Params{Seed: &seed},
			&UnsupportedError{Provider: "strict", Param: "seed", Reason: "no seed here"}},
		{"chain, refused by its second", NewChain(lenient, WithRetry(refusing, 2, time.Millisecond, time.Millisecond)), Params{Seed: &seed},
			&UnsupportedError{Provider: "strict", Param: "seed", Reason: "no seed here"}},
		{"chain, accepted by all", NewChain(lenient, refusing), Params{MaxTokens: 5}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckParams(tt.provider, tt.params)
			var got *UnsupportedError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("CheckParams = %v (%T), want an *UnsupportedError", err, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CheckParams (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnsupportedError(t *testing.T) {
	err := fmt.Errorf("queueing the run: %w", &UnsupportedError{Provider: "bedrock", Param: "seed", Reason: "Converse has no seed"})
	if want := "queueing the run: seed is not supported by the model provider bedrock: Converse has no seed"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !IsUnsupported(err) || IsUnsupported(errors.New("seed")) {
		t.Error("IsUnsupported does not tell an UnsupportedError from another error")
	}
	if !IsUnsupported(&Error{Provider: "bedrock", Err: err}) {
		t.Error("IsUnsupported does not see an UnsupportedError a provider's error wraps")
	}
}
