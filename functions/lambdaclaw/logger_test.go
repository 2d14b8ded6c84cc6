package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestLoggerScrubs(t *testing.T) {
	var buf bytes.Buffer
	newLogger(&buf, "info").Error("provider failed",
		"error", errors.New(`Post "https://ci:s3cr3tP4ss@llm.internal/v1/chat/completions": connection refused`))
	out := buf.String()
	if strings.Contains(out, "s3cr3tP4ss") || !strings.Contains(out, "ci:[REDACTED]@llm.internal") {
		t.Errorf("log line = %s, want the password redacted and the host kept", out)
	}
}
