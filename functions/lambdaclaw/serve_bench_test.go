package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// BenchmarkServeTurn measures whole turns through the local server run in
// this process (so that -cpuprofile sees the server's code): stateless
// completions, and stateful ones over 48 sessions, 16 at a time, against
// an instant fake model.
//
//	go test -run '^$' -bench ServeTurn -cpuprofile cpu.out ./functions/lambdaclaw/
func BenchmarkServeTurn(b *testing.B) {
	llm := fakellm.New()
	b.Cleanup(llm.Close)
	home := b.TempDir()
	b.Setenv("LAMBDACLAW_HOME", home)
	b.Setenv("OPENAI_BASE_URL", llm.URL+"/v1")
	b.Setenv("OPENAI_API_KEY", "bench-provider-key")
	b.Setenv("OPENAI_MODEL", "fake-model")
	var out strings.Builder
	if err := run(context.Background(), []string{"keys", "create", "--autonomy", "full", "--rate", "100000000"}, &out, io.Discard); err != nil {
		b.Fatal(err)
	}
	key := strings.TrimSpace(out.String())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, []string{"--addr", addr}, io.Discard, io.Discard) }()
	b.Cleanup(func() { cancel(); <-done })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	url := "http://" + addr + "/v1/chat/completions"
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err := client.Get("http://" + addr + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the server did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	turn := func(session string) error {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"default","messages":[{"role":"user","content":"hello there"}]}`))
		req.Header.Set("Authorization", "Bearer "+key)
		if session != "" {
			req.Header.Set("X-Lambdaclaw-Session-Key", session)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", resp.StatusCode, body)
		}
		return nil
	}
	for _, mode := range []string{"stateless", "stateful"} {
		b.Run(mode, func(b *testing.B) {
			var mu sync.Mutex
			n := 0
			work := make(chan struct{})
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for range work {
						session := ""
						if mode == "stateful" {
							mu.Lock()
							n++
							session = fmt.Sprintf("bench-%d", n%48)
							mu.Unlock()
						}
						if err := turn(session); err != nil {
							b.Error(err)
						}
					}
				})
			}
			for b.Loop() {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
		})
	}
}
