package gateway_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// TestHasAgent checks that with Config.HasAgent requests ask it, with the
// name of the agent, and never list the agents; only /v1/models does, and
// only for keys that may use the agent.
func TestHasAgent(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	listed := 0
	f := newFixture(t, func(c *gateway.Config) {
		c.Agents = func() []string {
			mu.Lock()
			defer mu.Unlock()
			listed++
			return []string{"default"}
		}
		c.HasAgent = func(name string) bool {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, name)
			return name == "default" || name == "fresh"
		}
	})
	writer := f.addKey(store.APIKey{ID: "k-writer", Agents: []string{"writer"}})
	tests := []struct {
		name, token, path string
		want              int
		wantAsked         []string
	}{
		{"agent HasAgent knows", f.token, "/v1/models/fresh", http.StatusOK, []string{"fresh"}},
		{"prefixed name", f.token, "/v1/models/lambdaclaw/fresh", http.StatusOK, []string{"fresh"}},
		{"unknown agent", f.token, "/v1/models/ghost", http.StatusNotFound, []string{"ghost"}},
		{"key may not use it: HasAgent is not asked", writer, "/v1/models/fresh", http.StatusNotFound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			asked = nil
			mu.Unlock()
			if w := f.do("GET", tt.path, tt.token, ""); w.Code != tt.want {
				t.Errorf("GET %s: status %d, want %d: %s", tt.path, w.Code, tt.want, w.Body)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.wantAsked, asked); diff != "" {
				t.Errorf("HasAgent calls (-want +got):\n%s", diff)
			}
		})
	}
	f.runner.events = done
	w := f.do("POST", "/v1/chat/completions", f.token, `{"model":"fresh","messages":[{"role":"user","content":"hi"}]}`)
	if w.Code != http.StatusOK {
		t.Errorf("chat with an agent only HasAgent knows: status %d: %s", w.Code, w.Body)
	}
	if got := f.runner.delivered(); len(got) != 1 || got[0].Agent != "fresh" {
		t.Errorf("delivered %+v, want one run of agent fresh", got)
	}
	mu.Lock()
	if listed != 0 {
		t.Errorf("Agents was called %d times by requests that name an agent, want 0", listed)
	}
	mu.Unlock()
	w = f.do("GET", "/v1/models", f.token, "")
	mu.Lock()
	defer mu.Unlock()
	if w.Code != http.StatusOK || listed != 1 {
		t.Errorf("GET /v1/models: status %d, Agents called %d times; want 200 and one listing", w.Code, listed)
	}
}
