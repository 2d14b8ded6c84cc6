package cloud_test

import (
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// TestBudgetsFromEnv checks that BUDGET_* reach the loop's budgets, over
// the table's counters, and that bad values are refused.
func TestBudgetsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{name: "defaults", env: map[string]string{}},
		{name: "set", env: map[string]string{"BUDGET_RESET_HOUR": "5", "BUDGET_REPLY_CAP": "900", "BUDGET_NOTIFY_BELOW": "0.3",
			"BUDGET_NOTIFY": "webhook:https://hooks.example.com/a, webhook:https://hooks.example.com/b"}},
		{name: "hour not a number", env: map[string]string{"BUDGET_RESET_HOUR": "noon"}, wantErr: "BUDGET_RESET_HOUR"},
		{name: "hour out of the day", env: map[string]string{"BUDGET_RESET_HOUR": "24"}, wantErr: "budgets.reset_hour is 24"},
		{name: "telegram", env: map[string]string{"BUDGET_NOTIFY_BELOW": "0.3", "BUDGET_NOTIFY": "telegram:42"}, wantErr: "webhook:<url> targets only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloudtest.Setup(t)
			for _, k := range []string{"BUDGET_RESET_HOUR", "BUDGET_REPLY_CAP", "BUDGET_NOTIFY_BELOW", "BUDGET_NOTIFY"} {
				t.Setenv(k, tc.env[k])
			}
			r, err := newRoot(t.Context())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("New = %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := r.Loop.Budgets
			if b == nil || b.Store == nil {
				t.Fatal("the loop has no budgets")
			}
			if tc.name == "set" && (b.ResetHour != 5 || b.ReplyCap != 900 || b.NoticeBelow != 0.3 || b.Notifier == nil) {
				t.Errorf("budgets = %+v", b)
			}
			if tc.name == "defaults" && (b.ResetHour != 0 || b.ReplyCap != 0 || b.Notifier != nil) {
				t.Errorf("budgets = %+v, want the defaults", b)
			}
		})
	}
}
