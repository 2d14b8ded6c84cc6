// Package fakellm is a scripted fake of an OpenAI-compatible Chat Completions
// server for tests. It speaks the real wire format — JSON completions, SSE
// chunk streams with tool-call fragments and usage, OpenAI error JSON — and
// can fail the way real providers do: error statuses with Retry-After,
// delays, hangs, malformed bodies and streams cut mid-way. It can also send
// a reply of any size, made up as it is sent (Reply.Generated).
//
// A test queues replies with Enqueue; each request takes the next one in
// arrival order, and when the script is empty the default responder answers
// (by default "echo: " followed by the last user message; ToolUser is a
// default that calls the tools it is offered and answers in the requested
// format). Every request is parsed, its tools and settings included, and
// recorded for assertions.
package fakellm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Message is one message of a recorded request, in the OpenAI chat format.
type Message struct {
	Role    string
	Content string
	// Parts are the content's parts other than text, as sent.
	Parts      []Part
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// Part is a content part of a message other than text, in Chat
// Completions' terms: an image_url (URL, https or data:, and Detail), an
// input_audio (Data, Format) or a file (Data, its file_data, and
// Filename).
type Part struct {
	Type     string
	URL      string
	Detail   string
	Data     string
	Format   string
	Filename string
}

// ToolCall is a function call, either requested by a reply or carried by an
// assistant message of a request.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Request is a parsed chat completion request.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the names of the function tools offered to the model.
	Tools []string
	// ToolDefs are the function tools offered to the model, whole.
	ToolDefs     []Tool
	Params       Params
	Stream       bool
	IncludeUsage bool
	// APIKey is the bearer token of the Authorization header.
	APIKey string
	// Body is the raw request body.
	Body []byte
	// Invalid is the error message the fake answered with when it rejected
	// the request as the real API would (status 400); empty otherwise.
	Invalid string
}

// LastUser returns the content of the last user message, or "".
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Usage is the token usage a reply reports.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// Reply scripts one answer. The zero Reply is an empty assistant message.
type Reply struct {
	// Content is the assistant's text.
	Content string
	// Generated, when positive, replaces Content with that many bytes of
	// GeneratedText repeated (a few bytes fewer when the last rune would
	// not fit whole), made up as it is sent: a reply of any size, streamed
	// or not, costs the fake no memory.
	Generated int64
	// GeneratedText is the text (valid UTF-8) Generated repeats; an ASCII
	// sentence when empty.
	GeneratedText string
	// ToolCalls are function calls the assistant requests; finish_reason is
	// then "tool_calls". Empty IDs are filled in.
	ToolCalls []ToolCall
	// FinishReason, when not empty, replaces the finish_reason ("stop", or
	// "tool_calls" with ToolCalls). A text reply is cut at the request's
	// first stop sequence, and one longer than 4 bytes per token of its
	// max_tokens (or max_completion_tokens) is cut there and finishes with
	// "length".
	FinishReason string

	// Status, when 400 or more, answers with OpenAI error JSON instead of a
	// completion. ErrorMessage, ErrorType and ErrorCode default from Status.
	Status       int
	ErrorMessage string
	ErrorType    string
	ErrorCode    string
	// RetryAfter sets the Retry-After header (any status).
	RetryAfter string

	// Delay waits before answering (or before the first chunk).
	Delay time.Duration
	// Hang never answers; the handler returns when the client goes away or
	// the server closes.
	Hang bool
	// Raw is sent verbatim as the body with status 200.
	Raw string
	// CutStream, for streaming requests, sends the role chunk and part of
	// the content then drops the connection without finish_reason or [DONE].
	CutStream bool
	// ChunkSize is the number of runes per streamed content or argument
	// fragment; 4 when zero.
	ChunkSize int
	// ChunkEvery paces a streamed reply's content: one fragment each
	// interval, as a model generates tokens (a fragment of 4 runes every
	// 40 ms is about 25 tokens a second).
	ChunkEvery time.Duration
	// Usage overrides the token counts, which are otherwise estimated from
	// the lengths of the prompt and the answer.
	Usage *Usage
}

// defaultGeneratedText is what Generated repeats by default.
const defaultGeneratedText = "All work and no play makes Jack a dull boy. "

