package gateway_test

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// A check-in goes only to a WebSocket user of the job's owner, and only
// when a connection of that user is open (tests/cron_test.go delivers
// one through the real server).
func TestCheckInsRefused(t *testing.T) {
	f := newFixture(t, func(c *gateway.Config) {
		c.Identity = agent.Identity{Links: map[string]string{"ws:k1/ada": "ada"}}
	})
	tests := []struct {
		name, owner, to, want string
	}{
		{"owner without a key", "user:local", "alice", "ws:alice names no API key, and the job's owner user:local is not one: use ws:<key id>/<user>"},
		{"another key's user", "key:k1", "k2/alice", "ws:k2/alice is not a WebSocket user of the job's owner"},
		{"a linked id of another person", "user:bob", "k1/ada", "ws:k1/ada is not a WebSocket user of the job's owner"},
		{"the owner's user, not connected", "key:k1", "alice", "no WebSocket connection of ws:alice is open"},
		{"the person's linked id, not connected", "user:ada", "k1/ada", "no WebSocket connection of ws:k1/ada is open"},
	}
	deliver := f.g.CheckIns()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := schedule.Answer{Job: schedule.Job{ID: "job_1", Owner: tt.owner, Agent: "default", Deliver: schedule.Target{Kind: schedule.DeliverWS, To: tt.to}}}
			if err := deliver(t.Context(), a); err == nil || err.Error() != tt.want {
				t.Errorf("delivery = %v; want %q", err, tt.want)
			}
		})
	}
}
