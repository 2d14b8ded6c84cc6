package tests

import (
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// systemPrompt returns the system messages of an upstream request.
func systemPrompt(r fakellm.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			out = append(out, m.Content)
		}
	}
	return out
}

// hasFile reports whether a system prompt has the section of a workspace
// file.
func hasFile(prompt []string, file string) bool {
	for _, s := range prompt {
		if strings.HasPrefix(s, "## "+file+"\n") {
			return true
		}
	}
	return false
}

// The first-run ritual is for conversations with a person: a stateless
// call's prompt leaves BOOTSTRAP.md out. A client's system message comes
// after the agent's prompt, stateless or stateful. Run with -v to see the
// sizes.
func TestPromptFitsTheRequest(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	ask(t, c, "hi")
	ask(t, c, "hi", session("s"))
	params := chatParams(openai.SystemMessage("Answer in French."), openai.UserMessage("hi"))
	if _, err := c.Chat.Completions.New(t.Context(), params, session("s2")); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	tests := []struct {
		name      string
		bootstrap bool
	}{{"stateless", false}, {"stateful", true}, {"stateful with a client system message", true}}
	for i, tt := range tests {
		sys := systemPrompt(reqs[i])
		n := 0
		for _, s := range sys {
			n += len(s)
		}
		t.Logf("%s: %d system messages, %d bytes; whole request body %d bytes", tt.name, len(sys), n, len(reqs[i].Body))
		if hasFile(sys, "BOOTSTRAP.md") != tt.bootstrap || !hasFile(sys, "IDENTITY.md") {
			t.Errorf("%s: BOOTSTRAP.md in the prompt: %v, want %v; IDENTITY.md: %v", tt.name, hasFile(sys, "BOOTSTRAP.md"), tt.bootstrap, hasFile(sys, "IDENTITY.md"))
		}
	}
	sys := systemPrompt(reqs[2])
	if sys[len(sys)-1] != "Answer in French." {
		t.Errorf("last system message = %.60q, want the client's after the agent's prompt", sys[len(sys)-1])
	}
	// The client's system message is not kept in the session's history.
	if _, err := c.Chat.Completions.New(t.Context(), chatParams(openai.UserMessage("again")), session("s2")); err != nil {
		t.Fatal(err)
	}
	if sys := systemPrompt(fake.Requests()[3]); strings.Contains(strings.Join(sys, "\n"), "Answer in French.") {
		t.Error("the client's system message of an earlier request stayed in the session")
	}
}

// An agent configured with client_system: replace sends a client's system
// messages instead of its own prompt.
func TestClientSystemReplaces(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "agents:\n  default:\n    client_system: replace\n")
	c := g.client(g.firstKey())
	params := chatParams(openai.SystemMessage("You are a terse translator."), openai.UserMessage("hi"))
	for _, sk := range []string{"", "s"} {
		var err error
		if sk == "" {
			_, err = c.Chat.Completions.New(t.Context(), params)
		} else {
			_, err = c.Chat.Completions.New(t.Context(), params, session(sk))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ask(t, c, "hi")
	reqs := fake.Requests()
	for i, want := range [][]string{{"You are a terse translator."}, {"You are a terse translator."}} {
		if got := systemPrompt(reqs[i]); !slices.Equal(got, want) {
			t.Errorf("request %d system = %.80q, want only the client's", i, got)
		}
	}
	if !hasFile(systemPrompt(reqs[2]), "IDENTITY.md") {
		t.Error("without a client system message the agent's prompt is gone")
	}
}
