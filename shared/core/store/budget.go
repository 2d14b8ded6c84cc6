package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Budgets counts the tokens spent against limits, one counter per budget
// and window (a day, a month). The loop reserves what a model call may
// spend before it makes the call, then charges what the provider said it
// spent in place of the reservation: so concurrent turns never reserve
// more than a limit between them.
type Budgets interface {
	// Reserve adds each charge's tokens to its counter, all or none, when
	// every counter then stays within its charge's limit; otherwise it
	// changes nothing and returns a *BudgetError (ErrBudgetExhausted)
	// naming a counter that had no room.
	Reserve(ctx context.Context, cs []Charge) error
	// Charge adds each charge's tokens (negative ones give tokens back)
	// to its counter without looking at limits, and returns the counters'
	// new values, in the order of cs.
	Charge(ctx context.Context, cs []Charge) ([]int64, error)
	// Spent returns each counter's value: zero for one never charged, or
	// of a window past.
	Spent(ctx context.Context, cs []Counter) ([]int64, error)
	// ClaimNotice reports whether the caller is the first to claim the
	// notice of c's window (a counter that was charged): the one that
	// tells someone the budget runs low, once per window.
	ClaimNotice(ctx context.Context, c Counter) (bool, error)
}

// Counter names one budget's count in one window.
type Counter struct {
	// Scope is whose budget it is and of which period: "key:<id>:day",
	// "agent:<name>:month".
	Scope string `json:"scope"`
	// Window names the current period of the scope ("2026-12-07",
	// "2026-12"); a counter of another window counts from zero.
	Window string `json:"window"`
	// Expires is when the window is over and the counter may be deleted.
	Expires time.Time `json:"expires"`
}

// Charge is tokens added to a counter, and, for Reserve, the limit it
// must stay within.
type Charge struct {
	Counter
	Tokens int64
	Limit  int64
}

// ErrBudgetExhausted is the error of a reservation that does not fit a
// budget.
var ErrBudgetExhausted = errors.New("token budget exhausted")

// BudgetError says which budget a reservation did not fit.
type BudgetError struct {
	Scope string
	// Spent is what the counter held (-1 when the store did not say).
	Spent, Limit int64
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%s: %s (limit %d)", ErrBudgetExhausted, e.Scope, e.Limit)
}

// Unwrap makes a BudgetError an ErrBudgetExhausted.
func (e *BudgetError) Unwrap() error { return ErrBudgetExhausted }
