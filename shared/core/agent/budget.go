package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CodeBudgetExhausted ends a run before a model call that an agent's or
// an API key's token budget had no room for (Budgets); the HTTP API
// answers it with 402.
const CodeBudgetExhausted = "budget_exhausted"

// Budget is a limit of the model tokens spent per day and per month,
// replenished at Budgets.ResetHour; zero is no limit.
type Budget struct {
	Daily   int64 `json:"daily_tokens,omitempty"`
	Monthly int64 `json:"monthly_tokens,omitempty"`
}

// Budgets hold the runs of agents and API keys to their token budgets
// (Agent.Budget, RunState.Key).
//
// Before each model call the loop reserves what the call may spend: the
// prompt's estimate (a token per three bytes of the request's messages
// and tools; providers count about one per four) and the reply's cap,
// the request's max tokens, lowered to the room the budgets have left.
// The reservation is one conditional write of every budget's counter
// (store.Budgets.Reserve), so concurrent runs never reserve more than a
// limit between them, and a call that does not fit is never made: its
// run ends with CodeBudgetExhausted. After the call what the provider
// said it spent (chat.Usage) replaces the reservation.
//
// Overspend is what a budget's counter holds past its limit once every
// call made in its window has settled. A reply never passes its cap (the
// request's max tokens), so a budget is overspent only by what prompts'
// estimates fell short of the providers' counts: none while the
// estimate holds, the goal being none beyond one reply's cap. A process
// that dies during a call keeps the call's reservation spent.
type Budgets struct {
	Store store.Budgets
	// ResetHour is the hour (UTC, 0–23) at which days begin: daily
	// budgets are replenished then, monthly ones on the first of the
	// month then.
	ResetHour int
	// ReplyCap is the reply's cap of a request that sets no max tokens;
	// zero means 4096.
	ReplyCap int
	// NoticeBelow is the part of a budget (0–1) left below which Notifier
	// is told, once per budget and window; zero tells nothing.
	NoticeBelow float64
	Notifier    BudgetNotifier
}

// BudgetNotifier is told when a budget runs low.
type BudgetNotifier interface {
	BudgetLow(ctx context.Context, n BudgetNotice) error
}

// BudgetNotice describes a budget fallen below Budgets.NoticeBelow.
type BudgetNotice struct {
	// Scope names the budget ("agent:<name>:day", "key:<id>:month").
	Scope        string
	Window       string
	Spent, Limit int64
}

// Text is the notice as a sentence for a person.
func (n BudgetNotice) Text() string {
	return fmt.Sprintf("lambdaclaw: the token budget %s (%s) has %d of %d tokens left", n.Scope, n.Window, max(n.Limit-n.Spent, 0), n.Limit)
}

// Remaining is one budget's state: BudgetsOf.
type Remaining struct {
	Scope     string    `json:"scope"`
	Window    string    `json:"window"`
	Limit     int64     `json:"limit"`
	Spent     int64     `json:"spent"`
	Remaining int64     `json:"remaining"`
	ResetsAt  time.Time `json:"resets_at"`
}

// KeyRules are what an API key asks of the runs made with it: its
// budget and the tools it denies. The loop keeps them in the run's state.
type KeyRules struct {
	ID        string   `json:"id"`
	Budget    Budget   `json:"budget,omitzero"`
	DenyTools []string `json:"deny_tools,omitempty"`
}

// RulesOf returns k's rules, nil when it has none.
func RulesOf(k store.APIKey) *KeyRules {
	r := KeyRules{ID: k.ID, Budget: Budget{Daily: k.DailyTokens, Monthly: k.MonthlyTokens}, DenyTools: k.DenyTools}
	if r.Budget == (Budget{}) && len(r.DenyTools) == 0 {
		return nil
	}
	return &r
}

// limit is one budget of a run: its counter and limit.
type limit struct {
	store.Counter
	Limit int64
}

