// Package storetest is the conformance suite every store.Store adapter
// runs, so that the embedded and the cloud stores behave alike, and the
// suite of store.Channel (channel.go):
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openEmpty(t) })
//	}
//	func TestChannelStore(t *testing.T) {
//		storetest.RunChannel(t, func(t *testing.T) func(string) store.Channel { return openEmpty(t).Channel })
//	}
//
// The suite holds adapters to the semantics documented in package store
// and to nothing an engine happens to do: times are compared to the
// millisecond, nil and empty slices are equal, and unordered results are
// compared as sets.
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Run runs the conformance suite. Each subtest calls newStore for a fresh,
// empty store, which the suite closes when the subtest ends; newStore
// should fail t if it cannot build one.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"CreateGetSession", testCreateGetSession},
		{"SessionTimesUTC", testSessionTimesUTC},
		{"AppendMessageKeepsFirst", testAppendMessageKeepsFirst},
		{"GetMessageNotFound", testGetMessageNotFound},
		{"MessagesOrderedByKey", testMessagesOrderedByKey},
		{"MessageRoundTrip", testMessageRoundTrip},
		{"DeleteMessages", testDeleteMessages},
		{"EnqueueRunSeq", testEnqueueRunSeq},
		{"EnqueueRunDuplicate", testEnqueueRunDuplicate},
		{"EnqueueRunConcurrent", testEnqueueRunConcurrent},
		{"EnqueueRunWritesInput", testEnqueueRunWritesInput},
		{"RunMessages", testRunMessages},
		{"EnqueueRunInputVisibleWithRun", testEnqueueRunInputVisibleWithRun},
		{"EnqueueRunOwner", testEnqueueRunOwner},
		{"GetRunNotFound", testGetRunNotFound},
		{"CommitRun", testCommitRun},
		{"CommitRunMessages", testCommitRunMessages},
		{"CommitRunCalls", testCommitRunCalls},
		{"CommitRunLease", testCommitRunLease},
		{"StartCall", testStartCall},
		{"StartCallConcurrent", testStartCallConcurrent},
		{"Jobs", testJobs},
		{"NextRun", testNextRun},
		{"UnfinishedSessions", testUnfinishedSessions},
		{"SessionAllowlist", testSessionAllowlist},
		{"AllowToolConcurrent", testAllowToolConcurrent},
		{"CreateGetApproval", testCreateGetApproval},
		{"PendingApproval", testPendingApproval},
		{"ResolveApproval", testResolveApproval},
		{"ResolveApprovalConcurrent", testResolveApprovalConcurrent},
		{"SetApprovalToken", testSetApprovalToken},
		{"DeleteSession", testDeleteSession},
		{"CreateKey", testCreateKey},
		{"ListKeysOrder", testListKeysOrder},
		{"RevokeKey", testRevokeKey},
		{"ResponseRoundTrip", testResponseRoundTrip},
		{"CreateResponseDuplicate", testCreateResponseDuplicate},
		{"CreateResponseUnknownSession", testCreateResponseUnknownSession},
		{"CreateResponseConcurrent", testCreateResponseConcurrent},
		{"DeleteResponse", testDeleteResponse},
		{"DeleteSessionResponses", testDeleteSessionResponses},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// opts compares records the way the port promises them: times to the
// millisecond, nil and empty slices alike.
var opts = cmp.Options{
	cmpopts.EquateApproxTime(time.Millisecond),
	cmpopts.EquateEmpty(),
}

// base is a fixed time with sub-millisecond digits, far from the test's
// clock, in a zone that is not UTC.
var base = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 5*3600+30*60))

// at returns base plus n seconds.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Second) }

// wantErr fails t unless err wraps target.
func wantErr(t *testing.T, op string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want one wrapping %v", op, err, target)
	}
}

// must fails t on err.
func must(t *testing.T, op string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
}

// checkUTC fails t unless every time is in UTC.
func checkUTC(t *testing.T, what string, times ...time.Time) {
	t.Helper()
	for _, tm := range times {
		if tm.Location() != time.UTC {
			t.Errorf("%s: time %v is in %v, want UTC", what, tm, tm.Location())
		}
	}
}

// diff fails t if got differs from want.
func diff(t *testing.T, what string, want, got any, extra ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, append(cmp.Options{opts}, extra...)...); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// newSession creates a session and fails t on error.
func newSession(t *testing.T, s store.Store, id string) store.Session {
	t.Helper()
	sess := store.Session{ID: id, Agent: "main", CreatedAt: at(0), UpdatedAt: at(0)}
	must(t, "CreateSession "+id, s.CreateSession(t.Context(), sess))
	return sess
}

// appendMsg appends a message and fails t unless it was written.
func appendMsg(t *testing.T, s store.Store, m store.Message) {
	t.Helper()
	wrote, err := s.AppendMessage(t.Context(), m)
	must(t, "AppendMessage "+m.Key, err)
	if !wrote {
		t.Fatalf("AppendMessage %s: wrote = false, want true", m.Key)
	}
}

// newRun is a run to enqueue into the session of that id (agent "main",
// no owner), with no input.
func newRun(sessionID string, r store.Run) store.NewRun {
	r.SessionID = sessionID
	return store.NewRun{Session: store.Session{ID: sessionID, Agent: "main"}, Run: r}
}

// enqueue enqueues a run and fails t on error.
func enqueue(t *testing.T, s store.Store, sessionID, id string) store.Run {
	t.Helper()
	r, _, err := s.EnqueueRun(t.Context(), newRun(sessionID, store.Run{ID: id, State: []byte(`{"step":"begin"}`), CreatedAt: at(1)}))
	must(t, "EnqueueRun "+id, err)
	return r
}

// setStatus commits a run's status, keeping its state.
func setStatus(t *testing.T, s store.Store, r store.Run, st store.RunStatus) store.Run {
	t.Helper()
	r.Status = st
	must(t, fmt.Sprintf("CommitRun %s to %s", r.ID, st), s.CommitRun(t.Context(), store.Commit{Run: r}))
	return r
}

// ignoreUpdated drops Run.UpdatedAt from comparisons: adapters stamp it.
var ignoreUpdated = cmpopts.IgnoreFields(store.Run{}, "UpdatedAt")

// asSet compares string lists as sets (duplicates still count), for the
// ones whose order the port leaves open, such as allowlists.
var asSet = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// approval returns a test approval request of two tool calls.
func approval(id, sessionID, runID string, created time.Time) store.Approval {
	return store.Approval{
		ID:        id,
		SessionID: sessionID,
		RunID:     runID,
		Calls:     []string{id + "-call_1", id + "-call_2"},
		Tools:     []string{"shell", "write_file"},
		Prompt:    "Allow shell `rm -rf build/` and write_file \"notes — ünï 🙂.md\"?\nReply yes, no or always.",
		CreatedAt: created,
	}
}

// createApproval creates an approval and returns it as stored: pending.
func createApproval(t *testing.T, s store.Store, a store.Approval) store.Approval {
	t.Helper()
	must(t, "CreateApproval "+a.ID, s.CreateApproval(t.Context(), a))
	a.Status = store.ApprovalPending
	return a
}

// resolved returns a as answered at tm.
func resolved(a store.Approval, st store.ApprovalStatus, decision string, tm time.Time) store.Approval {
	a.Status, a.Decision, a.ResolvedAt = st, decision, &tm
	return a
}

// getApproval fails t unless the stored approval id equals want.
func getApproval(t *testing.T, s store.Store, id string, want store.Approval) {
	t.Helper()
	got, err := s.GetApproval(t.Context(), id)
	must(t, "GetApproval "+id, err)
	diff(t, "GetApproval "+id, want, got)
	checkUTC(t, "GetApproval "+id, got.CreatedAt)
	if got.ResolvedAt != nil {
		checkUTC(t, "GetApproval "+id+" ResolvedAt", *got.ResolvedAt)
	}
}

// noPending fails t unless the session has no pending approval.
func noPending(t *testing.T, s store.Store, sessionID, when string) {
	t.Helper()
	got, err := s.PendingApproval(t.Context(), sessionID)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PendingApproval %s %s = %+v, %v; want ErrNotFound", sessionID, when, got, err)
	}
}

// pending fails t unless want is the session's pending approval.
func pending(t *testing.T, s store.Store, sessionID string, want store.Approval) {
	t.Helper()
	got, err := s.PendingApproval(t.Context(), sessionID)
	must(t, "PendingApproval "+sessionID, err)
	diff(t, "PendingApproval "+sessionID, want, got)
}

func testCreateGetSession(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := store.Session{ID: "s1", Agent: "main", Ephemeral: true, CreatedAt: at(0), UpdatedAt: at(5)}
	must(t, "CreateSession", s.CreateSession(ctx, want))
	got, err := s.GetSession(ctx, "s1")
	must(t, "GetSession", err)
	diff(t, "GetSession", want, got)

	other := store.Session{ID: "s2", Agent: "helper", CreatedAt: at(1), UpdatedAt: at(1)}
	must(t, "CreateSession s2", s.CreateSession(ctx, other))
	got, err = s.GetSession(ctx, "s2")
	must(t, "GetSession s2", err)
	diff(t, "GetSession s2", other, got)

	dup := store.Session{ID: "s1", Agent: "intruder", CreatedAt: at(9), UpdatedAt: at(9)}
	wantErr(t, "CreateSession duplicate", s.CreateSession(ctx, dup), store.ErrExists)
	got, err = s.GetSession(ctx, "s1")
	must(t, "GetSession after duplicate", err)
	diff(t, "GetSession after duplicate", want, got)

	_, err = s.GetSession(ctx, "nope")
	wantErr(t, "GetSession unknown", err, store.ErrNotFound)
}

