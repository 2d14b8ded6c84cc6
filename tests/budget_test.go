package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// budgets reads GET /v1/lambdaclaw/budget for key.
func (g *gateway) budgets(t *testing.T, key string) []agent.Remaining {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.addr+"/v1/lambdaclaw/budget", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Budgets []agent.Remaining }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/lambdaclaw/budget: %d, %v", resp.StatusCode, err)
	}
	return out.Budgets
}

// 50 requests at once against an agent's daily budget for a few of them:
// those the budget has room for are answered, the others are refused
// with 402 budget_exhausted before any model call, and what the answered
// ones spent (every reply using its whole cap) stays within the budget.
// The remaining budget is in /v1/lambdaclaw/budget.
func TestBudgetConcurrentRequests(t *testing.T) {
	fake := newFake(t)
	// Every reply is as long as the request lets it be (the fake cuts it
	// at max_tokens and counts that many tokens).
	fake.SetDefault(func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: strings.Repeat("word ", 20_000)} })
	const limit = 40_000
	g := startGateway(t, fake, fmt.Sprintf("agents:\n  default:\n    budget: {daily_tokens: %d}\nbudgets:\n  reply_cap: 300\n"+
		"server:\n  max_concurrent_requests_per_key: 64\n", limit))
	key := g.firstKey()
	var mu sync.Mutex
	status := map[int]int{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			resp, body := g.post(t, key, `{"model":"default","messages":[{"role":"user","content":"hello"}]}`,
				map[string]string{"X-Lambdaclaw-Session-Key": fmt.Sprintf("s%d", i)})
			if resp.StatusCode == http.StatusPaymentRequired {
				e := wantErrorJSON(t, resp, body, http.StatusPaymentRequired, agent.CodeBudgetExhausted)
				if e.Error != nil && (e.Error.Type != "insufficient_quota" || !strings.Contains(e.Error.Message, "daily token budget")) {
					t.Errorf("402 body = %s", body)
				}
			}
			mu.Lock()
			status[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	calls := len(fake.Requests())
	rem := g.budgets(t, key)
	if len(rem) != 1 || rem[0].Scope != "agent:default:day" || rem[0].Limit != limit {
		t.Fatalf("budgets = %+v, want the default agent's daily one", rem)
	}
	t.Logf("answered %d, refused %d; %d model calls; %d of %d spent", status[200], status[402], calls, rem[0].Spent, limit)
	if status[200] == 0 || status[402] == 0 || status[200]+status[402] != 50 || calls != status[200] {
		t.Errorf("statuses %v with %d model calls: want some answered, the rest 402 without a model call", status, calls)
	}
	if over := rem[0].Spent - limit; over > 0 {
		t.Errorf("overspent by %d tokens", over)
	}
	if rem[0].Remaining != limit-rem[0].Spent {
		t.Errorf("remaining = %d, want %d", rem[0].Remaining, limit-rem[0].Spent)
	}
}

// A key created with --daily-tokens is held to it across agents and
// sessions; another key is not.
func TestBudgetOfKey(t *testing.T) {
	fake := newFake(t)
	fake.SetDefault(func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: strings.Repeat("word ", 20_000)} })
	g := startGateway(t, fake, "budgets:\n  reply_cap: 100\n")
	const limit = 20_000
	small := g.createKey(t, "--name", "small", "--daily-tokens", fmt.Sprint(limit))
	other := g.createKey(t, "--name", "other")
	ask := func(key string) int {
		resp, body := g.post(t, key, `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, nil)
		if resp.StatusCode != http.StatusOK {
			wantErrorJSON(t, resp, body, http.StatusPaymentRequired, agent.CodeBudgetExhausted)
		}
		return resp.StatusCode
	}
	answered := 0
	for ask(small) == http.StatusOK {
		if answered++; answered > 20 {
			t.Fatal("the key's budget never ran out")
		}
	}
	calls := len(fake.Requests())
	if answered == 0 || calls != answered {
		t.Errorf("%d answered with %d model calls: want the refused request to call no model", answered, calls)
	}
	if s := ask(other); s != http.StatusOK {
		t.Errorf("another key got %d", s)
	}
	rem := g.budgets(t, small)
	if len(rem) != 1 || rem[0].Scope != "key:"+g.keyID(t, "small")+":day" || rem[0].Spent == 0 || rem[0].Spent > limit {
		t.Errorf("budgets of the small key = %+v, want its daily %d partly spent", rem, limit)
	}
	if rem := g.budgets(t, other); len(rem) != 0 {
		t.Errorf("budgets of a key without one = %+v", rem)
	}
}

// worstCase is a model whose replies use their whole cap, and whose
// prompts count a token per four bytes.
type worstCase struct{}

func (worstCase) Name() string { return "worst-case" }
func (worstCase) Generate(_ context.Context, req llm.Request, _ llm.OnDelta) (llm.Response, error) {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	u := chat.Usage{PromptTokens: n/4 + 1, CompletionTokens: req.MaxTokens}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "ok"}, Usage: u}, nil
}

// 50 turns at once, each on its own session, through the loop and the
// store's counters, locally (sqlite) and as on AWS (DynamoDB Local):
// the overspend — what the turns spent past the budget — is counted. A
// turn reserves its prompt's estimate and its reply's cap before its
// model call, so none beyond one reply's cap is the goal; with prompts
// within their estimate there is none.
func TestBudgetConcurrentTurnsOverspend(t *testing.T) {
	for _, tt := range []struct {
		name  string
		store func(t *testing.T) (agent.Store, store.Budgets)
	}{
		{"sqlite", func(t *testing.T) (agent.Store, store.Budgets) {
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db, db
		}},
		{"dynamodb", func(t *testing.T) (agent.Store, store.Budgets) {
			tb := cloudtest.NewTable(t)
			return tb.Store, tb.Store
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db, counters := tt.store(t)
			const limit, replyCap = 3000, 200
			loop := &agent.Loop{Store: db, Agents: agent.Registry{"a": {Name: "a", Provider: worstCase{}, Budget: agent.Budget{Daily: limit}}},
				Budgets: &agent.Budgets{Store: counters, ReplyCap: replyCap}}
			var mu sync.Mutex
			codes := map[string]int{}
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					ctx := context.Background()
					st, err := loop.Enqueue(ctx, agent.Input{SessionID: fmt.Sprintf("s%02d", i), Agent: "a", Owner: "key:k",
						Messages: []chat.Message{{Role: chat.User, Content: "how are you today?"}}, Autonomy: tool.Full})
					for err == nil && st.Step != agent.StepDone {
						st, err = loop.Step(ctx, st)
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					codes[st.ErrorCode]++
					mu.Unlock()
				})
			}
			wg.Wait()
			rem, err := loop.Budgets.Of(t.Context(), "a", agent.Budget{Daily: limit}, nil, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			over := max(rem[0].Spent-limit, 0)
			t.Logf("%d turns answered, %d refused; %d of %d spent; overspend %d", codes[""], codes[agent.CodeBudgetExhausted], rem[0].Spent, limit, over)
			if codes[""] == 0 || codes[""]+codes[agent.CodeBudgetExhausted] != 50 {
				t.Errorf("ends %v: want some answered and the rest refused", codes)
			}
			if over > 0 {
				t.Errorf("overspent by %d tokens (one reply's cap is %d)", over, replyCap)
			}
		})
	}
}

// A guardrail that is not a regular expression stops the configuration
// from loading, and doctor says which one and why.
func TestDoctorBadGuardrail(t *testing.T) {
	g := newGateway(t, nil, "agents:\n  default:\n    guardrails:\n      filters:\n        exec: ['rm (-rf']\n")
	stdout, stderr, status := g.run(t, "doctor")
	if status != 1 {
		t.Fatalf("doctor exit status %d, want 1\nstdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	doctorLine(t, stdout, "FAIL", "config", `agent "default": guardrails: filters.exec[0]: "rm (-rf" is not a regular expression`)
}

// Guardrails hold every tool call: web_fetch outside its listed hosts,
// an argument a filter matches and a tool the key denies are refused
// before they run, the model is told so as each call's result, and the
// log has an event naming the rule.
func TestGuardrails(t *testing.T) {
	fake := newFake(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a blocked call reached %s", r.URL)
	}))
	defer target.Close()
	g := startGateway(t, fake, "agents:\n  default:\n    guardrails:\n"+
		"      filters: {\"*\": ['(?i)hunter2']}\n"+
		"      scopes: {web_fetch: {url: {hosts: [example.com]}}}\n"+
		"outbound: {allow_networks: [127.0.0.0/8]}\n")
	key := g.createKey(t, "--name", "nofiles", "--autonomy", "full", "--deny-tools", "read_file")
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{
		{ID: "c1", Name: "web_fetch", Arguments: `{"url":"` + target.URL + `/x"}`},
		{ID: "c2", Name: "memory_store", Arguments: `{"key":"pw","text":"my password is HUNTER2"}`},
		{ID: "c3", Name: "read_file", Arguments: `{"path":"SOUL.md"}`},
	}}, fakellm.Reply{Content: "done"})
	if got := ask(t, g.client(key), "go", session("guarded")); got != "done" {
		t.Fatalf("reply = %q", got)
	}
	reqs := fake.Requests()
	for id, rule := range map[string]string{"c1": "scopes.web_fetch.url", "c2": "filters.*[0]", "c3": "key deny_tools"} {
		if res, _ := toolResult(reqs[1], id); !strings.HasPrefix(res, "refused by a guardrail ("+rule+")") {
			t.Errorf("result of %s = %q, want refused by %s", id, res, rule)
		}
	}
	g.stop()
	events := logEvents(t, g.stderr.String())
	for _, rule := range []string{"scopes.web_fetch.url", "filters.*[0]", "key deny_tools"} {
		if !hasEvent(events, "tool_call_blocked", map[string]string{"rule": rule}) {
			t.Errorf("no tool_call_blocked event for %s", rule)
		}
	}
}
