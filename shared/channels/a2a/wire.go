package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The A2A protocol's JSON, version 1.0 (the proto's JSON mapping, as the
// official SDKs send it: a2a-go's a2a package, a2a-js's types/pb): the
// messages, tasks and events this server and the remotea2a client use.

// Protocol versions, as the A2A-Version header and the cards name them.
const (
	Version    = "1.0"
	LegacyCard = "0.3.0"
	// VersionHeader names the version a client speaks; without it a
	// request is of version 0.3.
	VersionHeader = "A2A-Version"
)

// Task states of version 1.0.
const (
	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateCanceled      = "TASK_STATE_CANCELED"
	StateFailed        = "TASK_STATE_FAILED"
	StateRejected      = "TASK_STATE_REJECTED"
	StateAuthRequired  = "TASK_STATE_AUTH_REQUIRED"
)

// Roles of version 1.0.
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Part is a piece of a message or an artifact: exactly one of Text,
// Data, URL and Raw.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	URL       string          `json:"url,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// Message is a message of a user or an agent.
type Message struct {
	MessageID string `json:"messageId"`
	ContextID string `json:"contextId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
	Role      string `json:"role"`
	Parts     []Part `json:"parts"`
}

// TaskStatus is where a task is.
type TaskStatus struct {
	State     string     `json:"state"`
	Message   *Message   `json:"message,omitempty"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// Task is a unit of work: here, a run.
type Task struct {
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// StatusUpdate tells a task's new status in a stream.
type StatusUpdate struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
}

// ArtifactUpdate tells (a piece of) an artifact in a stream.
type ArtifactUpdate struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is one event of a stream, and the result of SendMessage
// (Task or Message): exactly one field is set.
type StreamResponse struct {
	Task           *Task           `json:"task,omitempty"`
	Message        *Message        `json:"message,omitempty"`
	StatusUpdate   *StatusUpdate   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// SendConfig is what a client asks of SendMessage.
type SendConfig struct {
	ReturnImmediately bool `json:"returnImmediately,omitempty"`
}

// SendRequest is SendMessage's and SendStreamingMessage's params.
type SendRequest struct {
	Message *Message    `json:"message"`
	Config  *SendConfig `json:"configuration,omitempty"`
}

// TaskRequest is GetTask's, CancelTask's and SubscribeToTask's params.
type TaskRequest struct {
	ID string `json:"id"`
}

// Terminal says whether a task in state s is done for good.
func Terminal(s string) bool {
	return s == StateCompleted || s == StateCanceled || s == StateFailed || s == StateRejected
}

// Text is the text of parts: the text parts, and the data parts as their
// JSON, one after another. A part of another kind is an error naming it.
func Text(parts []Part) (string, error) {
	var b strings.Builder
	for i, p := range parts {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch {
		case p.Text != nil:
			b.WriteString(*p.Text)
		case len(p.Data) > 0:
			b.Write(p.Data)
		default:
			return "", fmt.Errorf("part %d is a file; only text and data parts are taken", i)
		}
	}
	return b.String(), nil
}

// JSON-RPC 2.0.

// rpcRequest is a JSON-RPC request.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// rpcResponse is a JSON-RPC response: Result or Error.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error, with A2A's codes.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("A2A error %d: %s", e.Code, e.Message) }

// JSON-RPC and A2A error codes.
const (
	CodeParse              = -32700
	CodeInvalidRequest     = -32600
	CodeMethodNotFound     = -32601
	CodeInvalidParams      = -32602
	CodeInternal           = -32603
	CodeTaskNotFound       = -32001
	CodeTaskNotCancelable  = -32002
	CodePushNotSupported   = -32003
	CodeUnsupported        = -32004
	CodeUnsupportedContent = -32005
)

func rpcErr(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// validID says whether a request id is one JSON-RPC allows: a string, a
// number or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return false
	}
	switch v.(type) {
	case string, float64, nil:
		return true
	}
	return false
}

// decodeParams decodes a request's params into v, an invalid params
// error when they do not fit.
func decodeParams(raw json.RawMessage, v any) *RPCError {
	if len(raw) == 0 {
		return rpcErr(CodeInvalidParams, "params are required")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return rpcErr(CodeParse, "params: %v", err)
		}
		return rpcErr(CodeInvalidParams, "params: %v", err)
	}
	return nil
}