func testSessionTimesUTC(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := store.Session{ID: "s", Agent: "main", CreatedAt: at(0), UpdatedAt: at(60)}
	must(t, "CreateSession", s.CreateSession(ctx, want))
	got, err := s.GetSession(ctx, "s")
	must(t, "GetSession", err)
	checkUTC(t, "GetSession", got.CreatedAt, got.UpdatedAt)
	diff(t, "GetSession", want, got)
}

func testSessionAllowlist(t *testing.T, s store.Store) {
	ctx := t.Context()
	ignoreSessUpdated := cmpopts.IgnoreFields(store.Session{}, "UpdatedAt")
	listed := store.Session{ID: "listed", Agent: "main", Allowlist: []string{"shell", "read_file"},
		CreatedAt: at(0), UpdatedAt: at(0)}
	must(t, "CreateSession listed", s.CreateSession(ctx, listed))
	got, err := s.GetSession(ctx, "listed")
	must(t, "GetSession listed", err)
	diff(t, "GetSession listed", listed, got, asSet)

	plain := newSession(t, s, "plain")
	got, err = s.GetSession(ctx, "plain")
	must(t, "GetSession plain", err)
	diff(t, "GetSession plain", plain, got)

	check := func(want store.Session) {
		t.Helper()
		got, err := s.GetSession(ctx, want.ID)
		must(t, "GetSession "+want.ID, err)
		diff(t, "GetSession "+want.ID, want, got, asSet, ignoreSessUpdated)
	}
	must(t, "AllowTool", s.AllowTool(ctx, "plain", "shell"))
	plain.Allowlist = []string{"shell"}
	check(plain)
	must(t, "AllowTool again", s.AllowTool(ctx, "plain", "shell"))
	check(plain) // adding twice keeps one
	must(t, "AllowTool web_fetch", s.AllowTool(ctx, "plain", "web_fetch"))
	plain.Allowlist = []string{"shell", "web_fetch"}
	check(plain)
	must(t, "AllowTool shell once more", s.AllowTool(ctx, "plain", "shell"))
	check(plain)

	must(t, "AllowTool listed", s.AllowTool(ctx, "listed", "read_file"))
	must(t, "AllowTool listed", s.AllowTool(ctx, "listed", "write_file"))
	listed.Allowlist = []string{"shell", "read_file", "write_file"}
	check(listed)
	check(plain) // another session's allowlist is its own

	wantErr(t, "AllowTool unknown session", s.AllowTool(ctx, "nope", "shell"), store.ErrNotFound)
	_, err = s.GetSession(ctx, "nope")
	wantErr(t, "GetSession after AllowTool unknown", err, store.ErrNotFound)
}

func testAllowToolConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	sess := newSession(t, s, "s")
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range workers {
		wg.Go(func() {
			// Each adds its own tool and one all of them add.
			errs <- s.AllowTool(ctx, "s", fmt.Sprintf("tool_%d", w))
			errs <- s.AllowTool(ctx, "s", "shared")
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("AllowTool: %v", err)
		}
	}
	sess.Allowlist = []string{"shared"}
	for w := range workers {
		sess.Allowlist = append(sess.Allowlist, fmt.Sprintf("tool_%d", w))
	}
	got, err := s.GetSession(ctx, "s")
	must(t, "GetSession", err)
	diff(t, "GetSession after concurrent AllowTool", sess, got, asSet,
		cmpopts.IgnoreFields(store.Session{}, "UpdatedAt"))
}

func testCreateGetApproval(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s1")
	newSession(t, s, "s2")
	in := approval("a1", "s1", "r1", at(3))
	in.Token = "AQCEAAAAKgAAAAMAAAAAAAAAA" + strings.Repeat("x", 1000)
	a1 := createApproval(t, s, in)
	getApproval(t, s, "a1", a1)

	a2 := approval("a2", "s1", "r2", at(4))
	a2.Calls, a2.Tools = []string{"only"}, []string{"web_fetch"}
	a2.Kind = store.ApprovalClientTools
	a2 = createApproval(t, s, a2)
	getApproval(t, s, "a2", a2)

	dup := approval("a1", "s1", "r9", at(50))
	dup.Prompt = "intruder"
	wantErr(t, "CreateApproval duplicate", s.CreateApproval(ctx, dup), store.ErrExists)
	// The id is taken in every session.
	dup.SessionID = "s2"
	wantErr(t, "CreateApproval duplicate in another session", s.CreateApproval(ctx, dup), store.ErrExists)
	getApproval(t, s, "a1", a1)
	noPending(t, s, "s2", "after refused duplicate")

	_, err := s.GetApproval(ctx, "nope")
	wantErr(t, "GetApproval unknown", err, store.ErrNotFound)
}

func testPendingApproval(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	newSession(t, s, "b")
	noPending(t, s, "a", "with no approvals")
	noPending(t, s, "nope", "of an unknown session")

	b1 := createApproval(t, s, approval("b1", "b", "rb1", at(1)))
	noPending(t, s, "a", "with only another session's")
	pending(t, s, "b", b1)

	a1 := createApproval(t, s, approval("a1", "a", "ra1", at(2)))
	pending(t, s, "a", a1)
	pending(t, s, "b", b1)

	_, err := s.ResolveApproval(ctx, "a1", store.ApprovalApproved, "yes", at(10))
	must(t, "ResolveApproval a1", err)
	noPending(t, s, "a", "after its approval was answered")
	pending(t, s, "b", b1)

	a2 := createApproval(t, s, approval("a2", "a", "ra2", at(20)))
	pending(t, s, "a", a2)
	_, err = s.ResolveApproval(ctx, "a2", store.ApprovalDenied, "no", at(30))
	must(t, "ResolveApproval a2", err)
	_, err = s.ResolveApproval(ctx, "b1", store.ApprovalApproved, "always", at(30))
	must(t, "ResolveApproval b1", err)
	noPending(t, s, "a", "when all are answered")
	noPending(t, s, "b", "when all are answered")
}

func testResolveApproval(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	a := createApproval(t, s, approval("a1", "s", "r1", at(0)))
	other := createApproval(t, s, approval("a2", "s", "r2", at(1)))

	want := resolved(a, store.ApprovalApproved, "always", at(60))
	got, err := s.ResolveApproval(ctx, "a1", store.ApprovalApproved, "always", at(60))
	must(t, "ResolveApproval", err)
	diff(t, "ResolveApproval", want, got)
	if got.ResolvedAt == nil {
		t.Fatalf("ResolveApproval: ResolvedAt = nil")
	}
	checkUTC(t, "ResolveApproval", got.CreatedAt, *got.ResolvedAt)
	getApproval(t, s, "a1", want)

	// The first answer wins: a second one changes nothing and gets the
	// approval as first resolved.
	got, err = s.ResolveApproval(ctx, "a1", store.ApprovalDenied, "no", at(120))
	wantErr(t, "ResolveApproval again", err, store.ErrConflict)
	diff(t, "ResolveApproval again", want, got)
	got, err = s.ResolveApproval(ctx, "a1", store.ApprovalApproved, "yes", at(180))
	wantErr(t, "ResolveApproval with the same status", err, store.ErrConflict)
	diff(t, "ResolveApproval with the same status", want, got)
	getApproval(t, s, "a1", want)
	getApproval(t, s, "a2", other)

	denied := resolved(other, store.ApprovalDenied, "no", at(90))
	got, err = s.ResolveApproval(ctx, "a2", store.ApprovalDenied, "no", at(90))
	must(t, "ResolveApproval a2", err)
	diff(t, "ResolveApproval a2", denied, got)
	got, err = s.ResolveApproval(ctx, "a2", store.ApprovalApproved, "yes", at(91))
	wantErr(t, "ResolveApproval a2 again", err, store.ErrConflict)
	diff(t, "ResolveApproval a2 again", denied, got)

	_, err = s.ResolveApproval(ctx, "nope", store.ApprovalApproved, "yes", at(60))
	wantErr(t, "ResolveApproval unknown", err, store.ErrNotFound)
	_, err = s.GetApproval(ctx, "nope")
	wantErr(t, "GetApproval after ResolveApproval unknown", err, store.ErrNotFound)
}

func testResolveApprovalConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	a := createApproval(t, s, approval("a", "s", "r", at(0)))
	const workers = 8
	type result struct {
		worker int
		a      store.Approval
		err    error
	}
	results := make(chan result, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			st, decision := store.ApprovalApproved, fmt.Sprintf("yes-%d", w)
			if w%2 == 1 {
				st, decision = store.ApprovalDenied, fmt.Sprintf("no-%d", w)
			}
			got, err := s.ResolveApproval(ctx, "a", st, decision, at(100+w))
			results <- result{w, got, err}
		})
	}
	wg.Wait()
	close(results)

	var wins, conflicts []result
	for r := range results {
		switch {
		case r.err == nil:
			wins = append(wins, r)
		case errors.Is(r.err, store.ErrConflict):
			conflicts = append(conflicts, r)
		default:
			t.Errorf("ResolveApproval worker %d: %v", r.worker, r.err)
		}
	}
	if len(wins) != 1 {
		t.Fatalf("%d ResolveApproval calls succeeded, want exactly 1", len(wins))
	}
	if len(conflicts) != workers-1 {
		t.Errorf("%d ResolveApproval calls got ErrConflict, want %d", len(conflicts), workers-1)
	}
	w := wins[0].worker
	want := resolved(a, store.ApprovalApproved, fmt.Sprintf("yes-%d", w), at(100+w))
	if w%2 == 1 {
		want = resolved(a, store.ApprovalDenied, fmt.Sprintf("no-%d", w), at(100+w))
	}
	diff(t, "winning ResolveApproval", want, wins[0].a)
	for _, c := range conflicts {
		diff(t, fmt.Sprintf("ResolveApproval worker %d that lost", c.worker), want, c.a)
	}
	getApproval(t, s, "a", want)
}

