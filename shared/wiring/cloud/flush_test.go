package cloud_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// slowStderr keeps what is written to it, each write taking a few
// milliseconds, as standard error does when its reader lags: the events
// of a turn's end are still being written as its last step returns.
type slowStderr struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *slowStderr) Write(p []byte) (int, error) {
	time.Sleep(5 * time.Millisecond)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *slowStderr) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// late returns what e writes to w only when flushed now: what an
// invocation that just returned left unwritten, for Lambda to freeze. It
// may run on any goroutine.
func late(t *testing.T, w *slowStderr, e *obs.Emitter) string {
	t.Helper()
	before := len(w.String())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Errorf("flush: %v", err)
	}
	return w.String()[before:]
}

// turnsField is the EMF field of the turns metric, in each line recording it.
const turnsField = `"` + obs.MetricTurns + `":`

// The step function's invocations write their events, the turn's metrics
// among them, before they return.
func TestStepFlushesEvents(t *testing.T) {
	env := cloudtest.Setup(t)
	step := env.Root(t, "step")
	w := &slowStderr{}
	e := step.CaptureEvents(w)
	h := step.Step()
	var mu sync.Mutex
	var unwritten []string
	env.SFN.Play(func(ctx context.Context, ev sfn.Event) (any, error) {
		out, err := h(ctx, ev)
		if s := late(t, w, e); s != "" {
			mu.Lock()
			unwritten = append(unwritten, ev.Action+": "+s)
			mu.Unlock()
		}
		return out, err
	})
	in := agent.Input{RunID: agent.NewID(), SessionID: "s-flush", Agent: "default", Owner: "key:" + env.Key.ID,
		Messages: []chat.Message{{Role: chat.User, Content: "hi"}}, Autonomy: tool.Supervised, Reply: agent.Reply{Channel: gateway.Channel}}
	if _, err := env.Root(t, "ws").Driver.Deliver(t.Context(), in, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if ex := env.SFN.Wait(in.RunID, 30*time.Second); ex.Err != nil {
		t.Fatalf("execution: %v", ex.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range unwritten {
		t.Errorf("written after the invocation returned: %s", s)
	}
	if !strings.Contains(w.String(), turnsField) {
		t.Errorf("no line of %s written:\n%s", obs.MetricTurns, w)
	}
}

// The api function's response ends once the request's events, those of a
// stateless run's end among them, are written.
func TestAPIFlushesEvents(t *testing.T) {
	cloudtest.Setup(t)
	r, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	w := &slowStderr{}
	e := r.CaptureEvents(w)
	api, err := turns.API(r)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	for _, stream := range []bool{false, true} {
		body := `{"model":"default","stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"messages":[{"role":"user","content":"hi"}]}`
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+cloudtest.SampleKey)
		before := len(w.String())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream=%v: status %d, %v: %s", stream, resp.StatusCode, err, b)
		}
		if s := late(t, w, e); s != "" {
			t.Errorf("stream=%v: written after the response ended:\n%s", stream, s)
		}
		if !strings.Contains(w.String()[before:], turnsField) {
			t.Errorf("stream=%v: no line of %s written", stream, obs.MetricTurns)
		}
	}
}
