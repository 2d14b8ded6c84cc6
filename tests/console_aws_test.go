package tests

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// TestConsoleOnAWS serves the web console from the api function's handler,
// built as in Lambda, over DynamoDB Local and the S3-compatible bucket:
// the pages, and the API's endpoints over the DynamoDB adapters (an
// owner's sessions from the index, keys), key-scoped as locally. The
// root is not policed by the api function's table grants (env.Root): the
// console needs more of them than infra/access.go gives the api function
// today (gsi1 OWNER#* and KEYS, KEY#/KEYID# writes, CRON#), which the
// deployment's grants must add before the console works on AWS.
func TestConsoleOnAWS(t *testing.T) {
	env := cloudtest.Setup(t)
	root, err := cloud.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	h, err := root.API()
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
	owner := "key:" + env.Key.ID
	if _, _, err := env.Store.EnqueueRun(ctx, store.NewRun{
		Session: store.Session{ID: "console-aws", Agent: "default", Owner: owner},
		Run:     store.Run{ID: "console-aws-run", SessionID: "console-aws", State: []byte(`{}`)},
		Input:   []chat.Message{{Role: chat.User, Content: "hello from aws"}},
	}); err != nil {
		t.Fatal(err)
	}

	call := func(method, path, key, body string) (int, string, string) {
		t.Helper()
		var ev events.APIGatewayProxyRequest
		cloudtest.LoadEvent(t, "api/models.json", &ev)
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

	// pick keeps what a case compares of an answer.
	sessionIDs := func(v map[string]any) any {
		var ids []string
		for _, s := range v["sessions"].([]any) {
			ids = append(ids, s.(map[string]any)["id"].(string))
		}
		return ids
	}
	errorCode := func(v map[string]any) any { return v["error"].(map[string]any)["code"] }
	tests := []struct {
		name, method, path, key, body string
		status                        int
		pick                          func(map[string]any) any
		want                          any
	}{
		{"me", "GET", "/v1/lambdaclaw/me", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return []any{v["owner"], v["admin"], v["agents"]} }, []any{owner, false, []any{"default"}}},
		{"sessions", "GET", "/v1/lambdaclaw/sessions", cloudtest.SampleKey, "", 200, sessionIDs, []string{"console-aws"}},
		{"sessions of another key", "GET", "/v1/lambdaclaw/sessions", other, "", 200, sessionIDs, []string(nil)},
		{"session", "GET", "/v1/lambdaclaw/sessions/console-aws", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return v["messages"].([]any)[0].(map[string]any)["content"] }, "hello from aws"},
		{"session of another key", "GET", "/v1/lambdaclaw/sessions/console-aws", other, "", 404, errorCode, "not_found"},
		{"jobs", "GET", "/v1/lambdaclaw/jobs", cloudtest.SampleKey, "", 200, func(v map[string]any) any { return v["jobs"] }, []any{}},
		{"agent", "GET", "/v1/lambdaclaw/agents/default", cloudtest.SampleKey, "", 200,
			func(v map[string]any) any { return v["bootstrap"].([]any)[0] }, "AGENTS.md"},
		{"keys not admin", "GET", "/v1/lambdaclaw/keys", cloudtest.SampleKey, "", 403, errorCode, "admin_required"},
		{"create key", "POST", "/v1/lambdaclaw/keys", admin, `{"name":"from the console"}`, 201,
			func(v map[string]any) any { return v["record"].(map[string]any)["name"] }, "from the console"},
		{"revoke key", "DELETE", "/v1/lambdaclaw/keys/" + env.Key.ID, admin, "", 204, nil, nil},
		{"revoked key", "GET", "/v1/lambdaclaw/me", cloudtest.SampleKey, "", 401, errorCode, "invalid_api_key"},
		{"revoke own key", "DELETE", "/v1/lambdaclaw/keys/" + adminRec.ID, admin, "", 409, errorCode, "own_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := call(tt.method, tt.path, tt.key, tt.body)
			if code != tt.status {
				t.Fatalf("%d %s, want %d", code, body, tt.status)
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
}
