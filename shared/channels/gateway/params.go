package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// paramError is a request field the gateway refuses, with OpenAI's
// "param" naming it and an error code: invalid_value, invalid_type or
// unknown_parameter.
type paramError struct{ param, code, msg string }

func (e *paramError) Error() string { return e.msg }

func badParam(param, format string, args ...any) error {
	return &paramError{param, "invalid_value", fmt.Sprintf(format, args...)}
}

// writeRequestError answers a refused request: 400 in OpenAI's shape
// (413 for a part over its limit), naming the field and its code when
// the error does, code otherwise.
func writeRequestError(w http.ResponseWriter, code string, err error) {
	e := apiError{Message: err.Error(), Type: "invalid_request_error", Code: code}
	status := http.StatusBadRequest
	var pe *paramError
	if errors.As(err, &pe) {
		e.Param, e.Code = &pe.param, pe.code
		if pe.code == "request_too_large" {
			status = http.StatusRequestEntityTooLarge
		}
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{e})
}

// openRequest reads a request to an agent (a chat completion, a
// response) into v, whose model field is model, and returns the agent the
// model names, which the key must be allowed. When it is false it has
// answered the client.
func (g *Gateway) openRequest(w http.ResponseWriter, r *http.Request, v any, model *string) (string, bool) {
	body, ok := g.readBody(w, r)
	if !ok {
		return "", false
	}
	if err := decodeStrict(body, v); err != nil {
		writeRequestError(w, "invalid_json", err)
		return "", false
	}
	if *model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_model", "model is required: name an agent, e.g. \"default\"")
		return "", false
	}
	name, ok := g.agentFor(keyOf(r), *model)
	if !ok {
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("the model %q does not exist or this key may not use it", *model))
	}
	return name, ok
}

// decodeStrict decodes body into v, refusing fields v does not have, as
// OpenAI does ("Unrecognized request argument supplied").
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return &paramError{name, "unknown_parameter", "Unrecognized request argument supplied: " + name}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return &paramError{te.Field, "invalid_type", fmt.Sprintf("%s must be of type %s, not %s", te.Field, te.Type, te.Value)}
		}
		return fmt.Errorf("the request body is not valid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("the request body is not valid JSON: data after the object")
	}
	return nil
}