// limits returns the budgets that bind a run of agent a with key rules k,
// at now.
func (b *Budgets) limits(agent string, a Budget, k *KeyRules, now time.Time) []limit {
	var out []limit
	day, month, dayEnd, monthEnd := b.windows(now)
	add := func(scope string, bud Budget) {
		if bud.Daily > 0 {
			out = append(out, limit{store.Counter{Scope: scope + ":day", Window: day, Expires: dayEnd}, bud.Daily})
		}
		if bud.Monthly > 0 {
			out = append(out, limit{store.Counter{Scope: scope + ":month", Window: month, Expires: monthEnd}, bud.Monthly})
		}
	}
	add("agent:"+agent, a)
	if k != nil {
		add("key:"+k.ID, k.Budget)
	}
	return out
}

// windows names the day and the month now is in, days beginning at
// ResetHour, and when each ends.
func (b *Budgets) windows(now time.Time) (day, month string, dayEnd, monthEnd time.Time) {
	shift := time.Duration(b.ResetHour) * time.Hour
	t := now.UTC().Add(-shift)
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	m := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return d.Format("2006-01-02"), m.Format("2006-01"), d.AddDate(0, 0, 1).Add(shift), m.AddDate(0, 1, 0).Add(shift)
}

// Of returns the state of the budgets of agent a (its config's budget)
// and of key rules k, at now.
func (b *Budgets) Of(ctx context.Context, agent string, a Budget, k *KeyRules, now time.Time) ([]Remaining, error) {
	lims := b.limits(agent, a, k, now)
	counters := make([]store.Counter, len(lims))
	for i, l := range lims {
		counters[i] = l.Counter
	}
	spent, err := b.Store.Spent(ctx, counters)
	if err != nil {
		return nil, fmt.Errorf("budgets: %w", err)
	}
	out := make([]Remaining, len(lims))
	for i, l := range lims {
		out[i] = Remaining{Scope: l.Scope, Window: l.Window, Limit: l.Limit, Spent: spent[i], Remaining: max(l.Limit-spent[i], 0), ResetsAt: l.Expires}
	}
	return out, nil
}

// reservation is what a model call reserved of its run's budgets.
type reservation struct {
	lims   []limit
	tokens int64
}

// reserveTries bounds the reservations a call tries when others take the
// room it saw.
const reserveTries = 8

// reserve reserves what the model call req of run st may spend of the
// budgets of a and of the run's key, lowering req's max tokens to what is
// left. A call that does not fit returns a *store.BudgetError; with no
// budgets it returns nil.
func (l *Loop) reserve(ctx context.Context, a *Agent, st RunState, req *llm.Request) (*reservation, error) {
	b := l.Budgets
	if b == nil || b.Store == nil {
		return nil, nil
	}
	lims := b.limits(a.Name, a.Budget, st.Key, l.now())
	if len(lims) == 0 {
		return nil, nil
	}
	counters := make([]store.Counter, len(lims))
	for i, li := range lims {
		counters[i] = li.Counter
	}
	prompt := estimate(req)
	replyCap := int64(cmp.Or(req.MaxTokens, b.ReplyCap, 4096))
	for range reserveTries {
		spent, err := b.Store.Spent(ctx, counters)
		if err != nil {
			return nil, fmt.Errorf("budgets: %w", err)
		}
		room, tight := int64(-1), 0
		for i, li := range lims {
			if r := li.Limit - spent[i]; room < 0 || r < room {
				room, tight = r, i
			}
		}
		reply := min(replyCap, room-prompt)
		if reply < 1 {
			return nil, &store.BudgetError{Scope: lims[tight].Scope, Spent: spent[tight], Limit: lims[tight].Limit}
		}
		charges := make([]store.Charge, len(lims))
		for i, li := range lims {
			charges[i] = store.Charge{Counter: li.Counter, Tokens: prompt + reply, Limit: li.Limit}
		}
		err = b.Store.Reserve(ctx, charges)
		if errors.Is(err, store.ErrBudgetExhausted) {
			continue // another run took the room meanwhile: look again
		}
		if err != nil {
			return nil, fmt.Errorf("budgets: %w", err)
		}
		req.MaxTokens = int(reply)
		return &reservation{lims: lims, tokens: prompt + reply}, nil
	}
	return nil, &store.BudgetError{Scope: lims[0].Scope, Spent: -1, Limit: lims[0].Limit}
}

