package cloudtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Stage is the WebSocket stage in the fake management endpoint's URL.
const Stage = "prod"

// Management is a fake of the API Gateway Management API of one WebSocket
// stage (the REST protocol the SDK speaks: POST, DELETE
// /<stage>/@connections/<id>). It records the frames posted to each
// connection; a connection marked gone answers 410 GoneException.
type Management struct {
	// URL is the endpoint with the stage, as WS_ENDPOINT holds it.
	URL string

	t      *testing.T
	mu     sync.Mutex
	frames map[string][]json.RawMessage
	gone   map[string]bool
	closed []string
}

// NewManagement starts the fake; it stops when the test ends.
func NewManagement(t *testing.T) *Management {
	m := &Management{t: t, frames: map[string][]json.RawMessage{}, gone: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.URL = srv.URL + "/" + Stage
	return m
}

func (m *Management) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/"+Stage+"/@connections/")
	if !ok || id == "" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone[id] {
		w.Header().Set("X-Amzn-Errortype", "GoneException")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		io.WriteString(w, `{"message":"Gone"}`)
		return
	}
	switch r.Method {
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		if !json.Valid(body) {
			m.t.Errorf("frame posted to %s is not JSON: %q", id, body)
		}
		m.frames[id] = append(m.frames[id], body)
	case http.MethodDelete:
		m.closed = append(m.closed, id)
		m.gone[id] = true
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// Gone makes connection id answer as closed.
func (m *Management) Gone(id string) {
	m.mu.Lock()
	m.gone[id] = true
	m.mu.Unlock()
}

// Closed lists the connections closed with DeleteConnection.
func (m *Management) Closed() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.closed...)
}

// Frame is a posted frame, decoded.
type Frame map[string]any

// Frames returns the frames posted to connection id so far.
func (m *Management) Frames(id string) []Frame {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Frame, 0, len(m.frames[id]))
	for _, b := range m.frames[id] {
		var f Frame
		json.Unmarshal(b, &f)
		out = append(out, f)
	}
	return out
}

// WaitFrame waits until a frame of type typ was posted to connection id
// and returns the frames posted until then.
func (m *Management) WaitFrame(id, typ string, timeout time.Duration) []Frame {
	m.t.Helper()
	var frames []Frame
	Wait(m.t, timeout, "a "+typ+" frame on "+id, func() bool {
		frames = m.Frames(id)
		for _, f := range frames {
			if f["type"] == typ {
				return true
			}
		}
		return false
	})
	return frames
}
