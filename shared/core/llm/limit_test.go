package llm

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

func TestReplyBudgetTake(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		pieces  []string
		want    []string
		wantCut bool
	}{
		{"under the limit", 10, []string{"Hello", ", you"}, []string{"Hello", ", you"}, false},
		{"exactly the limit", 10, []string{"Hello", "World"}, []string{"Hello", "World"}, false},
		{"empty piece at the limit", 5, []string{"Hello", ""}, []string{"Hello", ""}, false},
		{"cut inside a piece", 8, []string{"Hello", "World"}, []string{"Hello", "Wor"}, true},
		{"nothing after the cut", 8, []string{"Hello", "World", "!"}, []string{"Hello", "Wor", ""}, true},
		{"cut before a 2-byte rune", 6, []string{"ééé", "é"}, []string{"ééé", ""}, true},
		{"cut inside a 2-byte rune", 7, []string{"éééé"}, []string{"ééé"}, true},
		{"cut inside a 4-byte rune", 7, []string{"a😀😀"}, []string{"a😀"}, true},
		{"cut inside a 3-byte rune after ASCII", 5, []string{"ab€€"}, []string{"ab€"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewReplyBudget(tt.limit)
			var got []string
			kept := 0
			for _, p := range tt.pieces {
				s := b.Take(p)
				got = append(got, s)
				kept += len(s)
				if !utf8.ValidString(s) {
					t.Errorf("Take(%q) = %q: not valid UTF-8", p, s)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if kept > tt.limit {
				t.Errorf("kept %d bytes, over the %d-byte limit", kept, tt.limit)
			}
			if b.Cut() != tt.wantCut {
				t.Errorf("Cut = %v, want %v", b.Cut(), tt.wantCut)
			}
		})
	}
}

func TestReplyBudgetTakeAll(t *testing.T) {
	b := NewReplyBudget(6)
	if !b.TakeAll("abc") || !b.TakeAll("") {
		t.Fatal("TakeAll refused what fits")
	}
	if b.TakeAll("defg") {
		t.Fatal("TakeAll accepted 4 bytes with 3 left")
	}
	if !b.Cut() {
		t.Error("Cut = false after a refused TakeAll")
	}
	if b.TakeAll("d") || b.Take("d") != "" {
		t.Error("the budget took more after the cut")
	}
}

func TestReplyBudgetDefault(t *testing.T) {
	b := NewReplyBudget(0)
	big := strings.Repeat("x", DefaultMaxReplyBytes)
	if got := b.Take(big); len(got) != DefaultMaxReplyBytes || b.Cut() {
		t.Errorf("zero limit: kept %d bytes (cut %v), want the default %d", len(got), b.Cut(), DefaultMaxReplyBytes)
	}
	if b.Take("x") != "" || !b.Cut() {
		t.Error("zero limit: a byte over the default was kept")
	}
}

func TestCapReply(t *testing.T) {
	call := func(id, args string) chat.ToolCall { return chat.ToolCall{ID: id, Name: "fn", Arguments: args} }
	tests := []struct {
		name    string
		limit   int
		msg     chat.Message
		want    chat.Message
		wantCut bool
	}{
		{
			name: "under the limit", limit: 100,
			msg:  chat.Message{Role: chat.Assistant, Content: "Hello", ToolCalls: []chat.ToolCall{call("c1", `{"a":1}`)}},
			want: chat.Message{Role: chat.Assistant, Content: "Hello", ToolCalls: []chat.ToolCall{call("c1", `{"a":1}`)}},
		},
		{
			name: "content cut on a rune boundary", limit: 5,
			msg:  chat.Message{Role: chat.Assistant, Content: "ééé"},
			want: chat.Message{Role: chat.Assistant, Content: "éé"}, wantCut: true,
		},
		{
			// 5 + (2+2+7) = 16 bytes fit; the second call's arguments
			// do not.
			name: "tool call arguments count", limit: 20,
			msg: chat.Message{Role: chat.Assistant, Content: "Hello", ToolCalls: []chat.ToolCall{
				call("c1", `{"a":1}`), call("c2", `{"b":2}`), call("c3", `{}`),
			}},
			want:    chat.Message{Role: chat.Assistant, Content: "Hello", ToolCalls: []chat.ToolCall{call("c1", `{"a":1}`)}},
			wantCut: true,
		},
		{
			name: "content fills the limit: calls dropped", limit: 5,
			msg:  chat.Message{Role: chat.Assistant, Content: "Hello", ToolCalls: []chat.ToolCall{call("c1", `{}`)}},
			want: chat.Message{Role: chat.Assistant, Content: "Hello"}, wantCut: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.msg
			cut := CapReply(&msg, tt.limit)
			if diff := cmp.Diff(tt.want, msg); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if cut != tt.wantCut {
				t.Errorf("CapReply = %v, want %v", cut, tt.wantCut)
			}
		})
	}
}

func TestLimitBody(t *testing.T) {
	const limit = 10
	bound := int(ReplyBodyBound(limit))
	tests := []struct {
		name    string
		size    int
		wantErr bool
	}{
		{"empty", 0, false},
		{"exactly the bound", bound, false},
		{"one byte over", bound + 1, true},
		{"far over", 4 * bound, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := LimitBody(io.NopCloser(strings.NewReader(strings.Repeat("x", tt.size))), limit)
			got, err := io.ReadAll(body)
			if !tt.wantErr {
				if err != nil || len(got) != tt.size {
					t.Fatalf("read %d bytes, error %v; want %d bytes", len(got), err, tt.size)
				}
				return
			}
			var tooLarge *ReplyTooLargeError
			if !errors.As(err, &tooLarge) || tooLarge.Limit != limit {
				t.Fatalf("error = %v, want a *ReplyTooLargeError for %d bytes", err, limit)
			}
			if len(got) > bound {
				t.Errorf("read %d bytes, over the %d-byte bound", len(got), bound)
			}
			if want := "the model's reply is larger than the 10-byte limit"; err.Error() != want {
				t.Errorf("error = %q, want %q", err, want)
			}
			if _, err := body.Read(make([]byte, 8)); !errors.As(err, &tooLarge) {
				t.Errorf("read after the failure: %v, want the same error", err)
			}
		})
	}
}
