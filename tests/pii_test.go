package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// TestPIITokenized runs an agent with privacy.pii: tokenize: the model's
// requests hold tokens where the user's message and a tool's result had
// an e-mail address or a phone number; a write_file of the tokens the
// model passes writes the real values; the answer, plain and streamed
// (its tokens cut between chunks), reaches the user with the values.
func TestPIITokenized(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "agents:\n  default:\n    privacy: {pii: tokenize}\n")
	c := g.client(g.createKey(t, "--name", "full", "--autonomy", "full"))
	g.writeWorkspaceFile("team.txt", "Ops lead: bob.jones@example.org, mobile +1 (555) 201-7788\n")
	const (
		email = "ana.garcia@example.com"
		phone = "+44 20 7946 0958"
	)
	raw := []string{email, phone, "bob.jones@example.org", "+1 (555) 201-7788"}

	question := "Save my contact: " + email + ", " + phone + ". Who leads ops?"
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{ID: "call_w", Name: "write_file", Arguments: `{"path":"contact.txt","content":"<EMAIL_1> / <PHONE_1>"}`},
			{ID: "call_r", Name: "read_file", Arguments: `{"path":"team.txt"}`},
		}},
		fakellm.Reply{Content: "Saved <EMAIL_1> and <PHONE_1>. Ops is led by <EMAIL_2> (<PHONE_2>)."},
	)
	got := ask(t, c, question)
	want := "Saved " + email + " and " + phone + ". Ops is led by bob.jones@example.org (+1 (555) 201-7788)."
	if got != want {
		t.Errorf("reply = %q\nwant    %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(g.workspace(), "contact.txt"))
	if err != nil || string(b) != email+" / "+phone {
		t.Errorf("contact.txt = %q, %v; want the real values", b, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		body := string(r.Body)
		for _, v := range raw {
			if strings.Contains(body, v) || strings.Contains(body, strings.ReplaceAll(v, "+", `\u002b`)) {
				t.Errorf("model request %d holds %q:\n%s", i, v, body)
			}
		}
	}
	conv := conversation(reqs[1].Messages)
	if conv[0].Content != "Save my contact: <EMAIL_1>, <PHONE_1>. Who leads ops?" {
		t.Errorf("the user's message as the model saw it: %q", conv[0].Content)
	}
	var teamResult string
	for _, m := range conv {
		if m.Role == "tool" && m.ToolCallID == "call_r" {
			teamResult = m.Content
		}
	}
	if !strings.Contains(teamResult, "Ops lead: <EMAIL_2>, mobile <PHONE_2>") {
		t.Errorf("read_file's result as the model saw it: %q", teamResult)
	}

	// Streamed in chunks of 3 runes, which cut the tokens: the user reads
	// the values whole; the same session keeps its tokens.
	fake.Enqueue(fakellm.Reply{Content: "Once more: <EMAIL_1>, <PHONE_2>.", ChunkSize: 3})
	stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(openai.UserMessage("and again? "+email)), session("s1"))
	var streamed strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			streamed.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if want := "Once more: " + email + ", <PHONE_2>."; streamed.String() != want {
		// A new session (s1) has its own tokens: <PHONE_2> is not one
		// of them and stays as the model wrote it.
		t.Errorf("streamed = %q, want %q", streamed.String(), want)
	}
	last := fake.Requests()[2]
	if strings.Contains(string(last.Body), email) || !strings.Contains(last.LastUser(), "and again? <EMAIL_1>") {
		t.Errorf("the streamed run's request: %q", last.LastUser())
	}
}
