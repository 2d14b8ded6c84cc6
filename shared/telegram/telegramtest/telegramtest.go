// Package telegramtest is the conformance suite of telegram.Store: every
// store of the Telegram channel (shared/sqlite, shared/dynamo) runs it.
package telegramtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/telegram"
)

// Run runs the suite; open returns an empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) telegram.Store) {
	t.Run("State", func(t *testing.T) { testState(t, open(t)) })
	t.Run("Seen", func(t *testing.T) { testSeen(t, open(t)) })
	t.Run("Codes", func(t *testing.T) { testCodes(t, open(t)) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, open(t)) })
}

func testState(t *testing.T, s telegram.Store) {
	ctx := context.Background()
	if v, err := s.State(ctx, telegram.KeyOffset); err != nil || v != "" {
		t.Fatalf("State of a missing key = %q, %v; want \"\", nil", v, err)
	}
	for _, v := range []string{"7", "8"} {
		if err := s.SetState(ctx, telegram.KeyOffset, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetState(ctx, telegram.KeyWebhookSecret, "abc"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.State(ctx, telegram.KeyOffset); err != nil || v != "8" {
		t.Errorf("State(offset) = %q, %v; want 8", v, err)
	}
	if v, err := s.State(ctx, telegram.KeyWebhookSecret); err != nil || v != "abc" {
		t.Errorf("State(secret) = %q, %v; want abc", v, err)
	}
}

func testSeen(t *testing.T, s telegram.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	if err := s.MarkSeen(ctx, 5, now.Add(-3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSeen(ctx, 5, now.Add(-3*time.Hour)); err != nil {
		t.Fatalf("MarkSeen twice: %v", err)
	}
	if err := s.MarkSeen(ctx, 6, now); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]bool{5: true, 6: true, 7: false} {
		if got, err := s.Seen(ctx, id); err != nil || got != want {
			t.Errorf("Seen(%d) = %v, %v; want %v", id, got, err, want)
		}
	}
	if err := s.PruneSeen(ctx, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]bool{5: false, 6: true} {
		if got, err := s.Seen(ctx, id); err != nil || got != want {
			t.Errorf("after PruneSeen: Seen(%d) = %v, %v; want %v", id, got, err, want)
		}
	}
}

func testCodes(t *testing.T, s telegram.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	if ok, err := s.AllowedUser(ctx, 42); err != nil || ok {
		t.Fatalf("AllowedUser before any code = %v, %v", ok, err)
	}
	if ok, err := s.RedeemCode(ctx, "h1", 42, now); err != nil || !ok {
		t.Fatalf("first redeem = %v, %v; want true", ok, err)
	}
	if ok, err := s.RedeemCode(ctx, "h1", 43, now); err != nil || ok {
		t.Fatalf("a code was redeemed twice: %v, %v", ok, err)
	}
	if ok, err := s.AllowedUser(ctx, 42); err != nil || !ok {
		t.Errorf("AllowedUser(42) = %v, %v; want true", ok, err)
	}
	if ok, err := s.AllowedUser(ctx, 43); err != nil || ok {
		t.Errorf("AllowedUser(43) = %v, %v; want false", ok, err)
	}
	if ok, err := s.RedeemCode(ctx, "h2", 44, now); err != nil || !ok {
		t.Errorf("another code = %v, %v; want true", ok, err)
	}
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func testOutbox(t *testing.T, s telegram.Store) {
	ctx := context.Background()
	now := time.Now().UTC()
	var msgs []telegram.OutMessage
	for i := range 3 {
		msgs = append(msgs, telegram.OutMessage{ID: fmt.Sprintf("r1#%d", i), ChatID: 10, Text: fmt.Sprintf("part %d", i),
			Status: telegram.OutPending, NextAt: now, CreatedAt: now})
	}
	if err := s.AddOutbox(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	// The same ids again keep the first copy; a new message goes last.
	again := []telegram.OutMessage{{ID: "r1#0", ChatID: 10, Text: "changed", NextAt: now, CreatedAt: now},
		{ID: "r2#0", ChatID: 11, Text: "other chat", NextAt: now, CreatedAt: now}}
	if err := s.AddOutbox(ctx, again); err != nil {
		t.Fatal(err)
	}
	got, err := s.UnsentOutbox(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if fmt.Sprint(ids) != "[r1#0 r1#1 r1#2 r2#0]" {
		t.Fatalf("UnsentOutbox ids = %v; want [r1#0 r1#1 r1#2 r2#0]", ids)
	}
	m := got[0]
	if m.ChatID != 10 || m.Text != "part 0" || m.Status != telegram.OutPending || m.Attempts != 0 ||
		ms(m.NextAt) != ms(now) || ms(m.CreatedAt) != ms(now) {
		t.Errorf("first message = %+v", m)
	}
	if got, _ := s.UnsentOutbox(ctx, 2); len(got) != 2 {
		t.Errorf("UnsentOutbox(limit 2) returned %d messages", len(got))
	}

	next := now.Add(time.Minute)
	if err := s.MarkRetry(ctx, "r1#0", 1, next, "telegram sendMessage: 429 Too Many Requests", false); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, "r1#1", 777, now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRetry(ctx, "r1#2", 3, next, "telegram sendMessage: 403 Forbidden", true); err != nil {
		t.Fatal(err)
	}
	got, err = s.UnsentOutbox(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "r1#0" || got[1].ID != "r2#0" {
		t.Fatalf("UnsentOutbox after marks = %+v; want r1#0, r2#0", got)
	}
	if m := got[0]; m.Attempts != 1 || ms(m.NextAt) != ms(next) || m.LastError == "" || m.Status != telegram.OutPending {
		t.Errorf("retried message = %+v", m)
	}
	// A late retry mark of a sent message changes nothing.
	if err := s.MarkRetry(ctx, "r1#1", 2, next, "late", false); err != nil {
		t.Fatal(err)
	}
	st, err := s.OutboxStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st != (telegram.OutboxStats{Pending: 2, Sent: 1, Failed: 1}) {
		t.Errorf("OutboxStats = %+v; want 2 pending, 1 sent, 1 failed", st)
	}
}
