package tests

// The web console in a real browser (issue 17): headless Chromium, driven
// by playwright-core (testdata/clients/console.mjs), against the real
// `lambdaclaw serve` and the fake model. The scenario signs in, chats with
// a streamed reply, approves a write inline and finds the file in the
// agent view, searches and forgets a memory the agent stored, reads the
// sessions and the metrics, and creates, uses and revokes a key. A
// screenshot of the chat is kept outside the test's directories; the log
// says where.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// chromium is the browser the console test drives: $LAMBDACLAW_CHROMIUM,
// else the Debian package's (make test installs it when missing).
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("LAMBDACLAW_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no Chromium at %s for the console's browser test: run bash tests/install-chromium.sh (make test does; as root it runs apt-get install chromium) or set LAMBDACLAW_CHROMIUM", path)
	}
	return path
}

// consoleSeen is what console.mjs prints.
type consoleSeen struct {
	WrongKey        string   `json:"wrongKey"`
	KeysTab         bool     `json:"keysTab"`
	Stored          bool     `json:"stored"`
	Deltas          int      `json:"deltas"`
	Reply           string   `json:"reply"`
	Approval        string   `json:"approval"`
	File            string   `json:"file"`
	Bootstrap       []string `json:"bootstrap"`
	MemoryHit       string   `json:"memoryHit"`
	MemoryText      string   `json:"memoryText"`
	MemoryForgotten string   `json:"memoryForgotten"`
	History         []string `json:"history"`
	Job             []string `json:"job"`
	JobRuns         string   `json:"jobRuns"`
	// JobRows are the jobs view's rows before and after More, and
	// MoreAfter whether More still shows after the last page.
	JobRows       []int    `json:"jobRows"`
	MoreAfter     bool     `json:"moreAfter"`
	Turns         int      `json:"turns"`
	TokensIn      bool     `json:"tokensIn"`
	NewKeyRow     []string `json:"newKeyRow"`
	NewKeyKeysTab bool     `json:"newKeyKeysTab"`
	// NewKeyMetrics is whether the read_only key sees the metrics view,
	// and what /metrics answers it.
	NewKeyMetricsTab bool     `json:"newKeyMetricsTab"`
	NewKeyMetrics    string   `json:"newKeyMetrics"`
	Revoked          bool     `json:"revoked"`
	RevokedSignIn    string   `json:"revokedSignIn"`
	KeyInURL         bool     `json:"keyInURL"`
	WSURLs           []string `json:"wsURLs"`
	PageErrors       []string `json:"pageErrors"`
}