func testSetApprovalToken(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	a := createApproval(t, s, approval("a1", "s", "r1", at(0)))
	other := createApproval(t, s, approval("a2", "s", "r2", at(1)))

	a.Token = "task-token-1 " + strings.Repeat("AQB8", 256)
	must(t, "SetApprovalToken", s.SetApprovalToken(ctx, "a1", a.Token))
	getApproval(t, s, "a1", a)
	pending(t, s, "s", a)

	a.Token = "task-token-2"
	must(t, "SetApprovalToken again", s.SetApprovalToken(ctx, "a1", a.Token))
	getApproval(t, s, "a1", a)
	getApproval(t, s, "a2", other)

	// Resolving keeps the token.
	got, err := s.ResolveApproval(ctx, "a1", store.ApprovalApproved, "yes", at(5))
	must(t, "ResolveApproval", err)
	diff(t, "ResolveApproval", resolved(a, store.ApprovalApproved, "yes", at(5)), got)

	wantErr(t, "SetApprovalToken unknown", s.SetApprovalToken(ctx, "nope", "t"), store.ErrNotFound)
	_, err = s.GetApproval(ctx, "nope")
	wantErr(t, "GetApproval after SetApprovalToken unknown", err, store.ErrNotFound)
}

func testAppendMessageKeepsFirst(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s1")
	newSession(t, s, "s2")
	first := store.Message{SessionID: "s1", Key: "r000000000001#a000", RunID: "run-1",
		Message: chat.Message{Role: chat.Assistant, Content: "first"}, CreatedAt: at(1)}
	appendMsg(t, s, first)

	second := first
	second.RunID = "run-2"
	second.Message = chat.Message{Role: chat.Assistant, Content: "second",
		ToolCalls: []chat.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}}
	second.CreatedAt = at(2)
	wrote, err := s.AppendMessage(ctx, second)
	must(t, "AppendMessage again", err)
	if wrote {
		t.Errorf("AppendMessage again: wrote = true, want false")
	}
	got, err := s.GetMessage(ctx, "s1", first.Key)
	must(t, "GetMessage", err)
	diff(t, "GetMessage after second write", first, got)

	// The same key in another session is another message.
	elsewhere := second
	elsewhere.SessionID = "s2"
	appendMsg(t, s, elsewhere)
	got, err = s.GetMessage(ctx, "s2", first.Key)
	must(t, "GetMessage s2", err)
	diff(t, "GetMessage s2", elsewhere, got)
	all, err := s.Messages(ctx, "s1")
	must(t, "Messages s1", err)
	diff(t, "Messages s1", []store.Message{first}, all)
}

func testGetMessageNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s1")
	appendMsg(t, s, store.Message{SessionID: "s1", Key: "k1", RunID: "r",
		Message: chat.Message{Role: chat.User, Content: "hi"}, CreatedAt: at(0)})
	_, err := s.GetMessage(ctx, "s1", "k2")
	wantErr(t, "GetMessage unknown key", err, store.ErrNotFound)
	_, err = s.GetMessage(ctx, "nope", "k1")
	wantErr(t, "GetMessage unknown session", err, store.ErrNotFound)
}

func testMessagesOrderedByKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s1")
	newSession(t, s, "s2")
	keys := []string{
		"r000000000002#a000",
		"r000000000001#b001.t000",
		"r000000000010#a000",
		"r000000000001#a000",
		"r000000000001#b001",
		"r000000000002#b000.t001",
		"r000000000001#b001.t001",
		"r000000000002#b000",
	}
	var want []store.Message
	for i, k := range keys {
		m := store.Message{SessionID: "s1", Key: k, RunID: k[:13],
			Message: chat.Message{Role: chat.User, Content: "message " + k}, CreatedAt: at(i)}
		appendMsg(t, s, m)
		want = append(want, m)
		// Interleave another session's history, which must not leak in.
		appendMsg(t, s, store.Message{SessionID: "s2", Key: k, RunID: "x",
			Message: chat.Message{Role: chat.User, Content: "other"}, CreatedAt: at(i)})
	}
	slices.SortFunc(want, func(a, b store.Message) int { return strings.Compare(a.Key, b.Key) })

	got, err := s.Messages(ctx, "s1")
	must(t, "Messages", err)
	diff(t, "Messages", want, got)
	for _, m := range got {
		checkUTC(t, "Messages "+m.Key, m.CreatedAt)
	}

	newSession(t, s, "empty")
	got, err = s.Messages(ctx, "empty")
	must(t, "Messages of empty session", err)
	if len(got) != 0 {
		t.Errorf("Messages of empty session = %v, want none", got)
	}
}

func testMessageRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	big := strings.Repeat("0123456789abcdef", 200*1024/16)
	msgs := []store.Message{
		{Key: "k0", RunID: "r1", Message: chat.Message{Role: chat.System, Content: "You are helpful."}},
		{Key: "k1", RunID: "r1", Message: chat.Message{Role: chat.User,
			Content: "héllo wörld — 你好世界 — こんにちは — مرحبا — 👋🏽👨‍👩‍👧‍👦🇫🇷 — \"quoted\" \\ back\tslash\nnew line <&>"}},
		{Key: "k2", RunID: "r1", Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path":"/tmp/ünï.txt"}`},
			{ID: "call_2", Name: "shell", Arguments: `{"cmd":"echo \"hi\" && ls -la","timeout":30}`},
		}}},
		{Key: "k3", RunID: "r1", Message: chat.Message{Role: chat.Tool, ToolCallID: "call_1", Name: "read_file", Content: "contents 🎉"}},
		{Key: "k4", RunID: "r1", Message: chat.Message{Role: chat.Tool, ToolCallID: "call_2", Name: "shell", Content: big}},
		{Key: "k5", RunID: "r2", Message: chat.Message{Role: chat.Assistant, Content: "done",
			ToolCalls: []chat.ToolCall{{ID: "call_3", Name: "noop", Arguments: "{}"}}}},
		{Key: "k6", RunID: "r2", Message: chat.Message{Role: chat.User, Content: ""}},
		{Key: "k7", RunID: "r3", Message: chat.Message{Role: chat.User, Content: "what is this?", Parts: []chat.Part{
			{Type: chat.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n\x00\xff"), Detail: "low"},
			{Type: chat.PartImage, URL: "https://example.com/a.jpg?x=1&y=ü"},
			{Type: chat.PartFile, MediaType: "application/pdf", Data: []byte("%PDF-1.7"), Name: "report ü.pdf"},
			{Type: chat.PartAudio, MediaType: "audio/wav", Data: []byte("RIFF\x00\x00\x00\x00WAVE")},
		}}},
	}
	for i := range msgs {
		msgs[i].SessionID = "s"
		msgs[i].CreatedAt = at(i)
		appendMsg(t, s, msgs[i])
	}
	for _, want := range msgs {
		got, err := s.GetMessage(ctx, "s", want.Key)
		must(t, "GetMessage "+want.Key, err)
		diff(t, "GetMessage "+want.Key, want, got)
		checkUTC(t, "GetMessage "+want.Key, got.CreatedAt)
	}
	got, err := s.Messages(ctx, "s")
	must(t, "Messages", err)
	diff(t, "Messages", msgs, got)
}

func testDeleteMessages(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	newSession(t, s, "other")
	var msgs []store.Message
	for i, k := range []string{"a", "b", "c", "d"} {
		m := store.Message{SessionID: "s", Key: k, RunID: "r",
			Message: chat.Message{Role: chat.User, Content: k}, CreatedAt: at(i)}
		appendMsg(t, s, m)
		msgs = append(msgs, m)
	}
	otherMsg := store.Message{SessionID: "other", Key: "b", RunID: "r",
		Message: chat.Message{Role: chat.User, Content: "keep me"}, CreatedAt: at(0)}
	appendMsg(t, s, otherMsg)

	must(t, "DeleteMessages", s.DeleteMessages(ctx, "s", []string{"b", "d", "missing"}))
	got, err := s.Messages(ctx, "s")
	must(t, "Messages", err)
	diff(t, "Messages after delete", []store.Message{msgs[0], msgs[2]}, got)
	_, err = s.GetMessage(ctx, "s", "b")
	wantErr(t, "GetMessage deleted", err, store.ErrNotFound)

	got, err = s.Messages(ctx, "other")
	must(t, "Messages other", err)
	diff(t, "Messages of other session", []store.Message{otherMsg}, got)

	must(t, "DeleteMessages none", s.DeleteMessages(ctx, "s", nil))
	must(t, "DeleteMessages only missing", s.DeleteMessages(ctx, "s", []string{"zzz"}))
	got, err = s.Messages(ctx, "s")
	must(t, "Messages", err)
	diff(t, "Messages after no-op deletes", []store.Message{msgs[0], msgs[2]}, got)

	// A deleted key can be written again.
	again := msgs[1]
	again.Content = "b again"
	appendMsg(t, s, again)
	gotMsg, err := s.GetMessage(ctx, "s", "b")
	must(t, "GetMessage rewritten", err)
	diff(t, "GetMessage rewritten", again, gotMsg)
}

