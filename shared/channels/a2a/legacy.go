package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// dialect is a version of the protocol's JSON-RPC binding: how params
// read and results are written. The server thinks in version 1.0's types
// and translates for version 0.3 clients (legacy).
type dialect interface {
	send(raw json.RawMessage) (SendRequest, *RPCError)
	// result is an event of a stream, or SendMessage's result.
	result(ev StreamResponse) any
	// task is GetTask's and CancelTask's result.
	task(t Task) any
}

// methods maps each method served to its dialect and operation.
var methods = map[string]struct {
	d  dialect
	op string
}{
	"SendMessage":          {v1{}, opSend},
	"SendStreamingMessage": {v1{}, opStream},
	"GetTask":              {v1{}, opGet},
	"CancelTask":           {v1{}, opCancel},
	"SubscribeToTask":      {v1{}, opSubscribe},
	"message/send":         {legacy{}, opSend},
	"message/stream":       {legacy{}, opStream},
	"tasks/get":            {legacy{}, opGet},
	"tasks/cancel":         {legacy{}, opCancel},
	"tasks/resubscribe":    {legacy{}, opSubscribe},
}

// Operations.
const (
	opSend      = "send"
	opStream    = "stream"
	opGet       = "get"
	opCancel    = "cancel"
	opSubscribe = "subscribe"
)

// v1 is version 1.0: the types as they are.
type v1 struct{}

func (v1) send(raw json.RawMessage) (SendRequest, *RPCError) {
	var req SendRequest
	if err := decodeParams(raw, &req); err != nil {
		return req, err
	}
	return req, nil
}

func (v1) result(ev StreamResponse) any { return ev }
func (v1) task(t Task) any              { return t }

// legacy is version 0.3: kinds as discriminators, lower-case states and
// roles, final on status updates, blocking instead of returnImmediately.
type legacy struct{}

type legacyPart struct {
	Kind string          `json:"kind"`
	Text *string         `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
	File json.RawMessage `json:"file,omitempty"`
}

type legacyMessage struct {
	Kind      string       `json:"kind"`
	MessageID string       `json:"messageId"`
	ContextID string       `json:"contextId,omitempty"`
	TaskID    string       `json:"taskId,omitempty"`
	Role      string       `json:"role"`
	Parts     []legacyPart `json:"parts"`
}

type legacyStatus struct {
	State     string         `json:"state"`
	Message   *legacyMessage `json:"message,omitempty"`
	Timestamp string         `json:"timestamp,omitempty"`
}

type legacyArtifact struct {
	ArtifactID string       `json:"artifactId"`
	Name       string       `json:"name,omitempty"`
	Parts      []legacyPart `json:"parts"`
}

type legacyTask struct {
	Kind      string           `json:"kind"`
	ID        string           `json:"id"`
	ContextID string           `json:"contextId"`
	Status    legacyStatus     `json:"status"`
	Artifacts []legacyArtifact `json:"artifacts,omitempty"`
}

type legacyStatusUpdate struct {
	Kind      string       `json:"kind"`
	TaskID    string       `json:"taskId"`
	ContextID string       `json:"contextId"`
	Status    legacyStatus `json:"status"`
	Final     bool         `json:"final"`
}

type legacyArtifactUpdate struct {
	Kind      string         `json:"kind"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  legacyArtifact `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
}

func (legacy) send(raw json.RawMessage) (SendRequest, *RPCError) {
	var p struct {
		Message *legacyMessage `json:"message"`
		Config  *struct {
			Blocking *bool `json:"blocking"`
		} `json:"configuration"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return SendRequest{}, err
	}
	var req SendRequest
	if p.Config != nil && p.Config.Blocking != nil && !*p.Config.Blocking {
		req.Config = &SendConfig{ReturnImmediately: true}
	}
	if m := p.Message; m != nil {
		req.Message = &Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: RoleUser}
		if m.Role == "agent" {
			req.Message.Role = RoleAgent
		}
		for _, lp := range m.Parts {
			switch {
			case lp.Text != nil:
				req.Message.Parts = append(req.Message.Parts, Part{Text: lp.Text})
			case len(lp.Data) > 0:
				req.Message.Parts = append(req.Message.Parts, Part{Data: lp.Data})
			default:
				req.Message.Parts = append(req.Message.Parts, Part{URL: "file"})
			}
		}
	}
	return req, nil
}