// generator makes the content of a Generated reply piece by piece.
type generator struct {
	unit string
	at   int   // where the next piece starts in unit
	left int64 // bytes still to make
}

func newGenerator(reply Reply) *generator {
	unit := reply.GeneratedText
	if unit == "" {
		unit = defaultGeneratedText
	}
	return &generator{unit: unit, left: reply.Generated}
}

// next returns the next piece of at most runes runes, or "" at the end.
func (g *generator) next(runes int) string {
	var b strings.Builder
	for ; runes > 0; runes-- {
		r, size := utf8.DecodeRuneInString(g.unit[g.at:])
		if int64(size) > g.left {
			g.left = 0
			break
		}
		b.WriteRune(r)
		g.left -= int64(size)
		g.at = (g.at + size) % len(g.unit)
	}
	return b.String()
}

// pieces returns the content of reply in pieces of size runes: Content,
// or what Generated makes up.
func pieces(reply Reply, size int) iter.Seq[string] {
	if reply.Generated <= 0 {
		return slices.Values(split(reply.Content, size))
	}
	return func(yield func(string) bool) {
		g := newGenerator(reply)
		for p := g.next(size); p != ""; p = g.next(size) {
			if !yield(p) {
				return
			}
		}
	}
}

// contentBytes returns the length of reply's content.
func contentBytes(reply Reply) int64 {
	if reply.Generated > 0 {
		return reply.Generated
	}
	return int64(len(reply.Content))
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:PORT; clients use URL+"/v1".
	URL string

	ts     *httptest.Server
	closed chan struct{}
	once   sync.Once
	seq    atomic.Int64

	mu        sync.Mutex
	script    []Reply
	requests  []Request
	def       func(Request) Reply
	onRequest func(Request)
	changed   chan struct{} // closed and replaced whenever a request is recorded
	trans     transcriptions
}

// New starts a fake server on 127.0.0.1. Close it when done.
func New() *Server {
	s := &Server{closed: make(chan struct{}), changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleCompletions)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handleTranscriptions)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, Reply{Status: http.StatusNotFound, ErrorMessage: "Invalid URL (" + r.Method + " " + r.URL.Path + ")"})
	})
	s.ts = httptest.NewServer(mux)
	s.URL = s.ts.URL
	return s
}

// Close releases hanging and delayed handlers and shuts the server down.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closed) })
	s.ts.CloseClientConnections()
	s.ts.Close()
}

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.script = append(s.script, replies...)
	s.mu.Unlock()
}

// SetDefault sets the responder used when the script is empty; nil restores
// the built-in echo.
func (s *Server) SetDefault(f func(Request) Reply) {
	s.mu.Lock()
	s.def = f
	s.mu.Unlock()
}

// OnRequest sets a callback run synchronously for every request after it is
// recorded and before it is answered; nil removes it.
func (s *Server) OnRequest(f func(Request)) {
	s.mu.Lock()
	s.onRequest = f
	s.mu.Unlock()
}

// Requests returns a copy of the recorded requests in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending returns the number of scripted replies not yet used.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// WaitRequests waits until at least n requests have been recorded or the
// timeout passes, and returns the recorded requests and whether n arrived.
func (s *Server) WaitRequests(n int, timeout time.Duration) ([]Request, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			reqs := append([]Request(nil), s.requests...)
			s.mu.Unlock()
			return reqs, true
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return s.Requests(), false
		}
	}
}

// Reset clears the script, the recorded requests, the default responder and
// the request callback.
func (s *Server) Reset() {
	s.mu.Lock()
	s.script = nil
	s.requests = nil
	s.def = nil
	s.onRequest = nil
	s.mu.Unlock()
}

// Echo is the built-in default responder: "echo: " + the last user message.
func Echo(req Request) Reply {
	return Reply{Content: "echo: " + req.LastUser()}
}

// wire types of the request.

