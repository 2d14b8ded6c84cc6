package agentset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// fakeClock is a clock the test moves, safe for concurrent readers.
type fakeClock struct{ nanos atomic.Int64 }

func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.nanos.Add(int64(d)) }

// testAgents makes Workspaces on a fresh home with the workspaces names;
// builds counts the agents built, by name, and a build of "broken" fails.
func testAgents(t testing.TB, names ...string) (r *Workspaces, home string, clock *fakeClock, builds func() map[string]int) {
	t.Helper()
	home = t.TempDir()
	for _, n := range names {
		if _, err := workspace.Create(context.Background(), osroot.New(home), n); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	built := map[string]int{}
	build := func(name string) (*agent.Agent, error) {
		mu.Lock()
		defer mu.Unlock()
		built[name]++
		if name == "broken" {
			return nil, errors.New("unknown tool")
		}
		return &agent.Agent{Name: name, Workspace: osroot.New(workspace.Dir(home, name))}, nil
	}
	clock = &fakeClock{}
	clock.advance(time.Since(time.Unix(0, 0)))
	r, err := NewWorkspaces(osroot.New(home), build, func(n string) (time.Time, error) { return workspace.Created(home, n) }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r.now = clock.Now
	return r, home, clock, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(built)
	}
}

func TestLiveAgents(t *testing.T) {
	r, home, clock, builds := testAgents(t, "alpha")
	has := func(name string, want bool) {
		t.Helper()
		a, ok := r.Agent(name)
		if ok != want || (ok && a.Name != name) {
			t.Errorf("Agent(%q) = %+v, %v; want found %v", name, a, ok, want)
		}
		if r.Has(name) != want {
			t.Errorf("Has(%q) = %v, want %v", name, !want, want)
		}
	}
	names := func(want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, r.Names()); diff != "" {
			t.Errorf("Names (-want +got):\n%s", diff)
		}
	}
	names("alpha")
	has("alpha", true)

	// A name that is no workspace costs no scan.
	set := r.set.Load()
	has("ghost", false)
	has("Not/Valid", false)
	if r.set.Load() != set {
		t.Error("looking up a name without a workspace scanned the directory")
	}

	// Created while serving: found at once, built once.
	if _, err := workspace.Create(context.Background(), osroot.New(home), "beta"); err != nil {
		t.Fatal(err)
	}
	has("beta", true)
	names("alpha", "beta")
	alpha, _ := r.Agent("alpha")
	if diff := cmp.Diff(map[string]int{"alpha": 1, "beta": 1}, builds()); diff != "" {
		t.Errorf("agents built (-want +got):\n%s", diff)
	}

	// Deleted while serving: a listing drops it at once; a lookup trusts
	// what it knows for the recheck interval, then looks again.
	if err := workspace.Delete(context.Background(), osroot.New(home), "beta"); err != nil {
		t.Fatal(err)
	}
	if err := workspace.Delete(context.Background(), osroot.New(home), "alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := workspace.Create(context.Background(), osroot.New(home), "gamma"); err != nil {
		t.Fatal(err)
	}
	has("alpha", true)
	clock.advance(agentRecheck)
	has("alpha", false)
	has("beta", false)
	names("gamma")

	// An agent that comes back is a new agent.
	if _, err := workspace.Create(context.Background(), osroot.New(home), "alpha"); err != nil {
		t.Fatal(err)
	}
	again, ok := r.Agent("alpha")
	if !ok || again == alpha {
		t.Errorf("Agent(alpha) after re-creating = %p, %v; want a new agent (was %p)", again, ok, alpha)
	}

	// One that cannot be built is left out; the others are served.
	if _, err := workspace.Create(context.Background(), osroot.New(home), "broken"); err != nil {
		t.Fatal(err)
	}
	has("broken", false)
	names("alpha", "gamma")
	has("gamma", true)
}

func TestLiveAgentsBrokenAtStart(t *testing.T) {
	home := t.TempDir()
	if _, err := workspace.Create(context.Background(), osroot.New(home), "broken"); err != nil {
		t.Fatal(err)
	}
	_, err := NewWorkspaces(osroot.New(home), func(string) (*agent.Agent, error) { return nil, errors.New("unknown tool") }, nil, slog.New(slog.DiscardHandler))
	if err == nil || err.Error() != "agent broken: unknown tool" {
		t.Errorf("NewWorkspaces = %v, want the agent's error", err)
	}
}

// TestLiveAgentsConcurrent looks agents up while workspaces come and go;
// run with -race.
func TestLiveAgentsConcurrent(t *testing.T) {
	r, home, clock, _ := testAgents(t, "steady")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := r.Agent("steady"); !ok {
					t.Error("steady agent lost")
					return
				}
				r.Agent(fmt.Sprintf("a%d", (n+i)%5))
				if n%50 == 0 {
					r.Names()
				}
			}
		})
	}
	for n := range 20 {
		name := fmt.Sprintf("a%d", n%5)
		if _, err := workspace.Create(context.Background(), osroot.New(home), name); err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Agent(name); !ok {
			t.Errorf("Agent(%s) not found right after its workspace was created", name)
		}
		if err := workspace.Delete(context.Background(), osroot.New(home), name); err != nil {
			t.Fatal(err)
		}
		clock.advance(agentRecheck)
		if _, ok := r.Agent(name); ok {
			t.Errorf("Agent(%s) found after its workspace was deleted and the recheck interval passed", name)
		}
	}
	close(stop)
	wg.Wait()
}

// BenchmarkLiveAgents measures a lookup: a known agent (every request),
// a name without a workspace (one stat), and a listing (GET /v1/models).
func BenchmarkLiveAgents(b *testing.B) {
	r, _, _, _ := testAgents(b, "default", "coder", "writer")
	r.now = time.Now
	b.Run("known", func(b *testing.B) {
		for b.Loop() {
			if _, ok := r.Agent("coder"); !ok {
				b.Fatal("coder not found")
			}
		}
	})
	b.Run("unknown", func(b *testing.B) {
		for b.Loop() {
			r.Agent("ghost")
		}
	})
	b.Run("names", func(b *testing.B) {
		for b.Loop() {
			r.Names()
		}
	})
}

// TestLiveAgentsCreated checks that each agent's creation time is its
// workspace's, the same from one scan to the next, and none for an agent
// that is not there.
func TestLiveAgentsCreated(t *testing.T) {
	r, home, clock, _ := testAgents(t, "alpha", "beta")
	want := map[string]time.Time{}
	for _, n := range []string{"alpha", "beta"} {
		c, err := workspace.Created(home, n)
		if err != nil {
			t.Fatal(err)
		}
		want[n] = c
	}
	got := func() map[string]time.Time {
		out := map[string]time.Time{}
		for _, n := range []string{"alpha", "beta", "ghost"} {
			if c := r.Created(n); !c.IsZero() {
				out[n] = c
			}
		}
		return out
	}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("Created (-want +got):\n%s", diff)
	}
	clock.advance(agentRecheck)
	r.Names() // a rescan
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Errorf("Created after a rescan (-want +got):\n%s", diff)
	}
	if err := workspace.Delete(context.Background(), osroot.New(home), "beta"); err != nil {
		t.Fatal(err)
	}
	r.Names()
	if c := r.Created("beta"); !c.IsZero() {
		t.Errorf("Created(beta) = %v after its workspace was deleted, want zero", c)
	}
}
