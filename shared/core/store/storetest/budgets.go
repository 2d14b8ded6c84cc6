package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// RunBudgets is the conformance suite of store.Budgets.
func RunBudgets(t *testing.T, newStore func(t *testing.T) store.Budgets) {
	exp := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	day := store.Counter{Scope: "key:k1:day", Window: "2026-12-07", Expires: exp}
	month := store.Counter{Scope: "agent:a:month", Window: "2026-12", Expires: exp.AddDate(0, 1, 0)}
	spent := func(t *testing.T, s store.Budgets, want ...int64) {
		t.Helper()
		got, err := s.Spent(t.Context(), []store.Counter{day, month})
		must(t, "Spent", err)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Spent (-want +got):\n%s", diff)
		}
	}

	t.Run("ReserveAllOrNone", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		spent(t, s, 0, 0)
		must(t, "Reserve", s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 60, Limit: 100}, {Counter: month, Tokens: 60, Limit: 1000}}))
		spent(t, s, 60, 60)
		// The day has 40 left: a reservation of 50 changes neither counter.
		err := s.Reserve(ctx, []store.Charge{{Counter: month, Tokens: 50, Limit: 1000}, {Counter: day, Tokens: 50, Limit: 100}})
		var be *store.BudgetError
		if !errors.As(err, &be) || !errors.Is(err, store.ErrBudgetExhausted) || be.Scope != day.Scope || be.Limit != 100 {
			t.Fatalf("Reserve over the day's limit = %v, want a BudgetError of %s", err, day.Scope)
		}
		spent(t, s, 60, 60)
		// Exactly the limit fits.
		must(t, "Reserve to the limit", s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 40, Limit: 100}}))
		spent(t, s, 100, 60)
		if err := s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 1, Limit: 100}}); !errors.Is(err, store.ErrBudgetExhausted) {
			t.Errorf("Reserve past the limit = %v, want ErrBudgetExhausted", err)
		}
		// A charge larger than the limit never fits, even on a new counter.
		other := store.Counter{Scope: "key:k2:day", Window: day.Window, Expires: exp}
		if err := s.Reserve(ctx, []store.Charge{{Counter: other, Tokens: 11, Limit: 10}}); !errors.Is(err, store.ErrBudgetExhausted) {
			t.Errorf("Reserve of more than the limit = %v, want ErrBudgetExhausted", err)
		}
	})

	t.Run("Charge", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		must(t, "Reserve", s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 80, Limit: 100}}))
		// The call spent 30 of the 80 reserved: 50 go back.
		got, err := s.Charge(ctx, []store.Charge{{Counter: day, Tokens: -50}, {Counter: month, Tokens: 30}})
		must(t, "Charge", err)
		if diff := cmp.Diff([]int64{30, 30}, got); diff != "" {
			t.Errorf("Charge (-want +got):\n%s", diff)
		}
		// A charge ignores the limit: what the provider spent is counted.
		got, err = s.Charge(ctx, []store.Charge{{Counter: day, Tokens: 500, Limit: 100}})
		must(t, "Charge over", err)
		if diff := cmp.Diff([]int64{530}, got); diff != "" {
			t.Errorf("Charge over the limit (-want +got):\n%s", diff)
		}
		spent(t, s, 530, 30)
	})

	t.Run("Windows", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		must(t, "Reserve", s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 100, Limit: 100}}))
		next := store.Counter{Scope: day.Scope, Window: "2026-12-08", Expires: exp.AddDate(0, 0, 1)}
		// The next day counts from zero.
		must(t, "Reserve next day", s.Reserve(ctx, []store.Charge{{Counter: next, Tokens: 70, Limit: 100}}))
		got, err := s.Spent(ctx, []store.Counter{next})
		must(t, "Spent", err)
		if got[0] != 70 {
			t.Errorf("Spent of the next day = %d, want 70", got[0])
		}
		// A call reserved yesterday and settled today changes nothing of
		// today's count.
		if _, err := s.Charge(ctx, []store.Charge{{Counter: day, Tokens: -40}}); err != nil {
			t.Fatalf("Charge of the day before: %v", err)
		}
		got, err = s.Spent(ctx, []store.Counter{next})
		must(t, "Spent", err)
		if got[0] != 70 {
			t.Errorf("Spent of the next day after a charge of the day before = %d, want 70", got[0])
		}
	})

	t.Run("ClaimNotice", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		if ok, err := s.ClaimNotice(ctx, day); err != nil || ok {
			t.Errorf("ClaimNotice of a counter never charged = %v, %v; want false", ok, err)
		}
		must(t, "Reserve", s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 10, Limit: 100}}))
		var claimed atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ok, err := s.ClaimNotice(ctx, day)
				if err != nil {
					t.Errorf("ClaimNotice: %v", err)
				}
				if ok {
					claimed.Add(1)
				}
			})
		}
		wg.Wait()
		if n := claimed.Load(); n != 1 {
			t.Errorf("%d of 8 concurrent ClaimNotice won, want 1", n)
		}
		next := store.Counter{Scope: day.Scope, Window: "2026-12-08", Expires: exp.AddDate(0, 0, 1)}
		must(t, "Reserve next day", s.Reserve(ctx, []store.Charge{{Counter: next, Tokens: 10, Limit: 100}}))
		if ok, err := s.ClaimNotice(ctx, next); err != nil || !ok {
			t.Errorf("ClaimNotice of the next window = %v, %v; want true", ok, err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		// 50 reservations of 30 at once against a limit of 400: exactly
		// 13 fit, and the count never passes the limit.
		s := newStore(t)
		ctx := t.Context()
		var ok atomic.Int32
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				err := s.Reserve(ctx, []store.Charge{{Counter: day, Tokens: 30, Limit: 400}, {Counter: month, Tokens: 30, Limit: 10_000}})
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, store.ErrBudgetExhausted):
					t.Errorf("Reserve: %v", err)
				}
			})
		}
		wg.Wait()
		if n := ok.Load(); n != 13 {
			t.Errorf("%d of 50 concurrent reservations fit, want 13", n)
		}
		spent(t, s, 390, 390)
	})
}
