package tests

import (
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// getMedia fetches a media link with key.
func (g *gateway) getMedia(t *testing.T, link, key string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.addr+link, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// TestMediaLinkOwner: a file the agent sends on the API is a link that
// the key of the conversation fetches, and no other key.
func TestMediaLinkOwner(t *testing.T) {
	t.Parallel()
	llm := newFake(t)
	g := startGateway(t, llm, "")
	alice := g.createKey(t, "--name", "alice")
	bob := g.createKey(t, "--name", "bob")
	g.writeWorkspaceFile("report.csv", "month,total\n2026-11,42\n")
	llm.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_send", Name: "send_file", Arguments: `{"path":"report.csv"}`}}},
		fakellm.Reply{Content: "Your report is ready."},
	)
	if got := ask(t, g.client(alice), "my report please", session("reports")); got != "Your report is ready." {
		t.Fatalf("reply = %q", got)
	}
	res, ok := toolResult(llm.Requests()[1], "call_send")
	link := regexp.MustCompile(`/v1/lambdaclaw/media/[0-9a-f]+/[0-9a-f]+`).FindString(res)
	if !ok || link == "" {
		t.Fatalf("send_file's result = %q, want a link", res)
	}
	r, body := g.getMedia(t, link, alice)
	if r.StatusCode != 200 || string(body) != "month,total\n2026-11,42\n" {
		t.Fatalf("alice: %d %q", r.StatusCode, body)
	}
	if ct, cd := r.Header.Get("Content-Type"), r.Header.Get("Content-Disposition"); ct != "application/octet-stream" || cd != "attachment" {
		t.Errorf("Content-Type %q, Content-Disposition %q: a stored file is a download", ct, cd)
	}
	for _, tc := range []struct {
		name, key string
		status    int
	}{{"bob", bob, 404}, {"no key", "", 401}} {
		if r, body := g.getMedia(t, link, tc.key); r.StatusCode != tc.status {
			t.Errorf("%s: %d %q, want %d", tc.name, r.StatusCode, body, tc.status)
		}
	}
}
