// Package remotea2a makes remote A2A agents (https://a2a-protocol.org)
// agents' tools: each configured agent is the tool <name>__ask, described
// by the agent's card, which sends it a message and returns its answer.
// It speaks the JSON-RPC binding of version 1.0 (SendMessage, GetTask) to
// an agent whose card names an interface of that version, and of version
// 0.3 (message/send, tasks/get) to one whose card is of 0.3, with the
// wire types of channels/a2a, lambdaclaw's own A2A server.
//
// The card's URL is the operator's, and so is its origin: the token goes
// there only, and there only the address rules do not apply. An endpoint
// the card names on another origin is reached through web_fetch's client
// (public addresses, or the operator's outbound networks), without the
// token. No redirect is followed. A call waits for the agent's answer
// within the call's time limit (tool.Policy.Timeout), reading a task
// that is not finished again every second; the answer is scrubbed of
// secrets and cut to MaxResultBytes.
package remotea2a

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/a2a"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Suffix ends the name of a remote agent's tool: <name>__ask.
const Suffix = "__ask"

// Limits of what is read from a remote agent.
const (
	// MaxResultBytes bounds the answer the model sees.
	MaxResultBytes = 32 << 10
	// maxResponseBytes bounds a card or a JSON-RPC response read.
	maxResponseBytes = 1 << 20
	// maxDescription bounds the tool's description taken from the card.
	maxDescription = 2048
	// pollEvery is how often a task not finished is read again.
	pollEvery = time.Second
)

// Config is one remote agent.
type Config struct {
	// Name names the tool, Name+Suffix.
	Name string
	// CardURL is the agent's card.
	CardURL string
	// Token, when set, goes to the card's origin as "Authorization:
	// Bearer <Token>", or as Header's value when Header is set.
	Token, Header string
	// ReadOnly declares that asking the agent changes nothing.
	ReadOnly bool
	// Timeout bounds a call (tool.Policy.Timeout); zero means 120 s.
	Timeout time.Duration
	// Public reaches what is not on the card's origin: a webfetch.Client.
	Public *http.Client
	// Trusted reaches the card's origin; nil means a client of its own.
	Trusted *http.Client
}

// Tool is a remote agent as a tool.
type Tool struct {
	cfg    Config
	origin string

	mu sync.Mutex
	// card is the agent's card as read, nil until it was; def is the
	// tool's definition, with the card's description once read.
	card *card
	def  chat.ToolDef
}

