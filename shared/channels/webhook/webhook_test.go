package webhook

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/webfetch"
)

func TestDelivery(t *testing.T) {
	at := time.Date(2026, 5, 1, 7, 30, 0, 0, time.UTC)
	answer := func(url string) schedule.Answer {
		return schedule.Answer{
			Job:    schedule.Job{ID: "job_1", Name: "briefing", Agent: "default", Deliver: schedule.Target{Kind: schedule.DeliverWebhook, To: url}},
			Firing: schedule.Firing{JobID: "job_1", At: at},
			Run:    agent.RunState{RunID: "run_1", SessionID: "s_1", Usage: chat.Usage{TotalTokens: 42}},
			Result: agent.Result{Content: "Good morning. key sk-abcdefghijklmnopqrstuvwxyz0123456789 leaked"},
		}
	}
	loopback := webfetch.AllowNetworks([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	tests := []struct {
		name    string
		allow   func(netip.Addr) bool
		status  int
		wantErr string // a part of the error; "" for success
	}{
		{"delivered", loopback, http.StatusNoContent, ""},
		{"the webhook fails", loopback, http.StatusServiceUnavailable, "the webhook answered 503 Service Unavailable"},
		{"a redirect is not followed", loopback, http.StatusFound, "the webhook answered 302 Found"},
		{"loopback refused by default", nil, http.StatusOK, "127.0.0.1 is a loopback address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Payload
			var keys []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var p Payload
				if err := json.Unmarshal(body, &p); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("request %s %s %q: %v", r.Method, r.Header.Get("Content-Type"), body, err)
				}
				got, keys = append(got, p), append(keys, r.Header.Get("Idempotency-Key"))
				if tt.status == http.StatusFound {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			client, err := webfetch.Client(&webfetch.Config{Allow: tt.allow})
			if err != nil {
				t.Fatal(err)
			}
			err = Delivery(client)(t.Context(), answer(srv.URL+"/hook"))
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Delivery = %v; want an error containing %q", err, tt.wantErr)
			}
			if tt.allow == nil {
				if len(got) != 0 {
					t.Errorf("a refused address got %d requests", len(got))
				}
				return
			}
			want := []Payload{{Type: "check_in", JobID: "job_1", JobName: "briefing", Agent: "default", ScheduledAt: at,
				RunID: "run_1", SessionID: "s_1", Content: "Good morning. key [REDACTED] leaked", TotalTokens: 42, IdempotencyKey: "run_1"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("received (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"run_1"}, keys); diff != "" {
				t.Errorf("Idempotency-Key (-want +got):\n%s", diff)
			}
		})
	}
}
