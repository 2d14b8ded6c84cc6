package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// instant is a model that answers at once, without tool calls.
type instant struct{}

func (instant) Name() string { return "instant" }

func (instant) Generate(context.Context, llm.Request, llm.OnDelta) (llm.Response, error) {
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "hello"}}, nil
}

// BenchmarkStatefulTurn runs stateful turns through the local driver on
// sqlite, 16 at a time over 48 sessions, with a model that answers at
// once: the loop's and the store's cost of a turn, without HTTP. Profile
// it with -cpuprofile.
func BenchmarkStatefulTurn(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	hub := agent.NewHub()
	loop := &agent.Loop{
		Store:   db,
		Agents:  agent.Registry{"a": {Name: "a", Provider: instant{}}},
		Replier: hub,
	}
	ctx, cancel := context.WithCancel(b.Context())
	d := agent.NewDriver(ctx, loop, slog.New(slog.DiscardHandler))
	b.Cleanup(func() { cancel(); d.Wait() })
	var n atomic.Int64
	turn := func() {
		i := n.Add(1)
		var sub *agent.Subscription
		st, err := d.Deliver(ctx, agent.Input{SessionID: fmt.Sprintf("s%d", i%48), Agent: "a", Owner: "o",
			Messages: []chat.Message{{Role: chat.User, Content: "hello there"}}, Autonomy: tool.Full, Reply: agent.Reply{Channel: "api"}},
			func(runID string) { sub = hub.Subscribe(agent.RunKey(runID)) })
		if err != nil {
			b.Error(err)
			return
		}
		defer hub.Unsubscribe(agent.RunKey(st.RunID), sub)
		for {
			ev, err := sub.Next(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if ev.Result != nil {
				return
			}
		}
	}
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range work {
				turn()
			}
		})
	}
	for b.Loop() {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
}
