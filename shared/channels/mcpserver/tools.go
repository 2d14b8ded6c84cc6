package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Limits of history.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 500
)

func (h *Handler) addTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	mcp.AddTool(h.server, &mcp.Tool{
		Name: "chat",
		Description: "Send a message to a lambdaclaw agent and return its reply. The server keeps the conversation: calls with the same " +
			"session_key continue it. The agent may use its tools; when one needs approval you are asked (or the reply is the question: " +
			"answer it with the message /yes, /no or /always in the same conversation).",
		Annotations: &mcp.ToolAnnotations{Title: "Chat with an agent", OpenWorldHint: ptr(true), DestructiveHint: ptr(true)},
	}, h.chat)
	mcp.AddTool(h.server, &mcp.Tool{
		Name: "agents_list", Description: "List the agents this API key may talk to.",
		Annotations: &mcp.ToolAnnotations{Title: "List agents", ReadOnlyHint: true, IdempotentHint: true},
	}, h.agentsList)
	mcp.AddTool(h.server, &mcp.Tool{
		Name: "history", Description: "Read the messages of one of your conversations with an agent, oldest first.",
		Annotations: readOnly,
	}, h.history)
	mcp.AddTool(h.server, &mcp.Tool{
		Name: "memory_search",
		Description: "Search an agent's long-term memory as your conversations with it do: what it remembers of you (facts, past " +
			"conversations) and its shared MEMORY.md and daily logs. Returns the best hits with key, category, score and snippet.",
		Annotations: readOnly,
	}, h.memorySearch)
}

func ptr[T any](v T) *T { return &v }

type agentsOut struct {
	Agents []agentInfo `json:"agents"`
}

type agentInfo struct {
	Name string `json:"name"`
}

func (h *Handler) agentsList(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, agentsOut, error) {
	k, err := keyOf(req.Extra)
	if err != nil {
		return nil, agentsOut{}, err
	}
	out := agentsOut{Agents: []agentInfo{}}
	for _, name := range h.cfg.Names() {
		if k.Allows(name) {
			out.Agents = append(out.Agents, agentInfo{Name: name})
		}
	}
	return nil, out, nil
}

type historyArgs struct {
	Agent      string `json:"agent,omitempty" jsonschema:"the agent of the conversation (default: default)"`
	SessionKey string `json:"session_key,omitempty" jsonschema:"the conversation's session_key, as given to chat (default mcp)"`
	Limit      int    `json:"limit,omitempty" jsonschema:"the most messages to return, the latest (default 50, at most 500)"`
}

type historyOut struct {
	Messages []historyMessage `json:"messages"`
	// Truncated says that earlier messages were left out.
	Truncated bool `json:"truncated"`
}

type historyMessage struct {
	Role      string          `json:"role"`
	Content   string          `json:"content"`
	ToolCalls []chat.ToolCall `json:"tool_calls,omitempty"`
	// Name is the tool of a tool result.
	Name string `json:"name,omitempty"`
}

func (h *Handler) history(ctx context.Context, req *mcp.CallToolRequest, in historyArgs) (*mcp.CallToolResult, historyOut, error) {
	out := historyOut{Messages: []historyMessage{}}
	k, err := keyOf(req.Extra)
	if err != nil {
		return nil, out, err
	}
	limit := DefaultHistoryLimit
	if in.Limit != 0 {
		if in.Limit < 1 || in.Limit > MaxHistoryLimit {
			return nil, out, fmt.Errorf(`"limit" must be between 1 and %d, got %d`, MaxHistoryLimit, in.Limit)
		}
		limit = in.Limit
	}
	t, err := h.target(k, in.Agent, in.SessionKey)
	if err != nil {
		return nil, out, err
	}
	// The session id derives from the key, so it is the caller's; its
	// owner is checked all the same.
	s, err := h.cfg.Sessions.GetSession(ctx, t.sessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, out, nil // no conversation yet
	case err != nil:
		h.cfg.Log.Error("read session", "session_id", t.sessionID, "error", err)
		return nil, out, errors.New("could not read the conversation; try again")
	case s.Owner != t.owner:
		return nil, out, nil
	}
	msgs, err := h.cfg.Sessions.Messages(ctx, t.sessionID)
	if err != nil {
		h.cfg.Log.Error("read history", "session_id", t.sessionID, "error", err)
		return nil, out, errors.New("could not read the conversation; try again")
	}
	msgs = slices.DeleteFunc(msgs, func(m store.Message) bool { return m.Role == chat.System })
	if len(msgs) > limit {
		msgs, out.Truncated = msgs[len(msgs)-limit:], true
	}
	for _, m := range msgs {
		out.Messages = append(out.Messages, historyMessage{Role: string(m.Role), Content: m.Content, ToolCalls: m.ToolCalls, Name: m.Name})
	}
	return nil, out, nil
}

type memoryArgs struct {
	Agent      string  `json:"agent,omitempty" jsonschema:"the agent whose memory to search (default: default)"`
	Query      string  `json:"query" jsonschema:"what to look for, in your own words"`
	Limit      *int    `json:"limit,omitempty" jsonschema:"the most hits to return"`
	Category   *string `json:"category,omitempty" jsonschema:"only this category: core, daily, conversation or custom"`
	SessionKey string  `json:"session_key,omitempty" jsonschema:"search as this conversation does (default mcp); it matters only when the server links conversations to people"`
}

// memorySearch calls the agent's own memory_search tool with the
// conversation's owner, as a run of that conversation would.
func (h *Handler) memorySearch(ctx context.Context, req *mcp.CallToolRequest, in memoryArgs) (*mcp.CallToolResult, any, error) {
	k, err := keyOf(req.Extra)
	if err != nil {
		return nil, nil, err
	}
	t, err := h.target(k, in.Agent, in.SessionKey)
	if err != nil {
		return nil, nil, err
	}
	a, ok := h.cfg.Agents.Agent(t.agent)
	var search tool.Tool
	if ok && a.Tools != nil {
		search, ok = a.Tools.Get("memory_search")
	}
	if !ok {
		return nil, nil, fmt.Errorf("the agent %q has no memory to search (memory is off, or its tools leave memory_search out)", t.agent)
	}
	args, err := json.Marshal(struct {
		Query    string  `json:"query"`
		Limit    *int    `json:"limit,omitempty"`
		Category *string `json:"category,omitempty"`
	}{in.Query, in.Limit, in.Category})
	if err != nil {
		return nil, nil, fmt.Errorf("memory_search arguments: %w", err)
	}
	res, err := search.Call(ctx, tool.Env{Agent: t.agent, SessionID: t.sessionID, Owner: t.owner, Workspace: a.Workspace, Channel: Channel}, args)
	if err != nil {
		return nil, nil, err
	}
	return textResult(res), nil, nil
}