func testEnqueueRunSeq(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	newSession(t, s, "b")
	order := []struct {
		session, id string
		seq         int64
	}{
		{"a", "a1", 1}, {"b", "b1", 1}, {"a", "a2", 2}, {"a", "a3", 3}, {"b", "b2", 2},
	}
	for i, o := range order {
		in := store.Run{ID: o.id, Status: store.RunRunning, Seq: 42,
			State: []byte(fmt.Sprintf(`{"n":%d}`, i)), CreatedAt: at(i)}
		got, created, err := s.EnqueueRun(ctx, newRun(o.session, in))
		must(t, "EnqueueRun "+o.id, err)
		if created {
			t.Errorf("EnqueueRun %s into an existing session: created = true", o.id)
		}
		want := store.Run{ID: o.id, SessionID: o.session, Seq: o.seq, Status: store.RunQueued,
			State: in.State, CreatedAt: at(i)}
		diff(t, "EnqueueRun "+o.id, want, got, ignoreUpdated)
		checkUTC(t, "EnqueueRun "+o.id, got.CreatedAt, got.UpdatedAt)

		stored, err := s.GetRun(ctx, o.id)
		must(t, "GetRun "+o.id, err)
		diff(t, "GetRun "+o.id, got, stored)
		checkUTC(t, "GetRun "+o.id, stored.CreatedAt, stored.UpdatedAt)
	}
}

func testEnqueueRunDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	newSession(t, s, "b")
	first := enqueue(t, s, "a", "r1")

	dup := newRun("a", store.Run{ID: "r1", State: []byte(`{"other":true}`), CreatedAt: at(50)})
	dup.Input = []chat.Message{{Role: chat.User, Content: "again"}}
	got, _, err := s.EnqueueRun(ctx, dup)
	wantErr(t, "EnqueueRun duplicate", err, store.ErrExists)
	diff(t, "EnqueueRun duplicate returns the existing run", first, got)

	// The id is taken in every session, also in one that does not exist:
	// that session is not created.
	for _, other := range []string{"b", "c"} {
		dup := newRun(other, store.Run{ID: "r1", State: []byte(`{"other":true}`), CreatedAt: at(50)})
		got, _, err = s.EnqueueRun(ctx, dup)
		wantErr(t, "EnqueueRun duplicate in session "+other, err, store.ErrExists)
		diff(t, "EnqueueRun duplicate in session "+other, first, got)
	}
	_, err = s.GetSession(ctx, "c")
	wantErr(t, "GetSession of a session only a refused duplicate named", err, store.ErrNotFound)
	msgs, err := s.Messages(ctx, "a")
	must(t, "Messages a", err)
	if len(msgs) != 0 {
		t.Errorf("a refused duplicate wrote its input: %v", msgs)
	}

	// A refused duplicate takes no seq and queues nothing.
	second := enqueue(t, s, "a", "r2")
	if second.Seq != 2 {
		t.Errorf("seq after duplicate = %d, want 2", second.Seq)
	}
	if _, err := s.NextRun(ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("NextRun b after refused duplicate: error %v, want ErrNotFound", err)
	}
}

func testEnqueueRunConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "lane")
	const workers, perWorker = 16, 2
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		runs []store.Run
		errs []error
	)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				r, _, err := s.EnqueueRun(ctx, newRun("lane", store.Run{ID: fmt.Sprintf("run-%02d-%d", w, i), CreatedAt: at(w)}))
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					runs = append(runs, r)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Errorf("EnqueueRun: %v", err)
	}
	if len(runs) != workers*perWorker {
		t.Fatalf("got %d runs, want %d", len(runs), workers*perWorker)
	}
	var seqs, want []int64
	for i, r := range runs {
		seqs = append(seqs, r.Seq)
		want = append(want, int64(i+1))
		stored, err := s.GetRun(ctx, r.ID)
		must(t, "GetRun "+r.ID, err)
		diff(t, "GetRun "+r.ID, r, stored)
	}
	slices.Sort(seqs)
	diff(t, "seqs of concurrent enqueues", want, seqs)

	next, err := s.NextRun(ctx, "lane")
	must(t, "NextRun", err)
	if next.Seq != 1 {
		t.Errorf("NextRun seq = %d, want 1", next.Seq)
	}
}

func testGetRunNotFound(t *testing.T, s store.Store) {
	newSession(t, s, "a")
	enqueue(t, s, "a", "r1")
	_, err := s.GetRun(t.Context(), "r2")
	wantErr(t, "GetRun unknown", err, store.ErrNotFound)
}

func testEnqueueRunWritesInput(t *testing.T, s store.Store) {
	ctx := t.Context()
	sess := store.Session{ID: "new", Agent: "main", Owner: "key:k1", CreatedAt: at(0), UpdatedAt: at(0)}
	input := []chat.Message{{Role: chat.System, Content: "be brief"}, {Role: chat.User, Content: "hi",
		Parts: []chat.Part{{Type: chat.PartImage, MediaType: "image/gif", Data: []byte("GIF89a\x01\x00")}}}}
	r1, created, err := s.EnqueueRun(ctx, store.NewRun{Session: sess, Run: store.Run{ID: "r1", CreatedAt: at(1)}, Input: input})
	must(t, "EnqueueRun into a new session", err)
	if !created {
		t.Errorf("EnqueueRun into a new session: created = false")
	}
	got, err := s.GetSession(ctx, "new")
	must(t, "GetSession", err)
	diff(t, "GetSession created by EnqueueRun", sess, got, cmpopts.IgnoreFields(store.Session{}, "UpdatedAt"))

	r2, created, err := s.EnqueueRun(ctx, store.NewRun{Session: sess, Run: store.Run{ID: "r2", CreatedAt: at(2)},
		Input: []chat.Message{{Role: chat.User, Content: "more"}}})
	must(t, "EnqueueRun into the existing session", err)
	if created {
		t.Errorf("EnqueueRun into an existing session: created = true")
	}
	want := []store.Message{
		{SessionID: "new", Key: store.InputKey(r1.Seq, 0), RunID: "r1", Message: input[0], CreatedAt: at(1)},
		{SessionID: "new", Key: store.InputKey(r1.Seq, 1), RunID: "r1", Message: input[1], CreatedAt: at(1)},
		{SessionID: "new", Key: store.InputKey(r2.Seq, 0), RunID: "r2", Message: chat.Message{Role: chat.User, Content: "more"}, CreatedAt: at(2)},
	}
	msgs, err := s.Messages(ctx, "new")
	must(t, "Messages", err)
	diff(t, "history after two enqueues", want, msgs)
	for _, k := range []string{store.InputKey(r1.Seq, 0), store.InputKey(r2.Seq, 0)} {
		if !strings.HasPrefix(k, store.RunPrefix(r1.Seq)) && !strings.HasPrefix(k, store.RunPrefix(r2.Seq)) {
			t.Errorf("input key %q does not start with its run's prefix", k)
		}
	}
}

func testRunMessages(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	newSession(t, s, "b")
	var want []store.Message
	for seq := int64(1); seq <= 11; seq++ {
		for i, suffix := range []string{"b000.a", "a00000", "b000.t000"} {
			m := store.Message{SessionID: "a", Key: store.RunPrefix(seq) + suffix, RunID: fmt.Sprint(seq),
				Message: chat.Message{Role: chat.User, Content: fmt.Sprint(seq, i)}, CreatedAt: at(i)}
			appendMsg(t, s, m)
			if seq == 10 {
				want = append(want, m)
			}
		}
	}
	appendMsg(t, s, store.Message{SessionID: "b", Key: store.RunPrefix(10) + "a00000", Message: chat.Message{Role: chat.User, Content: "other"}})
	slices.SortFunc(want, func(x, y store.Message) int { return strings.Compare(x.Key, y.Key) })
	got, err := s.RunMessages(ctx, "a", 10)
	must(t, "RunMessages", err)
	diff(t, "RunMessages of run 10", want, got)
	got, err = s.RunMessages(ctx, "a", 12)
	must(t, "RunMessages of a run with none", err)
	diff(t, "RunMessages of a run with none", []store.Message(nil), got)
	got, err = s.RunMessages(ctx, "nope", 1)
	must(t, "RunMessages of an unknown session", err)
	diff(t, "RunMessages of an unknown session", []store.Message(nil), got)
}

