package scheduletool

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

var now = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

func newEngine(t *testing.T) *sqlite.Schedule {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.Schedule(func() time.Time { return now })
}

func newTool(t *testing.T, e schedule.Engine, maxJobs int) tool.Tool {
	t.Helper()
	tl, err := New(Config{Engine: e, MaxJobsPerOwner: maxJobs, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// ada talks to agent a on Telegram; bob on the API.
var (
	ada = tool.Env{Agent: "a", SessionID: "s-ada", Owner: "tg:111", Channel: "tg", ReplyTo: "111"}
	bob = tool.Env{Agent: "a", SessionID: "s-bob", Owner: "key:k1", Channel: "api"}
)

// ignore leaves out what the engine sets.
var ignore = cmpopts.IgnoreFields(schedule.Job{}, "ID", "CreatedAt", "UpdatedAt", "Schedule.Anchor")

func TestCreate(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	for _, tt := range []struct {
		name    string
		env     tool.Env
		args    string
		want    schedule.Job // compared when wantErr is empty
		wantErr string
	}{
		{name: "at RFC 3339, in the Telegram chat", env: ada,
			args: `{"action":"create","at":"2026-05-02T09:00:00+02:00","message":"Remind Ada to call the dentist","name":"dentist"}`,
			want: schedule.Job{Owner: "tg:111", Agent: "a", Name: "dentist", Message: "Remind Ada to call the dentist", SessionID: "s-ada",
				Schedule: schedule.Schedule{At: time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC)}, Deliver: schedule.Target{Kind: "telegram", To: "111"},
				Next: time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC)}},
		{name: "at local time in tz, on the API", env: bob,
			args: `{"action":"create","at":"2026-05-02T09:00","tz":"Europe/Berlin","message":"stand-up"}`,
			want: schedule.Job{Owner: "key:k1", Agent: "a", Message: "stand-up", SessionID: "s-bob",
				Schedule: schedule.Schedule{At: time.Date(2026, 5, 2, 9, 0, 0, 0, berlin).UTC()}, Next: time.Date(2026, 5, 2, 7, 0, 0, 0, time.UTC)}},
		{name: "in", env: bob, args: `{"action":"create","in":"90m","message":"tea"}`,
			want: schedule.Job{Owner: "key:k1", Agent: "a", Message: "tea", SessionID: "s-bob",
				Schedule: schedule.Schedule{At: now.Add(90 * time.Minute)}, Next: now.Add(90 * time.Minute)}},
		{name: "every", env: bob, args: `{"action":"create","every":"24h","message":"water the plants"}`,
			want: schedule.Job{Owner: "key:k1", Agent: "a", Message: "water the plants", SessionID: "s-bob",
				Schedule: schedule.Schedule{Every: schedule.Duration(24 * time.Hour)}, Next: now.Add(24 * time.Hour)}},
		{name: "cron with tz", env: bob, args: `{"action":"create","cron":"0 9 * * *","tz":"America/New_York","message":"briefing"}`,
			want: schedule.Job{Owner: "key:k1", Agent: "a", Message: "briefing", SessionID: "s-bob",
				Schedule: schedule.Schedule{Cron: "0 9 * * *", TZ: "America/New_York"}, Next: time.Date(2026, 5, 1, 13, 0, 0, 0, time.UTC)}},

		{name: "past", env: bob, args: `{"action":"create","at":"2026-05-01T09:00:00Z","message":"x"}`, wantErr: "in the past"},
		{name: "in negative", env: bob, args: `{"action":"create","in":"-5m","message":"x"}`, wantErr: "positive duration"},
		{name: "every too short", env: bob, args: `{"action":"create","every":"5s","message":"x"}`, wantErr: "shorter than 1m0s"},
		{name: "bad cron", env: bob, args: `{"action":"create","cron":"61 * * * *","message":"x"}`, wantErr: "cron"},
		{name: "cron that never fires", env: bob, args: `{"action":"create","cron":"0 0 31 2 *","message":"x"}`, wantErr: "never fires"},
		{name: "unknown tz", env: bob, args: `{"action":"create","cron":"0 9 * * *","tz":"Mars/Olympus","message":"x"}`, wantErr: "not an IANA time zone"},
		{name: "tz with every", env: bob, args: `{"action":"create","every":"1h","tz":"Europe/Berlin","message":"x"}`, wantErr: `"tz" goes with "at" or "cron" only`},
		{name: "two times", env: bob, args: `{"action":"create","at":"2026-05-02T09:00:00Z","in":"1h","message":"x"}`, wantErr: "exactly one of"},
		{name: "no time", env: bob, args: `{"action":"create","message":"x"}`, wantErr: "exactly one of"},
		{name: "no message", env: bob, args: `{"action":"create","in":"1h"}`, wantErr: `needs "message"`},
		{name: "huge message", env: bob, args: `{"action":"create","in":"1h","message":"` + strings.Repeat("x", MaxMessage+1) + `"}`, wantErr: "at most 4096"},
		{name: "bad at", env: bob, args: `{"action":"create","at":"tomorrow at 9","message":"x"}`, wantErr: "RFC 3339"},
		{name: "an owner in the arguments", env: bob, args: `{"action":"create","in":"1h","message":"x","owner":"tg:111"}`, wantErr: "unknown argument"},
		{name: "a session in the arguments", env: bob, args: `{"action":"create","in":"1h","message":"x","session_id":"s-ada"}`, wantErr: "unknown argument"},
		{name: "an id on create", env: bob, args: `{"action":"create","in":"1h","message":"x","id":"job_1"}`, wantErr: "takes no"},
		{name: "no action", env: bob, args: `{}`, wantErr: `"action" is required`},
		{name: "bad action", env: bob, args: `{"action":"pause"}`, wantErr: "want create, list or delete"},
		{name: "nobody's session", env: tool.Env{Agent: "a", SessionID: "s1"}, args: `{"action":"create","in":"1h","message":"x"}`, wantErr: "has none"},
		{name: "a heartbeat", env: tool.Env{Agent: "a", SessionID: "s1", Owner: schedule.HeartbeatOwner}, args: `{"action":"list"}`, wantErr: "has none"},
		{name: "a stateless request", env: tool.Env{Agent: "a", SessionID: "e-123", Owner: "key:k1"}, args: `{"action":"create","in":"1h","message":"x"}`, wantErr: "not kept"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t)
			out, err := newTool(t, e, 0).Call(context.Background(), tt.env, json.RawMessage(tt.args))
			jobs, lerr := e.List(context.Background(), tt.env.Owner)
			if lerr != nil {
				t.Fatal(lerr)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Call = %q, %v; want an error with %q", out, err, tt.wantErr)
				}
				if len(jobs) != 0 {
					t.Errorf("a refused call created %+v", jobs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if len(jobs) != 1 {
				t.Fatalf("jobs = %+v; want one", jobs)
			}
			if diff := cmp.Diff(tt.want, jobs[0], ignore); diff != "" {
				t.Errorf("job (-want +got):\n%s", diff)
			}
			var res struct {
				Created Reminder `json:"created"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Created.ID != jobs[0].ID {
				t.Errorf("result %s does not name the job %s", out, jobs[0].ID)
			}
		})
	}
}

// A reminder more often than the tool's shortest interval is refused,
// also as a cron expression.
func TestCronFrequency(t *testing.T) {
	e := newEngine(t)
	tl, err := New(Config{Engine: e, MinEvery: time.Hour, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tl.Call(context.Background(), bob, json.RawMessage(`{"action":"create","cron":"*/30 * * * *","message":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "more often than every 1h0m0s") {
		t.Errorf("a half-hourly cron: %v; want refused", err)
	}
}

// List and delete see only the owner's reminders with this agent; the
// per-owner limit refuses the job over it, clearly.
func TestListDeleteLimit(t *testing.T) {
	e := newEngine(t)
	tl := newTool(t, e, 3)
	ctx := context.Background()
	call := func(env tool.Env, args string) (string, error) {
		return tl.Call(ctx, env, json.RawMessage(args))
	}
	for _, m := range []string{"one", "two"} {
		if _, err := call(ada, `{"action":"create","in":"1h","message":"`+m+`"}`); err != nil {
			t.Fatal(err)
		}
	}
	// Ada's job with another agent counts against her limit but is not
	// this agent's to list or delete.
	other, err := e.Create(ctx, schedule.Job{Owner: "tg:111", Agent: "b", Message: "b's", Schedule: schedule.Schedule{Every: schedule.Duration(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	bobs, err := call(bob, `{"action":"create","in":"1h","message":"bob's"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(ada, `{"action":"create","in":"1h","message":"four"}`); err == nil || !strings.Contains(err.Error(), "has 3 scheduled jobs, the most allowed (3)") {
		t.Errorf("over the limit: %v; want a clear refusal", err)
	}

	var listed struct {
		Reminders []Reminder `json:"reminders"`
		Now       string     `json:"now"`
	}
	out, err := call(ada, `{"action":"list"}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, r := range listed.Reminders {
		msgs = append(msgs, r.Message)
	}
	slices.Sort(msgs) // created at the same instant: in any order
	if diff := cmp.Diff([]string{"one", "two"}, msgs); diff != "" || listed.Now != "2026-05-01T10:00:00Z" {
		t.Errorf("list (-want +got):\n%s now %s", diff, listed.Now)
	}

	var created struct {
		Created Reminder `json:"created"`
	}
	if err := json.Unmarshal([]byte(bobs), &created); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{created.Created.ID, other.ID, "job_nope", ""} {
		_, err := call(ada, `{"action":"delete","id":"`+id+`"}`)
		if err == nil {
			t.Errorf("ada deleted %q", id)
		}
	}
	if jobs, _ := e.List(ctx, "key:k1"); len(jobs) != 1 {
		t.Errorf("bob's jobs after ada's deletes = %v", jobs)
	}
	if _, err := e.Get(ctx, "tg:111", other.ID); err != nil {
		t.Errorf("ada's job with agent b after the deletes: %v", err)
	}
	if _, err := call(ada, `{"action":"delete","id":"`+listed.Reminders[0].ID+`","message":"x"}`); err == nil {
		t.Error("delete with a message was accepted")
	}
	if _, err := call(ada, `{"action":"delete","id":"`+listed.Reminders[0].ID+`"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := call(ada, `{"action":"create","in":"1h","message":"four"}`); err != nil {
		t.Errorf("under the limit again: %v", err)
	}
}