// set reports whether a raw JSON field was sent with a value (not absent
// or null).
func set(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// Limits of OpenAI's API that the gateway enforces the same way.
const (
	maxTools         = 128
	maxStops         = 4
	maxMetadata      = 16
	maxMetadataKey   = 64
	maxMetadataValue = 512
)

var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// requestTool is a tool of the client in the Chat Completions shape.
type requestTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// functionTool checks one client function tool, field names prefixed
// with at.
func functionTool(at, name, description string, params json.RawMessage, strict *bool) (chat.ToolDef, error) {
	if !toolName().MatchString(name) {
		return chat.ToolDef{}, badParam(at+"name", "%sname must be 1 to 64 letters, digits, underscores or dashes; got %q", at, name)
	}
	params = bytes.TrimSpace(params)
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{"type":"object","properties":{}}`)
	} else if params[0] != '{' {
		return chat.ToolDef{}, badParam(at+"parameters", "%sparameters must be a JSON Schema object", at)
	}
	return chat.ToolDef{Name: name, Description: description, Parameters: params, Strict: strict}, nil
}

// chatTools converts the tools of a chat completion request.
func chatTools(tools []requestTool) ([]chat.ToolDef, error) {
	if len(tools) > maxTools {
		return nil, badParam("tools", "tools may list at most %d tools, not %d", maxTools, len(tools))
	}
	var out []chat.ToolDef
	for i, t := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" || t.Function == nil {
			return nil, badParam(at+".type", "%s.type must be \"function\" with a function object; other tool types are not supported", at)
		}
		d, err := functionTool(at+".function.", t.Function.Name, t.Function.Description, t.Function.Parameters, t.Function.Strict)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// toolChoice reads tool_choice: "auto", "none", "required", or a named
// function, {"type":"function","function":{"name":...}} as Chat
// Completions sends it or {"type":"function","name":...} as the Responses
// API does.
func toolChoice(raw json.RawMessage) (*llm.ToolChoice, error) {
	if !set(raw) {
		return nil, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		switch mode {
		case llm.ToolsAuto, llm.ToolsNone, llm.ToolsRequired:
			return &llm.ToolChoice{Mode: mode}, nil
		}
		return nil, badParam("tool_choice", "tool_choice must be \"auto\", \"none\", \"required\" or a function; got %q", mode)
	}
	var named struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	name := ""
	if err := json.Unmarshal(raw, &named); err == nil && named.Type == "function" {
		name = cmp.Or(named.Function.Name, named.Name)
	}
	if name == "" {
		return nil, badParam("tool_choice", `tool_choice must be "auto", "none", "required" or {"type":"function","function":{"name":"..."}}`)
	}
	return &llm.ToolChoice{Mode: llm.ToolsFunction, Name: name}, nil
}

// stopList reads stop: a string or an array of at most four strings.
func stopList(raw json.RawMessage) ([]string, error) {
	if !set(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badParam("stop", "stop must be a string or an array of strings")
	}
	if len(many) > maxStops {
		return nil, badParam("stop", "stop may have at most %d sequences, not %d", maxStops, len(many))
	}
	return many, nil
}

// requestFormat is response_format in the Chat Completions shape.
type requestFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// format converts response_format.
func (f *requestFormat) format() (*llm.ResponseFormat, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case llm.FormatText:
		return nil, nil
	case llm.FormatJSONObject:
		return &llm.ResponseFormat{Type: llm.FormatJSONObject}, nil
	case llm.FormatJSONSchema:
		s := f.JSONSchema
		if s == nil {
			return nil, badParam("response_format.json_schema", "response_format of type json_schema needs json_schema")
		}
		return jsonSchemaFormat("response_format.json_schema.", s.Name, s.Description, s.Schema, s.Strict)
	}
	return nil, badParam("response_format.type", "response_format.type must be text, json_object or json_schema; got %q", f.Type)
}

// jsonSchemaFormat checks a json_schema response format, field names
// prefixed with at.
func jsonSchemaFormat(at, name, description string, schema json.RawMessage, strict *bool) (*llm.ResponseFormat, error) {
	if !toolName().MatchString(name) {
		return nil, badParam(at+"name", "%sname must be 1 to 64 letters, digits, underscores or dashes; got %q", at, name)
	}
	schema = bytes.TrimSpace(schema)
	if len(schema) == 0 || schema[0] != '{' {
		return nil, badParam(at+"schema", "%sschema must be a JSON Schema object", at)
	}
	return &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: name, Description: description, Schema: schema, Strict: strict}, nil
}

// checkParams checks the ranges OpenAI documents for each parameter.
func checkParams(p llm.Params) error {
	ranges := []struct {
		name     string
		v        *float64
		min, max float64
	}{
		{"temperature", p.Temperature, 0, 2},
		{"top_p", p.TopP, 0, 1},
		{"presence_penalty", p.PresencePenalty, -2, 2},
		{"frequency_penalty", p.FrequencyPenalty, -2, 2},
	}
	for _, r := range ranges {
		if r.v != nil && (*r.v < r.min || *r.v > r.max) {
			return badParam(r.name, "%s must be between %g and %g; got %g", r.name, r.min, r.max, *r.v)
		}
	}
	if p.MaxTokens < 0 {
		return badParam("max_tokens", "max_tokens must be at least 1")
	}
	switch p.ReasoningEffort {
	case "", "none", "minimal", "low", "medium", "high", "xhigh":
	default:
		return badParam("reasoning_effort", "reasoning_effort must be none, minimal, low, medium, high or xhigh; got %q", p.ReasoningEffort)
	}
	if len(p.Metadata) > maxMetadata {
		return badParam("metadata", "metadata may have at most %d pairs, not %d", maxMetadata, len(p.Metadata))
	}
	for k, v := range p.Metadata {
		if len(k) > maxMetadataKey || len(v) > maxMetadataValue {
			return badParam("metadata", "metadata keys may be %d characters long and values %d; %q is longer", maxMetadataKey, maxMetadataValue, k)
		}
	}
	return nil
}

// maxTokens reads max_tokens and max_completion_tokens (its newer name);
// when both are set they must agree.
func maxTokens(old, newer *int) (int, error) {
	switch {
	case old != nil && newer != nil && *old != *newer:
		return 0, badParam("max_completion_tokens", "max_tokens and max_completion_tokens differ; send one of them")
	case newer != nil:
		old = newer
	case old == nil:
		return 0, nil
	}
	if *old < 1 {
		return 0, badParam("max_tokens", "max_tokens must be at least 1; got %d", *old)
	}
	return *old, nil
}