// imageTokens is what a reservation counts for an image: providers count
// an image by its size in pixels, at most about 1,600 tokens.
const imageTokens = 2000

// estimate is the prompt's tokens as a reservation counts them: a token
// per three bytes of the request's messages and tools, and imageTokens
// per image.
func estimate(req *llm.Request) int64 {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Name) + 16
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
		for _, p := range m.Parts {
			if p.Type == chat.PartImage {
				n += 3 * imageTokens
			} else {
				n += len(p.Data)
			}
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return int64(n+2) / 3
}

// settle replaces the reservation r with what the call spent (nothing
// for a call that failed) and tells the notifier of a budget that fell
// below its threshold. Its failures are logged: the call was made.
func (l *Loop) settle(ctx context.Context, st RunState, r *reservation, used chat.Usage) {
	if r == nil {
		return
	}
	spent := int64(used.TotalTokens)
	if spent == 0 {
		spent = int64(used.PromptTokens + used.CompletionTokens)
	}
	charges := make([]store.Charge, len(r.lims))
	for i, li := range r.lims {
		charges[i] = store.Charge{Counter: li.Counter, Tokens: spent - r.tokens}
	}
	ctx = context.WithoutCancel(ctx)
	now, err := l.Budgets.Store.Charge(ctx, charges)
	if err != nil {
		l.warnBudget(st, "budget not charged", err)
		return
	}
	b := l.Budgets
	if b.NoticeBelow <= 0 {
		return
	}
	for i, li := range r.lims {
		if float64(li.Limit-now[i]) >= b.NoticeBelow*float64(li.Limit) {
			continue
		}
		if first, err := b.Store.ClaimNotice(ctx, li.Counter); err != nil || !first {
			if err != nil {
				l.warnBudget(st, "budget notice not claimed", err)
			}
			continue
		}
		n := BudgetNotice{Scope: li.Scope, Window: li.Window, Spent: now[i], Limit: li.Limit}
		l.emit(obs.Event{Type: obs.BudgetLow, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
			slog.String("budget", n.Scope), slog.Int64("spent", n.Spent), slog.Int64("limit", n.Limit)}})
		if b.Notifier != nil {
			if err := b.Notifier.BudgetLow(ctx, n); err != nil {
				l.warnBudget(st, "budget notice not sent", err)
			}
		}
	}
}

func (l *Loop) warnBudget(st RunState, msg string, err error) {
	if l.Log != nil {
		l.Log.Warn(msg, "run_id", st.RunID, "error", scrub.Scrub(err.Error()))
	}
}

// exhausted ends the run st, whose model call the budget be had no room
// for, with CodeBudgetExhausted, and events it.
func (l *Loop) exhausted(st RunState, be *store.BudgetError) RunState {
	l.emit(obs.Event{Type: obs.BudgetExhausted, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("agent", st.Agent), slog.String("budget", be.Scope), slog.Int64("limit", be.Limit)}})
	what := "This agent's"
	if strings.HasPrefix(be.Scope, "key:") {
		what = "Your API key's"
	}
	period, next := "daily", "day"
	if strings.HasSuffix(be.Scope, ":month") {
		period, next = "monthly", "month"
	}
	return l.fail(st, CodeBudgetExhausted, &publicError{fmt.Sprintf(
		"%s %s token budget (%d tokens) is spent: no model call was made; it is replenished at the start of the next %s",
		what, period, be.Limit, next)})
}

// Report returns the state of the budgets of key k and of the agents
// names, found in agents, at now: what the API and the console show.
func (b *Budgets) Report(ctx context.Context, agents Agents, k store.APIKey, names []string, now time.Time) ([]Remaining, error) {
	out, err := b.Of(ctx, "", Budget{}, RulesOf(k), now)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		a, ok := agents.Agent(n)
		if !ok || a.Budget == (Budget{}) {
			continue
		}
		got, err := b.Of(ctx, n, a.Budget, nil, now)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}
