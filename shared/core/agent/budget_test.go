package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// spend answers with text and says it spent prompt tokens and the whole
// reply's cap.
func spend(text string, prompt int) func(llm.Request) (llm.Response, error) {
	return func(req llm.Request) (llm.Response, error) {
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: text},
			Usage: chat.Usage{PromptTokens: prompt, CompletionTokens: req.MaxTokens, TotalTokens: prompt + req.MaxTokens}}, nil
	}
}

type notices struct {
	mu  sync.Mutex
	got []BudgetNotice
}

func (n *notices) BudgetLow(_ context.Context, b BudgetNotice) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, b)
	return nil
}

// A run whose next model call does not fit its agent's or its key's
// budget ends with budget_exhausted before the call is made; what a call
// spent is counted from the provider's usage, and a budget fallen below
// its threshold is noticed once.
func TestBudgetEndsRunBeforeModelCall(t *testing.T) {
	for _, tt := range []struct {
		name   string
		agent  Budget
		key    *KeyRules
		scope  string
		prefix string
	}{
		{"agent daily", Budget{Daily: 1000}, nil, "agent:a:day", "This agent's daily token budget (1000 tokens)"},
		{"agent monthly", Budget{Monthly: 1000}, nil, "agent:a:month", "This agent's monthly token budget (1000 tokens)"},
		{"key daily", Budget{}, &KeyRules{ID: "k1", Budget: Budget{Daily: 1000}}, "key:k1:day", "Your API key's daily token budget (1000 tokens)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.loop.Agents.(Registry)["a"].Budget = tt.agent
			ev := &events{}
			n := &notices{}
			now := time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)
			f.loop.Events, f.loop.Now = ev, func() time.Time { return now }
			f.loop.Budgets = &Budgets{Store: &memstore.Budgets{}, ReplyCap: 400, NoticeBelow: 0.6, Notifier: n}
			// Each answer spends 100 of prompt and the whole cap it is given.
			f.llm.onEmpty = spend("ok", 100)
			run := func(session string) RunState {
				st, err := f.loop.Enqueue(t.Context(), Input{SessionID: session, Agent: "a", Owner: "key:k1", Key: tt.key,
					Messages: []chat.Message{user("hi")}, Autonomy: tool.Full})
				if err != nil {
					t.Fatal(err)
				}
				return f.runToEnd(t, st)
			}
			var ends []string
			for i := range 4 {
				ends = append(ends, run("s"+string(rune('0'+i))).ErrorCode)
			}
			// 500 then 500 (1000); the third finds no room and the fourth
			// neither.
			if diff := cmp.Diff([]string{"", "", CodeBudgetExhausted, CodeBudgetExhausted}, ends); diff != "" {
				t.Errorf("runs' error codes (-want +got):\n%s", diff)
			}
			if got := f.llm.calls(); got != 2 {
				t.Errorf("%d model calls, want 2: a refused run makes none", got)
			}
			st := run("s9")
			if !strings.HasPrefix(st.Error, tt.prefix) {
				t.Errorf("error = %q, want it to start with %q", st.Error, tt.prefix)
			}
			var exhausted, low int
			for _, e := range ev.got {
				switch e.Type {
				case obs.BudgetExhausted:
					exhausted++
					if got := attr(e, "budget"); got != tt.scope {
						t.Errorf("budget_exhausted names %q, want %q", got, tt.scope)
					}
				case obs.BudgetLow:
					low++
				}
			}
			if exhausted != 3 || low != 1 {
				t.Errorf("%d budget_exhausted and %d budget_low events, want 3 and 1", exhausted, low)
			}
			if len(n.got) != 1 || n.got[0].Scope != tt.scope || n.got[0].Spent != 500 {
				t.Errorf("notices = %+v, want one of %s at 500 spent", n.got, tt.scope)
			}
			// After the reset hour the budget is replenished.
			now = now.AddDate(0, 1, 1)
			if st := run("s10"); st.Failed() {
				t.Errorf("run after the reset failed: %s", st.Error)
			}
		})
	}
}

