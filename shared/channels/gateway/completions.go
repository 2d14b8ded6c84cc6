package gateway

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// completionRequest is OpenAI's chat completion request. Fields it does
// not list are refused, as OpenAI refuses them; the table of README.md
// in this directory says what each field does here.
type completionRequest struct {
	Model         string           `json:"model"`
	Messages      []requestMessage `json:"messages"`
	Stream        bool             `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools               []requestTool     `json:"tools"`
	ToolChoice          json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls   *bool             `json:"parallel_tool_calls"`
	ResponseFormat      *requestFormat    `json:"response_format"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	Stop                json.RawMessage   `json:"stop"`
	Seed                *int64            `json:"seed"`
	PresencePenalty     *float64          `json:"presence_penalty"`
	FrequencyPenalty    *float64          `json:"frequency_penalty"`
	ReasoningEffort     string            `json:"reasoning_effort"`
	User                string            `json:"user"`
	SafetyIdentifier    string            `json:"safety_identifier"`
	Metadata            map[string]string `json:"metadata"`
	N                   *int              `json:"n"`
	// Store is passed on (OpenAI's stored completions); it does not
	// decide whether lambdaclaw keeps the conversation.
	Store *bool `json:"store"`
	// Accepted, with no effect on the answer.
	ServiceTier    string `json:"service_tier"`
	PromptCacheKey string `json:"prompt_cache_key"`
	// Refused unless they ask for nothing.
	Logprobs     *bool              `json:"logprobs"`
	TopLogprobs  *int               `json:"top_logprobs"`
	LogitBias    map[string]float64 `json:"logit_bias"`
	Modalities   []string           `json:"modalities"`
	Functions    json.RawMessage    `json:"functions"`
	FunctionCall json.RawMessage    `json:"function_call"`
}

// options converts what the request asks beyond its messages.
func (req *completionRequest) options() (agent.Options, error) {
	var o agent.Options
	switch {
	case req.N != nil && *req.N != 1:
		return o, badParam("n", "n must be 1: one choice per request is supported")
	case req.Logprobs != nil && *req.Logprobs, req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return o, badParam("logprobs", "logprobs are not supported")
	case len(req.LogitBias) > 0:
		return o, badParam("logit_bias", "logit_bias is not supported")
	case len(req.Modalities) > 0 && !slices.Equal(req.Modalities, []string{"text"}):
		return o, badParam("modalities", "only the text modality is supported")
	case set(req.Functions), set(req.FunctionCall):
		return o, badParam("functions", "functions and function_call are deprecated and not supported; send tools and tool_choice")
	}
	var err error
	if o.Tools, err = chatTools(req.Tools); err != nil {
		return o, err
	}
	p := &o.Params
	if p.ToolChoice, err = toolChoice(req.ToolChoice); err != nil {
		return o, err
	}
	if p.Stop, err = stopList(req.Stop); err != nil {
		return o, err
	}
	if p.ResponseFormat, err = req.ResponseFormat.format(); err != nil {
		return o, err
	}
	if p.MaxTokens, err = maxTokens(req.MaxTokens, req.MaxCompletionTokens); err != nil {
		return o, err
	}
	p.Temperature, p.TopP, p.Seed = req.Temperature, req.TopP, req.Seed
	p.PresencePenalty, p.FrequencyPenalty = req.PresencePenalty, req.FrequencyPenalty
	p.ReasoningEffort, p.User, p.Metadata = req.ReasoningEffort, cmp.Or(req.User, req.SafetyIdentifier), req.Metadata
	p.ParallelToolCalls, p.Store = req.ParallelToolCalls, req.Store
	return o, checkParams(*p)
}

type requestMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []requestCall   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type requestCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (g *Gateway) completions(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	var req completionRequest
	name, ok := g.openRequest(w, r, &req, &req.Model)
	if !ok {
		return
	}
	msgs, err := convertMessages(req.Messages, g.cfg.Media)
	if err != nil {
		writeRequestError(w, "invalid_messages", err)
		return
	}
	opts, err := req.options()
	if err != nil {
		writeRequestError(w, "invalid_value", err)
		return
	}
	in := agent.Input{Agent: name, Owner: "key:" + k.ID, Autonomy: autonomyOf(k), Stream: req.Stream, Reply: agent.Reply{Channel: Channel}, Options: opts, Key: agent.RulesOf(k)}
	if sk := r.Header.Get(SessionHeader); sk != "" {
		if err := agent.CheckSessionKey(SessionHeader, sk); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_session_key", err.Error())
			return
		}
		if in.Messages, err = sessionInput(msgs); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_messages", err.Error())
			return
		}
		// The client's system messages open each of its requests: they
		// go with the run, not into the session's history.
		for _, m := range msgs {
			if m.Role == chat.System {
				in.Options.System = append(in.Options.System, m)
			}
		}
		// The session belongs to the key: the same session key sent with
		// another key is another session.
		in.Owner, in.SessionID = g.cfg.Identity.Session(name, "api", k.ID, sk)
		in.Interactive = true
	} else {
		in.Ephemeral = true
		in.Messages = msgs
	}

	sub, unsubscribe := g.subscriber()
	defer unsubscribe()
	st, err := g.cfg.Runner.Deliver(r.Context(), in, sub.subscribe)
	if err != nil {
		g.deliverFailed(w, r, err)
		return
	}
	id := "chatcmpl-" + st.RunID
	created := time.Now().Unix()
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		g.stream(w, r, sub.sub, id, created, req.Model, includeUsage)
		return
	}
	for {
		ev, err := sub.sub.Next(r.Context())
		if err != nil {
			return // the client went away; the run goes on and is kept
		}
		var res agent.Result
		switch {
		case ev.Approval != nil:
			// The run is parked; the session's next message answers.
			res.Content = ev.Approval.Prompt
		case ev.Result != nil && ev.Result.ErrorCode != "":
			status, msg := g.runFailure(r, ev.RunID, ev.Result)
			writeError(w, status, failureType(ev.Result.ErrorCode), ev.Result.ErrorCode, msg)
			return
		case ev.Result != nil:
			res = *ev.Result
		default:
			continue
		}
		m := &outMessage{Role: "assistant", Content: &res.Content, ToolCalls: outCalls(res.ToolCalls, false)}
		if res.Content == "" && len(m.ToolCalls) > 0 {
			m.Content = nil
		}
		writeJSON(w, http.StatusOK, completion{
			ID: id, Object: "chat.completion", Created: created, Model: req.Model,
			Choices: []choice{{Message: m, FinishReason: ptr(cmp.Or(res.FinishReason, "stop"))}},
			Usage:   wsproto.UsageOf(res.Usage),
		})
		return
	}
}

// runSubscription follows the events of the run that answers a request:
// Deliver names it (subscribe), before it can tell anything.
type runSubscription struct {
	events Subscriber
	key    string
	sub    *agent.Subscription
}

func (s *runSubscription) subscribe(runID string) {
	if s.key != "" {
		s.events.Unsubscribe(s.key, s.sub)
	}
	s.key = agent.RunKey(runID)
	s.sub = s.events.Subscribe(s.key)
}

// subscriber returns a runSubscription and the function that ends it.
func (g *Gateway) subscriber() (*runSubscription, func()) {
	s := &runSubscription{events: g.cfg.Events}
	return s, func() {
		if s.key != "" {
			s.events.Unsubscribe(s.key, s.sub)
		}
	}
}

// deliverFailed answers a request whose message the runner refused.
func (g *Gateway) deliverFailed(w http.ResponseWriter, r *http.Request, err error) {
	var ie *agent.InputError
	switch {
	case errors.As(err, &ie):
		writeRequestError(w, "invalid_value", err)
	case errors.Is(err, agent.ErrUnknownAgent):
		writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", err.Error())
	case errors.Is(err, agent.ErrMayNotApprove):
		writeError(w, http.StatusForbidden, "permission_error", "permission_denied", err.Error())
	case errors.Is(err, store.ErrTooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			"the message is larger than this deployment's history can keep (on AWS a message, its media included, holds at most 400 KB); send smaller media")
	case errors.Is(err, store.ErrStorageFull):
		g.log(r).Error("deliver message: storage full", "error", err)
		writeError(w, http.StatusInsufficientStorage, "server_error", agent.CodeStorageFull, agent.StorageFullMessage)
	default:
		g.log(r).Error("deliver message", "error", err)
		writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not start the run")
	}
}

