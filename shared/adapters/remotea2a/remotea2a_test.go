package remotea2a_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/remotea2a"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/webfetch"
)

// executor is the sample agent the Go SDK serves: it echoes in a
// completed task, or in a message for a text starting "message", and asks
// a question (input-required) for "pick a colour", whose answer completes
// the task.
type executor struct{}

func (executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	text := rc.Message.Parts[0].(sdk.TextPart).Text
	if strings.HasPrefix(text, "message") {
		return q.Write(ctx, sdk.NewMessage(sdk.MessageRoleAgent, sdk.TextPart{Text: "echo: " + text}))
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, sdk.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	if text == "pick a colour" {
		ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateInputRequired, sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, sdk.TextPart{Text: "Which colour?"}))
		ev.Final = true
		return q.Write(ctx, ev)
	}
	answer := "echo: " + text
	if rc.StoredTask != nil {
		answer = "You chose " + text
	}
	if err := q.Write(ctx, sdk.NewArtifactEvent(rc, sdk.TextPart{Text: answer})); err != nil {
		return err
	}
	ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCompleted, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (executor) Cancel(context.Context, *a2asrv.RequestContext, eventqueue.Queue) error { return nil }

// sample serves the sample agent with the Go SDK (protocol 0.3): its card
// naming endpoint (its own /rpc when empty), and what each request's
// Authorization was, by path.
type sample struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth map[string][]string
}

func serveSample(t *testing.T, endpoint string) *sample {
	s := &sample{auth: map[string][]string{}}
	mux := http.NewServeMux()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auth[r.URL.Path] = append(s.auth[r.URL.Path], r.Header.Get("Authorization"))
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	if endpoint == "" {
		endpoint = s.srv.URL + "/rpc"
	}
	card := &sdk.AgentCard{
		Name: "Sample", Description: "Echoes what it is told.", URL: endpoint, PreferredTransport: sdk.TransportProtocolJSONRPC,
		ProtocolVersion: "0.3.0", DefaultInputModes: []string{"text"}, DefaultOutputModes: []string{"text"},
		Skills: []sdk.AgentSkill{{ID: "echo", Name: "echo", Description: "says it back", Tags: []string{"echo"}}},
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(executor{})))
	mux.Handle("/moved", http.RedirectHandler(s.srv.URL+a2asrv.WellKnownAgentCardPath, http.StatusFound))
	return s
}

func (s *sample) authOf(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.auth[path]
}

func newTool(t *testing.T, cardURL string) (*remotea2a.Tool, error) {
	public, err := webfetch.Client(&webfetch.Config{}) // public addresses only
	if err != nil {
		t.Fatal(err)
	}
	return remotea2a.New(t.Context(), remotea2a.Config{Name: "sample", CardURL: cardURL, Token: "secret-token", Public: public})
}

var contextLine = regexp.MustCompile(`\n\n\[context_id: [^\]]+\]$`)

// TestSample calls the Go SDK's sample agent (protocol 0.3): the tool is
// described by its card, a task's answer and a message come back, a
// question (input-required) is answered with the task's id, and the token
// goes with every request to the card's origin.
func TestSample(t *testing.T) {
	s := serveSample(t, "")
	tl, err := newTool(t, s.srv.URL+a2asrv.WellKnownAgentCardPath)
	if err != nil {
		t.Fatal(err)
	}
	def := tl.Definition()
	if def.Name != "sample__ask" || def.Description != `Ask the remote agent sample (A2A: "Sample"): Echoes what it is told. Skills: echo (says it back)` {
		t.Errorf("definition %s: %q", def.Name, def.Description)
	}
	if p := tl.Policy(); p.Effect != tool.External || p.Idempotent {
		t.Errorf("policy %+v: want an external effect, not run again", p)
	}
	call := func(args string) (string, error) { return tl.Call(t.Context(), tool.Env{}, []byte(args)) }

	got, err := call(`{"message":"hello"}`)
	if err != nil || !contextLine.MatchString(got) || contextLine.ReplaceAllString(got, "") != "echo: hello" {
		t.Errorf("task answer %q, %v", got, err)
	}
	got, err = call(`{"message":"message please"}`)
	if err != nil || contextLine.ReplaceAllString(got, "") != "echo: message please" {
		t.Errorf("message answer %q, %v", got, err)
	}

	asked, err := call(`{"message":"pick a colour"}`)
	m := regexp.MustCompile(`^sample needs input: Which colour\?\n\n\[to answer, call sample__ask again with task_id: (\S+), context_id: (\S+)\]$`).FindStringSubmatch(asked)
	if err != nil || m == nil {
		t.Fatalf("question %q, %v", asked, err)
	}
	got, err = call(`{"message":"blue","task_id":"` + m[1] + `","context_id":"` + m[2] + `"}`)
	if err != nil || got != "You chose blue\n\n[context_id: "+m[2]+"]" {
		t.Errorf("answer %q, %v", got, err)
	}

	for _, path := range []string{a2asrv.WellKnownAgentCardPath, "/rpc"} {
		for _, a := range s.authOf(path) {
			if a != "Bearer secret-token" {
				t.Errorf("%s had Authorization %q, want the token", path, a)
			}
		}
	}
	if _, err := call(`{"message":"  "}`); err == nil {
		t.Error("an empty message was sent")
	}
}

// TestUntrusted holds what the operator did not configure to web_fetch's
// rules: an endpoint on another origin is reached through the public
// client (here refused: a loopback address) without the token, and a
// redirect of the card's URL is not followed.
func TestUntrusted(t *testing.T) {
	elsewhere := serveSample(t, "")
	s := serveSample(t, elsewhere.srv.URL+"/rpc")
	tl, err := newTool(t, s.srv.URL+a2asrv.WellKnownAgentCardPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tl.Call(t.Context(), tool.Env{}, []byte(`{"message":"hello"}`))
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("call to another origin's loopback address: %v, want it refused", err)
	}
	if n := len(elsewhere.authOf("/rpc")); n != 0 {
		t.Errorf("the other origin got %d requests", n)
	}

	_, err = newTool(t, s.srv.URL+"/moved")
	if err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("a card URL that redirects: %v, want the redirect not followed", err)
	}
	if n := len(s.authOf(a2asrv.WellKnownAgentCardPath)); n != 1 {
		t.Errorf("the card was read %d times, want once (the redirect not followed)", n)
	}
}
