package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

func TestTelegramStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tg.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s := db.Telegram()
	if v, err := s.State(ctx, "offset"); err != nil || v != "" {
		t.Fatalf("State of a missing key = %q, %v", v, err)
	}
	if err := s.SetState(ctx, "offset", "7"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState(ctx, "offset", "8"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.MarkSeen(ctx, 5, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSeen(ctx, 5, now); err != nil {
		t.Fatalf("MarkSeen twice: %v", err)
	}
	if ok, _ := s.Seen(ctx, 5); !ok {
		t.Fatal("update 5 not seen")
	}
	if ok, _ := s.Seen(ctx, 6); ok {
		t.Fatal("update 6 seen")
	}
	if ok, err := s.RedeemCode(ctx, "h1", 42, now); err != nil || !ok {
		t.Fatalf("first redeem = %v, %v", ok, err)
	}
	if ok, _ := s.RedeemCode(ctx, "h1", 43, now); ok {
		t.Fatal("a code was redeemed twice")
	}
	if ok, _ := s.AllowedUser(ctx, 42); !ok {
		t.Fatal("user 42 not allowed")
	}
	if ok, _ := s.AllowedUser(ctx, 43); ok {
		t.Fatal("user 43 allowed")
	}
	msgs := []store.OutboxMessage{{ID: "a#0", ChatID: 1, Text: "one"}, {ID: "a#1", ChatID: 1, Text: "two"}}
	if err := s.AddOutbox(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.AddOutbox(ctx, msgs[:1]); err != nil {
		t.Fatal(err)
	}
	un, err := s.UnsentOutbox(ctx, 10)
	if err != nil || len(un) != 2 || un[0].Text != "one" || un[1].Text != "two" {
		t.Fatalf("UnsentOutbox = %+v, %v", un, err)
	}
	for _, m := range un {
		if _, ok, err := s.ClaimOutbox(ctx, m.ID, "c-"+m.ID, time.Now(), time.Now().Add(time.Minute)); err != nil || !ok {
			t.Fatalf("ClaimOutbox(%s) = %v, %v", m.ID, ok, err)
		}
	}
	if err := s.MarkSent(ctx, "a#0", 99, now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRetry(ctx, "a#1", "c-a#1", 3, now, "403", true); err != nil {
		t.Fatal(err)
	}
	st, err := s.OutboxStats(ctx)
	if err != nil || st != (store.OutboxStats{Sent: 1, Failed: 1}) {
		t.Fatalf("OutboxStats = %+v, %v", st, err)
	}
	db.Close()

	// Everything survives a reopen.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s = db.Telegram()
	if v, _ := s.State(ctx, "offset"); v != "8" {
		t.Fatalf("offset after reopen = %q", v)
	}
	if err := s.PruneSeen(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Seen(ctx, 5); ok {
		t.Fatal("pruned update still seen")
	}
}
