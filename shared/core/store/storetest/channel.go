package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// RunChannel runs the conformance suite of store.Channel, a messaging
// channel's state. Each subtest calls newStore for a fresh, empty store,
// which gives the Channel of each channel's name.
func RunChannel(t *testing.T, newStore func(t *testing.T) func(name string) store.Channel) {
	t.Run("State", func(t *testing.T) { testChannelState(t, newStore(t)("tg")) })
	t.Run("Seen", func(t *testing.T) { testChannelSeen(t, newStore(t)("tg")) })
	t.Run("Codes", func(t *testing.T) { testChannelCodes(t, newStore(t)("tg")) })
	t.Run("CodeTries", func(t *testing.T) { testChannelCodeTries(t, newStore(t)("tg")) })
	t.Run("Outbox", func(t *testing.T) { testChannelOutbox(t, newStore(t)("tg")) })
	t.Run("OutboxClaim", func(t *testing.T) { testChannelOutboxClaim(t, newStore(t)("slack")) })
	t.Run("Separate", func(t *testing.T) { testChannelsSeparate(t, newStore(t)) })
}

// testChannelsSeparate holds each channel's state to its own: the same
// keys, ids and users in two channels are two records.
func testChannelsSeparate(t *testing.T, open func(name string) store.Channel) {
	ctx := t.Context()
	now := time.Now().UTC()
	tg, slack := open("tg"), open("slack")
	must(t, "SetState", tg.SetState(ctx, keyOffset, "7"))
	must(t, "MarkSeen", tg.MarkSeen(ctx, "5", now))
	if ok, err := tg.RedeemCode(ctx, "h1", "42", now); err != nil || !ok {
		t.Fatalf("RedeemCode = %v, %v", ok, err)
	}
	if ok, err := tg.SetCodeTries(ctx, "42", 0, store.CodeTries{Tries: 1}); err != nil || !ok {
		t.Fatalf("SetCodeTries = %v, %v", ok, err)
	}
	msg := store.OutboxMessage{ID: "r1#0", Channel: "tg", To: "42", Text: "hi", Status: store.OutboxPending, NextAt: now, CreatedAt: now}
	must(t, "AddOutbox", tg.AddOutbox(ctx, []store.OutboxMessage{msg}))

	if v, err := slack.State(ctx, keyOffset); err != nil || v != "" {
		t.Errorf("another channel's State = %q, %v; want \"\"", v, err)
	}
	if seen, err := slack.Seen(ctx, "5"); err != nil || seen {
		t.Errorf("another channel's Seen = %v, %v; want false", seen, err)
	}
	if ok, err := slack.AllowedUser(ctx, "42"); err != nil || ok {
		t.Errorf("another channel's AllowedUser = %v, %v; want false", ok, err)
	}
	if ok, err := slack.RedeemCode(ctx, "h1", "43", now); err != nil || !ok {
		t.Errorf("the same code in another channel = %v, %v; want it redeemed", ok, err)
	}
	if got, err := slack.CodeTries(ctx, "42"); err != nil || got != (store.CodeTries{}) {
		t.Errorf("another channel's CodeTries = %+v, %v; want none", got, err)
	}
	if got, err := slack.UnsentOutbox(ctx, 10); err != nil || len(got) != 0 {
		t.Errorf("another channel's UnsentOutbox = %+v, %v; want none", got, err)
	}
	if _, ok, err := slack.ClaimOutbox(ctx, msg.ID, "c", now, now.Add(time.Minute)); err != nil || ok {
		t.Errorf("another channel's ClaimOutbox = %v, %v; want false", ok, err)
	}
	// The same id in another channel is another message.
	other := msg
	other.Channel, other.Text = "slack", "other"
	must(t, "AddOutbox slack", slack.AddOutbox(ctx, []store.OutboxMessage{other}))
	got, err := slack.UnsentOutbox(ctx, 10)
	must(t, "UnsentOutbox slack", err)
	diff(t, "slack's outbox", []store.OutboxMessage{other}, got)
	got, err = tg.UnsentOutbox(ctx, 10)
	must(t, "UnsentOutbox tg", err)
	diff(t, "tg's outbox", []store.OutboxMessage{msg}, got)
	st, err := slack.OutboxStats(ctx)
	must(t, "OutboxStats", err)
	diff(t, "slack's OutboxStats", store.OutboxStats{Pending: 1}, st)
}

