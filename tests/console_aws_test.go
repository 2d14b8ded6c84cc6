package tests

import (
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// TestConsoleOnAWS serves the web console from the api function's handler,
// built as in Lambda with the api function's grants on the table
// (env.Root, infra/testdata/table-access.json), over DynamoDB Local, the
// S3-compatible bucket and the fake EventBridge Scheduler: the pages, and
// the API's endpoints over the DynamoDB adapters (an owner's sessions
// from the index, a channel identity's for an admin key, jobs paused, resumed and deleted with their schedules,
// memories, keys created and revoked, sessions summarised and searched,
// a job made with the form, a file written to the bucket), key-scoped as
// locally.
func TestConsoleOnAWS(t *testing.T) {
	env := cloudtest.Setup(t)
	root := env.Root(t, "api")
	h, err := turns.API(root)
	if err != nil {
		t.Fatal(err)
	}
	api := apigw.Stream(h, root.Log)
	ctx := t.Context()
	admin, adminRec, err := apikey.Create(ctx, env.Store, store.APIKey{Name: "ops", Autonomy: "supervised", RatePerMinute: 1000, Admin: true})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := apikey.Create(ctx, env.Store, store.APIKey{Name: "other", Autonomy: "supervised", RatePerMinute: 1000})
	if err != nil {
		t.Fatal(err)
	}
	budgeted, budgetedRec, err := apikey.Create(ctx, env.Store, store.APIKey{Name: "budgeted", Autonomy: "supervised", RatePerMinute: 1000, DailyTokens: 5000})
	if err != nil {
		t.Fatal(err)
	}
	owner := "key:" + env.Key.ID
	if _, _, err := env.Store.EnqueueRun(ctx, store.NewRun{
		Session: store.Session{ID: "console-aws", Agent: "default", Owner: owner, Channel: "ws"},
		Run:     store.Run{ID: "console-aws-run", SessionID: "console-aws", State: []byte(`{}`)},
		Input:   []chat.Message{{Role: chat.User, Content: "hello from aws"}},
	}); err != nil {
		t.Fatal(err)
	}

	// A conversation of a Slack user, which no key owns: admin keys
	// list it and read it, read-only.
	if _, _, err := env.Store.EnqueueRun(ctx, store.NewRun{
		Session: store.Session{ID: "console-slack", Agent: "default", Owner: "slack:T1:U1", Channel: "slack"},
		Run:     store.Run{ID: "console-slack-run", SessionID: "console-slack", State: []byte(`{}`)},
		Input:   []chat.Message{{Role: chat.User, Content: "hello from slack"}},
	}); err != nil {
		t.Fatal(err)
	}

	// The key's job, with its schedule, made as the schedule tool makes
	// it, and one run of it.
	jobs := env.Store.Schedule(&ebscheduler.Schedules{API: env.Scheduler.Client(), Group: cloudtest.SchedulerGroup,
		Role: cloudtest.SchedulerRoleARN, Target: cloudtest.SchedulerTargetARN}, nil)
	job, err := jobs.Create(ctx, schedule.Job{ID: "job_console", Owner: owner, Agent: "default", Message: "stand-up notes?",
		Schedule: schedule.Schedule{Cron: "0 9 * * *"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Trigger(ctx, owner, job.ID); err != nil {
		t.Fatal(err)
	}
	// The key's memory, stored by the api function (its memory tools).
	if err := root.Memory.Store(ctx, memory.Entry{Agent: "default", Owner: owner, Key: "editor", Text: "prefers vim over emacs",
		Category: memory.Core}); err != nil {
		t.Fatal(err)
	}

	call := func(method, path, key, body string) (int, string, string) {
		t.Helper()
		var ev events.APIGatewayProxyRequest
		cloudtest.LoadEvent(t, "api/models.json", &ev)
		path, query, _ := strings.Cut(path, "?")
		if query != "" {
			q, err := url.ParseQuery(query)
			if err != nil {
				t.Fatal(err)
			}
			ev.MultiValueQueryStringParameters = q
		}
		ev.HTTPMethod, ev.Path, ev.Body = method, path, body
		ev.Headers["Authorization"] = "Bearer " + key
		ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + key}
		resp, err := api(t.Context(), ev)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Headers["Content-Type"], string(b)
	}

	code, ctype, body := call("GET", "/", "", "")
	if code != 200 || !strings.HasPrefix(ctype, "text/html") || !strings.Contains(body, "lambdaclaw console") {
		t.Errorf("GET /: %d %s %.200q; want the console's page", code, ctype, body)
	}
	// The icon the page links to, under console/ as the REST API routes it.
	if code, ctype, body := call("GET", "/console/favicon.svg", "", ""); code != 200 || ctype != "image/svg+xml" || !strings.Contains(body, "<svg") {
		t.Errorf("GET /console/favicon.svg: %d %s %.200q; want the icon", code, ctype, body)
	}

	// pick keeps what a case compares of an answer.
	sessionIDs := func(v map[string]any) any {
		var ids []string
		for _, s := range v["sessions"].([]any) {
			ids = append(ids, s.(map[string]any)["id"].(string))
		}
		return ids
	}
	errorCode := func(v map[string]any) any { return v["error"].(map[string]any)["code"] }
	jobIDs := func(v map[string]any) any {
		var ids []string
		for _, j := range v["jobs"].([]any) {
			ids = append(ids, j.(map[string]any)["id"].(string))
		}
		return ids
	}
	jobPath := "/v1/lambdaclaw/jobs/" + job.ID
	tests := []struct {
		name, method, path, key, body string
		status                        int
		pick                          func(map[string]any) any
		want                          any
		// schedule is the state of the job's schedule after the call:
		// ENABLED, DISABLED, or gone; "" is not checked.
		schedule string
	}{
		{"me", "GET", "/v1/lambdaclaw/me", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return []any{v["owner"], v["admin"], v["agents"]} }, []any{owner, false, []any{"default"}}, ""},
		{"sessions", "GET", "/v1/lambdaclaw/sessions", cloudtest.SampleKey, "", 200, sessionIDs, []string{"console-aws"}, ""},
		{"budget", "GET", "/v1/lambdaclaw/budget", budgeted, "", 200, func(v map[string]any) any {
			b := v["budgets"].([]any)[0].(map[string]any)
			return []any{b["scope"], b["limit"], b["remaining"]}
		}, []any{"key:" + budgetedRec.ID + ":day", 5000.0, 5000.0}, ""},
		{"no budget", "GET", "/v1/lambdaclaw/budget", other, "", 200, func(v map[string]any) any { return v["budgets"] }, []any{}, ""},
		{"sessions of another key", "GET", "/v1/lambdaclaw/sessions", other, "", 200, sessionIDs, []string(nil), ""},
		{"sessions summarised", "GET", "/v1/lambdaclaw/sessions", cloudtest.SampleKey, "", 200, func(v map[string]any) any {
			s := v["sessions"].([]any)[0].(map[string]any)
			return []any{s["title"], s["channel"], s["preview"]}
		}, []any{"hello from aws", "ws", "hello from aws"}, ""},
		{"sessions searched", "GET", "/v1/lambdaclaw/sessions?q=AWS", cloudtest.SampleKey, "", 200, sessionIDs, []string{"console-aws"}, ""},
		{"sessions searched by another key", "GET", "/v1/lambdaclaw/sessions?q=aws", other, "", 200, sessionIDs, []string(nil), ""},
		{"session", "GET", "/v1/lambdaclaw/sessions/console-aws", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return v["messages"].([]any)[0].(map[string]any)["content"] }, "hello from aws", ""},
		{"session of another key", "GET", "/v1/lambdaclaw/sessions/console-aws", other, "", 404, errorCode, "not_found", ""},
		{"channel sessions", "GET", "/v1/lambdaclaw/channel-sessions", admin, "", 200, func(v map[string]any) any {
			s := v["sessions"].([]any)[0].(map[string]any)
			return []any{len(v["sessions"].([]any)), s["id"], s["owner"], s["channel"], s["read_only"], s["title"]}
		}, []any{1, "console-slack", "slack:T1:U1", "slack", true, "hello from slack"}, ""},
		{"channel sessions not admin", "GET", "/v1/lambdaclaw/channel-sessions", cloudtest.SampleKey, "", 403, errorCode, "admin_required", ""},
		{"channel session", "GET", "/v1/lambdaclaw/sessions/console-slack", admin, "", 200,
			func(v map[string]any) any { return v["messages"].([]any)[0].(map[string]any)["content"] }, "hello from slack", ""},
		{"channel session not admin", "GET", "/v1/lambdaclaw/sessions/console-slack", other, "", 404, errorCode, "not_found", ""},
		{"jobs", "GET", "/v1/lambdaclaw/jobs", cloudtest.SampleKey, "", 200, jobIDs, []string{job.ID}, "ENABLED"},
		{"jobs of another key", "GET", "/v1/lambdaclaw/jobs", other, "", 200, jobIDs, []string(nil), ""},
		{"job runs", "GET", jobPath + "/runs", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return len(v["runs"].([]any)) }, 1, ""},
		{"pause job of another key", "POST", jobPath, other, `{"paused":true}`, 404, errorCode, "not_found", "ENABLED"},
		{"pause job", "POST", jobPath, cloudtest.SampleKey, `{"paused":true}`, 200,
			func(v map[string]any) any { return v["paused"] }, true, "DISABLED"},
		{"resume job", "POST", jobPath, cloudtest.SampleKey, `{"paused":false}`, 200,
			func(v map[string]any) any { return v["paused"] }, nil, "ENABLED"},
		{"delete job of another key", "DELETE", jobPath, other, "", 404, errorCode, "not_found", "ENABLED"},
		{"delete job", "DELETE", jobPath, cloudtest.SampleKey, "", 204, nil, nil, "gone"},
		{"jobs after delete", "GET", "/v1/lambdaclaw/jobs", cloudtest.SampleKey, "", 200, jobIDs, []string(nil), ""},
		{"create job shorter than the engine's interval", "POST", "/v1/lambdaclaw/jobs", cloudtest.SampleKey,
			`{"agent":"default","message":"too often","every":"10s"}`, 400, errorCode, "invalid_request", ""},
		{"create job", "POST", "/v1/lambdaclaw/jobs", cloudtest.SampleKey, `{"agent":"default","name":"form","message":"standup?","cron":"0 9 * * 1-5","tz":"Europe/Berlin"}`, 201,
			func(v map[string]any) any { return []any{v["owner"], v["name"], v["schedule"]} },
			[]any{owner, "form", map[string]any{"cron": "0 9 * * 1-5", "tz": "Europe/Berlin"}}, ""},
		{"write file not approved", "PUT", "/v1/lambdaclaw/agents/default/files/notes/console.md", cloudtest.SampleKey, `{"text":"x"}`, 403, errorCode, "approval_required", ""},
		{"write file", "PUT", "/v1/lambdaclaw/agents/default/files/notes/console.md", cloudtest.SampleKey, `{"text":"written on aws","approved":true}`, 200,
			func(v map[string]any) any { return v["path"] }, "notes/console.md", ""},
		{"read the file written", "GET", "/v1/lambdaclaw/agents/default/files/notes/console.md", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return v["text"] }, "written on aws", ""},
		{"search memory", "GET", "/v1/lambdaclaw/agents/default/memory?q=vim", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any {
				return v["hits"].([]any)[0].(map[string]any)["entry"].(map[string]any)["key"]
			}, "editor", ""},
		{"forget memory", "DELETE", "/v1/lambdaclaw/agents/default/memory/editor", cloudtest.SampleKey, "", 204, nil, nil, ""},
		{"forgotten memory", "GET", "/v1/lambdaclaw/agents/default/memory/editor", cloudtest.SampleKey, "", 404, errorCode, "not_found", ""},
		{"approvals", "GET", "/v1/lambdaclaw/approvals", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return v["approvals"] }, []any{}, ""},
		{"agent", "GET", "/v1/lambdaclaw/agents/default", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return v["bootstrap"].([]any)[0] }, "AGENTS.md", ""},
		{"keys not admin", "GET", "/v1/lambdaclaw/keys", cloudtest.SampleKey, "", 403, errorCode, "admin_required", ""},
		{"create key", "POST", "/v1/lambdaclaw/keys", admin, `{"name":"from the console"}`, 201,
			func(v map[string]any) any { return v["record"].(map[string]any)["name"] }, "from the console", ""},
		{"list keys", "GET", "/v1/lambdaclaw/keys", admin, "", 200, func(v map[string]any) any {
			var names []string
			for _, k := range v["keys"].([]any) {
				names = append(names, k.(map[string]any)["name"].(string))
			}
			slices.Sort(names)
			return names
		}, []string{"budgeted", "events", "from the console", "ops", "other"}, ""},
		{"revoke key", "DELETE", "/v1/lambdaclaw/keys/" + env.Key.ID, admin, "", 204, nil, nil, ""},
		{"revoked key", "GET", "/v1/lambdaclaw/me", cloudtest.SampleKey, "", 401, errorCode, "invalid_api_key", ""},
		{"revoke own key", "DELETE", "/v1/lambdaclaw/keys/" + adminRec.ID, admin, "", 409, errorCode, "own_key", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := call(tt.method, tt.path, tt.key, tt.body)
			if code != tt.status {
				t.Fatalf("%d %s, want %d", code, body, tt.status)
			}
			if tt.schedule != "" {
				state := "gone"
				if s, ok := env.Scheduler.Schedules()[job.ID]; ok {
					state = s.State
				}
				if state != tt.schedule {
					t.Errorf("the job's schedule is %s, want %s", state, tt.schedule)
				}
			}
			if tt.pick == nil {
				return
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if diff := cmp.Diff(tt.want, tt.pick(v)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The job made with the form has its schedule.
	list, err := jobs.List(ctx, owner)
	if err != nil || len(list) != 1 {
		t.Fatalf("jobs of the key: %v, %v; want the one made with the form", list, err)
	}
	if s, ok := env.Scheduler.Schedules()[list[0].ID]; !ok || s.State != "ENABLED" {
		t.Errorf("the schedule of the job made with the form: %+v, %v; want it ENABLED", s, ok)
	}
}
