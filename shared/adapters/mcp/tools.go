package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Separator joins a server's name and its tool's name.
const Separator = "__"

// maxName is the longest tool name model APIs take (OpenAI's
// ^[a-zA-Z0-9_-]{1,64}$).
const maxName = 64

// maxDescription and maxSchema bound what a server's tool definition
// puts in every model request.
const (
	maxDescription = 2048
	maxSchema      = 64 << 10
)

var invalidNameChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9_-]`) })

// ToolName is the name the model sees for the tool of a server:
// <server>__<tool>, every character outside [a-zA-Z0-9_-] replaced by
// "_", and a name over 64 characters cut to 55 followed by "_" and 8 hex
// digits of the SHA-256 of the unsanitised name, so the same tool always
// gets the same name.
func ToolName(server, remote string) string {
	full := server + Separator + remote
	name := invalidNameChars().ReplaceAllString(full, "_")
	if len(name) > maxName {
		sum := sha256.Sum256([]byte(full))
		name = name[:maxName-9] + "_" + hex.EncodeToString(sum[:4])
	}
	return name
}

// Tool is one tool of an MCP server, as an agent's tool.
type Tool struct {
	srv    *server
	remote string
	def    chat.ToolDef
	policy tool.Policy
	// ReadOnly is the server's readOnlyHint.
	ReadOnly bool
}

// Remote is the tool's name on its server.
func (t *Tool) Remote() string { return t.remote }

// Definition implements tool.Tool.
func (t *Tool) Definition() chat.ToolDef { return t.def }

// Policy implements tool.Tool: an external side effect (a person approves
// each call under supervised autonomy; read_only runs may not call it),
// unless the configuration trusts the server's hints: then a tool marked
// readOnlyHint is a read, which runs at every autonomy without approval,
// and one marked idempotentHint may run again after a restart.
func (t *Tool) Policy() tool.Policy { return t.policy }

// Call implements tool.Tool: it calls the tool on its server, within the
// call timeout and ctx. A result the server marks isError is returned as
// the error.
func (t *Tool) Call(ctx context.Context, _ tool.Env, args json.RawMessage) (string, error) {
	return t.srv.call(ctx, t.remote, args)
}

// wrap makes the server's tools agents' tools, sorted by name. Names that
// clash once sanitised keep the first tool by its server's name; the
// others are left out and logged.
func (s *server) wrap(remote []*sdk.Tool) []*Tool {
	slices.SortFunc(remote, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	log := s.reg.cfg.Log.With("mcp_server", s.cfg.Name)
	seen := map[string]string{}
	out := make([]*Tool, 0, len(remote))
	for _, rt := range remote {
		name := ToolName(s.cfg.Name, rt.Name)
		if other, dup := seen[name]; dup {
			log.Warn("MCP tool names clash once sanitised; the second tool is left out", "tool", name, "kept", other, "left_out", rt.Name)
			continue
		}
		schema, err := json.Marshal(rt.InputSchema)
		if err != nil || rt.InputSchema == nil || bytes.Equal(schema, []byte("null")) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if len(schema) > maxSchema {
			log.Warn("MCP tool left out: its input schema is too large", "tool", rt.Name, "bytes", len(schema), "max", maxSchema)
			continue
		}
		seen[name] = rt.Name
		desc := rt.Description
		if desc == "" {
			desc = rt.Title
		}
		if desc == "" {
			desc = fmt.Sprintf("Tool %s of the MCP server %s.", rt.Name, s.cfg.Name)
		}
		t := &Tool{srv: s, remote: rt.Name, def: chat.ToolDef{Name: name, Description: cut(desc, maxDescription), Parameters: schema}}
		t.ReadOnly = rt.Annotations != nil && rt.Annotations.ReadOnlyHint
		// A server's hints are believed only where the operator trusts
		// them; otherwise every call is an external side effect.
		t.policy = tool.Policy{Effect: tool.External}
		if s.cfg.TrustReadOnlyHints && rt.Annotations != nil {
			if t.ReadOnly {
				t.policy.Effect = tool.Read
			}
			t.policy.Idempotent = rt.Annotations.IdempotentHint
		}
		out = append(out, t)
	}
	return out
}

// call calls the server's tool remote.
func (s *server) call(ctx context.Context, remote string, args json.RawMessage) (string, error) {
	sess, err := s.session()
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	cctx, cancel := context.WithTimeout(ctx, s.reg.cfg.CallTimeout)
	defer cancel()
	res, err := sess.CallTool(cctx, &sdk.CallToolParams{Name: remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("MCP server %s: %w", s.cfg.Name, ctx.Err())
		}
		// The call failed or timed out: is the server still there?
		go s.probe(sess)
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("%s%s%s did not answer within %s", s.cfg.Name, Separator, remote, s.reg.cfg.CallTimeout)
		}
		return "", fmt.Errorf("MCP server %s: %w", s.cfg.Name, err)
	}
	text := render(res, s.reg.cfg.MaxResultBytes)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error without a message"
		}
		return "", errors.New(text)
	}
	return text, nil
}

// render makes the text the model sees of a result: the text parts as
// they are, a line describing each image, audio clip and resource, and
// the structured content as JSON when no text part holds it already; at
// most max bytes.
func render(res *sdk.CallToolResult, max int) string {
	b := &boundedBuilder{max: max}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			b.part(c.Text)
		case *sdk.ImageContent:
			b.part(fmt.Sprintf("[image: %s, %d bytes; images of MCP tools are not shown to the model]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			b.part(fmt.Sprintf("[audio: %s, %d bytes; not shown to the model]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			b.part(fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				b.part(fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				b.part(fmt.Sprintf("[resource %s: %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		}
	}
	if res.StructuredContent != nil {
		if js, err := json.Marshal(res.StructuredContent); err == nil && !b.holdsJSON(js) {
			b.part("structured content: " + string(js))
		}
	}
	return b.String()
}

// boundedBuilder joins parts with newlines, up to max bytes.
type boundedBuilder struct {
	strings.Builder
	max   int
	parts []string
}

func (b *boundedBuilder) part(s string) {
	b.parts = append(b.parts, s)
	if b.Len() > 0 {
		s = "\n" + s
	}
	if room := b.max - b.Len(); len(s) > room {
		s = cut(s, max(room, 0))
	}
	b.WriteString(s)
}

// holdsJSON reports whether a text part is the JSON value js.
func (b *boundedBuilder) holdsJSON(js []byte) bool {
	var want any
	if json.Unmarshal(js, &want) != nil {
		return false
	}
	for _, p := range b.parts {
		var got any
		if json.Unmarshal([]byte(p), &got) == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

// cut returns at most n bytes of s, cut at a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