// The channel's state keys; the store holds any key alike.
const (
	keyOffset = "offset"
	keySecret = "webhook_secret_sha256"
)

func testChannelState(t *testing.T, s store.Channel) {
	ctx := t.Context()
	if v, err := s.State(ctx, keyOffset); err != nil || v != "" {
		t.Fatalf("State of a missing key = %q, %v; want \"\", nil", v, err)
	}
	for _, v := range []string{"7", "8"} {
		must(t, "SetState offset", s.SetState(ctx, keyOffset, v))
	}
	must(t, "SetState secret", s.SetState(ctx, keySecret, "abc"))
	for key, want := range map[string]string{keyOffset: "8", keySecret: "abc"} {
		if v, err := s.State(ctx, key); err != nil || v != want {
			t.Errorf("State(%s) = %q, %v; want %q", key, v, err, want)
		}
	}
}

func testChannelSeen(t *testing.T, s store.Channel) {
	ctx := t.Context()
	now := time.Now().UTC()
	must(t, "MarkSeen 5", s.MarkSeen(ctx, "5", now.Add(-3*time.Hour)))
	must(t, "MarkSeen 5 twice", s.MarkSeen(ctx, "5", now.Add(-3*time.Hour)))
	must(t, "MarkSeen 6", s.MarkSeen(ctx, "6", now))
	for id, want := range map[string]bool{"5": true, "6": true, "7": false} {
		if got, err := s.Seen(ctx, id); err != nil || got != want {
			t.Errorf("Seen(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	must(t, "PruneSeen", s.PruneSeen(ctx, now.Add(-time.Hour)))
	for id, want := range map[string]bool{"5": false, "6": true} {
		if got, err := s.Seen(ctx, id); err != nil || got != want {
			t.Errorf("after PruneSeen: Seen(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
}

func testChannelCodes(t *testing.T, s store.Channel) {
	ctx := t.Context()
	now := time.Now().UTC()
	if ok, err := s.AllowedUser(ctx, "42"); err != nil || ok {
		t.Fatalf("AllowedUser before any code = %v, %v", ok, err)
	}
	if ok, err := s.RedeemCode(ctx, "h1", "42", now); err != nil || !ok {
		t.Fatalf("first redeem = %v, %v; want true", ok, err)
	}
	if ok, err := s.RedeemCode(ctx, "h1", "43", now); err != nil || ok {
		t.Fatalf("a code was redeemed twice: %v, %v", ok, err)
	}
	if ok, err := s.AllowedUser(ctx, "42"); err != nil || !ok {
		t.Errorf("AllowedUser(42) = %v, %v; want true", ok, err)
	}
	if ok, err := s.AllowedUser(ctx, "43"); err != nil || ok {
		t.Errorf("AllowedUser(43) = %v, %v; want false", ok, err)
	}
	if ok, err := s.RedeemCode(ctx, "h2", "44", now); err != nil || !ok {
		t.Errorf("another code = %v, %v; want true", ok, err)
	}
}

func testChannelCodeTries(t *testing.T, s store.Channel) {
	ctx := t.Context()
	until := time.Date(2026, 12, 7, 12, 15, 0, 0, time.UTC)
	if got, err := s.CodeTries(ctx, "42"); err != nil || got != (store.CodeTries{}) {
		t.Fatalf("CodeTries before any = %+v, %v; want the zero record", got, err)
	}
	set := func(prev int64, next store.CodeTries) bool {
		t.Helper()
		ok, err := s.SetCodeTries(ctx, "42", prev, next)
		must(t, "SetCodeTries", err)
		return ok
	}
	if set(1, store.CodeTries{Tries: 9}) {
		t.Error("SetCodeTries at version 1 of a chat with no record stored")
	}
	if !set(0, store.CodeTries{Tries: 1}) {
		t.Fatal("SetCodeTries of a new record refused")
	}
	if set(0, store.CodeTries{Tries: 9}) {
		t.Error("a second new record replaced the first")
	}
	if !set(1, store.CodeTries{Tries: 0, Lockouts: 1, LockedUntil: until}) {
		t.Fatal("SetCodeTries at the stored version refused")
	}
	if set(1, store.CodeTries{Tries: 9}) {
		t.Error("SetCodeTries at a stale version replaced the record")
	}
	got, err := s.CodeTries(ctx, "42")
	must(t, "CodeTries", err)
	diff(t, "CodeTries", store.CodeTries{Lockouts: 1, LockedUntil: until, Version: 2}, got)
	// Another chat's record is its own.
	if got, err := s.CodeTries(ctx, "43"); err != nil || got != (store.CodeTries{}) {
		t.Errorf("CodeTries of another chat = %+v, %v; want the zero record", got, err)
	}
	if ok, err := s.SetCodeTries(ctx, "43", 0, store.CodeTries{Tries: 2}); err != nil || !ok {
		t.Errorf("the first record of another chat: %v, %v", ok, err)
	}
	got, err = s.CodeTries(ctx, "42")
	must(t, "CodeTries", err)
	diff(t, "CodeTries after another chat's", store.CodeTries{Lockouts: 1, LockedUntil: until, Version: 2}, got)
}

func testChannelOutbox(t *testing.T, s store.Channel) {
	ctx := t.Context()
	now := time.Now().UTC()
	var msgs []store.OutboxMessage
	for i := range 3 {
		msgs = append(msgs, store.OutboxMessage{ID: fmt.Sprintf("r1#%d", i), Channel: "tg", To: "10", Text: fmt.Sprintf("part %d", i),
			Status: store.OutboxPending, NextAt: now, CreatedAt: now})
	}
	// Buttons are kept with their message.
	msgs[2].Buttons = []store.Button{{Label: "Yes", Value: "ap:a1:yes"}, {Label: "No", Value: "ap:a1:no"}}
	must(t, "AddOutbox", s.AddOutbox(ctx, msgs))
	// The same ids again keep the first copy; a new message goes last.
	other := store.OutboxMessage{ID: "r2#0", Channel: "tg", To: "11", Text: "other chat", Status: store.OutboxPending, NextAt: now, CreatedAt: now}
	again := []store.OutboxMessage{{ID: "r1#0", Channel: "tg", To: "10", Text: "changed", NextAt: now, CreatedAt: now}, other}
	must(t, "AddOutbox again", s.AddOutbox(ctx, again))
	got, err := s.UnsentOutbox(ctx, 100)
	must(t, "UnsentOutbox", err)
	diff(t, "UnsentOutbox", append(msgs, other), got)
	if got, err := s.UnsentOutbox(ctx, 2); err != nil || len(got) != 2 {
		t.Errorf("UnsentOutbox(limit 2) returned %d messages, %v", len(got), err)
	}

	next := now.Add(time.Minute)
	const tooMany = "tg send: 429 Too Many Requests"
	for _, id := range []string{"r1#0", "r1#1", "r1#2"} {
		if _, ok, err := s.ClaimOutbox(ctx, id, "c-"+id, now, now.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("ClaimOutbox(%s) = %v, %v; want it claimed", id, ok, err)
		}
	}
	must(t, "MarkRetry", s.MarkRetry(ctx, "r1#0", "c-r1#0", 1, next, tooMany, false))
	must(t, "MarkSent", s.MarkSent(ctx, "r1#1", "777", now))
	must(t, "MarkRetry failed", s.MarkRetry(ctx, "r1#2", "c-r1#2", 3, next, "tg send: 403 Forbidden", true))
	got, err = s.UnsentOutbox(ctx, 100)
	must(t, "UnsentOutbox after marks", err)
	retried := msgs[0]
	retried.Attempts, retried.NextAt, retried.LastError = 1, next, tooMany
	diff(t, "UnsentOutbox after marks", []store.OutboxMessage{retried, other}, got)
	// A late retry mark of a sent message changes nothing; a sent or
	// failed message is not claimed.
	must(t, "MarkRetry of a sent message", s.MarkRetry(ctx, "r1#1", "c-r1#1", 2, next, "late", false))
	for _, id := range []string{"r1#1", "r1#2"} {
		if _, ok, err := s.ClaimOutbox(ctx, id, "again", next, next.Add(time.Minute)); err != nil || ok {
			t.Errorf("ClaimOutbox(%s) of a message no longer pending = %v, %v; want false", id, ok, err)
		}
	}
	st, err := s.OutboxStats(ctx)
	must(t, "OutboxStats", err)
	diff(t, "OutboxStats", store.OutboxStats{Pending: 2, Sent: 1, Failed: 1}, st)
}

// testChannelOutboxClaim holds ClaimOutbox to its contract: of senders
// claiming a message at once one wins; the claim holds others off until
// it lapses (a sender that died mid-send), and MarkRetry or MarkSent by
// the claimer ends it; a message is claimed only when due.
func testChannelOutboxClaim(t *testing.T, s store.Channel) {
	ctx := t.Context()
	now := time.Now().UTC()
	msg := store.OutboxMessage{ID: "r1#0", Channel: "slack", To: "C20/1700000000.000100", Text: "hello", Status: store.OutboxPending, NextAt: now, CreatedAt: now}
	must(t, "AddOutbox", s.AddOutbox(ctx, []store.OutboxMessage{msg}))
	claim := func(what, claim string, at time.Time, want bool) {
		t.Helper()
		if _, ok, err := s.ClaimOutbox(ctx, msg.ID, claim, at, at.Add(time.Minute)); err != nil || ok != want {
			t.Errorf("%s: ClaimOutbox = %v, %v; want %v", what, ok, err, want)
		}
	}
	unsent := func(what string, want store.OutboxMessage) {
		t.Helper()
		got, err := s.UnsentOutbox(ctx, 10)
		must(t, what+": UnsentOutbox", err)
		diff(t, what, []store.OutboxMessage{want}, got)
	}

	// Of eight senders claiming at once, one wins, and gets the message
	// as claimed.
	until := now.Add(time.Minute)
	var mu sync.Mutex
	var winners []string
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			c := fmt.Sprintf("sender-%d", i)
			m, ok, err := s.ClaimOutbox(ctx, msg.ID, c, now, until)
			if err != nil {
				t.Errorf("ClaimOutbox by %s: %v", c, err)
			}
			if ok {
				mu.Lock()
				winners = append(winners, c)
				mu.Unlock()
				claimed := msg
				claimed.ClaimedUntil = until
				diff(t, "the claimed message", claimed, m)
			}
		})
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("concurrent claims won by %q; want one", winners)
	}
	first := winners[0]
	held := msg
	held.ClaimedUntil = until
	unsent("a claimed message", held)
	claim("a claim while the first lasts", "late", until.Add(-time.Second), false)
	// Another's MarkRetry changes nothing.
	must(t, "MarkRetry by another", s.MarkRetry(ctx, msg.ID, "late", 1, now, "late", true))
	unsent("after another's MarkRetry", held)

	// The first sender died mid-send: after its claim lapses, the message
	// is claimed again, and the dead sender's marks change nothing.
	claim("a claim after the first lapsed", "second", until, true)
	must(t, "MarkRetry by the lapsed claim", s.MarkRetry(ctx, msg.ID, first, 1, now, "lapsed", true))
	held.ClaimedUntil = until.Add(time.Minute)
	unsent("after the lapsed claim's MarkRetry", held)

	// MarkRetry by the claimer ends the claim; the message is claimed
	// again when due.
	next := until.Add(time.Hour)
	must(t, "MarkRetry", s.MarkRetry(ctx, msg.ID, "second", 1, next, "500", false))
	retried := msg
	retried.Attempts, retried.NextAt, retried.LastError = 1, next, "500"
	unsent("after MarkRetry", retried)
	claim("a claim before the retry is due", "early", next.Add(-time.Second), false)
	claim("a claim when the retry is due", "third", next, true)

	// MarkSent ends the claim and the message's sending.
	must(t, "MarkSent", s.MarkSent(ctx, msg.ID, "5", next))
	got, err := s.UnsentOutbox(ctx, 10)
	must(t, "UnsentOutbox after MarkSent", err)
	diff(t, "unsent after MarkSent", []store.OutboxMessage(nil), got)
	claim("a claim of a sent message", "fourth", next.Add(time.Hour), false)

	if _, _, err := s.ClaimOutbox(ctx, msg.ID, "", next, next.Add(time.Minute)); err == nil {
		t.Error("ClaimOutbox with no claim id: no error")
	}
	if err := s.MarkRetry(ctx, msg.ID, "", 1, next, "x", false); err == nil {
		t.Error("MarkRetry with no claim id: no error")
	}
}
