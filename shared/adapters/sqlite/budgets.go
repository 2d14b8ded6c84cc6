package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// The budget counters (store.Budgets): one row per scope, holding the
// count of its current window. A charge of a newer window starts the row
// afresh; one of an older window (a call that began before the budget
// was replenished) is dropped, the count it belonged to being over.

var _ store.Budgets = (*DB)(nil)

// Reserve implements store.Budgets, in one immediate transaction.
func (db *DB) Reserve(ctx context.Context, cs []store.Charge) error {
	_, err := db.addBudgets(ctx, cs, true)
	return err
}

// Charge implements store.Budgets.
func (db *DB) Charge(ctx context.Context, cs []store.Charge) ([]int64, error) {
	return db.addBudgets(ctx, cs, false)
}

func (db *DB) addBudgets(ctx context.Context, cs []store.Charge, limited bool) ([]int64, error) {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: budgets: %w", err)
	}
	defer tx.Rollback()
	out := make([]int64, len(cs))
	for i, c := range cs {
		window, spent, err := budgetRow(ctx, tx, c.Scope)
		if err != nil {
			return nil, fmt.Errorf("sqlite: budget %s: %w", c.Scope, err)
		}
		switch {
		case window > c.Window:
			out[i] = 0 // the window is over; its count with it
			continue
		case window < c.Window:
			spent = 0
		}
		if limited && spent+c.Tokens > c.Limit {
			return nil, &store.BudgetError{Scope: c.Scope, Spent: spent, Limit: c.Limit}
		}
		out[i] = spent + c.Tokens
		if _, err := tx.ExecContext(ctx, `INSERT INTO budget_counters (scope, window, spent, expires_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (scope) DO UPDATE SET window = excluded.window, spent = excluded.spent, expires_at = excluded.expires_at,
				notified = CASE WHEN window = excluded.window THEN notified ELSE 0 END`,
			c.Scope, c.Window, out[i], toMillis(c.Expires)); err != nil {
			return nil, fmt.Errorf("sqlite: budget %s: %w", c.Scope, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: budgets: %w", err)
	}
	return out, nil
}

// budgetRow reads the window and count of scope; none is an empty window.
func budgetRow(ctx context.Context, tx *sql.Tx, scope string) (window string, spent int64, err error) {
	err = tx.QueryRowContext(ctx, `SELECT window, spent FROM budget_counters WHERE scope = ?`, scope).Scan(&window, &spent)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return window, spent, err
}

// Spent implements store.Budgets.
func (db *DB) Spent(ctx context.Context, cs []store.Counter) ([]int64, error) {
	out := make([]int64, len(cs))
	for i, c := range cs {
		err := db.r.QueryRowContext(ctx, `SELECT spent FROM budget_counters WHERE scope = ? AND window = ?`, c.Scope, c.Window).Scan(&out[i])
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("sqlite: budget %s: %w", c.Scope, err)
		}
	}
	return out, nil
}

// ClaimNotice implements store.Budgets.
func (db *DB) ClaimNotice(ctx context.Context, c store.Counter) (bool, error) {
	res, err := db.w.ExecContext(ctx, `UPDATE budget_counters SET notified = 1 WHERE scope = ? AND window = ? AND notified = 0`, c.Scope, c.Window)
	if err != nil {
		return false, fmt.Errorf("sqlite: budget %s notice: %w", c.Scope, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("sqlite: budget %s notice: %w", c.Scope, err)
	}
	return n == 1, nil
}