func (legacy) result(ev StreamResponse) any {
	switch {
	case ev.Task != nil:
		return legacyOfTask(*ev.Task)
	case ev.Message != nil:
		return legacyOfMessage(*ev.Message)
	case ev.StatusUpdate != nil:
		u := ev.StatusUpdate
		// Version 0.3 ends a stream with a final status; 1.0 has none,
		// and a client stops at a terminal or interrupted state.
		final := Terminal(u.Status.State) || u.Status.State == StateInputRequired || u.Status.State == StateAuthRequired
		return legacyStatusUpdate{Kind: "status-update", TaskID: u.TaskID, ContextID: u.ContextID, Status: legacyOfStatus(u.Status), Final: final}
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		return legacyArtifactUpdate{Kind: "artifact-update", TaskID: u.TaskID, ContextID: u.ContextID,
			Artifact: legacyOfArtifact(u.Artifact), Append: u.Append, LastChunk: u.LastChunk}
	}
	return nil
}

func (legacy) task(t Task) any { return legacyOfTask(t) }

func legacyOfTask(t Task) legacyTask {
	lt := legacyTask{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: legacyOfStatus(t.Status)}
	for _, a := range t.Artifacts {
		lt.Artifacts = append(lt.Artifacts, legacyOfArtifact(a))
	}
	return lt
}

func legacyOfStatus(s TaskStatus) legacyStatus {
	ls := legacyStatus{State: legacyState(s.State)}
	if s.Message != nil {
		m := legacyOfMessage(*s.Message)
		ls.Message = &m
	}
	if s.Timestamp != nil {
		ls.Timestamp = s.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return ls
}

func legacyOfMessage(m Message) legacyMessage {
	role := "user"
	if m.Role == RoleAgent {
		role = "agent"
	}
	return legacyMessage{Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: role, Parts: legacyParts(m.Parts)}
}

func legacyOfArtifact(a Artifact) legacyArtifact {
	return legacyArtifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: legacyParts(a.Parts)}
}

// legacyParts writes text parts; the server writes no other kind.
func legacyParts(parts []Part) []legacyPart {
	out := make([]legacyPart, 0, len(parts))
	for _, p := range parts {
		out = append(out, legacyPart{Kind: "text", Text: p.Text})
	}
	return out
}

// legacyState is a state's version 0.3 name: TASK_STATE_INPUT_REQUIRED
// is input-required.
func legacyState(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s, "TASK_STATE_")), "_", "-")
}

// The client side of version 0.3, for the remotea2a adapter.

// LegacySend is the params of message/send for message m.
func LegacySend(m Message) any {
	return map[string]any{"message": legacyOfMessage(m), "configuration": map[string]any{"blocking": true}}
}

// LegacyResult reads a result of message/send or tasks/get of version
// 0.3 (a task or a message, told apart by their kind) as version 1.0's.
func LegacyResult(raw json.RawMessage) (StreamResponse, error) {
	var v struct {
		Kind      string           `json:"kind"`
		ID        string           `json:"id"`
		ContextID string           `json:"contextId"`
		Status    legacyStatus     `json:"status"`
		Artifacts []legacyArtifact `json:"artifacts"`
		legacyMessage
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return StreamResponse{}, fmt.Errorf("the result is not a task or a message of version 0.3: %w", err)
	}
	switch v.Kind {
	case "task":
		t := Task{ID: v.ID, ContextID: v.ContextID, Status: TaskStatus{State: "TASK_STATE_" + strings.ToUpper(strings.ReplaceAll(v.Status.State, "-", "_"))}}
		if m := v.Status.Message; m != nil {
			msg := messageOfLegacy(*m)
			t.Status.Message = &msg
		}
		for _, a := range v.Artifacts {
			t.Artifacts = append(t.Artifacts, Artifact{ArtifactID: a.ArtifactID, Name: a.Name, Parts: partsOfLegacy(a.Parts)})
		}
		return StreamResponse{Task: &t}, nil
	case "message":
		m := messageOfLegacy(v.legacyMessage)
		m.ContextID = v.ContextID
		return StreamResponse{Message: &m}, nil
	}
	return StreamResponse{}, fmt.Errorf("the result's kind is %q, not task or message", v.Kind)
}

func messageOfLegacy(m legacyMessage) Message {
	role := RoleUser
	if m.Role == "agent" {
		role = RoleAgent
	}
	return Message{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Role: role, Parts: partsOfLegacy(m.Parts)}
}

// partsOfLegacy keeps text and data parts; a file is named, not read.
func partsOfLegacy(parts []legacyPart) []Part {
	out := make([]Part, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Text != nil:
			out = append(out, Part{Text: p.Text})
		case len(p.Data) > 0:
			out = append(out, Part{Data: p.Data})
		default:
			out = append(out, TextPart("[a file part, not shown]"))
		}
	}
	return out
}
