package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// Limits of the Converse API reference.
const (
	// maxStopSequences is the most stop sequences inferenceConfig takes.
	maxStopSequences = 2500
	// maxMetadata is the most entries requestMetadata takes, and
	// maxMetadataText the longest key or value.
	maxMetadata     = 16
	maxMetadataText = 256
	// metadataChars are the characters of requestMetadata's keys and
	// values besides letters, digits and white space.
	metadataChars = ":_@$#=/+,-."
)

// efforts are the effort levels of Converse's outputConfig. OpenAI's low,
// medium, high and xhigh mean the same; its minimal and none have no
// equivalent.
var efforts = []string{"low", "medium", "high", "xhigh", "max"}

// metadataUser is the key of requestMetadata that carries the end user.
const metadataUser = "user"

var _ llm.ParamsChecker = (*Converse)(nil)

// CheckParams implements llm.ParamsChecker: it refuses the parameters
// Converse has no equivalent for (a seed, penalties, the json_object
// format, reasoning efforts other than its own), values out of Bedrock's
// ranges, and metadata its requestMetadata cannot carry.
func (c *Converse) CheckParams(p llm.Params) error {
	if param, reason := unsupported(p); param != "" {
		return &llm.UnsupportedError{Provider: c.name, Param: param, Reason: reason}
	}
	return nil
}

// unsupported returns the first parameter of p Converse cannot honour,
// by its OpenAI name, and why; "" when there is none. Penalties of zero
// are the default, and so honoured by sending nothing.
func unsupported(p llm.Params) (param, reason string) {
	switch {
	case p.Seed != nil:
		return "seed", "Converse takes no seed"
	case p.PresencePenalty != nil && *p.PresencePenalty != 0:
		return "presence_penalty", "Converse has no presence penalty"
	case p.FrequencyPenalty != nil && *p.FrequencyPenalty != 0:
		return "frequency_penalty", "Converse has no frequency penalty"
	case !unitRange(p.Temperature):
		return "temperature", "Bedrock takes a temperature from 0 to 1"
	case !unitRange(p.TopP):
		return "top_p", "Bedrock takes a top_p from 0 to 1"
	case len(p.Stop) > maxStopSequences:
		return "stop", fmt.Sprintf("Bedrock takes at most %d stop sequences", maxStopSequences)
	case slices.Contains(p.Stop, ""):
		return "stop", "Bedrock takes no empty stop sequence"
	case p.ReasoningEffort != "" && !slices.Contains(efforts, p.ReasoningEffort):
		return "reasoning_effort", "Converse's effort levels are low, medium, high, xhigh and max"
	}
	if f := p.ResponseFormat; f != nil {
		switch f.Type {
		case llm.FormatText:
		case llm.FormatJSONSchema:
			if len(bytes.TrimSpace(f.Schema)) == 0 {
				return "response_format.json_schema.schema", "Bedrock needs the schema of a json_schema format"
			}
		case llm.FormatJSONObject:
			return "response_format.type", "Converse has no json_object format, only json_schema: give the reply's schema"
		default:
			return "response_format.type", fmt.Sprintf("unknown format %q", f.Type)
		}
	}
	return unsupportedMetadata(p)
}

// unitRange reports whether v is unset or within [0, 1].
func unitRange(v *float64) bool { return v == nil || (*v >= 0 && *v <= 1) }

// unsupportedMetadata checks that requestMetadata can carry the metadata
// and the user, keys in order.
func unsupportedMetadata(p llm.Params) (param, reason string) {
	if p.User != "" {
		if own, ok := p.Metadata[metadataUser]; ok && own != p.User {
			return "user", `Bedrock carries the user in requestMetadata["user"], which the metadata already sets`
		}
		if !metadataText(p.User, 0) {
			return "user", "Bedrock carries the user in requestMetadata, whose values are up to 256 letters, digits, spaces and " + metadataChars
		}
	}
	if len(requestMetadata(p)) > maxMetadata {
		return "metadata", fmt.Sprintf("Bedrock's requestMetadata holds at most %d entries, the user included", maxMetadata)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Metadata)) {
		if !metadataText(k, 1) {
			return "metadata", fmt.Sprintf("key %q: Bedrock takes keys of 1 to 256 letters, digits, spaces and %s", k, metadataChars)
		}
		if !metadataText(p.Metadata[k], 0) {
			return "metadata", fmt.Sprintf("the value of %q: Bedrock takes values of up to 256 letters, digits, spaces and %s", k, metadataChars)
		}
	}
	return "", ""
}

