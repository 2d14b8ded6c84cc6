package channeltest

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// model is the suite's fake model: it answers from a script, one reply a
// request, and "echo: " and the last user message when the script is
// empty, and records the requests. (A conformance suite beside its port
// links no fake under tests/.)
type model struct {
	mu     sync.Mutex
	script []reply
	seen   []llm.Request
	asked  chan struct{}
}

// reply is one scripted answer.
type reply struct {
	// call is a tool the model calls.
	call string
	// long is the size of a text the model writes: a sentence repeated.
	long int
	// hang answers only when the request is cancelled.
	hang bool
}

// sentence is what a long reply repeats.
const sentence = "All work and no play makes Jack a dull boy. "

func newModel() *model { return &model{asked: make(chan struct{}, 100)} }

func (m *model) Name() string { return "channeltest" }

func (m *model) enqueue(r reply) {
	m.mu.Lock()
	m.script = append(m.script, r)
	m.mu.Unlock()
}

func (m *model) Generate(ctx context.Context, req llm.Request, onDelta llm.OnDelta) (llm.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, req)
	var r reply
	if len(m.script) > 0 {
		r, m.script = m.script[0], m.script[1:]
	}
	m.mu.Unlock()
	m.asked <- struct{}{}
	msg := chat.Message{Role: chat.Assistant}
	switch {
	case r.hang:
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	case r.call != "":
		msg.ToolCalls = []chat.ToolCall{{ID: "call_1", Name: r.call, Arguments: "{}"}}
	case r.long > 0:
		msg.Content = strings.Repeat(sentence, r.long/len(sentence)+1)[:r.long]
	default:
		msg.Content = "echo: " + lastUser(req.Messages)
	}
	if onDelta != nil && msg.Content != "" {
		onDelta(msg.Content)
	}
	return llm.Response{Message: msg, Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
}

// requests returns the requests seen.
func (m *model) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.seen)
}

// lastUser is the text of the last user message.
func lastUser(msgs []chat.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == chat.User {
			return msgs[i].Content
		}
	}
	return ""
}