// testEnqueueRunInputVisibleWithRun checks that no reader ever sees a
// queued run before its input: enqueuers and a driver-like reader race,
// and every run NextRun returns must have its input in history.
func testEnqueueRunInputVisibleWithRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	const sessions, perSession = 4, 12
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			for j := range perSession {
				n := newRun(fmt.Sprintf("s%d", i), store.Run{ID: fmt.Sprintf("s%d-r%02d", i, j), CreatedAt: at(j)})
				n.Input = []chat.Message{{Role: chat.User, Content: fmt.Sprintf("message %d", j)}}
				if _, _, err := s.EnqueueRun(ctx, n); err != nil {
					t.Errorf("EnqueueRun: %v", err)
				}
			}
		})
	}
	// The readers finish each run they see, as a driver would, until every
	// run of their session is done.
	for i := range sessions {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", i)
			for done := 0; done < perSession; {
				if t.Failed() {
					return
				}
				r, err := s.NextRun(ctx, id)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("NextRun: %v", err)
					return
				}
				if _, err := s.GetMessage(ctx, id, store.InputKey(r.Seq, 0)); err != nil {
					t.Errorf("run %s (seq %d) is queued but its input is not in history: %v", r.ID, r.Seq, err)
					return
				}
				r.Status = store.RunDone
				if err := s.CommitRun(ctx, store.Commit{Run: r}); err != nil {
					t.Errorf("CommitRun: %v", err)
					return
				}
				done++
			}
		})
	}
	wg.Wait()
}

func testEnqueueRunOwner(t *testing.T, s store.Store) {
	ctx := t.Context()
	mine := store.Session{ID: "s", Agent: "main", Owner: "key:a"}
	first, _, err := s.EnqueueRun(ctx, store.NewRun{Session: mine, Run: store.Run{ID: "r1"}, Input: []chat.Message{{Role: chat.User, Content: "mine"}}})
	must(t, "EnqueueRun by the owner", err)
	before, err := s.Messages(ctx, "s")
	must(t, "Messages", err)

	theirs := mine
	theirs.Owner = "key:b"
	for _, sess := range []store.Session{theirs, {ID: "s", Agent: "main"}} {
		_, _, err = s.EnqueueRun(ctx, store.NewRun{Session: sess, Run: store.Run{ID: "r-" + sess.Owner}, Input: []chat.Message{{Role: chat.User, Content: "intruder"}}})
		wantErr(t, "EnqueueRun by owner "+sess.Owner, err, store.ErrForbidden)
		_, err = s.GetRun(ctx, "r-"+sess.Owner)
		wantErr(t, "GetRun of a refused run", err, store.ErrNotFound)
	}
	after, err := s.Messages(ctx, "s")
	must(t, "Messages after refused enqueues", err)
	diff(t, "history after refused enqueues", before, after)
	got, err := s.GetSession(ctx, "s")
	must(t, "GetSession", err)
	if got.Owner != "key:a" {
		t.Errorf("Owner = %q, want key:a", got.Owner)
	}
	// The refused enqueues took no seq.
	second, _, err := s.EnqueueRun(ctx, store.NewRun{Session: mine, Run: store.Run{ID: "r2"}})
	must(t, "EnqueueRun by the owner again", err)
	if second.Seq != first.Seq+1 {
		t.Errorf("seq after refused enqueues = %d, want %d", second.Seq, first.Seq+1)
	}
}

func testCommitRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	// A run queued with options keeps them through every commit, which
	// does not carry them.
	options := []byte(`{"tools":[{"name":"get_weather"}],"params":{"temperature":0.2}} é`)
	r, _, err := s.EnqueueRun(ctx, newRun("a", store.Run{ID: "r1", State: []byte(`{"step":"begin"}`), Options: options, CreatedAt: at(1)}))
	must(t, "EnqueueRun r1", err)
	if !slices.Equal(r.Options, options) {
		t.Errorf("EnqueueRun Options = %q, want %q", r.Options, options)
	}
	other := enqueue(t, s, "a", "r2")

	state := make([]byte, 0, 512)
	for i := range 256 {
		state = append(state, byte(i))
	}
	state = append(state, []byte(`{"step":"think","iteration":3} é 🙂`)...)
	upd := r
	upd.Status = store.RunRunning
	upd.State = state
	// Only Status and State are saved.
	upd.CreatedAt = at(1000)
	upd.Options = nil
	must(t, "CommitRun", s.CommitRun(ctx, store.Commit{Run: upd}))

	got, err := s.GetRun(ctx, "r1")
	must(t, "GetRun", err)
	want := r
	want.Status = store.RunRunning
	want.State = state
	diff(t, "GetRun after CommitRun", want, got, ignoreUpdated)
	if !slices.Equal(got.State, state) {
		t.Errorf("State bytes changed: got %x, want %x", got.State, state)
	}
	checkUTC(t, "GetRun after CommitRun", got.CreatedAt, got.UpdatedAt)
	if got.UpdatedAt.Before(r.UpdatedAt.Truncate(time.Millisecond)) {
		t.Errorf("UpdatedAt went back from %v to %v", r.UpdatedAt, got.UpdatedAt)
	}

	done := got
	done.Status = store.RunDone
	done.State = []byte(`{"step":"finish"}`)
	must(t, "CommitRun done", s.CommitRun(ctx, store.Commit{Run: done}))
	got, err = s.GetRun(ctx, "r1")
	must(t, "GetRun done", err)
	diff(t, "GetRun after done", done, got, ignoreUpdated)
	// A finished run is never written again (a step committed after a
	// user stopped the run, or a retried step): the commit is refused and
	// changes nothing.
	late := done
	late.Status = store.RunRunning
	late.State = []byte(`{"step":"act"}`)
	err = s.CommitRun(ctx, store.Commit{Run: late, Messages: []store.Message{
		{SessionID: "a", Key: "late", RunID: "r1", Message: chat.Message{Role: chat.Assistant, Content: "told after the end"}}}})
	wantErr(t, "CommitRun of a finished run", err, store.ErrRunFinished)
	wantErr(t, "CommitRun done again", s.CommitRun(ctx, store.Commit{Run: done}), store.ErrRunFinished)
	got, err = s.GetRun(ctx, "r1")
	must(t, "GetRun after the refused commits", err)
	diff(t, "GetRun after the refused commits", done, got, ignoreUpdated)
	_, err = s.GetMessage(ctx, "a", "late")
	wantErr(t, "GetMessage written by a commit of a finished run", err, store.ErrNotFound)

	untouched, err := s.GetRun(ctx, "r2")
	must(t, "GetRun r2", err)
	diff(t, "GetRun of the other run", other, untouched)

	missing := store.Run{ID: "nope", SessionID: "a", Seq: 9, Status: store.RunRunning}
	err = s.CommitRun(ctx, store.Commit{Run: missing, Messages: []store.Message{
		{SessionID: "a", Key: "z", RunID: "nope", Message: chat.Message{Role: chat.Assistant, Content: "ghost"}}}})
	wantErr(t, "CommitRun unknown", err, store.ErrNotFound)
	_, err = s.GetRun(ctx, "nope")
	wantErr(t, "GetRun after CommitRun unknown", err, store.ErrNotFound)
	_, err = s.GetMessage(ctx, "a", "z")
	wantErr(t, "GetMessage written by a refused commit", err, store.ErrNotFound)
}

func testCommitRunMessages(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	first := store.Message{SessionID: "a", Key: "k1", RunID: "r1", Message: chat.Message{Role: chat.Assistant, Content: "first"}, CreatedAt: at(3)}
	appendMsg(t, s, first)
	r.Status = store.RunRunning
	r.State = []byte(`{"step":"act"}`)
	second := store.Message{SessionID: "a", Key: "k2", RunID: "r1", Message: chat.Message{Role: chat.Assistant, Content: "second",
		ToolCalls: []chat.ToolCall{{ID: "c1", Name: "t", Arguments: `{"x":"[REDACTED]"}`}}}, CreatedAt: at(4)}
	again := first
	again.Content = "retried"
	must(t, "CommitRun", s.CommitRun(ctx, store.Commit{Run: r, Messages: []store.Message{again, second}}))
	msgs, err := s.Messages(ctx, "a")
	must(t, "Messages", err)
	var got []store.Message
	for _, m := range msgs {
		if !strings.HasPrefix(m.Key, store.RunPrefix(r.Seq)) {
			got = append(got, m)
		}
	}
	diff(t, "history after a commit with a key that exists", []store.Message{first, second}, got)
	run, err := s.GetRun(ctx, "r1")
	must(t, "GetRun", err)
	if string(run.State) != `{"step":"act"}` || run.Status != store.RunRunning {
		t.Errorf("run after commit = %s %s, want running {\"step\":\"act\"}", run.Status, run.State)
	}
}

func testCommitRunCalls(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	other := enqueue(t, s, "a", "r2")
	calls, err := s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls of a new run", err)
	diff(t, "PendingCalls of a new run", []chat.ToolCall(nil), calls)
	_, err = s.PendingCalls(ctx, "nope")
	wantErr(t, "PendingCalls of an unknown run", err, store.ErrNotFound)

	raw := []chat.ToolCall{
		{ID: "c1", Name: "write_file", Arguments: `{"path":"a.env","content":"OPENAI_API_KEY=sk-proj-0123456789abcdefABCDEF0123"}`},
		{ID: "c2", Name: "read_file", Arguments: `{"path":"b"}`},
	}
	r.Status = store.RunRunning
	must(t, "CommitRun with calls", s.CommitRun(ctx, store.Commit{Run: r, Calls: raw}))
	calls, err = s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls", err)
	diff(t, "PendingCalls", raw, calls)
	otherCalls, err := s.PendingCalls(ctx, other.ID)
	must(t, "PendingCalls of the other run", err)
	diff(t, "PendingCalls of the other run", []chat.ToolCall(nil), otherCalls)

	// A commit without calls keeps them; ClearCalls drops them.
	must(t, "CommitRun keeping calls", s.CommitRun(ctx, store.Commit{Run: r}))
	calls, err = s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls after a commit without calls", err)
	diff(t, "PendingCalls after a commit without calls", raw, calls)
	replaced := raw[1:]
	must(t, "CommitRun replacing calls", s.CommitRun(ctx, store.Commit{Run: r, Calls: replaced}))
	calls, err = s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls after replacing", err)
	diff(t, "PendingCalls after replacing", replaced, calls)
	must(t, "CommitRun clearing calls", s.CommitRun(ctx, store.Commit{Run: r, ClearCalls: true}))
	calls, err = s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls after clearing", err)
	diff(t, "PendingCalls after clearing", []chat.ToolCall(nil), calls)
}

