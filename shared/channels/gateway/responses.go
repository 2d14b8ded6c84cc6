package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// The Responses API maps onto sessions. A stored response (store, the
// default) is a run in a durable session: a new session for a new
// conversation, the previous response's session when it continues that
// conversation's latest response, and a new session starting with the
// conversation so far when it branches from an earlier one. A response
// with store false (OpenAI's field) runs stateless, with the previous
// conversation, if any, as its history, and is kept nowhere: no session
// (the console does not list it), no conversation memory (the recorder
// skips ephemeral runs), no record, so GET answers 404 and a
// previous_response_id naming it 400 previous_response_not_found, as
// OpenAI does. The record of a stored response points at its run
// (store.Response); its output is read from the run.

// Threads reads the runs that stored responses point at.
type Threads interface {
	// Outcome returns the state of a run and, once it answered, what it
	// told its client.
	Outcome(ctx context.Context, runID string) (agent.RunState, *agent.Result, error)
	// Thread returns the conversation of a session up to the run of seq,
	// and whether no later run exists.
	Thread(ctx context.Context, sessionID string, seq int64) ([]chat.Message, bool, error)
}

// responsesRequest is OpenAI's response create request. Fields it does not
// list are refused, as OpenAI refuses them.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       string          `json:"instructions"`
	Tools              []responsesTool `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	Stream             bool            `json:"stream"`
	StreamOptions      json.RawMessage `json:"stream_options"`
	Store              *bool           `json:"store"`
	PreviousResponseID string          `json:"previous_response_id"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Text               *responsesText  `json:"text"`
	Reasoning          *struct {
		Effort  string `json:"effort"`
		Summary string `json:"summary"`
	} `json:"reasoning"`
	Metadata         map[string]string `json:"metadata"`
	User             string            `json:"user"`
	SafetyIdentifier string            `json:"safety_identifier"`
	// Accepted, with no effect on the answer.
	Include              []string `json:"include"`
	Truncation           string   `json:"truncation"`
	ServiceTier          string   `json:"service_tier"`
	PromptCacheKey       string   `json:"prompt_cache_key"`
	PromptCacheRetention string   `json:"prompt_cache_retention"`
	// Refused unless they ask for nothing.
	Background   *bool           `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	MaxToolCalls *int            `json:"max_tool_calls"`
	TopLogprobs  *int            `json:"top_logprobs"`
	Prompt       json.RawMessage `json:"prompt"`
}

// responsesTool is a function tool in the Responses shape.
type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type responsesText struct {
	Format *struct {
		Type        string          `json:"type"`
		Name        string          `json:"name,omitempty"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	} `json:"format,omitempty"`
	Verbosity string `json:"verbosity,omitempty"`
}