// card is what the tool reads of an agent's card: enough to describe it
// and to reach its JSON-RPC endpoint.
type card struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Skills      []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"skills"`
	SupportedInterfaces []a2a.Interface `json:"supportedInterfaces"`
	// Version 0.3.
	URL                string `json:"url"`
	PreferredTransport string `json:"preferredTransport"`
	ProtocolVersion    string `json:"protocolVersion"`

	// endpoint and version are where and how to send.
	endpoint, version string
}

// params is the tool's arguments.
var params = json.RawMessage(`{"type":"object","properties":{` +
	`"message":{"type":"string","description":"what to ask or tell the agent"},` +
	`"context_id":{"type":"string","description":"continues the conversation an earlier answer named (its context_id); leave out to start a new one"},` +
	`"task_id":{"type":"string","description":"answers the task an earlier answer said needs input (its task_id)"}},` +
	`"required":["message"]}`)

// New returns the tool and reads the agent's card within ctx. A card not
// read leaves the tool described by its name; a call reads it again.
func New(ctx context.Context, cfg Config) (*Tool, error) {
	u, err := url.Parse(cfg.CardURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote A2A agent %s: %q is not an http(s) URL", cfg.Name, cfg.CardURL)
	}
	if cfg.Public == nil {
		return nil, fmt.Errorf("remote A2A agent %s: no client for public addresses", cfg.Name)
	}
	cfg.Timeout = cmp.Or(cfg.Timeout, 120*time.Second)
	if cfg.Trusted == nil {
		cfg.Trusted = &http.Client{}
	}
	t := &Tool{cfg: cfg, origin: origin(u)}
	t.def = chat.ToolDef{Name: cfg.Name + Suffix, Parameters: params,
		Description: fmt.Sprintf("Ask the remote agent %s (A2A); its card could not be read yet.", cfg.Name)}
	if _, err := t.readCard(ctx); err != nil {
		return t, err
	}
	return t, nil
}

// origin is a URL's scheme and host.
func origin(u *url.URL) string { return u.Scheme + "://" + strings.ToLower(u.Host) }

// Definition implements tool.Tool.
func (t *Tool) Definition() chat.ToolDef {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.def
}

// Policy implements tool.Tool: an external effect unless the operator
// declared the agent read-only; never run again after a restart.
func (t *Tool) Policy() tool.Policy {
	p := tool.Policy{Effect: tool.External, Timeout: t.cfg.Timeout}
	if t.cfg.ReadOnly {
		p.Effect = tool.Read
	}
	return p
}

type args struct {
	Message   string `json:"message"`
	ContextID string `json:"context_id"`
	TaskID    string `json:"task_id"`
}

// Call implements tool.Tool.
func (t *Tool) Call(ctx context.Context, _ tool.Env, raw json.RawMessage) (string, error) {
	var in args
	if err := json.Unmarshal(raw, &in); err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	if strings.TrimSpace(in.Message) == "" {
		return "", errors.New(`"message" is required`)
	}
	c, err := t.readCard(ctx)
	if err != nil {
		return "", err
	}
	m := a2a.Message{MessageID: agent.NewID(), ContextID: in.ContextID, TaskID: in.TaskID, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(in.Message)}}
	res, err := t.rpc(ctx, c, "send", m)
	for err == nil && res.Task != nil && !settled(res.Task.Status.State) {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s did not answer in time (task %s is %s)", t.cfg.Name, res.Task.ID, res.Task.Status.State)
		case <-time.After(pollEvery):
		}
		res, err = t.rpc(ctx, c, "get", a2a.Message{TaskID: res.Task.ID})
	}
	if err != nil {
		return "", err
	}
	return t.render(res)
}

// settled says whether a task in state s waits for nothing the agent is
// doing: finished, or waiting for input.
func settled(s string) bool {
	return a2a.Terminal(s) || s == a2a.StateInputRequired || s == a2a.StateAuthRequired
}

// render is what the model sees of a result: the answer, or the
// question of a task that needs input, with the ids to go on with;
// scrubbed and cut.
func (t *Tool) render(res a2a.StreamResponse) (string, error) {
	var b strings.Builder
	switch {
	case res.Message != nil:
		b.WriteString(text(res.Message.Parts))
		if res.Message.ContextID != "" {
			fmt.Fprintf(&b, "\n\n[context_id: %s]", res.Message.ContextID)
		}
	case res.Task != nil:
		tk := res.Task
		var status string
		if tk.Status.Message != nil {
			status = text(tk.Status.Message.Parts)
		}
		switch tk.Status.State {
		case a2a.StateCompleted:
			for _, a := range tk.Artifacts {
				b.WriteString(text(a.Parts))
			}
			if b.Len() == 0 {
				b.WriteString(status)
			}
			fmt.Fprintf(&b, "\n\n[context_id: %s]", tk.ContextID)
		case a2a.StateInputRequired, a2a.StateAuthRequired:
			fmt.Fprintf(&b, "%s needs input: %s\n\n[to answer, call %s again with task_id: %s, context_id: %s]", t.cfg.Name, status, t.cfg.Name+Suffix, tk.ID, tk.ContextID)
		default:
			return "", fmt.Errorf("%s: the task %s", t.cfg.Name, cut(scrub.Scrub(strings.TrimSpace(strings.ToLower(strings.TrimPrefix(tk.Status.State, "TASK_STATE_"))+" "+status)), MaxResultBytes))
		}
	default:
		return "", fmt.Errorf("%s answered neither a task nor a message", t.cfg.Name)
	}
	return cut(scrub.Scrub(b.String()), MaxResultBytes), nil
}

// text joins parts' text.
func text(parts []a2a.Part) string {
	s, err := a2a.Text(parts)
	if err != nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Text != nil {
				b.WriteString(*p.Text)
			}
		}
		return b.String()
	}
	return s
}

// cut cuts s to max bytes, on a character's boundary, and says so.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8Start(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("\n[cut: the answer is longer than %d bytes]", max)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// readCard returns the card, reading it first when it was not yet.
func (t *Tool) readCard(ctx context.Context) (*card, error) {
	t.mu.Lock()
	c := t.card
	t.mu.Unlock()
	if c != nil {
		return c, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.cfg.CardURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(a2a.VersionHeader, a2a.Version)
	body, err := t.do(req)
	if err != nil {
		return nil, fmt.Errorf("remote A2A agent %s: card: %w", t.cfg.Name, err)
	}
	c = &card{}
	if err := json.Unmarshal(body, c); err != nil {
		return nil, fmt.Errorf("remote A2A agent %s: card: %w", t.cfg.Name, err)
	}
	if c.endpoint, c.version = c.jsonRPC(); c.endpoint == "" {
		return nil, fmt.Errorf("remote A2A agent %s: its card names no JSON-RPC endpoint of version 1.0 or 0.3", t.cfg.Name)
	}
	if u, err := url.Parse(c.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote A2A agent %s: its card's endpoint %q is not an http(s) URL", t.cfg.Name, c.endpoint)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.card = c
	t.def.Description = c.describe(t.cfg.Name)
	return c, nil
}

// jsonRPC picks the card's JSON-RPC endpoint: of version 1.0 when it
// names one, else of 0.3.
func (c *card) jsonRPC() (endpoint, version string) {
	var legacy string
	for _, i := range c.SupportedInterfaces {
		switch {
		case !strings.EqualFold(i.ProtocolBinding, "JSONRPC"):
		case i.ProtocolVersion == a2a.Version || strings.HasPrefix(i.ProtocolVersion, "1."):
			return i.URL, a2a.Version
		case strings.HasPrefix(i.ProtocolVersion, "0.3"):
			legacy = i.URL
		}
	}
	if legacy == "" && c.URL != "" && len(c.SupportedInterfaces) == 0 && (c.PreferredTransport == "" || strings.EqualFold(c.PreferredTransport, "JSONRPC")) {
		legacy = c.URL
	}
	if legacy != "" {
		return legacy, "0.3"
	}
	return "", ""
}

// describe is the tool's description: the card's name, description and
// skills.
func (c *card) describe(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Ask the remote agent %s (A2A", name)
	if c.Name != "" && c.Name != name {
		fmt.Fprintf(&b, ": %q", c.Name)
	}
	b.WriteString(")")
	if d := strings.TrimSpace(c.Description); d != "" {
		b.WriteString(": " + d)
	}
	for i, s := range c.Skills {
		if i == 0 {
			b.WriteString(" Skills:")
		}
		fmt.Fprintf(&b, " %s (%s);", s.Name, s.Description)
	}
	return cut(strings.TrimSuffix(b.String(), ";"), maxDescription)
}

// rpc sends m (op "send") or reads its task (op "get") in the card's
// version, and reads the result as version 1.0's.
func (t *Tool) rpc(ctx context.Context, c *card, op string, m a2a.Message) (a2a.StreamResponse, error) {
	var method string
	var p any
	switch {
	case op == "send" && c.version == a2a.Version:
		method, p = "SendMessage", a2a.SendRequest{Message: &m}
	case op == "send":
		method, p = "message/send", a2a.LegacySend(m)
	case c.version == a2a.Version:
		method, p = "GetTask", a2a.TaskRequest{ID: m.TaskID}
	default:
		method, p = "tasks/get", a2a.TaskRequest{ID: m.TaskID}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	if err != nil {
		return a2a.StreamResponse{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return a2a.StreamResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.version == a2a.Version {
		req.Header.Set(a2a.VersionHeader, a2a.Version)
	}
	out, err := t.do(req)
	if err != nil {
		if ctx.Err() != nil {
			return a2a.StreamResponse{}, fmt.Errorf("%s did not answer in time: %w", t.cfg.Name, ctx.Err())
		}
		return a2a.StreamResponse{}, fmt.Errorf("%s: %s: %w", t.cfg.Name, method, err)
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *a2a.RPCError   `json:"error"`
	}
	switch err := json.Unmarshal(out, &resp); {
	case err != nil:
		return a2a.StreamResponse{}, fmt.Errorf("%s: %s: the answer is not JSON-RPC: %w", t.cfg.Name, method, err)
	case resp.Error != nil:
		return a2a.StreamResponse{}, fmt.Errorf("%s: %s: %s", t.cfg.Name, method, cut(scrub.Scrub(resp.Error.Error()), 1024))
	}
	var res a2a.StreamResponse
	if c.version == a2a.Version && op == "get" {
		var tk a2a.Task
		if err := json.Unmarshal(resp.Result, &tk); err != nil {
			return res, fmt.Errorf("%s: %s: %w", t.cfg.Name, method, err)
		}
		return a2a.StreamResponse{Task: &tk}, nil
	}
	if c.version == a2a.Version {
		err = json.Unmarshal(resp.Result, &res)
	} else {
		res, err = a2a.LegacyResult(resp.Result)
	}
	if err != nil {
		return res, fmt.Errorf("%s: %s: %w", t.cfg.Name, method, err)
	}
	return res, nil
}

// do sends req, with the token when it goes to the card's origin, and
// returns the body of a 200 answer, at most maxResponseBytes.
func (t *Tool) do(req *http.Request) ([]byte, error) {
	client := t.cfg.Public
	if origin(req.URL) == t.origin {
		client = t.cfg.Trusted
		if t.cfg.Token != "" {
			if t.cfg.Header != "" {
				req.Header.Set(t.cfg.Header, t.cfg.Token)
			} else {
				req.Header.Set("Authorization", "Bearer "+t.cfg.Token)
			}
		}
	}
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	switch {
	case err != nil:
		return nil, err
	case len(body) > maxResponseBytes:
		return nil, fmt.Errorf("the answer is larger than %d bytes", maxResponseBytes)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, fmt.Errorf("%s answered %d, a redirect to %q, which is not followed: configure the URL it names", req.URL.Redacted(), resp.StatusCode, resp.Header.Get("Location"))
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%s answered %d: %s", req.URL.Redacted(), resp.StatusCode, cut(scrub.Scrub(strings.TrimSpace(string(body))), 512))
	}
	return body, nil
}