func testStartCall(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	other := enqueue(t, s, "a", "r2")
	wantErr(t, "StartCall of an unknown run", s.StartCall(ctx, "nope", "c1"), store.ErrNotFound)
	if _, err := s.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("StartCall of an unknown run created it: GetRun = %v", err)
	}

	raw := []chat.ToolCall{{ID: "c1", Name: "exec", Arguments: `{"command":"date"}`}, {ID: "c2", Name: "exec", Arguments: `{"command":"id"}`}}
	r.Status = store.RunRunning
	must(t, "CommitRun with calls", s.CommitRun(ctx, store.Commit{Run: r, Calls: raw}))
	must(t, "StartCall c1", s.StartCall(ctx, "r1", "c1"))
	wantErr(t, "StartCall c1 again", s.StartCall(ctx, "r1", "c1"), store.ErrExists)
	must(t, "StartCall c2", s.StartCall(ctx, "r1", "c2"))
	must(t, "StartCall c1 of another run", s.StartCall(ctx, other.ID, "c1"))
	calls, err := s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls", err)
	diff(t, "PendingCalls after StartCall", raw, calls)

	// A commit that keeps the calls keeps the markers.
	must(t, "CommitRun keeping calls", s.CommitRun(ctx, store.Commit{Run: r}))
	wantErr(t, "StartCall c1 after a commit keeping the calls", s.StartCall(ctx, "r1", "c1"), store.ErrExists)

	// New pending calls (the model's next message) have not started,
	// even where an id repeats.
	next := []chat.ToolCall{{ID: "c1", Name: "exec", Arguments: `{"command":"uptime"}`}}
	must(t, "CommitRun replacing calls", s.CommitRun(ctx, store.Commit{Run: r, Calls: next}))
	must(t, "StartCall c1 of the new calls", s.StartCall(ctx, "r1", "c1"))
	wantErr(t, "StartCall c1 of the new calls again", s.StartCall(ctx, "r1", "c1"), store.ErrExists)
	must(t, "StartCall c2 of the new calls", s.StartCall(ctx, "r1", "c2"))

	// Clearing the calls clears the markers.
	must(t, "CommitRun clearing calls", s.CommitRun(ctx, store.Commit{Run: r, ClearCalls: true}))
	must(t, "StartCall c1 after clearing", s.StartCall(ctx, "r1", "c1"))
	calls, err = s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls after clearing and StartCall", err)
	diff(t, "PendingCalls after clearing and StartCall", []chat.ToolCall(nil), calls)
	must(t, "CommitRun with calls again", s.CommitRun(ctx, store.Commit{Run: r, Calls: raw}))
	must(t, "StartCall c1 of calls written after a marker", s.StartCall(ctx, "r1", "c1"))
	calls, err = s.PendingCalls(ctx, "r1")
	must(t, "PendingCalls of calls written after a marker", err)
	diff(t, "PendingCalls of calls written after a marker", raw, calls)

	// The other run's marker is its own.
	wantErr(t, "StartCall c1 of the other run again", s.StartCall(ctx, other.ID, "c1"), store.ErrExists)
	// No call of a run that ended with its calls cleared (a stop) starts.
	r.Status = store.RunFailed
	must(t, "CommitRun ending the run", s.CommitRun(ctx, store.Commit{Run: r, ClearCalls: true}))
	wantErr(t, "StartCall of a run ended", s.StartCall(ctx, "r1", "c9"), store.ErrRunFinished)
	must(t, "DeleteSession", s.DeleteSession(ctx, "a"))
	wantErr(t, "StartCall after DeleteSession", s.StartCall(ctx, "r1", "c1"), store.ErrNotFound)
}

// Of several drivers starting the same call at once (a duplicated step),
// exactly one may run it.
func testStartCallConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	r.Status = store.RunRunning
	must(t, "CommitRun with calls", s.CommitRun(ctx, store.Commit{Run: r, Calls: []chat.ToolCall{{ID: "c1", Name: "exec", Arguments: `{}`}}}))
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() { errs <- s.StartCall(ctx, "r1", "c1") })
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrExists):
			t.Errorf("StartCall: %v, want nil or ErrExists", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent StartCall of one call succeeded, want 1", won, workers)
	}
}

func testJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	got, err := s.Jobs(ctx, "record", 10)
	must(t, "Jobs of an empty queue", err)
	diff(t, "Jobs of an empty queue", []store.Job(nil), got)

	jobs := []store.Job{
		{Kind: "record", ID: "j2", Payload: []byte(`{"n":2}`), CreatedAt: at(2)},
		{Kind: "record", ID: "j1", Payload: []byte(`{"n":1}`), CreatedAt: at(1)},
		{Kind: "record", ID: "j3", Payload: []byte{0, 1, 2, 255}, CreatedAt: at(3)},
		{Kind: "other", ID: "j1", Payload: []byte(`x`), CreatedAt: at(0)},
	}
	r.Status = store.RunRunning
	must(t, "CommitRun with jobs", s.CommitRun(ctx, store.Commit{Run: r, Jobs: jobs}))
	got, err = s.Jobs(ctx, "record", 10)
	must(t, "Jobs", err)
	diff(t, "Jobs oldest first", []store.Job{jobs[1], jobs[0], jobs[2]}, got)
	got, err = s.Jobs(ctx, "record", 2)
	must(t, "Jobs limited", err)
	diff(t, "Jobs limited", []store.Job{jobs[1], jobs[0]}, got)

	// Queuing a job again replaces it.
	replaced := store.Job{Kind: "record", ID: "j1", Payload: []byte(`{"n":"one"}`), CreatedAt: at(4)}
	must(t, "CommitRun replacing a job", s.CommitRun(ctx, store.Commit{Run: r, Jobs: []store.Job{replaced}}))
	must(t, "DeleteJobs", s.DeleteJobs(ctx, "record", "j2", "j9"))
	must(t, "DeleteJobs of none", s.DeleteJobs(ctx, "record"))
	got, err = s.Jobs(ctx, "record", 10)
	must(t, "Jobs after replace and delete", err)
	diff(t, "Jobs after replace and delete", []store.Job{jobs[2], replaced}, got)
	got, err = s.Jobs(ctx, "other", 10)
	must(t, "Jobs of another kind", err)
	diff(t, "Jobs of another kind", []store.Job{jobs[3]}, got)
}

func testNextRun(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	newSession(t, s, "b")
	_, err := s.NextRun(ctx, "a")
	wantErr(t, "NextRun with no runs", err, store.ErrNotFound)

	r1 := enqueue(t, s, "a", "r1")
	r2 := enqueue(t, s, "a", "r2")
	r3 := enqueue(t, s, "a", "r3")
	b1 := enqueue(t, s, "b", "b1")

	next := func(want store.Run) {
		t.Helper()
		got, err := s.NextRun(ctx, "a")
		must(t, "NextRun", err)
		diff(t, "NextRun", want, got, ignoreUpdated)
	}
	next(r1)
	r1 = setStatus(t, s, r1, store.RunRunning)
	next(r1) // running is unfinished
	setStatus(t, s, r2, store.RunDone)
	next(r1) // a later run finishing does not skip an earlier one
	setStatus(t, s, r1, store.RunDone)
	next(r3)
	r3 = setStatus(t, s, r3, store.RunRunning)
	next(r3)
	setStatus(t, s, r3, store.RunFailed)
	_, err = s.NextRun(ctx, "a")
	wantErr(t, "NextRun when all finished", err, store.ErrNotFound)

	got, err := s.NextRun(ctx, "b")
	must(t, "NextRun b", err)
	diff(t, "NextRun b", b1, got, ignoreUpdated)

	// A run enqueued after the others finished is next.
	r4 := enqueue(t, s, "a", "r4")
	if r4.Seq != 4 {
		t.Errorf("r4 seq = %d, want 4", r4.Seq)
	}
	next(r4)
}

func testUnfinishedSessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	got, err := s.UnfinishedSessions(ctx)
	must(t, "UnfinishedSessions of empty store", err)
	diff(t, "UnfinishedSessions of empty store", []string(nil), got)

	for _, id := range []string{"queued", "running", "finished", "idle", "mixed"} {
		newSession(t, s, id)
	}
	enqueue(t, s, "queued", "q1")
	enqueue(t, s, "queued", "q2")
	setStatus(t, s, enqueue(t, s, "running", "run1"), store.RunRunning)
	setStatus(t, s, enqueue(t, s, "finished", "f1"), store.RunDone)
	setStatus(t, s, enqueue(t, s, "finished", "f2"), store.RunFailed)
	setStatus(t, s, enqueue(t, s, "mixed", "m1"), store.RunDone)
	m2 := enqueue(t, s, "mixed", "m2")

	sorted := cmpopts.SortSlices(func(a, b string) bool { return a < b })
	got, err = s.UnfinishedSessions(ctx)
	must(t, "UnfinishedSessions", err)
	diff(t, "UnfinishedSessions", []string{"queued", "running", "mixed"}, got, sorted)

	setStatus(t, s, m2, store.RunFailed)
	got, err = s.UnfinishedSessions(ctx)
	must(t, "UnfinishedSessions after finishing mixed", err)
	diff(t, "UnfinishedSessions after finishing mixed", []string{"queued", "running"}, got, sorted)
}