// options converts what the request asks beyond its input.
func (req *responsesRequest) options() (agent.Options, error) {
	o := agent.Options{EndWithClientCalls: true}
	switch {
	case req.Background != nil && *req.Background:
		return o, badParam("background", "background responses are not supported")
	case set(req.Conversation):
		return o, badParam("conversation", "conversations are not supported; continue with previous_response_id")
	case req.MaxToolCalls != nil:
		return o, badParam("max_tool_calls", "max_tool_calls is not supported; the agent's max_tool_iterations applies")
	case req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return o, badParam("top_logprobs", "logprobs are not supported")
	case set(req.Prompt):
		return o, badParam("prompt", "prompt templates are not supported")
	case req.Text != nil && req.Text.Verbosity != "" && req.Text.Verbosity != "medium":
		return o, badParam("text.verbosity", "text.verbosity is not supported")
	}
	if len(req.Tools) > maxTools {
		return o, badParam("tools", "tools may list at most %d tools, not %d", maxTools, len(req.Tools))
	}
	for i, t := range req.Tools {
		at := fmt.Sprintf("tools[%d].", i)
		if t.Type != "function" {
			return o, badParam(at+"type", "%stype must be \"function\"; other tool types are not supported", at)
		}
		d, err := functionTool(at, t.Name, t.Description, t.Parameters, t.Strict)
		if err != nil {
			return o, err
		}
		o.Tools = append(o.Tools, d)
	}
	p := &o.Params
	var err error
	if p.ToolChoice, err = toolChoice(req.ToolChoice); err != nil {
		return o, err
	}
	if req.Text != nil && req.Text.Format != nil {
		f := req.Text.Format
		switch f.Type {
		case llm.FormatText:
		case llm.FormatJSONObject:
			p.ResponseFormat = &llm.ResponseFormat{Type: llm.FormatJSONObject}
		case llm.FormatJSONSchema:
			if p.ResponseFormat, err = jsonSchemaFormat("text.format.", f.Name, f.Description, f.Schema, f.Strict); err != nil {
				return o, err
			}
		default:
			return o, badParam("text.format.type", "text.format.type must be text, json_object or json_schema; got %q", f.Type)
		}
	}
	if req.MaxOutputTokens != nil {
		if *req.MaxOutputTokens < 1 {
			return o, badParam("max_output_tokens", "max_output_tokens must be at least 1")
		}
		p.MaxTokens = *req.MaxOutputTokens
	}
	if req.Reasoning != nil {
		p.ReasoningEffort = req.Reasoning.Effort
	}
	p.Temperature, p.TopP = req.Temperature, req.TopP
	p.User, p.ParallelToolCalls = cmp.Or(req.User, req.SafetyIdentifier), req.ParallelToolCalls
	if req.Instructions != "" {
		o.System = []chat.Message{{Role: chat.System, Content: req.Instructions}}
	}
	// metadata is the response's own, kept with it: a provider would
	// take it for its stored completions (api.openai.com refuses it
	// without store). It is checked all the same.
	checked := *p
	checked.Metadata = req.Metadata
	err = checkParams(checked)
	var pe *paramError
	if errors.As(err, &pe) && pe.param == "reasoning_effort" {
		// The Chat Completions name; here it is reasoning.effort.
		err = badParam("reasoning.effort", "%s", strings.ReplaceAll(pe.msg, "reasoning_effort", "reasoning.effort"))
	}
	return o, err
}

// inputItem is one item of a request's input, of any type.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ID        string          `json:"id"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// openCalls follows a conversation, message by message, and holds the
// calls that wait for their outputs: those of its last assistant message
// not answered yet. Any other message closes them (the loop answers them
// as not run).
type openCalls []string

func (o *openCalls) follow(m chat.Message) {
	switch m.Role {
	case chat.Assistant:
		*o = nil
		for _, c := range m.ToolCalls {
			*o = append(*o, c.ID)
		}
	case chat.Tool:
		*o = slices.DeleteFunc(*o, func(id string) bool { return id == m.ToolCallID })
	default:
		*o = nil
	}
}

