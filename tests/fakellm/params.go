package fakellm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Tool is a function tool offered to the model, as the request defined it.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments, as sent (nil when
	// absent).
	Parameters json.RawMessage
	Strict     *bool
}

// Params are the settings of a request other than the model, the messages,
// the tools and streaming, as sent; a field is nil or empty when the
// request left it out. Their JSON names are OpenAI's, so a test can decode
// a client's request body into Params to compare it with what reached the
// fake.
type Params struct {
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stop                Stop              `json:"stop"`
	Seed                *int64            `json:"seed"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	N                   *int              `json:"n"`
	ResponseFormat      *ResponseFormat   `json:"response_format"`
	ReasoningEffort     string            `json:"reasoning_effort"`
	User                string            `json:"user"`
	Metadata            map[string]string `json:"metadata"`
	Store               *bool             `json:"store"`
	ToolChoice          ToolChoice        `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
}

// Stop is the stop sequences of a request, sent as one string or an array.
type Stop []string

// UnmarshalJSON accepts a string, an array of strings or null.
func (s *Stop) UnmarshalJSON(b []byte) error {
	var one *string
	if err := json.Unmarshal(b, &one); err == nil {
		if one != nil {
			*s = Stop{*one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("stop: expected a string or an array of strings")
	}
	*s = many
	return nil
}

// ResponseFormat is the requested format of the reply.
type ResponseFormat struct {
	// Type is "text", "json_object" or "json_schema".
	Type       string            `json:"type"`
	JSONSchema *JSONSchemaFormat `json:"json_schema"`
}

// JSONSchemaFormat describes the JSON a json_schema reply must match.
type JSONSchemaFormat struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// The tool choice modes: OpenAI's strings, and ToolChoiceFunction for the
// object that names the function to call.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
	ToolChoiceFunction = "function"
)

// ToolChoice is a request's tool_choice; the zero value is absent.
type ToolChoice struct {
	Mode string
	// Name is the function a ToolChoiceFunction choice forces.
	Name string
}

// UnmarshalJSON accepts "none", "auto", "required",
// {"type": "function", "function": {"name": …}} or null.
func (c *ToolChoice) UnmarshalJSON(b []byte) error {
	var mode *string
	if err := json.Unmarshal(b, &mode); err == nil {
		if mode != nil {
			*c = ToolChoice{Mode: *mode}
		}
		return nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(b, &named); err != nil || named.Type != "function" || named.Function.Name == "" {
		return errors.New(`tool_choice: expected "none", "auto", "required" or {"type": "function", "function": {"name": ...}}`)
	}
	*c = ToolChoice{Mode: ToolChoiceFunction, Name: named.Function.Name}
	return nil
}

// parseParams decodes the settings of a request body; the error names the
// field the real API would reject.
func parseParams(body []byte) (Params, string) {
	var p Params
	if err := json.Unmarshal(body, &p); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return p, fmt.Sprintf("Invalid type for '%s': %v", typeErr.Field, err)
		}
		return p, "Invalid request parameters: " + err.Error()
	}
	return p, ""
}

// validateParams applies the checks of the real API on the settings that
// a gateway may get wrong when it passes them on.
func validateParams(req Request) string {
	p := req.Params
	if p.Temperature != nil && (*p.Temperature < 0 || *p.Temperature > 2) {
		return fmt.Sprintf("Invalid 'temperature': expected a value between 0 and 2, but got %v instead.", *p.Temperature)
	}
	if p.TopP != nil && (*p.TopP < 0 || *p.TopP > 1) {
		return fmt.Sprintf("Invalid 'top_p': expected a value between 0 and 1, but got %v instead.", *p.TopP)
	}
	if len(p.Stop) > 4 {
		return fmt.Sprintf("Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length %d instead.", len(p.Stop))
	}
	if len(p.Metadata) > 0 && (p.Store == nil || !*p.Store) {
		return "The 'metadata' parameter is only allowed when 'store' is enabled."
	}
	switch p.ToolChoice.Mode {
	case "", ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
	case ToolChoiceFunction:
		if !hasTool(req.ToolDefs, p.ToolChoice.Name) {
			return fmt.Sprintf("Invalid value for 'tool_choice': function '%s' is not among the 'tools'.", p.ToolChoice.Name)
		}
	default:
		return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'. (tool_choice)", p.ToolChoice.Mode)
	}
	if p.ToolChoice.Mode != "" && len(req.ToolDefs) == 0 {
		return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
	}
	if p.ParallelToolCalls != nil && len(req.ToolDefs) == 0 {
		return "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified."
	}
	if f := p.ResponseFormat; f != nil {
		switch f.Type {
		case "text":
		case "json_object":
			if !mentionsJSON(req.Messages) {
				return "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
			}
		case "json_schema":
			if f.JSONSchema == nil || f.JSONSchema.Name == "" {
				return "Missing required parameter: 'response_format.json_schema.name'."
			}
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'text', 'json_object', and 'json_schema'. (response_format.type)", f.Type)
		}
	}
	return ""
}

func hasTool(tools []Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func mentionsJSON(msgs []Message) bool {
	for _, m := range msgs {
		if strings.Contains(strings.ToLower(m.Content), "json") {
			return true
		}
	}
	return false
}