func attr(e obs.Event, key string) string {
	for _, a := range e.Attrs {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}

// The last call is given only the room left: its reply's cap is lowered
// to what the budget can still pay.
func TestBudgetLowersReplyCap(t *testing.T) {
	f := newFixture(t, 5)
	f.loop.Agents.(Registry)["a"].Budget = Budget{Daily: 700}
	f.loop.Budgets = &Budgets{Store: &memstore.Budgets{}, ReplyCap: 400}
	f.llm.onEmpty = spend("ok", 100)
	for _, s := range []string{"s1", "s2"} {
		st, err := f.loop.Enqueue(t.Context(), Input{SessionID: s, Agent: "a", Messages: []chat.Message{user("hi")}, Autonomy: tool.Full})
		if err != nil {
			t.Fatal(err)
		}
		if st = f.runToEnd(t, st); st.Failed() {
			t.Fatalf("run %s failed: %s", s, st.Error)
		}
	}
	// The first call reserved its prompt's estimate and 400; it spent 500.
	// The second has 200 left, less its prompt's estimate.
	if got := f.llm.seen[0].MaxTokens; got != 400 {
		t.Errorf("first call's max tokens = %d, want 400", got)
	}
	want := 200 - int(estimate(&f.llm.seen[1]))
	if got := f.llm.seen[1].MaxTokens; got != want {
		t.Errorf("second call's max tokens = %d, want %d", got, want)
	}
	rem, err := f.loop.Budgets.Of(t.Context(), "a", Budget{Daily: 700}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rem) != 1 || rem[0].Spent != 600+int64(want) || rem[0].Limit != 700 {
		t.Errorf("remaining = %+v, want %d of 700 spent", rem, 600+want)
	}
}

// A budget spent while a tool runs stops the run at its next model call,
// never in the tool: the call runs to its end and its result is kept.
func TestBudgetNeverStopsATool(t *testing.T) {
	f := newFixture(t, 5)
	f.loop.Agents.(Registry)["a"].Budget = Budget{Daily: 10_000}
	b := &memstore.Budgets{}
	f.loop.Budgets = &Budgets{Store: b, ReplyCap: 100}
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"pong"}`))
	f.echo.during = func() {
		// Another run spends the rest meanwhile.
		lims := f.loop.Budgets.limits("a", Budget{Daily: 10_000}, nil, time.Now())
		if _, err := b.Charge(context.Background(), []store.Charge{{Counter: lims[0].Counter, Tokens: 10_000}}); err != nil {
			t.Error(err)
		}
	}
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("ping")}, Autonomy: tool.Full})
	if err != nil {
		t.Fatal(err)
	}
	st = f.runToEnd(t, st)
	if st.ErrorCode != CodeBudgetExhausted {
		t.Fatalf("run ended with %q, want %s", st.ErrorCode, CodeBudgetExhausted)
	}
	if f.echo.n != 1 || f.llm.calls() != 1 {
		t.Errorf("%d tool calls and %d model calls, want 1 and 1", f.echo.n, f.llm.calls())
	}
	h := f.history(t, "s")
	if len(h) != 3 || h[2].Role != chat.Tool || h[2].Content != "pong" {
		t.Errorf("history = %+v, want the tool's result kept", h)
	}
}

// 50 turns at once against a budget for a few: the reservations never
// let more through than the budget pays, and what they spent stays
// within the limit (the fake provider counts its prompts below the
// estimate, and every reply uses its whole cap).
func TestBudgetConcurrentTurns(t *testing.T) {
	f := newFixture(t, 5)
	const limit = 5000
	f.loop.Agents.(Registry)["a"].Budget = Budget{Daily: limit}
	f.loop.Budgets = &Budgets{Store: &memstore.Budgets{}, ReplyCap: 300}
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) { return spend("ok", int(estimate(&req))/2)(req) }
	var wg sync.WaitGroup
	var mu sync.Mutex
	var done, refused int
	for i := range 50 {
		wg.Go(func() {
			st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s" + string(rune('A'+i)), Agent: "a", Messages: []chat.Message{user("hi")}, Autonomy: tool.Full})
			for err == nil && st.Step != StepDone {
				st, err = f.loop.Step(t.Context(), st)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case st.ErrorCode == CodeBudgetExhausted:
				refused++
			case st.Failed():
				t.Errorf("run failed: %s", st.Error)
			default:
				done++
			}
		})
	}
	wg.Wait()
	rem, err := f.loop.Budgets.Of(t.Context(), "a", Budget{Daily: limit}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d turns answered, %d refused; %d of %d spent", done, refused, rem[0].Spent, limit)
	if rem[0].Spent > limit {
		t.Errorf("spent %d of a budget of %d: overspent by %d", rem[0].Spent, limit, rem[0].Spent-limit)
	}
	if done < 10 || refused == 0 || done+refused != 50 {
		t.Errorf("%d answered and %d refused, want at least 10 answered and some refused", done, refused)
	}
}

// A prompt's estimate counts its text by bytes and an image as an image,
// whatever its size.
func TestEstimate(t *testing.T) {
	text := llm.Request{Messages: []chat.Message{{Role: chat.User, Content: strings.Repeat("a", 2984)}}}
	image := llm.Request{Messages: []chat.Message{{Role: chat.User, Content: strings.Repeat("a", 2984),
		Parts: []chat.Part{{Type: chat.PartImage, MediaType: "image/png", Data: make([]byte, 5<<20)}}}}}
	if got := estimate(&text); got != 1000 {
		t.Errorf("estimate of 3000 bytes = %d, want 1000", got)
	}
	if got := estimate(&image); got != 1000+imageTokens {
		t.Errorf("estimate with a 5 MiB image = %d, want %d", got, 1000+imageTokens)
	}
}
