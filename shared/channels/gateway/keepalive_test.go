package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
)

// laterRunner answers once released.
type laterRunner struct {
	hub     *agent.Hub
	release chan struct{}
	done    sync.WaitGroup
}

func (r *laterRunner) Deliver(_ context.Context, in agent.Input, subscribe func(string)) (agent.RunState, error) {
	st := agent.RunState{RunID: "r1", Agent: in.Agent, Reply: in.Reply}
	subscribe(st.RunID)
	r.done.Go(func() {
		<-r.release
		r.hub.Finish(st, agent.Result{Content: "late answer"})
	})
	return st, nil
}

func (r *laterRunner) Reset(context.Context, string) error { return nil }

// streamWriter is a ResponseWriter that tells when a keep-alive was
// written.
type streamWriter struct {
	mu        sync.Mutex
	header    http.Header
	status    int
	body      strings.Builder
	keptAlive chan struct{}
	once      sync.Once
}

func (w *streamWriter) Header() http.Header { return w.header }
func (w *streamWriter) WriteHeader(s int)   { w.status = s }
func (w *streamWriter) Flush()              {}
func (w *streamWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	if strings.Contains(w.body.String(), ": keep-alive\n\n") {
		w.once.Do(func() { close(w.keptAlive) })
	}
	return len(b), nil
}

// A stream whose run is silent sends keep-alive comments, then the answer.
func TestStreamKeepAlive(t *testing.T) {
	hub := agent.NewHub()
	runner := &laterRunner{hub: hub, release: make(chan struct{})}
	f := newFixture(t, func(c *gateway.Config) {
		c.Runner, c.Events, c.KeepAlive = runner, hub, time.Millisecond
	})
	w := &streamWriter{header: http.Header{}, keptAlive: make(chan struct{})}
	go func() {
		<-w.keptAlive
		close(runner.release)
	}()
	r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(withFields(`"stream":true`)))
	r.Header.Set("Authorization", "Bearer "+f.token)
	f.g.ServeHTTP(w, r)
	runner.done.Wait()
	body := w.body.String()
	if w.status != http.StatusOK || !strings.Contains(body, ": keep-alive\n\n") || !strings.Contains(body, "late answer") ||
		!strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("status %d, body:\n%s", w.status, body)
	}
	if i, j := strings.Index(body, `"role":"assistant"`), strings.Index(body, ": keep-alive"); i < 0 || i > j {
		t.Errorf("the stream did not start before its first keep-alive:\n%s", body)
	}
}