func testDeleteSession(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "gone")
	kept := newSession(t, s, "kept")
	for _, id := range []string{"gone", "kept"} {
		for i, k := range []string{"k1", "k2"} {
			appendMsg(t, s, store.Message{SessionID: id, Key: k, RunID: id + "-r1",
				Message: chat.Message{Role: chat.User, Content: id + k}, CreatedAt: at(i)})
		}
	}
	enqueue(t, s, "gone", "gone-r1")
	enqueue(t, s, "gone", "gone-r2")
	keptRun := enqueue(t, s, "kept", "kept-r1")
	keptMsgs, err := s.Messages(ctx, "kept")
	must(t, "Messages kept", err)
	must(t, "AllowTool gone", s.AllowTool(ctx, "gone", "shell"))
	goneAnswered := createApproval(t, s, approval("gone-a1", "gone", "gone-r1", at(2)))
	_, err = s.ResolveApproval(ctx, goneAnswered.ID, store.ApprovalApproved, "yes", at(3))
	must(t, "ResolveApproval gone-a1", err)
	createApproval(t, s, approval("gone-a2", "gone", "gone-r2", at(4)))
	keptAppr := createApproval(t, s, approval("kept-a1", "kept", "kept-r1", at(5)))

	must(t, "DeleteSession", s.DeleteSession(ctx, "gone"))

	_, err = s.GetSession(ctx, "gone")
	wantErr(t, "GetSession deleted", err, store.ErrNotFound)
	msgs, err := s.Messages(ctx, "gone")
	must(t, "Messages deleted", err)
	if len(msgs) != 0 {
		t.Errorf("Messages of deleted session = %v, want none", msgs)
	}
	_, err = s.GetMessage(ctx, "gone", "k1")
	wantErr(t, "GetMessage of deleted session", err, store.ErrNotFound)
	for _, id := range []string{"gone-r1", "gone-r2"} {
		_, err = s.GetRun(ctx, id)
		wantErr(t, "GetRun "+id+" of deleted session", err, store.ErrNotFound)
	}
	_, err = s.NextRun(ctx, "gone")
	wantErr(t, "NextRun of deleted session", err, store.ErrNotFound)
	unfinished, err := s.UnfinishedSessions(ctx)
	must(t, "UnfinishedSessions", err)
	diff(t, "UnfinishedSessions", []string{"kept"}, unfinished)
	for _, id := range []string{"gone-a1", "gone-a2"} {
		_, err = s.GetApproval(ctx, id)
		wantErr(t, "GetApproval "+id+" of deleted session", err, store.ErrNotFound)
	}
	noPending(t, s, "gone", "of deleted session")

	gotSess, err := s.GetSession(ctx, "kept")
	must(t, "GetSession kept", err)
	diff(t, "GetSession kept", kept, gotSess, cmpopts.IgnoreFields(store.Session{}, "UpdatedAt"))
	gotMsgs, err := s.Messages(ctx, "kept")
	must(t, "Messages kept", err)
	diff(t, "Messages kept", keptMsgs, gotMsgs)
	gotRun, err := s.GetRun(ctx, "kept-r1")
	must(t, "GetRun kept", err)
	diff(t, "GetRun kept", keptRun, gotRun)
	getApproval(t, s, "kept-a1", keptAppr)
	pending(t, s, "kept", keptAppr)

	// The id is free again.
	newSession(t, s, "gone")
	msgs, err = s.Messages(ctx, "gone")
	must(t, "Messages of recreated session", err)
	if len(msgs) != 0 {
		t.Errorf("Messages of recreated session = %v, want none", msgs)
	}
	gotSess, err = s.GetSession(ctx, "gone")
	must(t, "GetSession recreated", err)
	if len(gotSess.Allowlist) != 0 {
		t.Errorf("Allowlist of recreated session = %v, want none", gotSess.Allowlist)
	}
	noPending(t, s, "gone", "of recreated session")
	// So are the ids of its approvals.
	again := createApproval(t, s, approval("gone-a2", "gone", "gone-r3", at(6)))
	pending(t, s, "gone", again)
}

// key returns a test API key.
func key(id string, created time.Time, agents ...string) store.APIKey {
	return store.APIKey{
		ID:            id,
		Name:          "key " + id,
		Hash:          fmt.Sprintf("%x", sha256.Sum256([]byte(id))),
		Prefix:        "lc_" + id,
		Agents:        agents,
		Autonomy:      "supervised",
		RatePerMinute: 60,
		CreatedAt:     created,
	}
}

func testCreateKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	k1 := key("k1", at(0), "main", "helper")
	k1.Autonomy = "full"
	k1.RatePerMinute = 0
	k1.Admin = true
	k1.DailyTokens, k1.MonthlyTokens = 50_000, 1_000_000
	k1.DenyTools = []string{"exec", "web_fetch"}
	k2 := key("k2", at(1))
	must(t, "CreateKey k1", s.CreateKey(ctx, k1))
	must(t, "CreateKey k2", s.CreateKey(ctx, k2))

	for _, want := range []store.APIKey{k1, k2} {
		got, err := s.KeyByHash(ctx, want.Hash)
		must(t, "KeyByHash "+want.ID, err)
		diff(t, "KeyByHash "+want.ID, want, got)
		checkUTC(t, "KeyByHash "+want.ID, got.CreatedAt)
		if got.RevokedAt != nil {
			t.Errorf("KeyByHash %s: RevokedAt = %v, want nil", want.ID, got.RevokedAt)
		}
	}

	sameID := key("k1", at(5))
	sameID.Hash = strings.Repeat("f", 64)
	wantErr(t, "CreateKey duplicate id", s.CreateKey(ctx, sameID), store.ErrExists)
	sameHash := key("k3", at(6))
	sameHash.Hash = k1.Hash
	wantErr(t, "CreateKey duplicate hash", s.CreateKey(ctx, sameHash), store.ErrExists)

	_, err := s.KeyByHash(ctx, sameID.Hash)
	wantErr(t, "KeyByHash of refused key", err, store.ErrNotFound)
	got, err := s.KeyByHash(ctx, k1.Hash)
	must(t, "KeyByHash k1 after duplicates", err)
	diff(t, "KeyByHash k1 after duplicates", k1, got)
	list, err := s.ListKeys(ctx)
	must(t, "ListKeys", err)
	diff(t, "ListKeys", []store.APIKey{k1, k2}, list)

	_, err = s.KeyByHash(ctx, strings.Repeat("0", 64))
	wantErr(t, "KeyByHash unknown", err, store.ErrNotFound)
}

func testListKeysOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	list, err := s.ListKeys(ctx)
	must(t, "ListKeys of empty store", err)
	diff(t, "ListKeys of empty store", []store.APIKey(nil), list)

	keys := []store.APIKey{key("c", at(30), "x"), key("a", at(10)), key("d", at(40)), key("b", at(20), "y", "z")}
	for _, k := range keys {
		must(t, "CreateKey "+k.ID, s.CreateKey(ctx, k))
	}
	list, err = s.ListKeys(ctx)
	must(t, "ListKeys", err)
	diff(t, "ListKeys", []store.APIKey{keys[1], keys[3], keys[0], keys[2]}, list)
}

func testRevokeKey(t *testing.T, s store.Store) {
	ctx := t.Context()
	k1, k2 := key("k1", at(0), "main"), key("k2", at(1))
	must(t, "CreateKey k1", s.CreateKey(ctx, k1))
	must(t, "CreateKey k2", s.CreateKey(ctx, k2))

	revoked := at(3600)
	must(t, "RevokeKey", s.RevokeKey(ctx, "k1", revoked))
	got, err := s.KeyByHash(ctx, k1.Hash)
	must(t, "KeyByHash revoked", err)
	want := k1
	want.RevokedAt = &revoked
	diff(t, "KeyByHash revoked", want, got)
	if got.RevokedAt != nil {
		checkUTC(t, "RevokedAt", *got.RevokedAt)
	}

	list, err := s.ListKeys(ctx)
	must(t, "ListKeys", err)
	diff(t, "ListKeys", []store.APIKey{want, k2}, list)

	wantErr(t, "RevokeKey unknown", s.RevokeKey(ctx, "nope", revoked), store.ErrNotFound)
}

// Leases is what a store that leases runs to the invocations stepping
// them implements besides store.Store (dynamo.Store, for sfn.Inline):
// ClaimRun returns the claim's lease version, zero when the run is
// leased to another holder, and whether it is the run's first claim.
type Leases interface {
	ClaimRun(ctx context.Context, runID, holder string, now, until time.Time) (lease int64, first bool, err error)
}

