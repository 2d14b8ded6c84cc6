package cloudtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// Stage is the WebSocket stage in the fake management endpoint's URL.
const Stage = "prod"

// Management is a fake of the API Gateway Management API of one WebSocket
// stage (the REST protocol awsapi speaks, as the SDK does: POST, DELETE
// /<stage>/@connections/<id>). It records the frames posted to each
// connection; a connection marked gone answers 410 GoneException. A
// request the service's model refuses (awsmodel) is answered
// ValidationException, and fails the test.
type Management struct {
	// URL is the endpoint with the stage, as WS_ENDPOINT holds it.
	URL string

	t      testing.TB
	model  *awsmodel.Model
	mu     sync.Mutex
	frames map[string][]json.RawMessage
	gone   map[string]bool
	closed []string
}

// NewManagement starts the fake; it stops when the test ends.
func NewManagement(t testing.TB) *Management {
	m := &Management{t: t, model: awsmodel.Load(t, "apigatewaymanagementapi"), frames: map[string][]json.RawMessage{}, gone: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	m.URL = srv.URL + "/" + Stage
	return m
}

func (m *Management) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, typ, msg string) {
		w.Header().Set("X-Amzn-Errortype", typ)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"message": msg})
	}
	body, _ := io.ReadAll(r.Body)
	op, in, err := m.model.FromREST(r, "/"+Stage, body)
	if err := refused(m.t, m.model, op, in, err); err != nil {
		fail(http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	id, _ := in["ConnectionId"].(string)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gone[id] {
		fail(http.StatusGone, "GoneException", "Gone")
		return
	}
	switch op {
	case "PostToConnection":
		if !json.Valid(body) {
			m.t.Errorf("frame posted to %s is not JSON: %q", id, body)
		}
		m.frames[id] = append(m.frames[id], body)
	case "DeleteConnection":
		m.closed = append(m.closed, id)
		m.gone[id] = true
	default:
		m.t.Errorf("the fake API Gateway Management API does not serve %s", op)
		fail(http.StatusBadRequest, "ValidationException", "the fake does not serve "+op)
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
