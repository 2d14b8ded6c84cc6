package cloud_test

import (
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// TestReplyLimitFromEnv checks that MAX_REPLY_BYTES reaches the providers,
// with 1 MiB when unset, and that a bad value is refused.
func TestReplyLimitFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     string
		reply   int64
		want    int
		wantErr bool
	}{
		{name: "default", env: "", reply: 2 << 20, want: llm.DefaultMaxReplyBytes},
		{name: "set", env: "1000", reply: 5000, want: 1000},
		{name: "under the limit", env: "1000", reply: 999, want: 999},
		{name: "not a number", env: "1MB", wantErr: true},
		{name: "zero", env: "0", wantErr: true},
		{name: "negative", env: "-5", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cloudtest.Setup(t)
			t.Setenv("MAX_REPLY_BYTES", tc.env)
			r, err := newRoot(t.Context())
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "MAX_REPLY_BYTES") {
					t.Errorf("New = %v, want an error about MAX_REPLY_BYTES", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e.LLM.Enqueue(fakellm.Reply{Generated: tc.reply})
			resp, err := agentOf(t, r, "default").Provider.Generate(t.Context(), llm.Request{Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantFinish := "stop"
			if int64(tc.want) < tc.reply {
				wantFinish = "length"
			}
			if len(resp.Message.Content) != tc.want || resp.FinishReason != wantFinish {
				t.Errorf("reply of %d bytes, finish reason %q; want %d bytes, %q", len(resp.Message.Content), resp.FinishReason, tc.want, wantFinish)
			}
		})
	}
}
