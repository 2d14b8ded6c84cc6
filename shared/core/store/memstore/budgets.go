package memstore

import (
	"context"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Budgets is store.Budgets in memory, for one process: one counter per
// scope, of its current window, as the sqlite store keeps them.
type Budgets struct {
	mu       sync.Mutex
	counters map[string]*budgetCounter
}

type budgetCounter struct {
	window   string
	spent    int64
	notified bool
}

var _ store.Budgets = (*Budgets)(nil)

// counter returns scope's counter of window, created or started afresh;
// nil for a window older than the counter's.
func (b *Budgets) counter(c store.Counter) *budgetCounter {
	if b.counters == nil {
		b.counters = map[string]*budgetCounter{}
	}
	cur := b.counters[c.Scope]
	switch {
	case cur == nil || cur.window < c.Window:
		cur = &budgetCounter{window: c.Window}
		b.counters[c.Scope] = cur
	case cur.window > c.Window:
		return nil
	}
	return cur
}

// Reserve implements store.Budgets.
func (b *Budgets) Reserve(_ context.Context, cs []store.Charge) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		var spent int64
		if cur := b.counters[c.Scope]; cur != nil && cur.window == c.Window {
			spent = cur.spent
		}
		if spent+c.Tokens > c.Limit {
			return &store.BudgetError{Scope: c.Scope, Spent: spent, Limit: c.Limit}
		}
	}
	for _, c := range cs {
		if cur := b.counter(c.Counter); cur != nil {
			cur.spent += c.Tokens
		}
	}
	return nil
}

// Charge implements store.Budgets.
func (b *Budgets) Charge(_ context.Context, cs []store.Charge) ([]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]int64, len(cs))
	for i, c := range cs {
		if cur := b.counter(c.Counter); cur != nil {
			cur.spent += c.Tokens
			out[i] = cur.spent
		}
	}
	return out, nil
}

// Spent implements store.Budgets.
func (b *Budgets) Spent(_ context.Context, cs []store.Counter) ([]int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]int64, len(cs))
	for i, c := range cs {
		if cur := b.counters[c.Scope]; cur != nil && cur.window == c.Window {
			out[i] = cur.spent
		}
	}
	return out, nil
}

// ClaimNotice implements store.Budgets.
func (b *Budgets) ClaimNotice(_ context.Context, c store.Counter) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.counters[c.Scope]
	if cur == nil || cur.window != c.Window || cur.notified {
		return false, nil
	}
	cur.notified = true
	return true, nil
}
