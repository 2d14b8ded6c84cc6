package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/console"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	filetools "github.com/lambdaclaw/lambdaclaw/shared/tools/files"
)

// The keys of the fixture: a and b are ordinary keys of two owners, a
// using only agent main; admin may manage keys.
var (
	keyA     = store.APIKey{ID: "key_a", Name: "alice", Prefix: "lc_aaaaaa", Agents: []string{"main"}, Autonomy: "supervised", RatePerMinute: 60}
	keyB     = store.APIKey{ID: "key_b", Name: "bob", Prefix: "lc_bbbbbb", Autonomy: "full", RatePerMinute: 60}
	keyAdmin = store.APIKey{ID: "key_admin", Name: "ops", Prefix: "lc_cccccc", Autonomy: "supervised", RatePerMinute: 60, Admin: true}
)

type fixture struct {
	c    *console.Console
	db   *sqlite.DB
	home string
}

// newFixture is a console over a real database, workspace directory,
// scheduler and memory, holding for each of a and b a session (a's with
// a pending approval), a job and a memory, a job of the operator
// (user:local, Config.Operator), sessions of Slack's and Telegram's
// identities and of a person linked across channels; agent main has an agent-wide
// memory, two bootstrap files and a note.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	home := t.TempDir()
	db, err := sqlite.Open(filepath.Join(home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, k := range []store.APIKey{keyA, keyB, keyAdmin} {
		k.Hash = apikey.Hash(k.ID)
		k.CreatedAt = time.Unix(1, 0)
		if err := db.CreateKey(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct{ id, owner, channel, text string }{{"sa", "key:key_a", "ws", "hello from a"}, {"sb", "key:key_b", "", "hello from b"}} {
		n := store.NewRun{Session: store.Session{ID: s.id, Agent: "main", Owner: s.owner, Channel: s.channel},
			Run:   store.Run{ID: "run-" + s.id, SessionID: s.id, State: []byte(`{}`)},
			Input: []chat.Message{{Role: chat.User, Content: s.text}}}
		if _, _, err := db.EnqueueRun(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// Sessions of channel identities, and of a person linked across
	// channels (user:ann), which no key owns.
	for i, s := range []struct{ id, owner, channel, text string }{
		{"ss", "slack:T1:U1", "slack", "hello from slack"}, {"st", "tg:42", "tg", "hello from telegram"}, {"su", "user:ann", "tg", "hello from ann"},
	} {
		n := store.NewRun{Session: store.Session{ID: s.id, Agent: "main", Owner: s.owner, Channel: s.channel, CreatedAt: time.Unix(int64(10+i), 0)},
			Run:   store.Run{ID: "run-" + s.id, SessionID: s.id, State: []byte(`{}`)},
			Input: []chat.Message{{Role: chat.User, Content: s.text}}}
		if _, _, err := db.EnqueueRun(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateApproval(ctx, store.Approval{ID: "ap1", SessionID: "sa", RunID: "run-sa", Calls: []string{"c1"},
		Tools: []string{"write_file"}, Prompt: "write notes.txt?", Status: store.ApprovalPending, CreatedAt: time.Unix(2, 0)}); err != nil {
		t.Fatal(err)
	}
	// b's run waits for its client's own tools, not for a person.
	if err := db.CreateApproval(ctx, store.Approval{ID: "ap2", SessionID: "sb", RunID: "run-sb", Kind: store.ApprovalClientTools, Calls: []string{"c2"},
		Tools: []string{"get_weather"}, Status: store.ApprovalPending, CreatedAt: time.Unix(3, 0)}); err != nil {
		t.Fatal(err)
	}
	jobs := db.Schedule(nil)
	for _, j := range []schedule.Job{
		{ID: "job-a", Owner: "key:key_a", Agent: "main", Name: "daily", Message: "check in", Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}},
		{ID: "job-b", Owner: "key:key_b", Agent: "main", Message: "check in", Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}},
		// The operator's, made with `lambdaclaw cron add`.
		{ID: "job-local", Owner: "user:local", Agent: "main", Message: "local", Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}},
	} {
		if _, err := jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	mem, err := memory.New(db.MemoryIndex(), memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []memory.Entry{
		{Agent: "main", Owner: "key:key_a", Key: "color", Text: "alice likes green tea", Category: memory.Core},
		{Agent: "main", Owner: "key:key_b", Key: "bobs", Text: "bob likes green apples", Category: memory.Core},
		{Agent: "main", Key: "team", Text: "the team drinks green tea on fridays", Category: memory.Core, Source: "MEMORY.md"},
	} {
		if err := mem.Store(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	files := osroot.New(home)
	for name, text := range map[string]string{"agents/main/AGENTS.md": "# Agents", "agents/main/SOUL.md": "calm", "agents/main/notes/plan.md": "plan", "agents/secret/AGENTS.md": "hidden"} {
		if _, err := files.WriteFile(ctx, name, []byte(text), filestore.Any); err != nil {
			t.Fatal(err)
		}
	}
	quota, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: 64 << 10, WorkspaceQuotaBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	write := filetools.WriteFile(quota)
	c, err := console.New(console.Config{
		Sessions: db, Keys: db, Jobs: jobs, Operator: "user:local", Memory: mem, DefaultRate: 120, Metrics: true,
		Channels: []string{"tg", "slack", "discord"},
		Agents:   func() []string { return []string{"main", "secret"} },
		Workspace: func(agent string) (filestore.FS, bool) {
			ws, err := files.Sub("agents/" + agent)
			return ws, err == nil
		},
		Tool: func(agent, name string) (tool.Tool, bool) {
			return write, name == write.Definition().Name
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{c: c, db: db, home: home}
}

// do calls the API as key k and returns the status and the body decoded,
// without its times (which the fixture does not fix).
func (f *fixture) do(t *testing.T, k store.APIKey, method, path, body string) (int, any) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	w := httptest.NewRecorder()
	f.c.ServeAPI(w, r, k)
	if w.Code == http.StatusNoContent {
		return w.Code, nil
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	var v any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%s %s: %v: %s", method, path, err, w.Body)
	}
	return w.Code, dropTimes(v)
}

// times are the fields dropTimes removes.
var times = map[string]bool{"created_at": true, "updated_at": true, "modified": true, "next": true, "anchor": true, "last_activity": true}

func dropTimes(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k := range v {
			if times[k] {
				delete(v, k)
			} else {
				v[k] = dropTimes(v[k])
			}
		}
	case []any:
		for i := range v {
			v[i] = dropTimes(v[i])
		}
	}
	return v
}

// js decodes the JSON of a want.
func js(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("want %s: %v", s, err)
	}
	return v
}

// apiErr is the error JSON of a code.
func apiErr(code string) string {
	return `{"error":{"code":"` + code + `"}}`
}

// onlyCode keeps the code of an error answer.
func onlyCode(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		return v
	}
	if msg, _ := e["message"].(string); msg == "" {
		return "error without a message"
	}
	return map[string]any{"error": map[string]any{"code": e["code"]}}
}

// createdJob stands, in TestAPI's wants, for the id of the job made
// there, which the engine chooses.
const createdJob = "$CREATED"

func TestAPI(t *testing.T) {
	f := newFixture(t)
	created := ""
	sessionA := `{"id":"sa","agent":"main","owner":"key:key_a","channel":"ws","title":"hello from a","preview":"hello from a","pending_approval":{"id":"ap1","session_id":"sa","agent":"main","tools":["write_file"],"prompt":"write notes.txt?"}}`
	sessionS := `{"id":"ss","agent":"main","owner":"slack:T1:U1","channel":"slack","title":"hello from slack","preview":"hello from slack","read_only":true}`
	sessionT := `{"id":"st","agent":"main","owner":"tg:42","channel":"tg","title":"hello from telegram","preview":"hello from telegram","read_only":true}`
	tests := []struct {
		name         string
		key          store.APIKey
		method, path string
		body         string
		status       int
		want         string
	}{
		{"me", keyA, "GET", "/v1/lambdaclaw/me", "", 200,
			`{"id":"key_a","name":"alice","prefix":"lc_aaaaaa","autonomy":"supervised","admin":false,"owner":"key:key_a","agents":["main"],"features":{"jobs":true,"memory":true,"metrics":false}}`},
		{"me admin", keyAdmin, "GET", "/v1/lambdaclaw/me", "", 200,
			`{"id":"key_admin","name":"ops","prefix":"lc_cccccc","autonomy":"supervised","admin":true,"owner":"key:key_admin","agents":["main","secret"],"features":{"jobs":true,"memory":true,"metrics":true}}`},
		{"sessions", keyA, "GET", "/v1/lambdaclaw/sessions", "", 200, `{"sessions":[` + sessionA + `]}`},
		{"sessions of b", keyB, "GET", "/v1/lambdaclaw/sessions", "", 200, `{"sessions":[{"id":"sb","agent":"main","owner":"key:key_b","title":"hello from b","preview":"hello from b"}]}`},
		{"sessions search", keyA, "GET", "/v1/lambdaclaw/sessions?q=FROM+hello", "", 200,
			`{"sessions":[` + strings.Replace(sessionA, `"pending_approval"`, `"match":"hello from a","pending_approval"`, 1) + `]}`},
		{"sessions search no match", keyA, "GET", "/v1/lambdaclaw/sessions?q=from+b", "", 200, `{"sessions":[]}`},
		{"sessions search of another key's words", keyB, "GET", "/v1/lambdaclaw/sessions?q=from+a", "", 200, `{"sessions":[]}`},
		{"sessions search too long", keyA, "GET", "/v1/lambdaclaw/sessions?q=" + strings.Repeat("a", console.MaxQuery+1), "", 400, apiErr("invalid_request")},
		{"sessions of nobody", keyAdmin, "GET", "/v1/lambdaclaw/sessions", "", 200, `{"sessions":[]}`},
		{"session", keyA, "GET", "/v1/lambdaclaw/sessions/sa", "", 200,
			`{"session":` + sessionA + `,"messages":[{"session_id":"sa","key":"r000000000001#a00000","run_id":"run-sa","role":"user","content":"hello from a"}],"truncated":false}`},
		{"session of another key", keyB, "GET", "/v1/lambdaclaw/sessions/sa", "", 404, apiErr("not_found")},
		// The channels' identities' sessions: an admin key lists and
		// reads them, read-only, each with its owner; no other key does,
		// and a linked person's session is nobody's to see.
		{"channel sessions", keyAdmin, "GET", "/v1/lambdaclaw/channel-sessions", "", 200, `{"sessions":[` + sessionT + `,` + sessionS + `]}`},
		{"channel sessions search", keyAdmin, "GET", "/v1/lambdaclaw/channel-sessions?q=slack", "", 200,
			`{"sessions":[` + strings.Replace(sessionS, `"read_only"`, `"match":"hello from slack","read_only"`, 1) + `]}`},
		{"channel sessions search too long", keyAdmin, "GET", "/v1/lambdaclaw/channel-sessions?q=" + strings.Repeat("a", console.MaxQuery+1), "", 400, apiErr("invalid_request")},
		{"channel sessions not admin", keyA, "GET", "/v1/lambdaclaw/channel-sessions", "", 403, apiErr("admin_required")},
		{"channel session", keyAdmin, "GET", "/v1/lambdaclaw/sessions/ss", "", 200,
			`{"session":` + sessionS + `,"messages":[{"session_id":"ss","key":"r000000000001#a00000","run_id":"run-ss","role":"user","content":"hello from slack"}],"truncated":false}`},
		{"channel session not admin", keyA, "GET", "/v1/lambdaclaw/sessions/ss", "", 404, apiErr("not_found")},
		{"linked person's session", keyAdmin, "GET", "/v1/lambdaclaw/sessions/su", "", 404, apiErr("not_found")},
		{"channel sessions are not the admin's own", keyAdmin, "GET", "/v1/lambdaclaw/approvals", "", 200, `{"approvals":[]}`},
		{"session unknown", keyA, "GET", "/v1/lambdaclaw/sessions/nope", "", 404, apiErr("not_found")},
		{"approvals", keyA, "GET", "/v1/lambdaclaw/approvals", "", 200,
			`{"approvals":[{"id":"ap1","session_id":"sa","agent":"main","tools":["write_file"],"prompt":"write notes.txt?"}]}`},
		{"approvals of another key", keyB, "GET", "/v1/lambdaclaw/approvals", "", 200, `{"approvals":[]}`},
		{"jobs", keyA, "GET", "/v1/lambdaclaw/jobs", "", 200,
			`{"jobs":[{"id":"job-a","owner":"key:key_a","agent":"main","name":"daily","schedule":{"every":"1h0m0s"},"message":"check in","deliver":{}}]}`},
		{"jobs limit 0", keyA, "GET", "/v1/lambdaclaw/jobs?limit=0", "", 400, apiErr("invalid_request")},
		{"jobs limit over the most", keyA, "GET", "/v1/lambdaclaw/jobs?limit=201", "", 400, apiErr("invalid_request")},
		{"jobs limit not a number", keyA, "GET", "/v1/lambdaclaw/jobs?limit=ten", "", 400, apiErr("invalid_request")},
		{"jobs bad cursor", keyA, "GET", "/v1/lambdaclaw/jobs?cursor=nope", "", 400, apiErr("invalid_request")},
		{"job runs", keyA, "GET", "/v1/lambdaclaw/jobs/job-a/runs", "", 200, `{"runs":[]}`},
		{"job runs of another key", keyB, "GET", "/v1/lambdaclaw/jobs/job-a/runs", "", 404, apiErr("not_found")},
		{"pause another key's job", keyB, "POST", "/v1/lambdaclaw/jobs/job-a", `{"paused":true}`, 404, apiErr("not_found")},
		{"pause without a value", keyA, "POST", "/v1/lambdaclaw/jobs/job-a", `{}`, 400, apiErr("invalid_request")},
		{"pause with an unknown field", keyA, "POST", "/v1/lambdaclaw/jobs/job-a", `{"paused":true,"x":1}`, 400, apiErr("invalid_request")},
		{"pause with no body", keyA, "POST", "/v1/lambdaclaw/jobs/job-a", ``, 400, apiErr("invalid_request")},
		{"create job", keyB, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","name":"mornings","message":"good morning","cron":"0 9 * * 1-5","tz":"Europe/Berlin"}`, 201,
			`{"id":"` + createdJob + `","owner":"key:key_b","agent":"main","name":"mornings","schedule":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin"},"message":"good morning","deliver":{}}`},
		{"create job bad cron", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","message":"x","cron":"not a cron"}`, 400, apiErr("invalid_request")},
		{"create job two schedules", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","message":"x","cron":"0 9 * * *","every":"1h"}`, 400, apiErr("invalid_request")},
		{"create job no schedule", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","message":"x"}`, 400, apiErr("invalid_request")},
		{"create job bad interval", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","message":"x","every":"often"}`, 400, apiErr("invalid_request")},
		{"create job no message", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","every":"1h"}`, 400, apiErr("invalid_request")},
		{"create job past", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","message":"x","at":"2001-01-01T00:00:00Z"}`, 400, apiErr("invalid_request")},
		{"create job agent the key may not use", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"secret","message":"x","every":"1h"}`, 400, apiErr("invalid_request")},
		{"create job for another owner", keyA, "POST", "/v1/lambdaclaw/jobs", `{"agent":"main","message":"x","every":"1h","owner":"key:key_b"}`, 400, apiErr("invalid_request")},
		{"pause", keyA, "POST", "/v1/lambdaclaw/jobs/job-a", `{"paused":true}`, 200,
			`{"id":"job-a","owner":"key:key_a","agent":"main","name":"daily","schedule":{"every":"1h0m0s"},"message":"check in","deliver":{},"paused":true}`},
		{"delete another key's job", keyB, "DELETE", "/v1/lambdaclaw/jobs/job-a", "", 404, apiErr("not_found")},
		{"jobs of b", keyB, "GET", "/v1/lambdaclaw/jobs", "", 200,
			`{"jobs":[{"id":"job-b","owner":"key:key_b","agent":"main","schedule":{"every":"1h0m0s"},"message":"check in","deliver":{}},` +
				`{"id":"` + createdJob + `","owner":"key:key_b","agent":"main","name":"mornings","schedule":{"cron":"0 9 * * 1-5","tz":"Europe/Berlin"},"message":"good morning","deliver":{}}]}`},
		// The operator's job (cron add's user:local) is an admin key's
		// too, marked with its owner; no other key sees or touches it, and
		// the admin still sees no other key's job.
		{"jobs of admin", keyAdmin, "GET", "/v1/lambdaclaw/jobs", "", 200,
			`{"jobs":[{"id":"job-local","owner":"user:local","agent":"main","schedule":{"every":"1h0m0s"},"message":"local","deliver":{}}]}`},
		{"operator's job runs, not admin", keyA, "GET", "/v1/lambdaclaw/jobs/job-local/runs", "", 404, apiErr("not_found")},
		{"pause the operator's job, not admin", keyB, "POST", "/v1/lambdaclaw/jobs/job-local", `{"paused":true}`, 404, apiErr("not_found")},
		{"delete the operator's job, not admin", keyB, "DELETE", "/v1/lambdaclaw/jobs/job-local", "", 404, apiErr("not_found")},
		{"admin: another key's job runs", keyAdmin, "GET", "/v1/lambdaclaw/jobs/job-a/runs", "", 404, apiErr("not_found")},
		{"admin: pause another key's job", keyAdmin, "POST", "/v1/lambdaclaw/jobs/job-b", `{"paused":true}`, 404, apiErr("not_found")},
		{"admin: the operator's job runs", keyAdmin, "GET", "/v1/lambdaclaw/jobs/job-local/runs", "", 200, `{"runs":[]}`},
		{"admin: pause the operator's job", keyAdmin, "POST", "/v1/lambdaclaw/jobs/job-local", `{"paused":true}`, 200,
			`{"id":"job-local","owner":"user:local","agent":"main","schedule":{"every":"1h0m0s"},"message":"local","deliver":{},"paused":true}`},
		{"admin: delete the operator's job", keyAdmin, "DELETE", "/v1/lambdaclaw/jobs/job-local", "", 204, ""},
		{"admin: jobs after the delete", keyAdmin, "GET", "/v1/lambdaclaw/jobs", "", 200, `{"jobs":[]}`},
		{"delete", keyA, "DELETE", "/v1/lambdaclaw/jobs/job-a", "", 204, ""},
		{"jobs after the delete", keyA, "GET", "/v1/lambdaclaw/jobs", "", 200, `{"jobs":[]}`},
		{"delete again", keyA, "DELETE", "/v1/lambdaclaw/jobs/job-a", "", 404, apiErr("not_found")},
		{"agents", keyA, "GET", "/v1/lambdaclaw/agents", "", 200, `{"agents":["main"]}`},
		{"agent", keyA, "GET", "/v1/lambdaclaw/agents/main", "", 200,
			`{"name":"main","files":[{"path":"notes/plan.md","size":4}],"truncated":false,"bootstrap":["AGENTS.md","SOUL.md"],"skills":[],"editable":true}`},
		{"agent the key may not use", keyA, "GET", "/v1/lambdaclaw/agents/secret", "", 404, apiErr("not_found")},
		{"agent unknown", keyB, "GET", "/v1/lambdaclaw/agents/nope", "", 404, apiErr("not_found")},
		{"file", keyA, "GET", "/v1/lambdaclaw/agents/main/files/notes/plan.md", "", 200,
			`{"path":"notes/plan.md","size":4,"text":"plan","truncated":false}`},
		{"file missing", keyA, "GET", "/v1/lambdaclaw/agents/main/files/nope.md", "", 404, apiErr("not_found")},
		{"file outside", keyA, "GET", "/v1/lambdaclaw/agents/main/files/..%2Fsecret%2FAGENTS.md", "", 400, apiErr("invalid_request")},
		{"file of an agent the key may not use", keyA, "GET", "/v1/lambdaclaw/agents/secret/files/AGENTS.md", "", 404, apiErr("not_found")},
		{"memory search", keyA, "GET", "/v1/lambdaclaw/agents/main/memory?q=green", "", 200, ""},
		{"memory search without a query", keyA, "GET", "/v1/lambdaclaw/agents/main/memory?q=+", "", 400, apiErr("invalid_request")},
		{"memory search bad limit", keyA, "GET", "/v1/lambdaclaw/agents/main/memory?q=tea&limit=0", "", 400, apiErr("invalid_request")},
		{"memory search too long", keyA, "GET", "/v1/lambdaclaw/agents/main/memory?q=" + strings.Repeat("a", console.MaxQuery+1), "", 400, apiErr("invalid_request")},
		{"memory", keyA, "GET", "/v1/lambdaclaw/agents/main/memory/color", "", 200,
			`{"agent":"main","owner":"key:key_a","key":"color","text":"alice likes green tea","category":"core"}`},
		{"memory of another key", keyA, "GET", "/v1/lambdaclaw/agents/main/memory/bobs", "", 404, apiErr("not_found")},
		{"forget another key's memory", keyA, "DELETE", "/v1/lambdaclaw/agents/main/memory/bobs", "", 404, apiErr("not_found")},
		{"forget an agent-wide memory", keyA, "DELETE", "/v1/lambdaclaw/agents/main/memory/team", "", 403, apiErr("agent_wide")},
		{"forget", keyA, "DELETE", "/v1/lambdaclaw/agents/main/memory/color", "", 204, ""},
		{"forgotten", keyA, "GET", "/v1/lambdaclaw/agents/main/memory/color", "", 404, apiErr("not_found")},
		{"keys not admin", keyA, "GET", "/v1/lambdaclaw/keys", "", 403, apiErr("admin_required")},
		{"create key not admin", keyB, "POST", "/v1/lambdaclaw/keys", `{"name":"x"}`, 403, apiErr("admin_required")},
		{"revoke key not admin", keyB, "DELETE", "/v1/lambdaclaw/keys/key_a", "", 403, apiErr("admin_required")},
		{"keys", keyAdmin, "GET", "/v1/lambdaclaw/keys", "", 200, `{"keys":[
			{"id":"key_a","name":"alice","prefix":"lc_aaaaaa","agents":["main"],"autonomy":"supervised","rate_per_minute":60,"admin":false},
			{"id":"key_admin","name":"ops","prefix":"lc_cccccc","agents":[],"autonomy":"supervised","rate_per_minute":60,"admin":true},
			{"id":"key_b","name":"bob","prefix":"lc_bbbbbb","agents":[],"autonomy":"full","rate_per_minute":60,"admin":false}]}`},
		{"create key bad autonomy", keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"autonomy":"god"}`, 400, apiErr("invalid_request")},
		{"create key unknown agent", keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"agents":["nope"]}`, 400, apiErr("invalid_request")},
		{"create key bad rate", keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"rate_per_minute":0}`, 400, apiErr("invalid_request")},
		{"create key long name", keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"name":"` + strings.Repeat("n", 65) + `"}`, 400, apiErr("invalid_request")},
		{"create key control characters", keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"name":"a\nb"}`, 400, apiErr("invalid_request")},
		{"create key not JSON", keyAdmin, "POST", "/v1/lambdaclaw/keys", `name=x`, 400, apiErr("invalid_request")},
		{"create key too large", keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"name":"` + strings.Repeat(" ", console.MaxBody) + `"}`, 413, apiErr("request_too_large")},
		{"revoke own key", keyAdmin, "DELETE", "/v1/lambdaclaw/keys/key_admin", "", 409, apiErr("own_key")},
		{"revoke unknown key", keyAdmin, "DELETE", "/v1/lambdaclaw/keys/key_nope", "", 404, apiErr("not_found")},
		{"revoke", keyAdmin, "DELETE", "/v1/lambdaclaw/keys/key_b", "", 204, ""},
		{"revoke again", keyAdmin, "DELETE", "/v1/lambdaclaw/keys/key_b", "", 409, apiErr("revoked")},
		{"unknown endpoint", keyA, "GET", "/v1/lambdaclaw/nope", "", 404, apiErr("not_found")},
		{"wrong method", keyA, "PUT", "/v1/lambdaclaw/sessions", "", 404, apiErr("not_found")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := f.do(t, tt.key, tt.method, tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, got)
			}
			if tt.want == "" {
				return
			}
			if status >= 400 {
				got = onlyCode(got)
			}
			if tt.name == "create job" {
				created, _ = got.(map[string]any)["id"].(string)
			}
			want := strings.ReplaceAll(tt.want, createdJob, created)
			if created == "" && want != tt.want {
				t.Fatal("no job was created")
			}
			if diff := cmp.Diff(js(t, want), got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// A workspace path the console cannot show (a link a command left leading
// out of the workspace, a device, a directory, a NUL byte) is answered 404
// or 400, never 500.
func TestFileUnreadable(t *testing.T) {
	f := newFixture(t)
	ws := filepath.Join(f.home, "agents", "main")
	if err := os.WriteFile(filepath.Join(f.home, "config.yaml"), []byte("secret: x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"SOUL.md": "../../config.yaml", "abs.md": filepath.Join(f.home, "config.yaml"), "dev.md": "/dev/zero"} {
		if err := os.Remove(filepath.Join(ws, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		status     int
		code       string
	}{
		{"a link leaving the workspace", "SOUL.md", 404, "not_found"},
		{"an absolute link", "abs.md", 404, "not_found"},
		{"a link to a device", "dev.md", 404, "not_found"},
		{"a named pipe", "pipe", 404, "not_found"},
		{"a directory", "notes", 404, "not_found"},
		{"a NUL byte", "a%00b.md", 400, "invalid_request"},
		{"a NUL byte in a directory's name", "notes%00/plan.md", 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := f.do(t, keyA, "GET", "/v1/lambdaclaw/agents/main/files/"+tt.path, "")
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, got)
			}
			if diff := cmp.Diff(js(t, apiErr(tt.code)), onlyCode(got)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	// The agent's view still lists its files.
	if status, got := f.do(t, keyA, "GET", "/v1/lambdaclaw/agents/main", ""); status != 200 {
		t.Errorf("the agent's view: %d %v", status, got)
	}
}

// TestMemorySearchOwners: a search finds the key's own memories and the
// agent's, never another key's.
func TestMemorySearchOwners(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		key  store.APIKey
		want []string
	}{
		{keyA, []string{"color", "team"}},
		{keyB, []string{"bobs", "team"}},
	} {
		status, got := f.do(t, tt.key, "GET", "/v1/lambdaclaw/agents/main/memory?q=green&limit=10", "")
		if status != 200 {
			t.Fatalf("status %d: %v", status, got)
		}
		var keys []string
		for _, h := range got.(map[string]any)["hits"].([]any) {
			keys = append(keys, h.(map[string]any)["entry"].(map[string]any)["key"].(string))
		}
		if diff := cmp.Diff(tt.want, keys, cmpSorted); diff != "" {
			t.Errorf("%s: hits (-want +got):\n%s", tt.key.ID, diff)
		}
	}
}

var cmpSorted = cmp.Transformer("sort", func(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
})

// TestCreateKey creates a key and signs in with it.
func TestCreateKey(t *testing.T) {
	f := newFixture(t)
	status, got := f.do(t, keyAdmin, "POST", "/v1/lambdaclaw/keys", `{"name":"ci","agents":["main","main"],"autonomy":"read_only","admin":true}`)
	if status != http.StatusCreated {
		t.Fatalf("status %d: %v", status, got)
	}
	m := got.(map[string]any)
	secret, _ := m["key"].(string)
	if !apikey.Plausible(secret) {
		t.Fatalf("key %q is no key", secret)
	}
	stored, err := f.db.KeyByHash(context.Background(), apikey.Hash(secret))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": stored.ID, "name": "ci", "prefix": secret[:9], "agents": []any{"main"}, "autonomy": "read_only", "rate_per_minute": 120.0, "admin": true}
	if diff := cmp.Diff(want, m["record"]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if !stored.Admin || stored.RatePerMinute != 120 || stored.Name != "ci" {
		t.Errorf("stored %+v", stored)
	}
}

// TestPages serves the console's files, each with its content type and
// the headers that keep it to its own origin.
func TestPages(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct{ path, contentType, contains string }{
		{"/", "text/html; charset=utf-8", `<script src="console/app.js" defer></script>`},
		{"/console/app.js", "text/javascript; charset=utf-8", `sessionStorage.getItem("lambdaclaw.key")`},
		{"/console/style.css", "text/css; charset=utf-8", "#chat-log"},
		{"/console/favicon.svg", "image/svg+xml", "<svg"},
		{"/favicon.ico", "image/svg+xml", "<svg"},
	} {
		w := httptest.NewRecorder()
		f.c.ServeHTTP(w, httptest.NewRequest("GET", tt.path, nil))
		got := []string{w.Header().Get("Content-Type"), w.Header().Get("Content-Security-Policy")[:18], w.Header().Get("X-Content-Type-Options")}
		if diff := cmp.Diff([]string{tt.contentType, "default-src 'self'", "nosniff"}, got); w.Code != 200 || diff != "" {
			t.Errorf("GET %s: %d, headers (-want +got):\n%s", tt.path, w.Code, diff)
		}
		if !strings.Contains(w.Body.String(), tt.contains) {
			t.Errorf("GET %s: body lacks %q", tt.path, tt.contains)
		}
	}
	for _, p := range []string{"/console/nope.js", "/console/"} {
		w := httptest.NewRecorder()
		f.c.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, w.Code)
		}
	}
}

// TestWithoutJobsOrMemory: a server without a scheduler or memory says so.
func TestWithoutJobsOrMemory(t *testing.T) {
	f := newFixture(t)
	c, err := console.New(console.Config{
		Sessions: f.db, Keys: f.db, Agents: func() []string { return []string{"main"} },
		Workspace: func(string) (filestore.FS, bool) { return nil, false },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	type answer struct {
		Status int
		Body   any
	}
	for _, tt := range []struct {
		path string
		want answer
	}{
		{"/v1/lambdaclaw/jobs", answer{200, js(t, `{"jobs":[]}`)}},
		{"/v1/lambdaclaw/jobs/job-a/runs", answer{404, js(t, apiErr("not_found"))}},
		{"/v1/lambdaclaw/agents/main/memory?q=tea", answer{404, js(t, apiErr("not_found"))}},
		{"/v1/lambdaclaw/agents/main", answer{404, js(t, apiErr("not_found"))}},
	} {
		status, got := f.do(t, keyA, "GET", tt.path, "")
		if status >= 400 {
			got = onlyCode(got)
		}
		if diff := cmp.Diff(tt.want, answer{status, got}); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tt.path, diff)
		}
	}
	_, me := f.do(t, keyA, "GET", "/v1/lambdaclaw/me", "")
	if diff := cmp.Diff(js(t, `{"jobs":false,"memory":false,"metrics":false}`), me.(map[string]any)["features"]); diff != "" {
		t.Errorf("features (-want +got):\n%s", diff)
	}
}

// brokenSessions is a store whose listing fails.
type brokenSessions struct{ *sqlite.DB }

func (brokenSessions) SessionsOf(context.Context, string, int) ([]store.Session, error) {
	return nil, errors.New("disk on fire")
}

// TestServerError: a failure the client cannot fix is a 500 that names
// the request, whose id the log line carries with the cause.
func TestServerError(t *testing.T) {
	f := newFixture(t)
	var log bytes.Buffer
	c, err := console.New(console.Config{
		Sessions: brokenSessions{f.db}, Keys: f.db, Agents: func() []string { return nil },
		Workspace: func(string) (filestore.FS, bool) { return nil, false },
		Log:       slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	w.Header().Set("X-Request-Id", "req_test")
	c.ServeAPI(w, httptest.NewRequest("GET", "/v1/lambdaclaw/sessions", nil), keyA)
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	want := []string{"500", "server_error", "internal_error", "the request failed; the server's log says why (request id req_test)"}
	if diff := cmp.Diff(want, []string{strconv.Itoa(w.Code), body.Error.Type, body.Error.Code, body.Error.Message}); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if !strings.Contains(log.String(), "request_id=req_test") || !strings.Contains(log.String(), "disk on fire") {
		t.Errorf("log %q: want the request id and the cause", log.String())
	}
}

// TestJobsPages: the jobs list comes a page at a time (issue 23: 3,021
// jobs were one answer of 985 KB): DefaultJobs a page, next_cursor to the
// end, every job once, in the engine's order; ?limit= up to MaxJobs; an
// admin's pages go on with the operator's jobs.
func TestJobsPages(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	jobs := f.db.Schedule(nil)
	for i := range 250 {
		j := schedule.Job{Owner: "key:key_admin", Agent: "main", Name: fmt.Sprintf("job %d", i), Message: "check in",
			Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}}
		if _, err := jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	// The admin's own jobs, then the operator's: the fixture's one and 29
	// more.
	for i := range 29 {
		j := schedule.Job{Owner: "user:local", Agent: "main", Name: fmt.Sprintf("local %d", i), Message: "check in",
			Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}}
		if _, err := jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for _, owner := range []string{"key:key_admin", "user:local"} {
		all, err := jobs.List(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range all {
			want = append(want, j.ID)
		}
	}
	walk := func(limit string) (ids []string, sizes []int) {
		t.Helper()
		cursor := ""
		for range 300 {
			q := url.Values{}
			if limit != "" {
				q.Set("limit", limit)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			r := httptest.NewRequest("GET", "/v1/lambdaclaw/jobs?"+q.Encode(), nil)
			w := httptest.NewRecorder()
			f.c.ServeAPI(w, r, keyAdmin)
			if w.Code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", r.URL, w.Code, w.Body)
			}
			var page struct {
				Jobs       []schedule.Job `json:"jobs"`
				NextCursor *string        `json:"next_cursor"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(page.Jobs))
			for _, j := range page.Jobs {
				ids = append(ids, j.ID)
			}
			if page.NextCursor == nil {
				return ids, sizes
			}
			cursor = *page.NextCursor
		}
		t.Fatal("the pages never ended")
		return nil, nil
	}
	for _, tc := range []struct {
		limit string
		sizes []int
	}{
		{"", []int{50, 50, 50, 50, 50, 30}},
		{"200", []int{200, 80}},
		{"120", []int{120, 120, 40}},
		{"125", []int{125, 125, 30}}, // a page ends with the admin's jobs
		{"140", []int{140, 140}},     // the last page is full: no empty page after it
	} {
		ids, sizes := walk(tc.limit)
		if d := cmp.Diff(want, ids); d != "" {
			t.Errorf("limit %q: jobs paged (-want +got):\n%s", tc.limit, d)
		}
		if d := cmp.Diff(tc.sizes, sizes); d != "" {
			t.Errorf("limit %q: page sizes (-want +got):\n%s", tc.limit, d)
		}
	}
}

// TestWriteFile: a workspace file is written through the agent's
// write_file tool, held to its policy for the key's autonomy: a full key
// writes, a supervised one once it says the person approved, a read-only
// one never (and sees the files read-only); the tool's own checks (paths,
// sizes) hold, and a refused write changes nothing.
func TestWriteFile(t *testing.T) {
	f := newFixture(t)
	keyR := store.APIKey{ID: "key_r", Autonomy: "read_only"}
	plan := filepath.Join(f.home, "agents", "main", "notes", "plan.md")
	const path = "/v1/lambdaclaw/agents/main/files/notes/plan.md"
	body := func(text string, approved bool) string {
		b, _ := json.Marshal(map[string]any{"text": text, "approved": approved})
		return string(b)
	}
	tests := []struct {
		name   string
		key    store.APIKey
		path   string
		body   string
		status int
		code   string
		file   string // plan.md afterwards
	}{
		{"read-only key", keyR, path, body("no", true), 403, "read_only", "plan"},
		{"supervised key not approved", keyA, path, body("no", false), 403, "approval_required", "plan"},
		{"supervised key approved", keyA, path, body("approved plan", true), 200, "", "approved plan"},
		{"full key", keyB, path, body("full plan", false), 200, "", "full plan"},
		{"larger than a request body", keyB, path, body(strings.Repeat("x", 20<<10), false), 200, "", strings.Repeat("x", 20<<10)},
		{"over the file limit", keyB, path, body(strings.Repeat("y", 65<<10), false), 400, "invalid_request", strings.Repeat("x", 20<<10)},
		{"no text", keyB, path, `{"approved":true}`, 400, "invalid_request", strings.Repeat("x", 20<<10)},
		{"outside the workspace", keyB, "/v1/lambdaclaw/agents/main/files/..%2Fsecret%2FAGENTS.md", body("taken", false), 400, "invalid_request", strings.Repeat("x", 20<<10)},
		{"agent the key may not use", keyA, "/v1/lambdaclaw/agents/secret/files/AGENTS.md", body("taken", true), 404, "not_found", strings.Repeat("x", 20<<10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, got := f.do(t, tt.key, "PUT", tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, got)
			}
			if tt.code != "" {
				if diff := cmp.Diff(js(t, apiErr(tt.code)), onlyCode(got)); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			}
			if data, err := os.ReadFile(plan); err != nil || string(data) != tt.file {
				t.Errorf("plan.md = %.40q, %v; want %.40q", data, err, tt.file)
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(f.home, "agents", "secret", "AGENTS.md")); err != nil || string(data) != "hidden" {
		t.Errorf("secret/AGENTS.md = %q, %v; want it untouched", data, err)
	}
	for _, tt := range []struct {
		key  store.APIKey
		want bool
	}{{keyR, false}, {keyA, true}, {keyB, true}} {
		_, got := f.do(t, tt.key, "GET", "/v1/lambdaclaw/agents/main", "")
		if e := got.(map[string]any)["editable"]; e != tt.want {
			t.Errorf("%s (%s): editable %v, want %v", tt.key.ID, tt.key.Autonomy, e, tt.want)
		}
	}
}

// GET /budget answers the budgets of the key and of the agents it may
// use, as the server reports them; none without budgets.
func TestBudget(t *testing.T) {
	f := newFixture(t)
	if code, got := f.do(t, keyA, "GET", "/v1/lambdaclaw/budget", ""); code != http.StatusOK || fmt.Sprint(got) != "map[budgets:[]]" {
		t.Errorf("GET /budget without budgets = %d %v", code, got)
	}
	var asked []string
	c, err := console.New(console.Config{Sessions: f.db, Keys: f.db, Agents: func() []string { return []string{"main", "secret"} },
		Workspace: func(string) (filestore.FS, bool) { return nil, false },
		Budgets: func(_ context.Context, k store.APIKey, agents []string) ([]agent.Remaining, error) {
			asked = append([]string{k.ID}, agents...)
			return []agent.Remaining{{Scope: "key:" + k.ID + ":day", Window: "2026-12-07", Limit: 100, Spent: 40, Remaining: 60}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	code, got := f.do(t, keyA, "GET", "/v1/lambdaclaw/budget", "")
	b, _ := json.Marshal(got)
	if code != http.StatusOK || !strings.Contains(string(b), `"scope":"key:key_a:day"`) || !strings.Contains(string(b), `"remaining":60`) {
		t.Errorf("GET /budget = %d %s", code, b)
	}
	if diff := cmp.Diff([]string{"key_a", "main"}, asked); diff != "" {
		t.Errorf("budgets asked for (-want +got):\n%s", diff)
	}
}
