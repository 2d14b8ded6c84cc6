package tests

import (
	"context"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// TestReplyLimit checks that limits.max_reply_bytes reaches the provider:
// a long reply comes to the client cut to the limit, streamed or not, and
// a completion too large to read (past 3× the limit plus 64 KiB) fails
// as a provider error.
func TestReplyLimit(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "limits:\n  max_reply_bytes: 1000\n")
	c := g.client(g.firstKey())
	params := chatParams(openai.UserMessage("say a lot"))

	// ASCII without spaces, which the loop trims: the cut is exact.
	const text = "0123456789"
	fake.Enqueue(fakellm.Reply{Generated: 50 << 10, GeneratedText: text})
	if got := ask(t, c, "say a lot"); len(got) != 1000 {
		t.Errorf("completion of %d bytes, want the 1000-byte limit", len(got))
	}

	fake.Enqueue(fakellm.Reply{Generated: 10 << 20, GeneratedText: text, ChunkSize: 100})
	s := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil || len(acc.Choices) == 0 {
		t.Fatalf("stream: %v (%d choices)", err, len(acc.Choices))
	}
	if got := acc.Choices[0].Message.Content; len(got) != 1000 {
		t.Errorf("stream of %d bytes, want the 1000-byte limit", len(got))
	}

	fake.Enqueue(fakellm.Reply{Generated: 10 << 20})
	_, err := c.Chat.Completions.New(context.Background(), params)
	wantAPIError(t, err, http.StatusBadGateway, "upstream_error")
}