type wireRequest struct {
	Model         *string       `json:"model"`
	Messages      []wireMessage `json:"messages"`
	Tools         []wireTool    `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

// ParseRequest decodes a Chat Completions request body as the fake does,
// for tests that compare what a client sent with what reached the fake. It
// returns the parsed request and, when the real API would reject it, the
// 400 message.
func ParseRequest(body []byte) (Request, string) {
	req := Request{Body: body}
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return req, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
	}
	if w.Model != nil {
		req.Model = *w.Model
	}
	req.Stream = w.Stream
	req.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	for _, t := range w.Tools {
		f := t.Function
		req.Tools = append(req.Tools, f.Name)
		req.ToolDefs = append(req.ToolDefs, Tool{Name: f.Name, Description: f.Description, Parameters: f.Parameters, Strict: f.Strict})
	}
	params, invalid := parseParams(body)
	if invalid != "" {
		return req, invalid
	}
	req.Params = params
	for i, m := range w.Messages {
		content, parts, err := readContent(m.Content)
		if err != nil {
			return req, fmt.Sprintf("Invalid type for 'messages[%d].content': %v", i, err)
		}
		msg := Message{Role: m.Role, Content: content, Parts: parts, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, validate(req, w)
}

// readContent reads a message content that is a string, null or an array
// of parts: its text parts flattened, its other parts as they are.
func readContent(raw json.RawMessage) (string, []Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
		InputAudio *struct {
			Data   string `json:"data"`
			Format string `json:"format"`
		} `json:"input_audio"`
		File *struct {
			FileData string `json:"file_data"`
			Filename string `json:"filename"`
		} `json:"file"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("expected a string or an array of content parts")
	}
	var b strings.Builder
	var out []Part
	for _, p := range parts {
		switch {
		case p.Type == "text":
			b.WriteString(p.Text)
		case p.Type == "image_url" && p.ImageURL != nil:
			out = append(out, Part{Type: p.Type, URL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
		case p.Type == "input_audio" && p.InputAudio != nil:
			out = append(out, Part{Type: p.Type, Data: p.InputAudio.Data, Format: p.InputAudio.Format})
		case p.Type == "file" && p.File != nil:
			out = append(out, Part{Type: p.Type, Data: p.File.FileData, Filename: p.File.Filename})
		default:
			return "", nil, fmt.Errorf("a content part of type %q is not a valid part", p.Type)
		}
	}
	return b.String(), out, nil
}

// validate applies the checks of the real Chat Completions API that catch
// broken conversations: a model, at least one message, known roles, tool
// messages that answer a preceding assistant tool call, and every tool call
// answered before the next non-tool message.
func validate(req Request, w wireRequest) string {
	if w.Model == nil || req.Model == "" {
		return "you must provide a model parameter"
	}
	if len(req.Messages) == 0 {
		return "[] is too short - 'messages'"
	}
	for i, t := range w.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return fmt.Sprintf("Invalid value for 'tools[%d]': expected a function tool with a name.", i)
		}
	}
	open := map[string]bool{} // tool call ids awaiting a tool message
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant":
			if len(open) > 0 {
				return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(keys(open), ", ")
			}
			if m.Role == "assistant" {
				for _, tc := range m.ToolCalls {
					if tc.ID == "" || tc.Name == "" {
						return fmt.Sprintf("Missing required parameter: 'messages[%d].tool_calls[].id' or 'function.name'.", i)
					}
					open[tc.ID] = true
				}
			}
		case "tool":
			if !open[m.ToolCallID] {
				return fmt.Sprintf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[%d], tool_call_id %q)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'. (messages[%d].role)", m.Role, i)
		}
	}
	if len(open) > 0 {
		return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: " + strings.Join(keys(open), ", ")
	}
	return validateParams(req)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	if _, err := body.ReadFrom(r.Body); err != nil {
		return
	}
	req, invalid := ParseRequest(body.Bytes())
	req.Invalid = invalid
	req.APIKey = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")

	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	cb := s.onRequest
	var reply Reply
	if invalid == "" {
		if len(s.script) > 0 {
			reply = s.script[0]
			s.script = s.script[1:]
		} else if s.def != nil {
			reply = s.def(req)
		} else {
			reply = Echo(req)
		}
	}
	s.mu.Unlock()
	if cb != nil {
		cb(req)
	}
	if invalid != "" {
		writeError(w, Reply{Status: http.StatusBadRequest, ErrorMessage: invalid, ErrorType: "invalid_request_error"})
		return
	}

	if reply.Hang {
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		return
	}
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		case <-s.closed:
			t.Stop()
			return
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status >= 400 {
		writeError(w, reply)
		return
	}
	if reply.Raw != "" {
		if req.Stream {
			w.Header().Set("Content-Type", "text/event-stream")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(reply.Raw))
		return
	}

	n := s.seq.Add(1)
	id := fmt.Sprintf("chatcmpl-fake%d", n)
	for i := range reply.ToolCalls {
		if reply.ToolCalls[i].ID == "" {
			reply.ToolCalls[i].ID = fmt.Sprintf("call_fake%d_%d", n, i)
		}
	}
	reply = limit(req, reply)
	usage := estimateUsage(req, reply)
	model := req.Model
	if req.Stream {
		s.stream(w, r, id, model, req.IncludeUsage, reply, usage)
		return
	}
	writeCompletion(w, id, model, reply, usage)
}

