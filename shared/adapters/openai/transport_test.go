package openai

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// Concurrent calls leave their connections idle for the next calls, not
// closed: 16 turns at once put 16 connections back, where net/http's
// default transport kept 2 and closed 14, to dial again next time.
func TestConnectionsKeptIdle(t *testing.T) {
	const n = 16
	var arrived sync.WaitGroup
	arrived.Add(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		arrived.Wait() // every call holds a connection of its own
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	defer srv.Close()
	p, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	var put sync.WaitGroup
	put.Add(n)
	var refused atomic.Int32
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{PutIdleConn: func(err error) {
		if err != nil {
			refused.Add(1)
		}
		put.Done()
	}})
	var calls sync.WaitGroup
	for range n {
		calls.Go(func() {
			if _, err := p.Generate(ctx, llm.Request{Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	calls.Wait()
	put.Wait()
	if r := refused.Load(); r > 0 {
		t.Errorf("%d of %d connections were closed rather than kept idle", r, n)
	}
}
