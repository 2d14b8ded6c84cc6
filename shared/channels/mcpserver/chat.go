package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

type chatArgs struct {
	Agent      string `json:"agent,omitempty" jsonschema:"the agent to talk to, as agents_list names it (default: default)"`
	Message    string `json:"message" jsonschema:"your message; /yes, /no or /always answers the question of an approval the agent asked"`
	SessionKey string `json:"session_key,omitempty" jsonschema:"names the conversation, which the server keeps: the same session_key continues it (default mcp)"`
}

// approvalInput names the elicitation of an approval in a multi
// round-trip result, and statePrefix starts its request state, followed
// by the approval's id.
const (
	approvalInput = "approval"
	statePrefix   = "approval:"
)

// decisionSchema is the form of an approval's elicitation.
var decisionSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision": map[string]any{
			"type": "string", "title": "Decision", "enum": []string{"yes", "no", "always"},
			"description": "yes allows the calls, no denies them, always allows these tools for the rest of the conversation",
		},
	},
	"required": []string{"decision"},
}

// target is what a call is about: an agent the key may use, and the
// key's conversation with it.
type target struct {
	agent, owner, sessionID string
}

// target resolves a call's agent (DefaultAgent when it names none) and
// session_key for key k.
func (h *Handler) target(k store.APIKey, name, sessionKey string) (target, error) {
	name = cmp.Or(strings.TrimPrefix(name, "lambdaclaw/"), DefaultAgent)
	if _, ok := h.cfg.Agents.Agent(name); !ok || !k.Allows(name) {
		return target{}, fmt.Errorf("the agent %q does not exist or this key may not use it: agents_list names the agents you may use", name)
	}
	sk := cmp.Or(sessionKey, DefaultSessionKey)
	if err := agent.CheckSessionKey(`"session_key"`, sk); err != nil {
		return target{}, err
	}
	t := target{agent: name}
	t.owner, t.sessionID = h.cfg.Identity.Session(name, Channel, k.ID, sk)
	return t, nil
}

// chat is the chat tool: it delivers the message, or the answer a retried
// call carries to an approval, and follows the run that answers.
func (h *Handler) chat(ctx context.Context, req *mcp.CallToolRequest, in chatArgs) (*mcp.CallToolResult, any, error) {
	k, err := keyOf(req.Extra)
	if err != nil {
		return nil, nil, err
	}
	t, err := h.target(k, in.Agent, in.SessionKey)
	if err != nil {
		return nil, nil, err
	}
	text, approval := in.Message, ""
	if req.Params.RequestState != "" {
		if text, approval, err = h.answer(ctx, t, req.Params); err != nil {
			return nil, nil, err
		}
	} else if strings.TrimSpace(text) == "" {
		return nil, nil, errors.New(`"message" is required`)
	}
	autonomy, err := tool.ParseAutonomy(k.Autonomy)
	if err != nil {
		autonomy = tool.ReadOnly // the safest
	}
	f := &agent.Follower{Events: h.cfg.Events}
	defer f.Close()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deliverTimeout)
	defer cancel()
	_, err = h.cfg.Runner.Deliver(dctx, agent.Input{
		SessionID: t.sessionID, Agent: t.agent, Owner: t.owner,
		Messages: []chat.Message{{Role: chat.User, Content: text}},
		Autonomy: autonomy, Stream: true, Interactive: true,
		// The gateway's channel: its runs' events reach the hub, locally
		// and from the step function on AWS.
		Reply:   agent.Reply{Channel: gateway.Channel},
		Channel: Channel,
		// An answer answers the approval it was asked for, or nothing.
		Approval: approval,
	}, f.Follow)
	var ie *agent.InputError
	switch {
	case errors.Is(err, agent.ErrMayNotApprove), errors.Is(err, agent.ErrUnknownAgent), errors.As(err, &ie):
		return nil, nil, err
	case errors.Is(err, agent.ErrStaleApproval):
		return nil, nil, errNotPending
	case errors.Is(err, store.ErrStorageFull):
		h.cfg.Log.Error("deliver message: storage full", "session_id", t.sessionID, "error", err)
		return nil, nil, errors.New(agent.StorageFullMessage)
	case err != nil:
		h.cfg.Log.Error("deliver message", "session_id", t.sessionID, "error", err)
		return nil, nil, errors.New("could not start the run; try again")
	}
	return h.follow(ctx, req, f)
}

