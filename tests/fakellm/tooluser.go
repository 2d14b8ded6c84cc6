package fakellm

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// ToolUser is a default responder (see SetDefault) that acts like a model
// following its instructions, so that client libraries can run their tool
// loops against the fake:
//
//   - When the conversation ends with tool results, it answers
//     "tool results: " and their contents, joined by "; ".
//   - Otherwise it calls the offered tools that the last user message names
//     (as a whole word), in the order named: with the JSON object that
//     follows the name in the message as arguments ("get_weather
//     {"city": "Paris"}"), or else with the smallest arguments the tool's
//     schema allows (see Minimal). tool_choice "none" calls nothing; a
//     named function is called whether named or not; "required" calls the
//     first offered tool when the message names none; parallel_tool_calls
//     false keeps only the first call.
//   - With nothing to call it answers like Echo.
//
// A text answer honours response_format: json_schema answers the
// schema's Minimal value, json_object {"answer": text}.
func ToolUser(req Request) Reply {
	if results := trailingToolResults(req.Messages); len(results) > 0 {
		return answer(req, "tool results: "+strings.Join(results, "; "))
	}
	if calls := callsFor(req); len(calls) > 0 {
		return Reply{ToolCalls: calls}
	}
	return answer(req, Echo(req).Content)
}

// trailingToolResults returns the contents of the tool messages that end
// the conversation.
func trailingToolResults(msgs []Message) []string {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == "tool" {
		i--
	}
	var out []string
	for _, m := range msgs[i:] {
		out = append(out, m.Content)
	}
	return out
}

// answer is a text answer in the request's response format.
func answer(req Request, text string) Reply {
	f := req.Params.ResponseFormat
	switch {
	case f != nil && f.Type == "json_schema" && f.JSONSchema != nil:
		return Reply{Content: string(Minimal(f.JSONSchema.Schema))}
	case f != nil && f.Type == "json_object":
		b, _ := json.Marshal(map[string]string{"answer": text})
		return Reply{Content: string(b)}
	}
	return Reply{Content: text}
}

// callsFor chooses the tool calls of ToolUser.
func callsFor(req Request) []ToolCall {
	choice := req.Params.ToolChoice
	if len(req.ToolDefs) == 0 || choice.Mode == ToolChoiceNone {
		return nil
	}
	text := req.LastUser()
	if choice.Mode == ToolChoiceFunction {
		for _, t := range req.ToolDefs {
			if t.Name == choice.Name {
				_, args := mention(text, t)
				return []ToolCall{{Name: t.Name, Arguments: args}}
			}
		}
		return nil
	}
	type named struct {
		at   int
		call ToolCall
	}
	var found []named
	for _, t := range req.ToolDefs {
		if at, args := mention(text, t); at >= 0 {
			found = append(found, named{at, ToolCall{Name: t.Name, Arguments: args}})
		}
	}
	slices.SortStableFunc(found, func(a, b named) int { return a.at - b.at })
	var calls []ToolCall
	for _, f := range found {
		calls = append(calls, f.call)
	}
	if len(calls) == 0 && choice.Mode == ToolChoiceRequired {
		_, args := mention(text, req.ToolDefs[0])
		calls = []ToolCall{{Name: req.ToolDefs[0].Name, Arguments: args}}
	}
	if len(calls) > 1 && req.Params.ParallelToolCalls != nil && !*req.Params.ParallelToolCalls {
		calls = calls[:1]
	}
	return calls
}

// mention finds the first whole-word mention of the tool's name in text.
// It returns its position (-1 when there is none) and the arguments: the
// JSON object that follows the name, or the Minimal value of the tool's
// parameters.
func mention(text string, t Tool) (int, string) {
	args := string(Minimal(t.Parameters))
	if len(t.Parameters) == 0 {
		args = "{}"
	}
	for from := 0; ; {
		i := strings.Index(text[from:], t.Name)
		if i < 0 {
			return -1, args
		}
		at, end := from+i, from+i+len(t.Name)
		if (at == 0 || !nameByte(text[at-1])) && (end == len(text) || !nameByte(text[end])) {
			var obj map[string]any
			rest := strings.TrimLeft(text[end:], " \t\n")
			if strings.HasPrefix(rest, "{") && json.NewDecoder(strings.NewReader(rest)).Decode(&obj) == nil {
				b, _ := json.Marshal(obj)
				args = string(b)
			}
			return at, args
		}
		from = end
	}
}

func nameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// Minimal returns the smallest JSON value a JSON schema accepts, as a
// model answering in that format might: an object with every property,
// "" (or minLength letters), 0 (or the minimum), false, [] (or minItems
// elements), the first enum value, the const, the default or the first
// alternative of anyOf and oneOf; local $refs are followed. A schema that
// is not JSON gives null.
func Minimal(schema json.RawMessage) json.RawMessage {
	var s any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if err := d.Decode(&s); err != nil {
		return json.RawMessage("null")
	}
	b, err := json.Marshal(minimal(s, s, 0))
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func minimal(schema, root any, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > 32 {
		return nil
	}
	if ref, ok := s["$ref"].(string); ok {
		return minimal(resolve(root, ref), root, depth+1)
	}
	for _, k := range []string{"const", "default"} {
		if v, ok := s[k]; ok {
			return v
		}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			return minimal(alts[0], root, depth+1)
		}
	}
	typ := s["type"]
	if types, ok := typ.([]any); ok {
		typ = nil
		for _, t := range types {
			if t != "null" {
				typ = t
				break
			}
		}
	}
	if _, ok := s["properties"]; ok && typ == nil {
		typ = "object"
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			out[k] = minimal(p, root, depth+1)
		}
		return out
	case "array":
		out := []any{}
		for range count(s["minItems"]) {
			out = append(out, minimal(s["items"], root, depth+1))
		}
		return out
	case "string":
		return strings.Repeat("a", count(s["minLength"]))
	case "number", "integer":
		if m, ok := s["minimum"].(json.Number); ok {
			return m
		}
		if m, ok := s["exclusiveMinimum"].(json.Number); ok {
			if n, err := m.Int64(); err == nil {
				return n + 1
			}
			f, _ := m.Float64()
			return f + 1
		}
		return 0
	case "boolean":
		return false
	}
	return nil
}

// count reads a small non-negative count of a schema (minItems,
// minLength); anything else is 0.
func count(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1000 {
		return 0
	}
	return int(i)
}

// resolve follows a local JSON pointer ("#/$defs/x") from the root schema.
func resolve(root any, ref string) any {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	at := root
	for part := range strings.SplitSeq(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := at.(map[string]any)
		if !ok {
			return nil
		}
		at = m[part]
	}
	return at
}