func estimateUsage(req Request, reply Reply) wireUsage {
	if reply.Usage != nil {
		u := *reply.Usage
		return wireUsage{u.PromptTokens, u.CompletionTokens, u.PromptTokens + u.CompletionTokens}
	}
	completion := int(contentBytes(reply))
	for _, tc := range reply.ToolCalls {
		completion += len(tc.Name) + len(tc.Arguments)
	}
	p, c := promptTokens(req), completion/4+1
	return wireUsage{p, c, p + c}
}

// promptTokens estimates the tokens of a request's messages.
func promptTokens(req Request) int {
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content) + 4
		for _, tc := range m.ToolCalls {
			prompt += len(tc.Name) + len(tc.Arguments)
		}
	}
	return prompt/4 + 1
}

// limit cuts a text reply at the request's first stop sequence, and at
// its maximum of completion tokens, as a model does: a reply cut at the
// maximum finishes with "length" and uses exactly that many tokens.
func limit(req Request, reply Reply) Reply {
	if reply.Generated > 0 || len(reply.ToolCalls) > 0 || reply.FinishReason != "" {
		return reply
	}
	cut := len(reply.Content)
	for _, s := range req.Params.Stop {
		if i := strings.Index(reply.Content, s); s != "" && i >= 0 && i < cut {
			cut = i
		}
	}
	reply.Content = reply.Content[:cut]
	most := req.Params.MaxCompletionTokens
	if most == nil {
		most = req.Params.MaxTokens
	}
	if most == nil || *most <= 0 || len(reply.Content) <= *most*4 {
		return reply
	}
	cut = *most * 4
	for cut > 0 && !utf8.RuneStart(reply.Content[cut]) {
		cut--
	}
	reply.Content = reply.Content[:cut]
	reply.FinishReason = "length"
	if reply.Usage == nil {
		reply.Usage = &Usage{PromptTokens: promptTokens(req), CompletionTokens: *most}
	}
	return reply
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func finishReason(reply Reply) string {
	if reply.FinishReason != "" {
		return reply.FinishReason
	}
	if len(reply.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func wireCalls(calls []ToolCall, indexed bool) []wireToolCall {
	out := make([]wireToolCall, len(calls))
	for i, c := range calls {
		out[i].ID = c.ID
		out[i].Type = "function"
		out[i].Function.Name = c.Name
		out[i].Function.Arguments = c.Arguments
		if indexed {
			out[i].Index = &i
		}
	}
	return out
}

func writeCompletion(w http.ResponseWriter, id, model string, reply Reply, usage wireUsage) {
	type message struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		Refusal   *string        `json:"refusal"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	msg := message{Role: "assistant"}
	content := reply.Content
	if reply.Generated > 0 {
		content = generatedMark
	}
	if content != "" || len(reply.ToolCalls) == 0 {
		msg.Content = &content
	}
	if len(reply.ToolCalls) > 0 {
		msg.ToolCalls = wireCalls(reply.ToolCalls, false)
	}
	resp := map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"logprobs":      nil,
			"finish_reason": finishReason(reply),
		}},
		"usage":              usage,
		"system_fingerprint": "fp_fake",
	}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if reply.Generated <= 0 {
		_, _ = w.Write(b)
		return
	}
	mark, _ := json.Marshal(generatedMark)
	before, after, _ := bytes.Cut(b, mark)
	_, _ = w.Write(append(before, '"'))
	for p := range pieces(reply, 16<<10) {
		q, _ := json.Marshal(p)
		if _, err := w.Write(q[1 : len(q)-1]); err != nil {
			return // the client went away
		}
	}
	_, _ = w.Write(append([]byte{'"'}, after...))
}

// generatedMark stands for a Generated content in the encoded completion,
// where the content is then written piece by piece.
const generatedMark = "\x00generated\x00"

// stream writes the reply as Chat Completions SSE chunks.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id, model string, includeUsage bool, reply Reply, usage wireUsage) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	size := reply.ChunkSize
	if size <= 0 {
		size = 4
	}

	send := func(delta map[string]any, finish any) error {
		choice := map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}
		chunk := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{choice},
		}
		if includeUsage {
			chunk["usage"] = nil
		}
		err := writeEvent(w, chunk)
		if flusher != nil {
			flusher.Flush()
		}
		return err
	}

	send(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)
	// With CutStream, send about half, then abort the connection without
	// the chunked terminator, as a provider that crashes mid-answer would.
	half := (contentBytes(reply) + 1) / 2
	sent := int64(0)
	for p := range pieces(reply, size) {
		if reply.CutStream && sent >= half {
			break
		}
		if reply.ChunkEvery > 0 && sent > 0 {
			select {
			case <-time.After(reply.ChunkEvery):
			case <-r.Context().Done():
				return
			}
		}
		if err := send(map[string]any{"content": p}, nil); err != nil {
			return // the client went away
		}
		sent += int64(len(p))
	}
	if reply.CutStream {
		panic(http.ErrAbortHandler)
	}
	for i, tc := range reply.ToolCalls {
		first := wireToolCall{Index: &i, ID: tc.ID, Type: "function"}
		first.Function.Name = tc.Name
		send(map[string]any{"tool_calls": []wireToolCall{first}}, nil)
		for _, frag := range split(tc.Arguments, size) {
			next := wireToolCall{Index: &i}
			next.Function.Arguments = frag
			send(map[string]any{"tool_calls": []wireToolCall{next}}, nil)
		}
	}
	send(map[string]any{}, finishReason(reply))
	if includeUsage {
		writeEvent(w, map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"system_fingerprint": "fp_fake", "choices": []any{}, "usage": usage,
		})
	}
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	if flusher != nil {
		flusher.Flush()
	}
}

func writeEvent(w http.ResponseWriter, v any) error {
	b, _ := json.Marshal(v)
	var buf bytes.Buffer
	buf.Grow(len(b) + 8)
	buf.WriteString("data: ")
	buf.Write(b)
	buf.WriteString("\n\n")
	_, err := w.Write(buf.Bytes())
	return err
}

// split cuts s into pieces of n runes.
func split(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func writeError(w http.ResponseWriter, reply Reply) {
	typ, code, msg := reply.ErrorType, reply.ErrorCode, reply.ErrorMessage
	switch reply.Status {
	case http.StatusBadRequest:
		typ = or(typ, "invalid_request_error")
	case http.StatusUnauthorized:
		typ, code = or(typ, "invalid_request_error"), or(code, "invalid_api_key")
		msg = or(msg, "Incorrect API key provided.")
	case http.StatusNotFound:
		typ, code = or(typ, "invalid_request_error"), or(code, "model_not_found")
	case http.StatusTooManyRequests:
		typ, code = or(typ, "requests"), or(code, "rate_limit_exceeded")
		msg = or(msg, "Rate limit reached for requests. Please try again later.")
	default:
		if reply.Status >= 500 {
			typ = or(typ, "server_error")
			msg = or(msg, "The server had an error while processing your request. Sorry about that!")
		}
	}
	msg = or(msg, http.StatusText(reply.Status))
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(reply.Status)
	_, _ = w.Write(b)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	b, _ := json.Marshal(map[string]any{
		"object": "list",
		"data": []any{map[string]any{
			"id": "fake-model", "object": "model", "created": 1700000000, "owned_by": "fakellm",
		}},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
