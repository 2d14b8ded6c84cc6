package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// response returns a test response of the run runID in the session
// sessionID, with every field set.
func response(id, sessionID, runID string, seq int64, n int) store.Response {
	return store.Response{
		ID:         id,
		Owner:      "key:k1",
		Agent:      "main",
		SessionID:  sessionID,
		RunID:      runID,
		Seq:        seq,
		PreviousID: "resp_prev_" + id,
		// Whitespace, unsorted keys, escapes and raw UTF-8: a store
		// keeps the bytes, it does not re-encode them.
		Request: []byte("{ \"model\": \"main\",\n\t\"instructions\": \"Réponds — 你好 🙂 \\\"q\\\" \\\\ \\u0000\\u001f\",\n" +
			"\"metadata\": {\"z\": \"\x7f\", \"a\": null}, \"temperature\": 0.2 }"),
		CreatedAt: at(n),
	}
}

// createResponse creates a response and fails t on error.
func createResponse(t *testing.T, s store.Store, r store.Response) {
	t.Helper()
	must(t, "CreateResponse "+r.ID, s.CreateResponse(t.Context(), r))
}

// getResponse fails t unless the stored response id equals want, in UTC.
func getResponse(t *testing.T, s store.Store, id string, want store.Response) {
	t.Helper()
	got, err := s.GetResponse(t.Context(), id)
	must(t, "GetResponse "+id, err)
	diff(t, "GetResponse "+id, want, got)
	checkUTC(t, "GetResponse "+id, got.CreatedAt)
}

// noResponse fails t unless there is no response id.
func noResponse(t *testing.T, s store.Store, id, when string) {
	t.Helper()
	got, err := s.GetResponse(t.Context(), id)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse %s %s = response of run %q, %v; want ErrNotFound", id, when, got.RunID, err)
	}
}

func testResponseRoundTrip(t *testing.T, s store.Store) {
	newSession(t, s, "s1")
	newSession(t, s, "s2")
	full := response("resp_full", "s1", "run-1", 7, 1)

	// Binary-looking JSON: escaped NULs, a long base64 run, and tool
	// definitions big enough to need more than one page of a table.
	big := response("resp_big", "s2", "run-2", 1, 2)
	big.Owner = "user:zoë"
	big.Request = []byte(`{"input_image":"data:image/png;base64,` + strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB", 2048) +
		`","tools":[` + strings.TrimSuffix(strings.Repeat(`{"type":"function","name":"f\u0000","strict":true},`, 500), ",") + `]}`)

	// The fields a response may leave out.
	bare := store.Response{ID: "resp_bare", Agent: "helper", SessionID: "s1", RunID: "run-3", Seq: 2, CreatedAt: at(3)}

	for _, r := range []store.Response{full, big, bare} {
		createResponse(t, s, r)
	}
	for _, r := range []store.Response{full, big, bare} {
		getResponse(t, s, r.ID, r)
	}
	// Reading twice changes nothing.
	getResponse(t, s, full.ID, full)
}

func testCreateResponseDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s1")
	newSession(t, s, "s2")
	first := response("resp_1", "s1", "run-1", 1, 1)
	createResponse(t, s, first)

	dup := response("resp_1", "s1", "run-9", 9, 50)
	dup.Owner, dup.Request = "key:intruder", []byte(`{"model":"other"}`)
	wantErr(t, "CreateResponse duplicate", s.CreateResponse(ctx, dup), store.ErrExists)
	// The id is taken in every session.
	dup.SessionID = "s2"
	wantErr(t, "CreateResponse duplicate in another session", s.CreateResponse(ctx, dup), store.ErrExists)
	getResponse(t, s, "resp_1", first)
}

func testCreateResponseUnknownSession(t *testing.T, s store.Store) {
	err := s.CreateResponse(t.Context(), response("resp_1", "nope", "run-1", 1, 1))
	wantErr(t, "CreateResponse in an unknown session", err, store.ErrNotFound)
	noResponse(t, s, "resp_1", "after a refused create")
	_, err = s.GetSession(t.Context(), "nope")
	wantErr(t, "GetSession after a refused CreateResponse", err, store.ErrNotFound)
}

func testDeleteResponse(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	noResponse(t, s, "nope", "of an empty store")
	wantErr(t, "DeleteResponse unknown", s.DeleteResponse(ctx, "nope"), store.ErrNotFound)

	gone := response("resp_gone", "s", "run-1", 1, 1)
	kept := response("resp_kept", "s", "run-2", 2, 2)
	createResponse(t, s, gone)
	createResponse(t, s, kept)
	must(t, "DeleteResponse", s.DeleteResponse(ctx, gone.ID))
	noResponse(t, s, gone.ID, "after DeleteResponse")
	wantErr(t, "DeleteResponse again", s.DeleteResponse(ctx, gone.ID), store.ErrNotFound)
	getResponse(t, s, kept.ID, kept)
	if _, err := s.GetSession(ctx, "s"); err != nil {
		t.Errorf("GetSession after DeleteResponse: %v", err)
	}

	// The id is free again.
	again := response("resp_gone", "s", "run-3", 3, 3)
	createResponse(t, s, again)
	getResponse(t, s, again.ID, again)
}

func testCreateResponseConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "s")
	const workers = 8
	type result struct {
		worker int
		err    error
	}
	candidate := func(w int) store.Response {
		return response("resp_race", "s", fmt.Sprintf("run-%d", w), int64(w+1), w)
	}
	results := make(chan result, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { results <- result{w, s.CreateResponse(ctx, candidate(w))} })
	}
	wg.Wait()
	close(results)

	var wins []int
	lost := 0
	for r := range results {
		switch {
		case r.err == nil:
			wins = append(wins, r.worker)
		case errors.Is(r.err, store.ErrExists):
			lost++
		default:
			t.Errorf("CreateResponse worker %d: %v", r.worker, r.err)
		}
	}
	if len(wins) != 1 {
		t.Fatalf("%d concurrent CreateResponse calls succeeded (workers %v), want exactly 1", len(wins), wins)
	}
	if lost != workers-1 {
		t.Errorf("%d CreateResponse calls got ErrExists, want %d", lost, workers-1)
	}
	getResponse(t, s, "resp_race", candidate(wins[0]))
}

func testDeleteSessionResponses(t *testing.T, s store.Store) {
	ctx := t.Context()
	newSession(t, s, "gone")
	newSession(t, s, "kept")
	createResponse(t, s, response("resp_g1", "gone", "gone-r1", 1, 1))
	createResponse(t, s, response("resp_g2", "gone", "gone-r2", 2, 2))
	kept := response("resp_k1", "kept", "kept-r1", 1, 3)
	createResponse(t, s, kept)
	// One already deleted on its own: the session's delete still works.
	must(t, "DeleteResponse resp_g2", s.DeleteResponse(ctx, "resp_g2"))

	must(t, "DeleteSession", s.DeleteSession(ctx, "gone"))
	for _, id := range []string{"resp_g1", "resp_g2"} {
		noResponse(t, s, id, "of a deleted session")
		wantErr(t, "DeleteResponse "+id+" of a deleted session", s.DeleteResponse(ctx, id), store.ErrNotFound)
	}
	getResponse(t, s, kept.ID, kept)

	// A session of the same id starts with none, and the ids are free.
	newSession(t, s, "gone")
	noResponse(t, s, "resp_g1", "of a recreated session")
	again := response("resp_g1", "gone", "gone-r3", 1, 4)
	createResponse(t, s, again)
	getResponse(t, s, again.ID, again)
}
