// Package wsproto is lambdaclaw's WebSocket protocol: the JSON text frames
// a client and the server exchange, and the server's side of the exchange
// (Server). Both deployments speak it over their own transport, which
// implements Conn: the local server's /ws endpoint (shared/channels/gateway) and,
// on AWS, the API Gateway WebSocket API, whose frames the ws and step
// functions send with PostToConnection (shared/adapters/apigw).
//
// A client sends
//
//	{"type":"message","id":"c1","agent":"default","user":"alice","text":"hi"}
//	{"type":"reset","id":"c2","agent":"default","user":"alice"}
//
// and the server answers with frames that name their run:
//
//	{"type":"ack","id":"c1","run_id":"…","session_id":"…","duplicate":false}
//	{"type":"delta","run_id":"…","text":"Hel"}
//	{"type":"approval","run_id":"…","approval_id":"…","tools":["write_file"],"prompt":"…"}
//	{"type":"final","run_id":"…","text":"Hello","usage":{…}}
//	{"type":"error","id":"c1","run_id":"…","code":"…","message":"…"}
//
// and, unasked, the answers of scheduled check-ins delivered to the user
// (checkin.go):
//
//	{"type":"check_in","job_id":"…","run_id":"…","session_id":"…","text":"…"}
//
// An approval is answered in-band: the next message of the session, "/yes",
// "/no" or "/always", resumes the parked run, whose frames follow the ack.
package wsproto

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// Frame types.
const (
	TypeMessage  = "message"
	TypeReset    = "reset"
	TypeAck      = "ack"
	TypeDelta    = "delta"
	TypeApproval = "approval"
	TypeFinal    = "final"
	TypeError    = "error"
	TypeCheckIn  = "check_in"
)

const (
	// Channel is the channel name of WebSocket clients in session ids and
	// reply targets.
	Channel = "ws"
	// DefaultAgent answers frames that name no agent.
	DefaultAgent = "default"
	// MaxField bounds client message ids, in bytes.
	MaxField = 256
)

// ClientFrame is a frame from the client.
type ClientFrame struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Agent string `json:"agent"`
	User  string `json:"user"`
	Text  string `json:"text"`
}

// Ack acknowledges a message or a reset.
type Ack struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	RunID     string `json:"run_id,omitempty"`
	SessionID string `json:"session_id"`
	Duplicate bool   `json:"duplicate"`
}

// Delta is a piece of a run's answer as it is written.
type Delta struct {
	Type  string `json:"type"`
	RunID string `json:"run_id"`
	Text  string `json:"text"`
}

// Approval asks the client's user to approve tool calls.
type Approval struct {
	Type       string   `json:"type"`
	RunID      string   `json:"run_id"`
	ApprovalID string   `json:"approval_id"`
	Tools      []string `json:"tools"`
	Prompt     string   `json:"prompt"`
}

// Final is a run's whole answer.
type Final struct {
	Type  string `json:"type"`
	RunID string `json:"run_id"`
	Text  string `json:"text"`
	Usage *Usage `json:"usage"`
}

// CheckIn is the answer of a scheduled check-in delivered to a WebSocket
// user (delivery target ws:<user>): it comes unasked, to every open
// connection of the session the user talks in.
type CheckIn struct {
	Type      string `json:"type"`
	JobID     string `json:"job_id"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Text      string `json:"text"`
	Error     string `json:"error,omitempty"`
}

// Error reports a bad client frame (ID names it) or a failed run (RunID).
type Error struct {
	Type    string `json:"type"`
	ID      string `json:"id,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage is a run's token usage, named as in OpenAI's API.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// UsageOf converts usage, computing a missing total.
func UsageOf(u chat.Usage) *Usage {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return &Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total}
}

// NewError returns an error frame.
func NewError(id, runID, code, msg string) Error {
	return Error{Type: TypeError, ID: id, RunID: runID, Code: code, Message: msg}
}

// RunID derives the run id of a client message, so that the same message
// sent again, even on another connection, names the same run.
func RunID(keyID, user, agentName, clientID string) string {
	sum := sha256.Sum256([]byte(keyID + "\x00" + user + "\x00" + agentName + "\x00" + clientID))
	return hex.EncodeToString(sum[:16])
}

// Decode parses and checks a client's text frame. It returns the frame, or
// the error frame to answer with: the frame is not JSON, the id is too
// long, the user cannot name a conversation (agent.CheckSessionKey), the
// type is missing or unknown, or a message has no text.
func Decode(data []byte) (ClientFrame, *Error) {
	var f ClientFrame
	fail := func(id, code, msg string) (ClientFrame, *Error) {
		e := NewError(id, "", code, msg)
		return f, &e
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return fail("", "invalid_json", "the frame is not a JSON object: "+err.Error())
	}
	if len(f.ID) > MaxField {
		return fail("", "invalid_message", fmt.Sprintf("id is longer than %d bytes", MaxField))
	}
	if err := agent.CheckSessionKey("user", f.User); err != nil {
		return fail(f.ID, "invalid_message", err.Error())
	}
	switch f.Type {
	case TypeMessage:
		if strings.TrimSpace(f.Text) == "" {
			return fail(f.ID, "invalid_message", "text is required")
		}
	case TypeReset:
	case "":
		return fail(f.ID, "unknown_type", `the frame has no type: send "message" or "reset"`)
	default:
		return fail(f.ID, "unknown_type", fmt.Sprintf(`unknown frame type %q: send "message" or "reset"`, f.Type))
	}
	return f, nil
}

// EventFrame returns the frame that tells a client about a run's event,
// or false for an event with nothing to tell.
func EventFrame(ev agent.Event) (any, bool) {
	switch {
	case ev.Approval != nil:
		return Approval{Type: TypeApproval, RunID: ev.RunID, ApprovalID: ev.Approval.ID, Tools: ev.Approval.Tools, Prompt: ev.Approval.Prompt}, true
	case ev.Result != nil && ev.Result.ErrorCode != "":
		return NewError("", ev.RunID, ev.Result.ErrorCode, ev.Result.Error), true
	case ev.Result != nil:
		return Final{Type: TypeFinal, RunID: ev.RunID, Text: ev.Result.Content, Usage: UsageOf(ev.Result.Usage)}, true
	case ev.Delta != "":
		return Delta{Type: TypeDelta, RunID: ev.RunID, Text: ev.Delta}, true
	}
	return nil, false
}
