// Package chat is the conversation vocabulary shared by every part of
// lambdaclaw: messages, tool calls, tool definitions and token usage. It
// follows the OpenAI chat format because every provider and client speaks it.
package chat

import "encoding/json"

// Role is who wrote a message.
type Role string

// The roles of the OpenAI chat format.
const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	Tool      Role = "tool"
)

// Message is one entry of a conversation. Content is its text; Parts
// are what a user's message carries beside the text (images, audio,
// files), sent to the model after it.
type Message struct {
	Role       Role       `json:"role"`
	Content    string     `json:"content"`
	Parts      []Part     `json:"parts,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Name is the tool name on tool results.
	Name string `json:"name,omitempty"`
}

// ToolCall is a model's request to run a tool. Arguments is the raw JSON
// object the model produced; it is validated by the tool, never trusted.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDef describes a tool to the model. Parameters is a JSON Schema object.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Strict asks the model to follow the schema exactly (OpenAI's strict
	// mode), when set.
	Strict *bool `json:"strict,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// Sub returns u less o: the usage since o was counted.
func (u Usage) Sub(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens - o.PromptTokens,
		CompletionTokens: u.CompletionTokens - o.CompletionTokens,
		TotalTokens:      u.TotalTokens - o.TotalTokens,
	}
}
