package llm

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// Params are the settings of a call that an API client may choose, after
// OpenAI's request fields. The zero value leaves each to the provider. They
// are stored with a run (JSON), so that every step of it uses them.
type Params struct {
	// MaxTokens limits the completion when positive.
	MaxTokens        int             `json:"max_tokens,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	TopP             *float64        `json:"top_p,omitempty"`
	Stop             []string        `json:"stop,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	ResponseFormat   *ResponseFormat `json:"response_format,omitempty"`
	// ReasoningEffort is "minimal", "low", "medium" or "high" (or another
	// value a provider knows).
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// User identifies the end user to the provider (abuse monitoring).
	User string `json:"user,omitempty"`
	// Metadata are the client's key-value tags of the call.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Store asks the provider to keep the completion (OpenAI's stored
	// completions); providers without such a store ignore it.
	Store      *bool       `json:"store,omitempty"`
	ToolChoice *ToolChoice `json:"tool_choice,omitempty"`
	// ParallelToolCalls, when false, asks for at most one tool call per
	// reply.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
}

// The response format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// ResponseFormat asks for a reply in a format: plain text, any JSON object,
// or JSON that matches a schema.
type ResponseFormat struct {
	Type string `json:"type"`
	// Name, Description, Schema and Strict describe a json_schema format.
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// The tool choice modes.
const (
	ToolsAuto     = "auto"
	ToolsNone     = "none"
	ToolsRequired = "required"
	// ToolsFunction forces a call of the tool named by ToolChoice.Name.
	ToolsFunction = "function"
)

// ToolChoice says whether the model may, must or must not call tools, or
// which one it must call.
type ToolChoice struct {
	Mode string `json:"mode"`
	Name string `json:"name,omitempty"`
}

// Check reports a tool choice that a call offering tools cannot honour:
// an unknown mode, a tool required when none is offered, or a function
// that is not among them. A nil choice leaves it to the model.
func (c *ToolChoice) Check(tools []chat.ToolDef) error {
	if c == nil {
		return nil
	}
	switch c.Mode {
	case ToolsAuto, ToolsNone:
		return nil
	case ToolsRequired:
		if len(tools) == 0 {
			return errors.New("tool_choice requires a tool call, but no tools are offered")
		}
		return nil
	case ToolsFunction:
		for _, t := range tools {
			if t.Name == c.Name {
				return nil
			}
		}
		return fmt.Errorf("tool_choice names the function %q, which is not among the tools offered", c.Name)
	}
	return fmt.Errorf("unknown tool_choice mode %q", c.Mode)
}

// UnsupportedError is a parameter a provider cannot honour. It is a
// client's mistake (an HTTP 400), found before the call is made.
type UnsupportedError struct {
	Provider string
	// Param is the OpenAI name of the parameter, such as "seed" or
	// "response_format.type".
	Param  string
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("%s is not supported by the model provider %s: %s", e.Param, e.Provider, e.Reason)
}

// ParamsChecker is implemented by providers that cannot honour every
// Params, and by the wrappers that pass the question on.
type ParamsChecker interface {
	// CheckParams returns an *UnsupportedError for the first parameter of
	// p the provider cannot honour, or nil.
	CheckParams(p Params) error
}

// CheckParams asks provider whether it can honour p. A provider that does
// not implement ParamsChecker honours everything.
func CheckParams(provider Provider, p Params) error {
	if c, ok := provider.(ParamsChecker); ok {
		return c.CheckParams(p)
	}
	return nil
}

// IsUnsupported reports whether err is an *UnsupportedError.
func IsUnsupported(err error) bool {
	var u *UnsupportedError
	return errors.As(err, &u)
}

// CheckParams implements ParamsChecker for the wrapped provider.
func (r *retrier) CheckParams(p Params) error { return CheckParams(r.p, p) }

// CheckParams implements ParamsChecker for the wrapped provider.
func (b *breaker) CheckParams(p Params) error { return CheckParams(b.p, p) }

// CheckParams implements ParamsChecker: every provider of the chain must
// honour p, since any of them may answer.
func (c *chain) CheckParams(p Params) error {
	for _, pr := range c.ps {
		if err := CheckParams(pr, p); err != nil {
			return err
		}
	}
	return nil
}