func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	requireClients(t)
	browser := chromium(t)
	fake := newFake(t)
	memCall := fakellm.ToolCall{ID: "call_console_mem", Name: "memory_store", Arguments: `{"text":"The user likes green tea","key":"tea","category":"core"}`}
	writeCall := fakellm.ToolCall{ID: "call_console_write", Name: "write_file", Arguments: `{"path":"notes.txt","content":"from the console"}`}
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "tool" && last.ToolCallID == memCall.ID:
			return fakellm.Reply{Content: "Remembered."}
		case last.Role == "tool" && last.ToolCallID == writeCall.ID:
			return fakellm.Reply{Content: "Notes written.", ChunkSize: 3}
		case last.Content == "remember my tea":
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{memCall}}
		case last.Content == "please write notes":
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall}}
		}
		reply := fakellm.Echo(r)
		reply.ChunkSize = 3
		return reply
	})
	g := startGateway(t, fake, "")
	// The first key is the operator's: supervised, and an admin.
	key := g.firstKey()

	// A job of the key's, made from the command line.
	var keyID string
	for l := range strings.Lines(g.cli(t, "keys", "list")) {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "first" {
			keyID = f[0]
		}
	}
	g.cli(t, "cron", "add", "--owner", "key:"+keyID, "--agent", "default", "--every", "1h", "--message", "check in", "--name", "hourly")
	// And 50 more, so that the jobs view has a second page.
	for i := range 50 {
		g.cli(t, "cron", "add", "--owner", "key:"+keyID, "--agent", "default", "--every", "1h", "--message", "check in", "--name", fmt.Sprintf("later-%d", i))
	}

	dir, err := os.MkdirTemp("", "lambdaclaw-console-")
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "console.png")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console.mjs")
	cmd.Dir = clientsDir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"LAMBDACLAW_ADDR=" + g.addr, "LAMBDACLAW_KEY=" + key, "CHROMIUM=" + browser, "SCREENSHOT=" + shot,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node console.mjs: %v\nstderr:\n%s", err, tail(stderr.String(), 6000))
	}
	var seen consoleSeen
	if err := json.Unmarshal(stdout.Bytes(), &seen); err != nil {
		t.Fatalf("console.mjs printed %q: %v", stdout.String(), err)
	}
	if info, err := os.Stat(shot); err != nil || info.Size() == 0 {
		t.Errorf("no screenshot at %s: %v", shot, err)
	} else {
		t.Logf("screenshot of the console: %s", shot)
	}

	if seen.Deltas < 2 {
		t.Errorf("the reply came in %d delta frames, want it streamed in several", seen.Deltas)
	}
	seen.Deltas = 0
	if !strings.Contains(seen.MemoryHit, "tea") || !strings.Contains(seen.MemoryHit, "yours") {
		t.Errorf("memory hit %q: want the key's own memory tea", seen.MemoryHit)
	}
	seen.MemoryHit = ""
	if !strings.Contains(seen.MemoryForgotten, "found") {
		t.Errorf("after forgetting: %q, want the search's count", seen.MemoryForgotten)
	}
	seen.MemoryForgotten = ""
	want := consoleSeen{
		WrongKey:   "The key was refused: it is unknown or revoked.",
		KeysTab:    true,
		Stored:     true,
		Reply:      "echo: hello console",
		Approval:   "Approval needed: write_file",
		File:       "from the console",
		Bootstrap:  seen.Bootstrap,
		MemoryText: "The user likes green tea",
		History:    []string{"hello console", "remember my tea", "please write notes"},
		Job:        []string{"hourly", "default", "every 1h0m0s"},
		JobRuns:    "It has not run yet.",
		JobRows:    []int{50, 51},
		MoreAfter:  false,
		Turns:      3,
		TokensIn:   true,
		// name, key prefix (not compared), autonomy, agents, status
		NewKeyRow:     []string{"browser-made", seen.NewKeyRow[1], "read_only", "all", "active"},
		NewKeyKeysTab: false,
		// /metrics is the admin's: 403 to the read_only key.
		NewKeyMetricsTab: false,
		NewKeyMetrics:    "403 admin_required",
		Revoked:          true,
		RevokedSignIn:    "The key was refused: it is unknown or revoked.",
		KeyInURL:         false,
		WSURLs:           []string{"/ws"},
	}
	if diff := cmp.Diff(want, seen, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("what the browser saw (-want +got):\n%s", diff)
	}
	if len(seen.Bootstrap) == 0 || seen.Bootstrap[0] != "AGENTS.md" {
		t.Errorf("bootstrap files %q: want the agent's, AGENTS.md first", seen.Bootstrap)
	}

	// What the browser did is in the server's state.
	if data, err := os.ReadFile(filepath.Join(g.workspace(), "notes.txt")); err != nil || string(data) != "from the console" {
		t.Errorf("notes.txt = %q, %v; want it written after the approval", data, err)
	}
	list := g.cli(t, "keys", "list")
	var line string
	for l := range strings.Lines(list) {
		if strings.Contains(l, "browser-made") {
			line = l
		}
	}
	if !strings.Contains(line, "read_only") || !strings.Contains(line, "revoked") {
		t.Errorf("keys list line of the browser's key %q: want it read_only and revoked\n%s", line, list)
	}
	if jobs := g.cli(t, "cron", "list", "--owner", "key:"+keyID); !strings.Contains(jobs, "paused") {
		t.Errorf("cron list after the browser paused the job:\n%s", jobs)
	}
}
