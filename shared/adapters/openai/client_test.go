package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// TestRedirects checks that a call follows a redirect within the API's
// origin, and refuses one to another, which sees neither the key nor
// the conversation.
func TestRedirects(t *testing.T) {
	elsewhere := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"choices":[{"index":0,"message":{"role":"assistant","content":"stolen"},"finish_reason":"stop"}]}`)
	})
	var api *server
	api = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/chat/completions":
			http.Redirect(w, r, "/v2/chat/completions", http.StatusPermanentRedirect)
		case "/v2/chat/completions":
			writeJSON(w, http.StatusOK, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		case "/away/v1/chat/completions":
			http.Redirect(w, r, elsewhere.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
		}
	})
	got, err := newProvider(t, api.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, nil)
	if err != nil || got.Message.Content != "ok" {
		t.Fatalf("Generate redirected within the origin = %q, %v; want ok", got.Message.Content, err)
	}
	_, err = newProvider(t, api.URL+"/away", 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, nil)
	checkError(t, err, llm.Error{Provider: "test"}, "redirected away from the API's origin")
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the other origin got %d requests, want none", n)
	}
}

// TestStreamEnds checks how a stream may end: at [DONE], even if the
// server keeps the connection open; with its finish reason but no
// [DONE]; and an error event whose error is a bare string.
func TestStreamEnds(t *testing.T) {
	tests := []struct {
		name    string
		events  []string
		hold    bool
		want    string
		wantErr llm.Error
		mention string
	}{
		{name: "[DONE], connection kept open", events: []string{chunk(`{"content":"ok"}`, "stop"), "[DONE]"}, hold: true, want: "ok"},
		{name: "finished, no [DONE]", events: []string{chunk(`{"content":"ok"}`, "stop")}, want: "ok"},
		{name: "[DONE] unfinished", events: []string{chunk(`{"content":"o"}`, ""), "[DONE]"},
			wantErr: llm.Error{Provider: "test", Status: 200, Retryable: true}, mention: "stream ended before the model finished"},
		{name: "error as a string", events: []string{chunk(`{"content":"o"}`, ""), `{"error":"upstream overloaded"}`},
			wantErr: llm.Error{Provider: "test", Status: 200, Retryable: true}, mention: "error in stream: upstream overloaded"},
		{name: "error without a message", events: []string{`{"error":{"code":503}}`},
			wantErr: llm.Error{Provider: "test", Status: 503, Retryable: true}, mention: `{"code":503}`},
		{name: "malformed event", events: []string{chunk(`{"content":"o"}`, ""), `{"choices":[`},
			wantErr: llm.Error{Provider: "test", Status: 200}, mention: "invalid response from server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				writeSSE(w, tt.events...)
				if tt.hold {
					<-r.Context().Done()
				}
			})
			got, err := newProvider(t, srv.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, func(string) {})
			if tt.mention != "" {
				checkError(t, err, tt.wantErr, tt.mention)
				return
			}
			if err != nil || got.Message.Content != tt.want {
				t.Errorf("Generate = %q, %v; want %q", got.Message.Content, err, tt.want)
			}
		})
	}
}

// TestEventReader checks how server-sent events are read: data lines
// joined, other fields and comments skipped, CRLF line endings, blank
// lines with no data before them, and an event the stream cuts short.
func TestEventReader(t *testing.T) {
	stream := ": keep-alive\n\nevent: chunk\ndata: {\"a\":1}\nid: 7\n\ndata:{\"b\":\r\ndata: 2}\r\n\r\n\n\ndata: cut"
	r := newEventReader(strings.NewReader(stream), 1<<10)
	var got []string
	for {
		data, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		got = append(got, string(data))
	}
	want := []string{"{\"a\":1}\n", "{\"b\":\n2}\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestRequestHeaders checks the headers of a call: JSON both ways, and
// no key without one.
func TestRequestHeaders(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	})
	p, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := p.Generate(context.Background(), llm.Request{Messages: hello}, nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := srv.requests()[0].header
	for name, want := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "Authorization": ""} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}