// errNotPending refuses an answer to an approval no longer asked.
var errNotPending = errors.New("the approval this answer is for is no longer pending")

// answer reads the answer a retried call carries to the approval its
// request state names, and returns it as the message that answers it
// in the conversation: "/yes", "/no" or "/always", with the approval's
// id. Declining or cancelling the question denies. An approval of a run
// the session's run delegated to is asked in the session too: Deliver
// checks that one (Input.Approval).
func (h *Handler) answer(ctx context.Context, t target, p *mcp.CallToolParamsRaw) (string, string, error) {
	id, ok := strings.CutPrefix(p.RequestState, statePrefix)
	if !ok || id == "" {
		return "", "", errors.New("requestState is not one this server made")
	}
	res, ok := p.InputResponses[approvalInput].(*mcp.ElicitResult)
	if !ok {
		return "", "", errors.New("the call carries no answer to the approval question")
	}
	ap, err := h.cfg.Sessions.PendingApproval(ctx, t.sessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", "", errNotPending
	case err != nil:
		h.cfg.Log.Error("look up approval", "session_id", t.sessionID, "error", err)
		return "", "", errors.New("could not look up the approval; try again")
	case ap.ID != id && ap.Kind != store.ApprovalDelegation:
		return "", "", errNotPending
	}
	decision := "no"
	if res.Action == "accept" {
		d, _ := res.Content["decision"].(string)
		if dec, ok := agent.ParseDecision(d); ok {
			decision = string(dec)
		}
	}
	return "/" + decision, id, nil
}

// follow waits for the run's answer, telling its pieces as progress
// (Progress counts the notifications; an empty one, after KeepAlive of
// silence, keeps the stream open). An approval ends the call with an
// elicitation when the client can answer one, else with its question,
// which the next chat call answers.
func (h *Handler) follow(ctx context.Context, req *mcp.CallToolRequest, f *agent.Follower) (*mcp.CallToolResult, any, error) {
	token := req.Params.GetProgressToken()
	sent := 0
	progress := func(text string) {
		sent++
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(sent), Message: text})
		if err != nil {
			h.cfg.Log.Debug("progress notification", "error", err)
		}
	}
	for {
		next, cancel := context.WithTimeout(ctx, h.cfg.KeepAlive)
		ev, err := f.Sub.Next(next)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			// The call was cancelled; the run goes on and is kept.
			return nil, nil, fmt.Errorf("the call ended before the agent answered: %w", ctx.Err())
		case err != nil:
			if token != nil {
				progress("")
			}
		case ev.Approval != nil:
			if canElicit(req.Session) {
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{approvalInput: &mcp.ElicitParams{Message: ev.Approval.Prompt, RequestedSchema: decisionSchema}},
					RequestState:  statePrefix + ev.Approval.ID,
				}, nil, nil
			}
			return textResult(ev.Approval.Prompt), nil, nil
		case ev.Result != nil && ev.Result.ErrorCode != "":
			// The loop writes a run's error for users: no provider's
			// or server's internals.
			h.cfg.Log.Error("run failed", "run_id", ev.RunID, "code", ev.Result.ErrorCode)
			return nil, nil, errors.New(ev.Result.Error)
		case ev.Result != nil:
			return textResult(ev.Result.Content), nil, nil
		case ev.Delta != "" && token != nil:
			progress(ev.Delta)
		}
	}
}

// canElicit says whether the client of a session answers elicitations.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
