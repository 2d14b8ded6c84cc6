package main

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// sampleWebhookURL is the Url property of the custom resource samples.
const sampleWebhookURL = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/prod/telegram/webhook"

// cfnAnswers stands in for the presigned S3 URL CloudFormation waits on.
type cfnAnswers struct {
	mu  sync.Mutex
	got []map[string]any
	URL string
}

func newCFNAnswers(t *testing.T) *cfnAnswers {
	a := &cfnAnswers{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v map[string]any
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPut || json.Unmarshal(b, &v) != nil {
			t.Errorf("answer: %s %s", r.Method, b)
		}
		a.mu.Lock()
		a.got = append(a.got, v)
		a.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL + "/answer"
	return a
}

func (a *cfnAnswers) last(t *testing.T) map[string]any {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		t.Fatal("no answer to CloudFormation")
	}
	return a.got[len(a.got)-1]
}

// customResource invokes h with the sample events/telegram/<name>,
// answered at answers.
func customResource(t *testing.T, h *Webhook, name string, answers *cfnAnswers) map[string]any {
	t.Helper()
	var ev map[string]any
	cloudtest.LoadEvent(t, "telegram/"+name, &ev)
	ev["ResponseURL"] = answers.URL
	raw, _ := json.Marshal(ev)
	out, err := h.Invoke(t.Context(), raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil {
		t.Errorf("%s: returned %v", name, out)
	}
	a := answers.last(t)
	for _, k := range []string{"RequestId", "StackId", "LogicalResourceId"} {
		if a[k] != ev[k] {
			t.Errorf("%s: answer %s = %v, want %v", name, k, a[k], ev[k])
		}
	}
	if a["PhysicalResourceId"] != WebhookResourceID {
		t.Errorf("%s: PhysicalResourceId %v", name, a["PhysicalResourceId"])
	}
	return a
}

// TestRegisterWebhook: the deployment's Create registers the webhook with
// the stack's URL and the webhook secret; Delete removes it.
func TestRegisterWebhook(t *testing.T) {
	f := newFixture(t, "111111111")
	answers := newCFNAnswers(t)
	a := customResource(t, f.h, "custom-resource-create.json", answers)
	if a["Status"] != "SUCCESS" {
		t.Fatalf("create: %v", a)
	}
	if url, secret := f.tg.Webhook(); url != sampleWebhookURL || secret != sampleSecret {
		t.Errorf("setWebhook got url %q secret %q; want %q and the webhook secret", url, secret, sampleWebhookURL)
	}
	a = customResource(t, f.h, "custom-resource-delete.json", answers)
	if a["Status"] != "SUCCESS" {
		t.Fatalf("delete: %v", a)
	}
	if url, _ := f.tg.Webhook(); url != "" || f.tg.Calls("deleteWebhook") != 1 {
		t.Errorf("after delete: webhook %q, deleteWebhook called %d times", url, f.tg.Calls("deleteWebhook"))
	}
	if n := len(f.env.SFN.Started()); n != 0 {
		t.Errorf("%d executions started by custom resource events", n)
	}
}

// TestRegisterWebhookRefused: Telegram's refusal fails the deployment with
// its description; the token is in no answer.
func TestRegisterWebhookRefused(t *testing.T) {
	f := newFixture(t, "111111111")
	answers := newCFNAnswers(t)
	f.tg.FailNext("setWebhook", faketelegram.Failure{Code: 400, Description: "Bad Request: bad webhook: Failed to resolve host: Name or service not known"})
	a := customResource(t, f.h, "custom-resource-create.json", answers)
	reason, _ := a["Reason"].(string)
	if a["Status"] != "FAILED" || !strings.Contains(reason, "bad webhook: Failed to resolve host") {
		t.Errorf("answer %v; want FAILED with Telegram's description", a)
	}
	b, _ := json.Marshal(answers.got)
	if strings.Contains(string(b), faketelegram.Token) || strings.Contains(string(b), sampleSecret) {
		t.Errorf("an answer holds the token or the secret: %s", b)
	}
}

// TestUnregisterWebhookIgnoresErrors: stack deletion never sticks, neither
// on Telegram's failure nor on a function that cannot start.
func TestUnregisterWebhookIgnoresErrors(t *testing.T) {
	f := newFixture(t, "111111111")
	answers := newCFNAnswers(t)
	f.tg.FailNext("deleteWebhook", faketelegram.Failure{Code: 500, Description: "Internal Server Error"})
	if a := customResource(t, f.h, "custom-resource-delete.json", answers); a["Status"] != "SUCCESS" {
		t.Errorf("delete with Telegram failing: %v", a)
	}

	broken := &Webhook{Log: slog.Default(), initErr: errors.New("cloud: telegram bot token: read secret: ResourceNotFoundException")}
	if a := customResource(t, broken, "custom-resource-delete.json", answers); a["Status"] != "SUCCESS" {
		t.Errorf("delete without a configuration: %v", a)
	}
	a := customResource(t, broken, "custom-resource-create.json", answers)
	if reason, _ := a["Reason"].(string); a["Status"] != "FAILED" || !strings.Contains(reason, "ResourceNotFoundException") {
		t.Errorf("create without a configuration: %v", a)
	}
}

// TestInvokeWebhookEvent: API Gateway's events still reach the webhook
// through Invoke.
func TestInvokeWebhookEvent(t *testing.T) {
	f := newFixture(t, "111111111")
	raw, err := json.Marshal(loadRaw(t, "webhook-no-secret.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.h.Invoke(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok := out.(events.APIGatewayProxyResponse); !ok || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("webhook call through Invoke: %#v; want 401", out)
	}
	if f.tg.Calls("setWebhook")+f.tg.Calls("deleteWebhook") != 0 {
		t.Error("a webhook call touched the webhook registration")
	}
}

func loadRaw(t *testing.T, name string) map[string]any {
	var v map[string]any
	cloudtest.LoadEvent(t, "telegram/"+name, &v)
	return v
}
