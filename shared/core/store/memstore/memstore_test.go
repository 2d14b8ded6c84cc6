package memstore

import (
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return New() })
}

func TestCommitOutbox(t *testing.T) {
	storetest.RunCommitOutbox(t, func(t *testing.T) (store.Store, func(string) store.Channel) { return New(), nil })
}

// TestNoAliasing checks that slices go in and out as copies: a caller
// changing its slice does not change the store.
func TestNoAliasing(t *testing.T) {
	ctx := t.Context()
	m := New()
	allow := []string{"shell"}
	if err := m.CreateSession(ctx, store.Session{ID: "s", Agent: "main", Allowlist: allow}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	allow[0] = "changed"
	got, err := m.GetSession(ctx, "s")
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	got.Allowlist[0] = "changed"
	if got, _ := m.GetSession(ctx, "s"); got.Allowlist[0] != "shell" {
		t.Errorf("Allowlist = %v, want [shell]", got.Allowlist)
	}

	calls := []string{"c1"}
	if err := m.CreateApproval(ctx, store.Approval{ID: "a", SessionID: "s", Calls: calls, Tools: []string{"shell"}}); err != nil {
		t.Fatalf("CreateApproval: %v", err)
	}
	calls[0] = "changed"
	a, err := m.GetApproval(ctx, "a")
	if err != nil {
		t.Fatalf("GetApproval: %v", err)
	}
	a.Calls[0], a.Tools[0] = "changed", "changed"
	r, err := m.ResolveApproval(ctx, "a", store.ApprovalApproved, "yes", time.Time{})
	if err != nil {
		t.Fatalf("ResolveApproval: %v", err)
	}
	*r.ResolvedAt = time.Time{}
	if a, _ := m.GetApproval(ctx, "a"); a.Calls[0] != "c1" || a.Tools[0] != "shell" || a.ResolvedAt.IsZero() {
		t.Errorf("approval changed through a returned value: %+v", a)
	}

	req := []byte(`{"model":"main"}`)
	if err := m.CreateResponse(ctx, store.Response{ID: "resp", SessionID: "s", Request: req}); err != nil {
		t.Fatalf("CreateResponse: %v", err)
	}
	req[2] = 'X'
	resp, err := m.GetResponse(ctx, "resp")
	if err != nil {
		t.Fatalf("GetResponse: %v", err)
	}
	resp.Request[2] = 'Y'
	if resp, _ := m.GetResponse(ctx, "resp"); string(resp.Request) != `{"model":"main"}` {
		t.Errorf("Request = %s, want {\"model\":\"main\"}", resp.Request)
	}
}

func TestPII(t *testing.T) {
	storetest.RunPII(t, func(*testing.T) storetest.PIIStore { return New() })
}

func TestBudgets(t *testing.T) {
	storetest.RunBudgets(t, func(t *testing.T) store.Budgets { return &Budgets{} })
}