// runFailure logs that a run failed, joining the request id to the run's
// (the loop logged the cause under the run id), and returns what the
// client is told: a status and the run's error, which the loop writes for
// users and which never quotes a provider or the server's internals.
func (g *Gateway) runFailure(r *http.Request, runID string, res *agent.Result) (int, string) {
	g.log(r).Error("run failed", "run_id", runID, "code", res.ErrorCode)
	status := http.StatusInternalServerError
	switch res.ErrorCode {
	case agent.CodeNoProvider:
		status = http.StatusServiceUnavailable
	case agent.CodeUpstream:
		status = http.StatusBadGateway
	case agent.CodeBudgetExhausted:
		status = http.StatusPaymentRequired
	}
	return status, res.Error
}

// failureType is the error type of a run's failure with code: OpenAI's
// insufficient_quota for a spent budget, server_error for the rest.
func failureType(code string) string {
	if code == agent.CodeBudgetExhausted {
		return "insufficient_quota"
	}
	return "server_error"
}

// convertMessages validates the request's messages and maps them to the
// chat vocabulary; a user's message may carry media within lim.
func convertMessages(in []requestMessage, lim chat.Limits) ([]chat.Message, error) {
	if len(in) == 0 {
		return nil, errors.New("messages must not be empty")
	}
	out := make([]chat.Message, 0, len(in))
	for i, m := range in {
		text, parts, err := readContent(fmt.Sprintf("messages[%d].content", i), m.Content, m.Role == string(chat.User), lim)
		if err != nil {
			return nil, err
		}
		cm := chat.Message{Role: chat.Role(m.Role), Content: text, Parts: parts, ToolCallID: m.ToolCallID, Name: m.Name}
		switch cm.Role {
		case chat.System, chat.User:
		case "developer":
			cm.Role = chat.System
		case chat.Assistant:
			for _, c := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
		case chat.Tool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("messages[%d]: a tool message needs tool_call_id", i)
			}
		default:
			return nil, fmt.Errorf("messages[%d].role: %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
		out = append(out, cm)
	}
	return out, nil
}

// contentText reads a text content, a tool output's: a string, null, or
// an array of text parts (Chat Completions' "text", the Responses API's
// "input_text" and "output_text").
func contentText(at string, raw json.RawMessage) (string, error) {
	text, _, err := readContent(at, raw, false, chat.Limits{})
	return text, err
}

type completion struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []choice       `json:"choices"`
	Usage   *wsproto.Usage `json:"usage,omitempty"`
}

type choice struct {
	Index        int         `json:"index"`
	Message      *outMessage `json:"message,omitempty"`
	Delta        *delta      `json:"delta,omitempty"`
	FinishReason *string     `json:"finish_reason"`
}

// outMessage is the answer's message; its content is null when it only
// calls tools.
type outMessage struct {
	Role      string    `json:"role,omitempty"`
	Content   *string   `json:"content"`
	ToolCalls []outCall `json:"tool_calls,omitempty"`
}

// outCall is a call of one of the client's tools; in a stream it has the
// index that joins its pieces.
type outCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// outCalls converts calls to OpenAI's shape, indexed for a stream.
func outCalls(calls []chat.ToolCall, indexed bool) []outCall {
	var out []outCall
	for i, c := range calls {
		o := outCall{ID: c.ID, Type: "function"}
		o.Function.Name, o.Function.Arguments = c.Name, c.Arguments
		if indexed {
			o.Index = ptr(i)
		}
		out = append(out, o)
	}
	return out
}

// delta is a streamed piece of a message; empty fields are left out, as
// OpenAI does.
type delta struct {
	Role      string    `json:"role,omitempty"`
	Content   string    `json:"content,omitempty"`
	ToolCalls []outCall `json:"tool_calls,omitempty"`
}

// sessionInput is what a stateful request adds to its session: the user's
// new message, or the tool results that end the request (which answer the
// calls the run handed the client).
func sessionInput(msgs []chat.Message) ([]chat.Message, error) {
	last := msgs[len(msgs)-1]
	switch last.Role {
	case chat.User:
		return []chat.Message{last}, nil
	case chat.Tool:
		i := len(msgs) - 1
		for i > 0 && msgs[i-1].Role == chat.Tool {
			i--
		}
		return msgs[i:], nil
	}
	return nil, errors.New("in a stateful session the last message must be the user's new message or the results of the tool calls the last answer asked for")
}

func ptr[T any](v T) *T { return &v }
