package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// gatedBackend is a sandbox backend whose probe ends when told.
type gatedBackend struct {
	probe chan error
}

func (b *gatedBackend) Exec(context.Context, sandbox.Request) (sandbox.Result, error) {
	return sandbox.Result{}, nil
}
func (b *gatedBackend) Probe(ctx context.Context) error { return <-b.probe }
func (b *gatedBackend) Close() error                    { return nil }

// ranTool records that it ran.
type ranTool struct{ ran chan struct{} }

func (r *ranTool) Definition() chat.ToolDef { return chat.ToolDef{Name: "exec"} }
func (r *ranTool) Policy() tool.Policy      { return tool.Policy{} }
func (r *ranTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	close(r.ran)
	return "ran", nil
}

// The exec tool is offered while its sandbox's probe runs after the server
// listens, a call waits for the probe, and a failed probe withdraws it.
func TestProbedTool(t *testing.T) {
	tests := []struct {
		name       string
		probe      error
		wantStatus string
		wantResult string
		wantErr    string
	}{
		{"probe passes", nil, "ok", "ran", ""},
		{"probe fails", sandbox.ErrUnavailable, "unavailable", "", "exec is not available here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &gatedBackend{probe: make(chan error)}
			inner := &ranTool{ran: make(chan struct{})}
			p := &probedTool{Tool: inner, backend: b, log: slog.New(slog.NewTextHandler(io.Discard, nil)), done: make(chan struct{})}
			go p.probe(context.Background())
			if got := p.Status(); got != "starting" {
				t.Errorf("status while probing = %q, want starting", got)
			}
			if err := p.Unavailable(); err != nil {
				t.Errorf("unavailable while probing: %v, want offered", err)
			}
			type result struct {
				out string
				err error
			}
			called := make(chan result, 1)
			go func() {
				out, err := p.Call(context.Background(), tool.Env{}, json.RawMessage(`{}`))
				called <- result{out, err}
			}()
			select {
			case <-inner.ran:
				t.Fatal("the call ran before the probe ended")
			default:
			}
			b.probe <- tt.probe
			got := <-called
			if got.out != tt.wantResult || (tt.wantErr == "") != (got.err == nil) || got.err != nil && !strings.Contains(got.err.Error(), tt.wantErr) {
				t.Errorf("call = %q, %v; want %q, error containing %q", got.out, got.err, tt.wantResult, tt.wantErr)
			}
			if got := p.Status(); got != tt.wantStatus {
				t.Errorf("status = %q, want %q", got, tt.wantStatus)
			}
			if err := p.Unavailable(); !errors.Is(err, tt.probe) {
				t.Errorf("unavailable = %v, want %v", err, tt.probe)
			}
		})
	}
}
