package scrub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// secretValuer hides a secret behind a LogValuer.
type secretValuer struct{}

func (secretValuer) LogValue() slog.Value { return slog.StringValue("token=" + ghpToken) }

func TestHandlerScrubsRecords(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewJSONHandler(&buf, nil)))
	u, err := url.Parse("postgres://app:s3cr3tP4ss@db.internal:5432/prod")
	if err != nil {
		t.Fatal(err)
	}
	log.With("base", "https://api.example.com/v1?key="+googleKey).WithGroup("req").Info(
		"calling with Authorization: Bearer "+jwt,
		"error", fmt.Errorf("provider: %w", errors.New("401: Incorrect API key provided: "+projectKey)),
		"url", u,
		"body", []byte(`{"password": "hunter2"}`),
		slog.Group("headers", slog.String("x-api-key", "x-api-key: abc123def456")),
		"valuer", secretValuer{},
		"status", 401,
		"plain", "nothing to hide",
	)
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("log line %q: %v", buf.String(), err)
	}
	delete(got, "time")
	want := map[string]any{
		"level": "INFO",
		"msg":   "calling with Authorization: Bearer [REDACTED]",
		"base":  "https://api.example.com/v1?key=[REDACTED]",
		"req": map[string]any{
			"error":   "provider: 401: Incorrect API key provided: [REDACTED]",
			"url":     "postgres://app:[REDACTED]@db.internal:5432/prod",
			"body":    `{"password": "[REDACTED]"}`,
			"headers": map[string]any{"x-api-key": "x-api-key: [REDACTED]"},
			"valuer":  "token=[REDACTED]",
			"status":  float64(401),
			"plain":   "nothing to hide",
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log record (-want +got):\n%s", diff)
	}
	for _, secret := range []string{jwt, googleKey, projectKey, "s3cr3tP4ss", "hunter2", ghpToken} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("log line holds %q: %s", secret, buf.String())
		}
	}
}

func TestHandlerKeepsLevels(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.Info("dropped")
	if !log.Enabled(context.Background(), slog.LevelWarn) || log.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("Enabled does not follow the wrapped handler")
	}
	if buf.Len() != 0 {
		t.Errorf("a record below the level was written: %q", buf.String())
	}
}

// BenchmarkHandler measures what scrubbing adds to a typical log line.
func BenchmarkHandler(b *testing.B) {
	attrs := []any{"session_id", "0190f3a2-7c1e-7d3b-9a4f-2b6c8d0e1f23", "run_id", "r_91b7c2", "step", 3,
		"error", errors.New(`openai: 429 Too Many Requests: {"error":{"message":"Rate limit reached for gpt-4o"}}`)}
	for _, bc := range []struct {
		name string
		h    slog.Handler
	}{
		{"plain", slog.NewJSONHandler(io.Discard, nil)},
		{"scrubbed", NewHandler(slog.NewJSONHandler(io.Discard, nil))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			log := slog.New(bc.h)
			b.ReportAllocs()
			for b.Loop() {
				log.Error("step failed", attrs...)
			}
		})
	}
}

// TestScrubCompilesWhatMayMatch scrubs, in a process of its own, the
// lines a server logs as it starts: they wait for no pattern's regexp, as
// none may match them, and a secret after them is still found.
func TestScrubCompilesWhatMayMatch(t *testing.T) {
	if os.Getenv("SCRUB_FIRST_LINES") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScrubCompilesWhatMayMatch$")
		cmd.Env = append(os.Environ(), "SCRUB_FIRST_LINES=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	for _, line := range []string{
		"lambdaclaw listening", "/home/me/.lambdaclaw", "default", "v1.2.3", "http://127.0.0.1:8080",
		"telegram channel started", "polling", "resuming unfinished runs",
	} {
		if got := Scrub(line); got != line {
			t.Errorf("Scrub(%q) = %q", line, got)
		}
	}
	for _, p := range patterns {
		if p.re != nil {
			t.Errorf("pattern %s compiled for lines it cannot match", p.name)
		}
	}
	if got, want := Scrub("token="+ghpToken), "token="+Redacted; got != want {
		t.Errorf("Scrub after = %q, want %q", got, want)
	}
}
