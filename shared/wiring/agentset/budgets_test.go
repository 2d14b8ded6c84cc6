package agentset

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/webhook"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// chats keeps what a channel's replier is told to send.
type chats struct {
	mu  sync.Mutex
	got []agent.RunState
	res []agent.Result
}

func (c *chats) Delta(agent.RunState, string)            {}
func (c *chats) Approval(agent.RunState, store.Approval) {}
func (c *chats) Finish(st agent.RunState, res agent.Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got, c.res = append(c.got, st), append(c.res, res)
}

// A budget's notice reaches every notify target: a webhook gets the JSON
// notice, a Telegram chat a message.
func TestBudgetsNotify(t *testing.T) {
	var posted []webhook.BudgetPayload
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p webhook.BudgetPayload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Errorf("webhook body %s: %v", b, err)
		}
		posted, keys = append(posted, p), append(keys, r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()
	cfg := &config.Config{Outbound: config.Outbound{AllowNetworks: []string{"127.0.0.0/8"}},
		Budgets: config.Budgets{ResetHour: 3, NotifyBelow: 0.1, Notify: []string{"webhook:" + srv.URL + "/hook", "telegram:42"}}}
	tg := &chats{}
	b, err := Budgets(cfg, &memstore.Budgets{}, tg, "tg")
	if err != nil {
		t.Fatal(err)
	}
	if b.ResetHour != 3 || b.NoticeBelow != 0.1 || b.Notifier == nil {
		t.Fatalf("budgets = %+v", b)
	}
	n := agent.BudgetNotice{Scope: "agent:a:day", Window: "2026-12-07", Spent: 950, Limit: 1000}
	if err := b.Notifier.BudgetLow(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	want := []webhook.BudgetPayload{{Type: "budget_low", Scope: n.Scope, Window: n.Window, Spent: 950, Limit: 1000, Text: n.Text(),
		IdempotencyKey: "budget-agent:a:day-2026-12-07"}}
	if diff := cmp.Diff(want, posted); diff != "" || keys[0] != want[0].IdempotencyKey {
		t.Errorf("webhook got (-want +got):\n%s", diff)
	}
	if len(tg.got) != 1 || tg.got[0].Reply != (agent.Reply{Channel: "tg", To: "42"}) || tg.res[0].Content != n.Text() {
		t.Errorf("telegram told %+v %+v", tg.got, tg.res)
	}
	// Telegram as a target needs the channel.
	if _, err := Budgets(cfg, &memstore.Budgets{}, nil, ""); err == nil {
		t.Error("a telegram target without Telegram was accepted")
	}
}
