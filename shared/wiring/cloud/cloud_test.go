package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// newRoot builds the root with every part, as the step function does
// (its sandbox from the environment, none unless a test sets it).
func newRoot(ctx context.Context) (*cloud.Root, error) { return turns.New(ctx, fargate.Exec) }

func TestNewConfiguration(t *testing.T) {
	cloudtest.Setup(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // error text; "" for success
	}{
		{"openai default", nil, ""},
		{"bedrock first", map[string]string{"DEFAULT_PROVIDER": "", "BEDROCK_MODEL": "amazon.nova-lite-v1:0"}, ""},
		{"no provider", map[string]string{"DEFAULT_PROVIDER": "", "OPENAI_BASE_URL": "", "OPENAI_MODEL": ""}, ""},
		{"bedrock without model", map[string]string{"DEFAULT_PROVIDER": "bedrock"}, "BEDROCK_MODEL"},
		{"openai without model", map[string]string{"OPENAI_MODEL": ""}, "OPENAI_MODEL"},
		{"unknown provider", map[string]string{"DEFAULT_PROVIDER": "azure"}, "DEFAULT_PROVIDER"},
		{"bad agent name", map[string]string{"AGENTS_CONFIG": `{"Bad Name":{}}`}, "AGENTS_CONFIG"},
		{"bad sharing", map[string]string{"SESSION_SHARING": "sometimes"}, "SESSION_SHARING"},
		{"no state machine", map[string]string{"STATE_MACHINE_ARN": ""}, "STATE_MACHINE_ARN"},
		{"no table", map[string]string{"TABLE_NAME": ""}, "TABLE_NAME"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := newRoot(t.Context())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("New = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

func TestAgentsAndProviders(t *testing.T) {
	cloudtest.Setup(t)
	t.Setenv("AGENTS_CONFIG", `{"research":{}}`)
	t.Setenv("BEDROCK_MODEL", "amazon.nova-lite-v1:0")
	searxng(t)
	r, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default", "research"}, r.Agents.Names()); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	a, ok := r.Agents.Agent("research")
	if !ok {
		t.Fatal("no agent research")
	}
	// An agent without settings has every tool the functions offer: the
	// tools the CDK app checks definitions against (agentenv.Tools).
	want := slices.Sorted(slices.Values(agentenv.Tools))
	if diff := cmp.Diff(want, toolNames(a)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	// DEFAULT_PROVIDER=openai (cloudtest) puts OpenAI first, Bedrock second.
	if got := a.Provider.Name(); got != "openai,bedrock" {
		t.Errorf("provider chain %q, want openai,bedrock", got)
	}
}

// A function built with New (ws, telegram, scheduler) starts runs that
// the step function steps: it ignores the providers' settings, builds no
// model, embedder or MCP server and reads no secret for them; its
// agents have the tools, with the same policies, that the step function's
// agents have, which answering approvals and client tools' names are
// checked against.
func TestNewStartsRunsOnly(t *testing.T) {
	cloudtest.Setup(t)
	sm := cloudtest.NewSecrets(t, map[string]string{"Lambdaclaw/mcp/TOKEN": "token", "Lambdaclaw/web-search-key": "BSA-key-0123456789"})
	for k, v := range map[string]string{
		agentenv.WebSearchProviderVar: "brave", agentenv.WebSearchKeyVar: "Lambdaclaw/web-search-key",
		"AGENTS_CONFIG": `{"research":{"tools":["web_fetch","memory_search"],"providers":["bedrock"]}}`,
		"BEDROCK_MODEL": "amazon.nova-lite-v1:0", "BEDROCK_EMBED_MODEL": "amazon.titan-embed-text-v2:0",
		"SECRETSMANAGER_ENDPOINT": sm.URL, "MCP_SECRET_TOKEN": "Lambdaclaw/mcp/TOKEN",
		cloud.MCPVar: `{"start":"eager","servers":{"remote":{"url":"http://127.0.0.1:1/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}}}`,
	} {
		t.Setenv(k, v)
	}
	r, err := cloud.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := sm.Calls("Lambdaclaw/mcp/TOKEN"); n != 0 {
		t.Errorf("New read the MCP server's secret %d times", n)
	}
	if n := sm.Calls("Lambdaclaw/web-search-key"); n != 0 {
		t.Errorf("New read the web search key %d times", n)
	}
	full, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.Embedder != nil || len(r.Config.Providers) != 0 {
		t.Errorf("New built the embedder %v or providers %v", r.Embedder, r.Config.Providers)
	}
	if diff := cmp.Diff(full.Agents.Names(), r.Agents.Names()); diff != "" {
		t.Errorf("agents (-full +New):\n%s", diff)
	}
	for _, name := range r.Agents.Names() {
		a, _ := r.Agents.Agent(name)
		if a.Provider.Name() != "" || a.LiveTools != nil {
			t.Errorf("agent %s has providers %q or MCP tools", name, a.Provider.Name())
		}
		want, _ := full.Agents.Agent(name)
		if diff := cmp.Diff(policies(want), policies(a)); diff != "" {
			t.Errorf("agent %s's tools (-full +New):\n%s", name, diff)
		}
	}
}

// searxng configures the web_search tool (on SearXNG, which needs no
// key), so that the functions build every tool agentenv.Tools lists.
func searxng(t *testing.T) {
	t.Setenv(agentenv.WebSearchProviderVar, "searxng")
	t.Setenv(agentenv.WebSearchURLVar, "http://127.0.0.1:1")
}

// policies are the policies of a's tools by name.
func policies(a *agent.Agent) map[string]tool.Policy {
	out := map[string]tool.Policy{}
	for _, d := range a.Tools.Definitions() {
		t, _ := a.Tools.Get(d.Name)
		out[d.Name] = t.Policy()
	}
	return out
}

// toolNames lists the names of a's tools, sorted.
func toolNames(a *agent.Agent) []string {
	var names []string
	for _, d := range a.Tools.Definitions() {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}

// settings are what an agent's definition sets, as the built agent has
// them.
type settings struct {
	Providers         string
	Model             string
	Tools             []string
	MaxToolIterations int
	ReplaceSystem     bool
	Compaction        agent.Compaction
}

func settingsOf(a *agent.Agent) settings {
	return settings{Providers: a.Provider.Name(), Model: a.Model, Tools: toolNames(a), MaxToolIterations: a.MaxToolIterations,
		ReplaceSystem: a.ReplaceSystem, Compaction: a.Compaction}
}

// The agents AGENTS_CONFIG defines are built with their settings, the
// way the local server builds those of its configuration file; a
// definition the functions cannot serve fails the cold start with a
// message naming the agent and the setting.
func TestAgentsConfig(t *testing.T) {
	defaults := settings{Providers: "openai,bedrock", Tools: slices.Sorted(slices.Values(agentenv.Tools)),
		Compaction: agent.Compaction{Threshold: 50, Target: 20, Flush: true}}
	for _, tc := range []struct {
		name  string
		env   map[string]string // besides cloudtest's, with BEDROCK_MODEL set
		value string
		want  map[string]settings // by agent; nil when New fails
		err   string
	}{
		{name: "unset", value: "", want: map[string]settings{"default": defaults}},
		{name: "tools and iterations", value: `{"research":{"tools":["web_fetch"],"max_tool_iterations":3}}`,
			want: map[string]settings{"default": defaults, "research": {Providers: "openai,bedrock", Tools: []string{"web_fetch"},
				MaxToolIterations: 3, Compaction: defaults.Compaction}}},
		{name: "every setting", value: `{"default":{"providers":["bedrock"],"model":"amazon.nova-pro-v1:0","tools":["memory_search","read_file"],` +
			`"compaction_threshold":0,"compaction_target":5,"memory_flush":false,"client_system":"replace"}}`,
			want: map[string]settings{"default": {Providers: "bedrock", Model: "amazon.nova-pro-v1:0", Tools: []string{"memory_search", "read_file"},
				ReplaceSystem: true, Compaction: agent.Compaction{Threshold: 0, Target: 5, Flush: false}}}},
		// The ws, telegram and scheduler functions call no model: they
		// serve the agents without their provider chains.
		{name: "function without providers", env: map[string]string{"DEFAULT_PROVIDER": "", "OPENAI_BASE_URL": "", "OPENAI_MODEL": "", "BEDROCK_MODEL": ""},
			value: `{"research":{"providers":["bedrock"],"tools":["web_fetch"]}}`,
			want: map[string]settings{"default": {Providers: "", Tools: defaults.Tools, Compaction: defaults.Compaction},
				"research": {Providers: "", Tools: []string{"web_fetch"}, Compaction: defaults.Compaction}}},
		{name: "function without providers, unknown provider", env: map[string]string{"DEFAULT_PROVIDER": "", "OPENAI_BASE_URL": "", "OPENAI_MODEL": "", "BEDROCK_MODEL": ""},
			value: `{"research":{"providers":["azure"]}}`, err: `agent "research" uses unknown provider "azure" (the providers are bedrock, openai)`},
		{name: "malformed", value: `{"research":{`, err: "AGENTS_CONFIG: unexpected EOF"},
		{name: "not an object", value: `["research"]`, err: "AGENTS_CONFIG: json: cannot unmarshal array"},
		{name: "null", value: `null`, err: "AGENTS_CONFIG: want a JSON object"},
		{name: "two values", value: `{} {}`, err: "AGENTS_CONFIG: more than one JSON value"},
		{name: "unknown setting", value: `{"research":{"tool":["web_fetch"]}}`, err: `AGENTS_CONFIG: json: unknown field "tool"`},
		{name: "wrong type", value: `{"research":{"max_tool_iterations":"3"}}`, err: "AGENTS_CONFIG: json: cannot unmarshal string"},
		{name: "unknown provider", value: `{"research":{"providers":["azure"]}}`,
			err: `agent "research" uses unknown provider "azure" (the providers are openai, bedrock)`},
		{name: "unknown tool", value: `{"research":{"tools":["shell"]}}`, err: `agent "research": unknown tool "shell"`},
		{name: "bad name", value: `{"Research":{}}`, err: `agent "Research": agent name "Research" is invalid`},
		{name: "negative iterations", value: `{"research":{"max_tool_iterations":-1}}`, err: `agent "research": max_tool_iterations must not be negative`},
		{name: "bad client_system", value: `{"research":{"client_system":"merge"}}`, err: `agent "research": client_system must be append or replace`},
		{name: "too long", value: `{"research":{"model":"` + strings.Repeat("m", agentenv.MaxBytes) + `"}}`, err: "bytes, more than 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloudtest.Setup(t)
			searxng(t)
			t.Setenv("BEDROCK_MODEL", "amazon.nova-lite-v1:0")
			t.Setenv("AGENTS_CONFIG", tc.value)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r, err := newRoot(t.Context())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("New = %v, want an error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]settings{}
			for _, n := range r.AgentNames() {
				a, ok := r.Agents.Agent(n)
				if !ok {
					t.Fatalf("agent %s is listed but not served", n)
				}
				got[n] = settingsOf(a)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("agents (-want +got):\n%s", diff)
			}
		})
	}
}

// The AWS agents' system prompt is built from their workspace in the
// bucket, made from the templates on first start.
func TestWorkspacePrompter(t *testing.T) {
	cloudtest.Setup(t)
	r, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	a, ok := r.Agents.Agent("default")
	if !ok {
		t.Fatal("no default agent")
	}
	msgs, err := r.Loop.Prompter.SystemPrompt(t.Context(), a, false)
	if err != nil {
		t.Fatal(err)
	}
	var heads []string
	for _, m := range msgs {
		heads = append(heads, strings.SplitN(m.Content, "\n", 2)[0])
	}
	want := []string{"## IDENTITY.md", "## SOUL.md", "## USER.md", "## TOOLS.md", "## AGENTS.md", "## BOOTSTRAP.md", "## MEMORY.md", "## Skills"}
	if diff := cmp.Diff(want, heads); diff != "" {
		t.Errorf("system messages (-want +got):\n%s", diff)
	}
	if !strings.Contains(msgs[0].Content, "Name: default") {
		t.Errorf("IDENTITY.md does not name the agent: %q", msgs[0].Content)
	}
}

// apiServer serves the gateway with a Runner whose wait is short.
func apiServer(t *testing.T, wait time.Duration) (*cloudtest.Env, *cloud.Root, string) {
	env := cloudtest.Setup(t)
	r, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inline := agent.NewDriver(ctx, r.Loop, r.Log)
	t.Cleanup(func() {
		cancel()
		inline.Wait()
	})
	runner := &sfn.Runner{Inline: inline, Durable: r.Driver, Hub: r.Hub, Drafts: r.Store, Wait: wait, Poll: 20 * time.Millisecond}
	gw, err := gateway.New(gateway.Config{Runner: runner, Events: r.Hub, Keys: r.Store, Runs: r.Store, Agents: r.AgentNames, Identity: r.Identity})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	return env, r, srv.URL
}

// post sends a stateful chat request; it may run on any goroutine.
func post(url, session, text string) (int, string, error) {
	body := `{"model":"default","messages":[{"role":"user","content":` + quote(text) + `}]}`
	req, err := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+cloudtest.SampleKey)
	req.Header.Set(gateway.SessionHeader, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestRunnerTimeout: a stateful request whose run does not finish in time
// is answered with run_timeout; the run stays queued.
func TestRunnerTimeout(t *testing.T) {
	env, _, url := apiServer(t, 300*time.Millisecond)
	code, body, err := post(url, "slow", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusInternalServerError || !strings.Contains(body, sfn.CodeTimeout) {
		t.Errorf("= %d %s; want %s", code, body, sfn.CodeTimeout)
	}
	if n := len(env.SFN.Started()); n != 1 {
		t.Errorf("%d executions started, want 1", n)
	}
}

// TestRunnerApproval: a stateful request whose run parks is answered with
// the approval prompt.
func TestRunnerApproval(t *testing.T) {
	env, r, url := apiServer(t, 10*time.Second)
	done := postAsync(url, "careful", "write the report")
	runID := startedRun(t, env)
	parkRun(t, r, runID, store.Approval{Calls: []string{"c1"}, Tools: []string{"web_fetch"}, Prompt: "Approval needed: web_fetch. Reply /yes or /no."}, nil)
	if res := waitResponse(t, done); res.err != nil || res.code != http.StatusOK || !strings.Contains(res.body, "Reply /yes or /no.") {
		t.Errorf("= %d %s, %v; want the approval prompt", res.code, res.body, res.err)
	}
}

// TestRunnerClientTools: a stateful request whose run parks for its
// client's tool results is answered with the calls, arguments as the
// model sent them.
func TestRunnerClientTools(t *testing.T) {
	env, r, url := apiServer(t, 10*time.Second)
	done := postAsync(url, "tools", "weather?")
	runID := startedRun(t, env)
	call := chat.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}
	parkRun(t, r, runID, store.Approval{Kind: store.ApprovalClientTools, Calls: []string{"c1"}, Tools: []string{"get_weather"}}, func(st *agent.RunState, c *store.Commit) {
		st.ClientCalls, st.FinishReason = []string{"c1"}, "tool_calls"
		c.Messages = []store.Message{{SessionID: st.SessionID, Key: fmt.Sprintf("%sb000.a", store.RunPrefix(st.Seq)), RunID: st.RunID,
			Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{call}}}}
		c.Calls = []chat.ToolCall{call}
	})
	res := waitResponse(t, done)
	var got struct {
		Choices []struct {
			Message struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if res.err != nil || res.code != http.StatusOK || json.Unmarshal([]byte(res.body), &got) != nil || len(got.Choices) != 1 {
		t.Fatalf("= %d %s, %v; want the client's calls", res.code, res.body, res.err)
	}
	ch := got.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].ID != "c1" || ch.Message.ToolCalls[0].Function.Arguments != call.Arguments {
		t.Errorf("choice = %+v", ch)
	}
}

type response struct {
	code int
	body string
	err  error
}

// postAsync sends a stateful chat request on another goroutine.
func postAsync(url, session, text string) <-chan response {
	done := make(chan response, 1)
	go func() {
		code, body, err := post(url, session, text)
		done <- response{code, body, err}
	}()
	return done
}

func waitResponse(t *testing.T, done <-chan response) response {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(5 * time.Second):
		t.Fatal("no response after the run parked")
		return response{}
	}
}

// startedRun waits for the first execution the gateway started.
func startedRun(t *testing.T, env *cloudtest.Env) string {
	t.Helper()
	var runID string
	cloudtest.Wait(t, 5*time.Second, "the execution", func() bool {
		if s := env.SFN.Started(); len(s) > 0 {
			runID = s[0]
		}
		return runID != ""
	})
	return runID
}

// parkRun parks the run as its approve or act step does, with ap pending;
// edit adds to the state and the commit.
func parkRun(t *testing.T, r *cloud.Root, runID string, ap store.Approval, edit func(*agent.RunState, *store.Commit)) {
	t.Helper()
	ctx := t.Context()
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := agent.DecodeState(run)
	ap.ID, ap.SessionID, ap.RunID, ap.Status, ap.CreatedAt = runID+"-0", st.SessionID, runID, store.ApprovalPending, time.Now().UTC()
	if err := r.Store.CreateApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}
	st.Step, st.Approval = agent.StepWait, ap.ID
	var c store.Commit
	if edit != nil {
		edit(&st, &c)
	}
	run.State, _ = json.Marshal(st)
	run.Status = store.RunRunning
	c.Run = run
	if err := r.Store.CommitRun(ctx, c); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerStreamsDrafts: a streamed stateful request gets the pieces the
// step function stores as they come, then the end of the answer, without
// the answer again.
func TestRunnerStreamsDrafts(t *testing.T) {
	env, r, url := apiServer(t, 10*time.Second)
	body := `{"model":"default","stream":true,"messages":[{"role":"user","content":"tell me"}]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+cloudtest.SampleKey)
	req.Header.Set(gateway.SessionHeader, "drafts")
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{"", err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{string(b), err}
	}()
	runID := startedRun(t, env)
	ctx := t.Context()
	// The step function thinks: it stores the pieces, then commits the
	// answer and the run as done.
	for n, piece := range []string{"Once upon ", "a time."} {
		if err := r.Store.AppendDraft(ctx, runID, n, piece); err != nil {
			t.Fatal(err)
		}
	}
	run, err := r.Store.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := agent.DecodeState(run)
	st.Step = agent.StepDone
	run.State, _ = json.Marshal(st)
	run.Status = store.RunDone
	answer := store.Message{SessionID: st.SessionID, Key: fmt.Sprintf("%sb000.a", store.RunPrefix(st.Seq)), RunID: runID,
		Message: chat.Message{Role: chat.Assistant, Content: "Once upon a time."}}
	if err := r.Store.CommitRun(ctx, store.Commit{Run: run, Messages: []store.Message{answer}}); err != nil {
		t.Fatal(err)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no response after the run finished")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	var deltas []string
	for line := range strings.Lines(res.body) {
		if i := strings.Index(line, `"content":"`); i >= 0 {
			rest := line[i+len(`"content":"`):]
			deltas = append(deltas, rest[:strings.Index(rest, `"`)])
		}
	}
	if !slices.Equal(deltas, []string{"Once upon ", "a time."}) || !strings.Contains(res.body, "data: [DONE]") {
		t.Errorf("streamed contents %q; body:\n%s", deltas, res.body)
	}
}

// agentOf returns the agent name r serves.
func agentOf(t *testing.T, r *cloud.Root, name string) *agent.Agent {
	t.Helper()
	a, ok := r.Agents.Agent(name)
	if !ok {
		t.Fatalf("no agent %s", name)
	}
	return a
}