// inputMessages converts a request's input, which continues the
// conversation prior, to messages. Calls join the assistant message
// before them; item references name items of the owner's stored
// responses. A function_call_output must answer a call that waits for it,
// and outputs that open the input answer all the calls prior leaves open.
func (g *Gateway) inputMessages(ctx context.Context, owner string, raw json.RawMessage, prior []chat.Message) ([]chat.Message, error) {
	if !set(raw) {
		return nil, nil
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []chat.Message{{Role: chat.User, Content: text}}, nil
	}
	var items []inputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badParam("input", "input must be a string or an array of input items")
	}
	var open openCalls
	for _, m := range prior {
		open.follow(m)
	}
	missing := slices.Clone(open) // the calls prior leaves open
	var out []chat.Message
	for i, it := range items {
		at := fmt.Sprintf("input[%d]", i)
		// An item reference's type is optional (openai-go leaves it out):
		// an item with an id and no type or role is one.
		if it.Type == "item_reference" || it.Type == "" && it.Role == "" && it.ID != "" {
			ref, err := g.referencedItem(ctx, owner, it.ID)
			if err != nil {
				return nil, badParam(at+".id", "%s: %v", at, err)
			}
			it = ref
		}
		switch it.Type {
		case "", "message":
			content, parts, err := readContent(at+".content", it.Content, it.Role == string(chat.User), g.cfg.Media)
			if err != nil {
				return nil, err
			}
			m := chat.Message{Role: chat.Role(it.Role), Content: content, Parts: parts}
			switch it.Role {
			case "user", "system", "assistant":
			case "developer":
				m.Role = chat.System
			default:
				return nil, badParam(at+".role", "%s.role: %q is not one of user, system, developer, assistant", at, it.Role)
			}
			out = append(out, m)
		case "function_call":
			if it.CallID == "" || !toolName().MatchString(it.Name) {
				return nil, badParam(at, "%s: a function_call needs call_id and name", at)
			}
			c := chat.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			if n := len(out); n > 0 && out[n-1].Role == chat.Assistant {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, c)
			} else {
				out = append(out, chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{c}})
			}
		case "function_call_output":
			output, err := contentText(at+".output", it.Output)
			if err != nil {
				return nil, err
			}
			if it.CallID == "" {
				return nil, badParam(at+".call_id", "%s: a function_call_output needs call_id", at)
			}
			if !slices.Contains(open, it.CallID) {
				return nil, badParam(at+".call_id", "%s.call_id: no function call %q waits for its output; the open calls are: %s", at, it.CallID, listOrNone(open))
			}
			out = append(out, chat.Message{Role: chat.Tool, ToolCallID: it.CallID, Content: output})
		case "reasoning":
			// Reasoning the client echoes back; lambdaclaw never sends any.
			continue
		default:
			return nil, badParam(at+".type", "%s: input items of type %q are not supported", at, it.Type)
		}
		open.follow(out[len(out)-1])
	}
	for _, m := range out {
		if m.Role != chat.Tool {
			break
		}
		missing = slices.DeleteFunc(missing, func(id string) bool { return id == m.ToolCallID })
	}
	if len(out) > 0 && out[0].Role == chat.Tool && len(missing) > 0 {
		return nil, badParam("input", "the function_call_output items must answer every call the previous response left open; missing: %s", listOrNone(missing))
	}
	return out, nil
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Item ids name their response: "msg_<r>" is the message of response
// "resp_<r>", "fc_<r>_<i>" its i-th function call.
func messageItemID(respID string) string {
	return "msg_" + strings.TrimPrefix(respID, "resp_")
}

func callItemID(respID string, i int) string {
	return fmt.Sprintf("fc_%s_%d", strings.TrimPrefix(respID, "resp_"), i)
}

// referencedItem returns the output item of a stored response of owner
// that id names.
func (g *Gateway) referencedItem(ctx context.Context, owner, id string) (inputItem, error) {
	var respID string
	call := -1
	switch {
	case strings.HasPrefix(id, "msg_"):
		respID = "resp_" + strings.TrimPrefix(id, "msg_")
	case strings.HasPrefix(id, "fc_"):
		rest := strings.TrimPrefix(id, "fc_")
		j := strings.LastIndexByte(rest, '_')
		n, err := strconv.Atoi(rest[j+1:])
		if j < 0 || err != nil {
			return inputItem{}, fmt.Errorf("no item %q was found", id)
		}
		respID, call = "resp_"+rest[:j], n
	default:
		return inputItem{}, fmt.Errorf("no item %q was found", id)
	}
	rec, err := g.ownResponse(ctx, owner, respID)
	if err != nil {
		return inputItem{}, fmt.Errorf("no item %q was found", id)
	}
	_, res, err := g.cfg.Threads.Outcome(ctx, rec.RunID)
	if err != nil || res == nil {
		return inputItem{}, fmt.Errorf("the item %q has no content (yet)", id)
	}
	if call < 0 {
		content, _ := json.Marshal(res.Content)
		return inputItem{Type: "message", Role: "assistant", Content: content}, nil
	}
	if call >= len(res.ToolCalls) {
		return inputItem{}, fmt.Errorf("no item %q was found", id)
	}
	c := res.ToolCalls[call]
	return inputItem{Type: "function_call", CallID: c.ID, Name: c.Name, Arguments: c.Arguments}, nil
}