// testCommitRunLease: a commit fenced by a lease applies only while that
// lease holds the run; otherwise it is ErrLeaseLost and writes nothing. A
// store without leases holds every run at version zero, so it refuses any
// lease; one with leases (Leases) refuses the lease a take-over replaced.
func testCommitRunLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	step := func(state, content string, lease int64) store.Commit {
		c := store.Commit{Run: r, Lease: lease,
			Messages: []store.Message{{SessionID: "a", Key: "k-" + state, RunID: "r1", Message: chat.Message{Role: chat.Assistant, Content: content}, CreatedAt: at(5)}},
			Calls:    []chat.ToolCall{{ID: "c-" + state, Name: "t", Arguments: `{}`}}}
		c.Run.Status, c.Run.State = store.RunRunning, []byte(`{"step":"`+state+`"}`)
		return c
	}
	// unchanged checks that the refused commit of state wrote nothing:
	// the run is at want, and the pending calls and history lack state's.
	unchanged := func(name, state string, want store.Run) {
		t.Helper()
		got, err := s.GetRun(ctx, "r1")
		must(t, name+": GetRun", err)
		diff(t, name+": run after a refused commit", want, got, ignoreUpdated)
		_, err = s.GetMessage(ctx, "a", "k-"+state)
		wantErr(t, name+": message of a refused commit", err, store.ErrNotFound)
		calls, err := s.PendingCalls(ctx, "r1")
		must(t, name+": PendingCalls", err)
		for _, c := range calls {
			if c.ID == "c-"+state {
				t.Errorf("%s: pending calls %+v hold the refused commit's", name, calls)
			}
		}
		jobs, err := s.Jobs(ctx, "remember", 10)
		must(t, name+": Jobs", err)
		diff(t, name+": jobs queued by a refused commit", []store.Job(nil), jobs)
	}

	lessee, leases := s.(Leases)
	if !leases {
		wantErr(t, "CommitRun with a lease no store granted", s.CommitRun(ctx, step("think", "stale", 1)), store.ErrLeaseLost)
		unchanged("unleased", "think", r)
		wantErr(t, "CommitRun of an unknown run with a lease",
			s.CommitRun(ctx, store.Commit{Run: store.Run{ID: "nope", SessionID: "a", Status: store.RunRunning}, Lease: 1}), store.ErrNotFound)
		return
	}

	t0, lease := time.Now().UTC(), 20*time.Second
	a, first, err := lessee.ClaimRun(ctx, "r1", "a", t0, t0.Add(lease))
	must(t, "ClaimRun a", err)
	if a == 0 || !first {
		t.Fatalf("first ClaimRun = %d, first %v; want a lease, first", a, first)
	}
	wantErr(t, "CommitRun with a lease never granted", s.CommitRun(ctx, step("think", "stale", a+1)), store.ErrLeaseLost)
	unchanged("never granted", "think", r)
	must(t, "CommitRun by the holder", s.CommitRun(ctx, step("act", "a's step", a)))
	held, err := s.GetRun(ctx, "r1")
	must(t, "GetRun", err)

	// a's lease lapses; b takes the run over.
	later := t0.Add(lease + time.Minute)
	b, first, err := lessee.ClaimRun(ctx, "r1", "b", later, later.Add(lease))
	must(t, "ClaimRun b", err)
	if b == 0 || b == a || first {
		t.Fatalf("ClaimRun after the lapse = %d (a's was %d), first %v; want another lease, not first", b, a, first)
	}
	late := step("finish", "a's late step", a)
	late.Run.Status = store.RunDone
	late.Jobs = []store.Job{{Kind: "remember", ID: "r1", Payload: []byte("x"), CreatedAt: at(6)}}
	wantErr(t, "CommitRun by the holder who lost the lease", s.CommitRun(ctx, late), store.ErrLeaseLost)
	unchanged("taken over", "finish", held)
	must(t, "CommitRun by the new holder", s.CommitRun(ctx, step("finish", "b's step", b)))
	// A commit carrying no lease (the state machine's) is not fenced.
	must(t, "CommitRun without a lease", s.CommitRun(ctx, step("done", "unfenced", 0)))
	wantErr(t, "CommitRun of an unknown run with a lease",
		s.CommitRun(ctx, store.Commit{Run: store.Run{ID: "nope", SessionID: "a", Status: store.RunRunning}, Lease: a}), store.ErrNotFound)
}

// RunCommitOutbox holds a store to Commit.Outbox, the transactional
// outbox of a run's reply on a channel: its messages land with the
// commit, each in its channel's outbox, and not without it. A refused
// commit (a lease that does not hold the run, an unknown run, a message
// without a channel) stores none; an id in the outbox already keeps its
// first message while the rest of the commit applies. newStore returns
// the store and its channels' stores by name, nil for a store without
// channels' outboxes, which refuses a commit that has one, writing
// nothing.
func RunCommitOutbox(t *testing.T, newStore func(t *testing.T) (store.Store, func(name string) store.Channel)) {
	s, channels := newStore(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx := t.Context()
	newSession(t, s, "a")
	r := enqueue(t, s, "a", "r1")
	now := time.Now().UTC()
	part := func(i int, text string) store.OutboxMessage {
		return store.OutboxMessage{ID: fmt.Sprintf("run-r1#%d", i), Channel: "tg", To: "7", Text: text, Status: store.OutboxPending, NextAt: now, CreatedAt: now}
	}
	done := func(lease int64, parts ...store.OutboxMessage) store.Commit {
		c := store.Commit{Run: r, Lease: lease, Outbox: parts,
			Messages: []store.Message{{SessionID: "a", Key: "k-answer", RunID: "r1", Message: chat.Message{Role: chat.Assistant, Content: "hello"}, CreatedAt: at(5)}}}
		c.Run.Status, c.Run.State = store.RunDone, []byte(`{"step":"done"}`)
		return c
	}
	if channels == nil {
		if err := s.CommitRun(ctx, done(0, part(0, "hello"))); err == nil {
			t.Fatal("a store without channels' outboxes took a commit with outbox messages")
		}
		got, err := s.GetRun(ctx, "r1")
		must(t, "GetRun", err)
		diff(t, "run after a refused commit", r, got, ignoreUpdated)
		return
	}
	tg := channels("tg")
	outbox := func(what string, want ...store.OutboxMessage) {
		t.Helper()
		got, err := tg.UnsentOutbox(ctx, 100)
		must(t, what+": UnsentOutbox", err)
		diff(t, what+": outbox", want, got)
	}
	lease := int64(1) // no store granted it
	if lessee, ok := s.(Leases); ok {
		t0 := time.Now().UTC()
		a, _, err := lessee.ClaimRun(ctx, "r1", "a", t0, t0.Add(20*time.Second))
		must(t, "ClaimRun", err)
		lease = a + 1
	}
	wantErr(t, "fenced CommitRun with outbox messages", s.CommitRun(ctx, done(lease, part(0, "fenced"))), store.ErrLeaseLost)
	outbox("after a fenced commit")
	unknown := done(0, part(0, "unknown"))
	unknown.Run.ID, unknown.Messages = "nope", nil
	wantErr(t, "CommitRun of an unknown run with outbox messages", s.CommitRun(ctx, unknown), store.ErrNotFound)
	outbox("after a commit of an unknown run")

	first := part(0, "told before")
	must(t, "AddOutbox", tg.AddOutbox(ctx, []store.OutboxMessage{first}))
	nameless := part(1, "no channel")
	nameless.Channel = ""
	if err := s.CommitRun(ctx, done(0, nameless)); err == nil {
		t.Error("CommitRun of an outbox message without a channel: no error")
	}
	outbox("after a commit of a message without a channel", first)
	slack := store.OutboxMessage{ID: "run-r1#2", Channel: "slack", To: "C1/1.2", Text: "elsewhere", Status: store.OutboxPending, NextAt: now, CreatedAt: now,
		Buttons: []store.Button{{Label: "Yes", Value: "ap:1:yes"}}}
	must(t, "CommitRun with outbox messages", s.CommitRun(ctx, done(0, part(0, "hello"), part(1, "again"), slack)))
	outbox("after the commit", first, part(1, "again"))
	elsewhere, err := channels("slack").UnsentOutbox(ctx, 10)
	must(t, "slack's UnsentOutbox", err)
	diff(t, "slack's outbox after the commit", []store.OutboxMessage{slack}, elsewhere)
	got, err := s.GetRun(ctx, "r1")
	must(t, "GetRun", err)
	if got.Status != store.RunDone {
		t.Errorf("run %s after the commit, want done", got.Status)
	}
	if _, err := s.GetMessage(ctx, "a", "k-answer"); err != nil {
		t.Errorf("the commit's message: %v", err)
	}

	// A long reply: 64 messages (what a channel sends at most)
	// land with one commit.
	long := done(0)
	long.Run = enqueue(t, s, "a", "r2")
	long.Run.Status, long.Run.State = store.RunDone, []byte(`{"step":"done"}`)
	long.Messages[0].Key, long.Messages[0].RunID = "k-long", "r2"
	want, _ := tg.UnsentOutbox(ctx, 100)
	for i := range 64 {
		m := store.OutboxMessage{ID: fmt.Sprintf("run-r2#%d", i), Channel: "tg", To: "8", Text: strings.Repeat("x", 4000), Status: store.OutboxPending, NextAt: now, CreatedAt: now}
		long.Outbox = append(long.Outbox, m)
		want = append(want, m)
	}
	must(t, "CommitRun with 64 outbox messages", s.CommitRun(ctx, long))
	outbox("after the long reply's commit", want...)
}