// metadataText reports whether s is a key or value of requestMetadata at
// least minLen long: at most maxMetadataText of its characters.
func metadataText(s string, minLen int) bool {
	if len(s) < minLen || len(s) > maxMetadataText {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		ok := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
			strings.IndexByte(" \t\n\v\f\r"+metadataChars, b) >= 0
		if !ok {
			return false
		}
	}
	return true
}

// requestMetadata is the requestMetadata of a call: the client's
// metadata, and the user under "user". Nil when there is neither.
func requestMetadata(p llm.Params) map[string]string {
	if len(p.Metadata) == 0 && p.User == "" {
		return nil
	}
	m := maps.Clone(p.Metadata)
	if m == nil {
		m = map[string]string{}
	}
	if p.User != "" {
		m[metadataUser] = p.User
	}
	return m
}

// setParams sets on in what Converse carries of p, which CheckParams
// accepted: the inference settings, the output format and effort, and
// the request metadata. The tool choice goes with the tools (see
// converseInput). A json_schema format is always strict on Bedrock,
// whatever its strict says.
func setParams(in *converseRequest, p llm.Params) error {
	var ic inferenceConfig
	if p.MaxTokens > 0 {
		n := int32(min(p.MaxTokens, math.MaxInt32))
		ic.MaxTokens = &n
	}
	if p.Temperature != nil {
		t := float32(*p.Temperature)
		ic.Temperature = &t
	}
	if p.TopP != nil {
		t := float32(*p.TopP)
		ic.TopP = &t
	}
	ic.StopSequences = p.Stop
	if ic.MaxTokens != nil || ic.Temperature != nil || ic.TopP != nil || len(ic.StopSequences) > 0 {
		in.InferenceConfig = &ic
	}
	var out outputConfig
	if f := p.ResponseFormat; f != nil && f.Type == llm.FormatJSONSchema {
		var schema bytes.Buffer
		if err := json.Compact(&schema, f.Schema); err != nil {
			return fmt.Errorf("response_format: the schema is not valid JSON: %w", err)
		}
		out.TextFormat = &outputFormat{Type: "json_schema"}
		out.TextFormat.Structure.JSONSchema = jsonSchemaDefinition{Schema: schema.String(), Name: f.Name, Description: f.Description}
	}
	out.Effort = p.ReasoningEffort
	if out.TextFormat != nil || out.Effort != "" {
		in.OutputConfig = &out
	}
	in.RequestMetadata = requestMetadata(p)
	return nil
}

// converseToolChoice is c in Converse's terms: "required" is any tool, a
// function is that tool. "none" has no equivalent: the tools are not
// offered at all (see converseInput).
func converseToolChoice(c *llm.ToolChoice) *toolChoice {
	switch {
	case c == nil:
		return nil
	case c.Mode == llm.ToolsRequired:
		return &toolChoice{Any: &struct{}{}}
	case c.Mode == llm.ToolsFunction:
		return &toolChoice{Tool: &specificTool{Name: c.Name}}
	}
	return &toolChoice{Auto: &struct{}{}}
}

// noTool is the one tool offered when the tools are withheld from a
// conversation that holds tool calls: Bedrock refuses toolUse and
// toolResult blocks without a toolConfig. Its calls are dropped from the
// reply (see keepCalls).
var noTool = func() tool {
	t := tool{ToolSpec: toolSpecification{Name: "no_tool_available", Description: "No tool can be called now. Do not call this; answer in text."}}
	t.ToolSpec.InputSchema.JSON = emptyObjectSchema
	return t
}()

// hasToolBlocks reports whether a conversation holds toolUse or
// toolResult blocks.
func hasToolBlocks(msgs []message) bool {
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.ToolUse != nil || b.ToolResult != nil {
				return true
			}
		}
	}
	return false
}

// keepCalls drops the tool calls a reply must not have: any when the
// tool choice is "none" or only noTool was offered, and every call after
// the first when p asks for one at a time, which Converse cannot ask of
// the model. A reply left without its calls finishes with "stop".
func keepCalls(resp *llm.Response, in *converseRequest, p llm.Params) {
	calls := resp.Message.ToolCalls
	none := p.ToolChoice != nil && p.ToolChoice.Mode == llm.ToolsNone
	switch {
	case len(calls) == 0:
		return
	case none || in.ToolConfig != nil && in.ToolConfig.withheld:
		resp.Message.ToolCalls = nil
		if resp.FinishReason == "tool_calls" {
			resp.FinishReason = "stop"
		}
	case p.ParallelToolCalls != nil && !*p.ParallelToolCalls:
		resp.Message.ToolCalls = calls[:1]
	}
}