// ownResponse returns the stored response id of owner; another owner's
// response is not found, as if it did not exist.
func (g *Gateway) ownResponse(ctx context.Context, owner, id string) (store.Response, error) {
	rec, err := g.cfg.Responses.GetResponse(ctx, id)
	if err == nil && rec.Owner != owner {
		err = store.ErrNotFound
	}
	return rec, err
}

// responseEcho is what a response repeats of its request; stored
// responses keep it (store.Response.Request).
type responseEcho struct {
	Model              string            `json:"model"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          responseReasoning `json:"reasoning"`
	Store              bool              `json:"store"`
	Temperature        *float64          `json:"temperature"`
	Text               responsesText     `json:"text"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Tools              []responsesTool   `json:"tools"`
	TopP               *float64          `json:"top_p"`
	Truncation         string            `json:"truncation"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

type responseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (req *responsesRequest) echo() responseEcho {
	e := responseEcho{
		Model: req.Model, Instructions: nonEmpty(req.Instructions), MaxOutputTokens: req.MaxOutputTokens,
		ParallelToolCalls: req.ParallelToolCalls == nil || *req.ParallelToolCalls, PreviousResponseID: nonEmpty(req.PreviousResponseID),
		Store: req.Store == nil || *req.Store, Temperature: req.Temperature, ToolChoice: req.ToolChoice, Tools: req.Tools,
		TopP: req.TopP, Truncation: cmp.Or(req.Truncation, "disabled"), User: nonEmpty(req.User), Metadata: req.Metadata,
	}
	if e.Tools == nil {
		e.Tools = []responsesTool{}
	}
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	if !set(e.ToolChoice) {
		e.ToolChoice = json.RawMessage(`"auto"`)
	}
	if req.Text != nil {
		e.Text = *req.Text
	}
	if e.Text.Format == nil {
		e.Text.Format = &struct {
			Type        string          `json:"type"`
			Name        string          `json:"name,omitempty"`
			Description string          `json:"description,omitempty"`
			Schema      json.RawMessage `json:"schema,omitempty"`
			Strict      *bool           `json:"strict,omitempty"`
		}{Type: llm.FormatText}
	}
	if req.Reasoning != nil {
		e.Reasoning = responseReasoning{nonEmpty(req.Reasoning.Effort), nonEmpty(req.Reasoning.Summary)}
	}
	return e
}

// responseObject is a response as the API returns it.
type responseObject struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	CreatedAt         int64              `json:"created_at"`
	Status            string             `json:"status"`
	Error             *responseError     `json:"error"`
	IncompleteDetails *incompleteDetails `json:"incomplete_details"`
	Output            []any              `json:"output"`
	Usage             *responseUsage     `json:"usage"`
	responseEcho
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type messageItem struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
}

type callItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

func newMessageItem(respID, status string) messageItem {
	return messageItem{Type: "message", ID: messageItemID(respID), Status: status, Role: "assistant", Content: []outputText{}}
}

func newOutputText(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}}
}

func newCallItem(respID string, i int, c chat.ToolCall, status string) callItem {
	args := c.Arguments
	if status != "completed" {
		args = ""
	}
	return callItem{Type: "function_call", ID: callItemID(respID, i), CallID: c.ID, Name: c.Name, Arguments: args, Status: status}
}

// newResponse is response id as it starts.
func newResponse(id string, created int64, echo responseEcho) responseObject {
	return responseObject{ID: id, Object: "response", CreatedAt: created, Status: "in_progress", Output: []any{}, responseEcho: echo}
}

// hasMessage reports whether the output for res has a message: its text,
// or an empty message when there is nothing else.
func hasMessage(res *agent.Result) bool { return res.Content != "" || len(res.ToolCalls) == 0 }

// finish sets what a run's result says: status, output (a message first
// when message is set, then the calls) and usage.
func (o *responseObject) finish(res *agent.Result, message bool) {
	if res.ErrorCode != "" {
		o.Status, o.Error = "failed", &responseError{Code: res.ErrorCode, Message: res.Error}
		return
	}
	o.Status = "completed"
	if res.FinishReason == "length" {
		o.Status, o.IncompleteDetails = "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	}
	o.Output = []any{}
	if message {
		m := newMessageItem(o.ID, o.Status)
		m.Content = []outputText{newOutputText(res.Content)}
		o.Output = append(o.Output, m)
	}
	for i, c := range res.ToolCalls {
		o.Output = append(o.Output, newCallItem(o.ID, i, c, "completed"))
	}
	u := responseUsage{InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens}
	u.TotalTokens = cmp.Or(res.Usage.TotalTokens, u.InputTokens+u.OutputTokens)
	o.Usage = &u
}

func (g *Gateway) responses(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	var req responsesRequest
	name, ok := g.openRequest(w, r, &req, &req.Model)
	if !ok {
		return
	}
	opts, err := req.options()
	if err != nil {
		writeRequestError(w, "invalid_value", err)
		return
	}
	ctx := r.Context()
	owner := "key:" + k.ID
	stored := req.Store == nil || *req.Store
	runID := agent.NewID()
	id := "resp_" + runID
	in := agent.Input{RunID: runID, Agent: name, Owner: owner, Autonomy: autonomyOf(k), Stream: req.Stream, Reply: agent.Reply{Channel: Channel}, Options: opts, Key: agent.RulesOf(k)}
	var thread []chat.Message
	if req.PreviousResponseID != "" {
		var prev store.Response
		var latest bool
		prev, thread, latest, err = g.previous(ctx, owner, name, req.PreviousResponseID)
		var pe *paramError
		switch {
		case errors.As(err, &pe):
			writeRequestError(w, "invalid_value", err)
			return
		case err != nil:
			g.log(r).Error("read previous response", "error", err)
			writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not read the previous response")
			return
		case stored && latest:
			in.SessionID = prev.SessionID
		}
	}
	msgs, err := g.inputMessages(ctx, owner, req.Input, thread)
	if err != nil {
		writeRequestError(w, "invalid_value", err)
		return
	}
	if len(msgs) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_input", "input is required")
		return
	}
	if len(thread) > 0 && in.SessionID == "" {
		// A branch, or a stateless turn: the conversation so far is the
		// new run's history.
		msgs = append(slices.Clip(thread), msgs...)
	}
	in.Messages = msgs
	if stored {
		if in.SessionID == "" {
			in.SessionID = agent.SessionID(name, "responses:"+owner+"/"+id)
		}
		in.Interactive = true
	} else {
		in.Ephemeral = true
	}

	sub, unsubscribe := g.subscriber()
	defer unsubscribe()
	st, err := g.cfg.Runner.Deliver(ctx, in, sub.subscribe)
	if err != nil {
		g.deliverFailed(w, r, err)
		return
	}
	echo := req.echo()
	created := time.Now().Unix()
	if stored {
		request, _ := json.Marshal(echo)
		rec := store.Response{ID: id, Owner: owner, Agent: name, SessionID: st.SessionID, RunID: st.RunID, Seq: st.Seq,
			PreviousID: req.PreviousResponseID, Request: request, CreatedAt: time.Unix(created, 0).UTC()}
		if err := g.cfg.Responses.CreateResponse(ctx, rec); err != nil {
			g.log(r).Error("store response", "error", err)
			writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not store the response")
			return
		}
	}
	o := newResponse(id, created, echo)
	if req.Stream {
		g.streamResponse(w, r, sub.sub, o)
		return
	}
	res, ok := waitResult(r, sub.sub)
	if !ok {
		return
	}
	if res.ErrorCode != "" {
		status, msg := g.runFailure(r, st.RunID, res)
		writeError(w, status, failureType(res.ErrorCode), res.ErrorCode, msg)
		return
	}
	o.finish(res, hasMessage(res))
	writeJSON(w, http.StatusOK, o)
}

// previous reads the stored response id of owner that a request for
// agent name continues: its record, the conversation up to it, and
// whether it is its conversation's latest response. A response that is
// not the owner's, or is gone, is not found: a paramError, as OpenAI
// answers (400 previous_response_not_found).
func (g *Gateway) previous(ctx context.Context, owner, name, id string) (store.Response, []chat.Message, bool, error) {
	prev, err := g.ownResponse(ctx, owner, id)
	if err != nil {
		return prev, nil, false, notFoundParam(err, id)
	}
	if prev.Agent != name {
		return prev, nil, false, badParam("previous_response_id", "the previous response %q was made by model %q, not %q", id, prev.Agent, name)
	}
	thread, latest, err := g.cfg.Threads.Thread(ctx, prev.SessionID, prev.Seq)
	if err != nil {
		return prev, nil, false, notFoundParam(err, id)
	}
	return prev, thread, latest, nil
}

// notFoundParam is err, or the refusal of previous_response_id when err
// says it is not found.
func notFoundParam(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return &paramError{"previous_response_id", "previous_response_not_found", fmt.Sprintf("previous response with id %q not found", id)}
	}
	return err
}

// waitResult waits for what the run tells its client: its result, or the
// prompt of the approval it waits for. It is false when the client left.
func waitResult(r *http.Request, sub *agent.Subscription) (*agent.Result, bool) {
	for {
		ev, err := sub.Next(r.Context())
		if err != nil {
			return nil, false
		}
		switch {
		case ev.Approval != nil:
			return &agent.Result{Content: ev.Approval.Prompt, FinishReason: "stop"}, true
		case ev.Result != nil:
			return ev.Result, true
		}
	}
}

// getResponse answers GET /v1/responses/{id}: a stored response of the
// key's, with its output as its run has it now.
func (g *Gateway) getResponse(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	rec, err := g.ownResponse(r.Context(), "key:"+k.ID, r.PathValue("id"))
	if err == nil {
		var o responseObject
		o, err = g.storedResponse(r.Context(), rec)
		if err == nil {
			writeJSON(w, http.StatusOK, o)
			return
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "response_not_found", fmt.Sprintf("no response with id %q was found", r.PathValue("id")))
		return
	}
	g.log(r).Error("read response", "error", err)
	writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not read the response")
}

func (g *Gateway) storedResponse(ctx context.Context, rec store.Response) (responseObject, error) {
	var echo responseEcho
	if err := json.Unmarshal(rec.Request, &echo); err != nil {
		return responseObject{}, fmt.Errorf("response %s: %w", rec.ID, err)
	}
	_, res, err := g.cfg.Threads.Outcome(ctx, rec.RunID)
	if err != nil {
		return responseObject{}, err
	}
	o := newResponse(rec.ID, rec.CreatedAt.Unix(), echo)
	if res != nil {
		o.finish(res, hasMessage(res))
	}
	return o, nil
}

// deleteResponse answers DELETE /v1/responses/{id}: the record goes; the
// conversation stays in its session's history.
func (g *Gateway) deleteResponse(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	id := r.PathValue("id")
	_, err := g.ownResponse(r.Context(), "key:"+k.ID, id)
	if err == nil {
		err = g.cfg.Responses.DeleteResponse(r.Context(), id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "invalid_request_error", "response_not_found", fmt.Sprintf("no response with id %q was found", id))
	case err != nil:
		g.log(r).Error("delete response", "error", err)
		writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not delete the response")
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
	}
}
