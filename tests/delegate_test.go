package tests

// Delegation between agents survives a crash (issue 29 §1): an agent
// delegates to two others in parallel, the server is killed (kill -9)
// while one child has answered and the other is still thinking, and
// after the restart each child is still one run: the one that finished
// is not run again, the other goes on, and the parent answers with both.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

const teamConfig = `agents:
  boss:
    delegate_to: [alpha, beta]
  alpha: {}
  beta: {}
`

func TestDelegationSurvivesKill(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	var hang atomic.Bool
	hang.Store(true)
	fake.SetDefault(fakellm.Team(&hang))
	g := startGateway(t, fake, teamConfig)
	key := g.createKey(t, "--name", "team", "--autonomy", "supervised")
	var keyID string
	for l := range strings.Lines(g.cli(t, "keys", "list")) {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "team" {
			keyID = f[0]
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := g.client(key).Chat.Completions.New(context.Background(),
			openai.ChatCompletionNewParams{Model: "boss", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("plan")}}, session("team"))
		done <- err
	}()
	// alpha's run has finished (its commit emits turn_complete) and beta's
	// model call hangs: both children run at once.
	waitEvent(t, g, "turn_complete", nil)
	deadline := time.Now().Add(20 * time.Second)
	for fake.Asked("task beta") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("beta's run never called the model")
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.kill()
	if err := <-done; err == nil {
		t.Error("request to a killed server succeeded")
	}
	hang.Store(false)
	g.start()
	// The parent's answer is in history once its run ended: the session's
	// next turn waits for it.
	if _, err := g.client(key).Chat.Completions.New(context.Background(),
		openai.ChatCompletionNewParams{Model: "boss", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("and now?")}}, session("team")); err != nil {
		t.Fatalf("the session's next turn: %v", err)
	}
	if n := fake.Asked("task alpha"); n != 1 {
		t.Errorf("alpha's model was asked %d times; want once: a child that finished is not run again", n)
	}
	if n := fake.Asked("task beta"); n != 2 {
		t.Errorf("beta's model was asked %d times; want twice: once before the kill, once after", n)
	}
	var final string
	for _, r := range fake.Requests() {
		for _, m := range r.Messages {
			if m.Role == "assistant" && strings.HasPrefix(m.Content, "boss: ") {
				final = m.Content
			}
		}
	}
	if final != "boss: alpha done + beta done" {
		t.Errorf("the boss's answer in the session's history = %q; want both children's answers", final)
	}
	db, err := sqlite.Open(filepath.Join(g.home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sessions, err := db.SessionsOf(context.Background(), "key:"+keyID, 100)
	if err != nil {
		t.Fatal(err)
	}
	children := map[string]int{}
	for _, s := range sessions {
		if s.Channel == "delegate" {
			children[s.Agent]++
		}
	}
	if children["alpha"] != 1 || children["beta"] != 1 || len(children) != 2 {
		t.Errorf("child sessions by agent = %v; want one each of alpha and beta", children)
	}
}

// TestConsoleRunTree: the web console shows, under the transcript of a
// run that delegated, the tree of runs (the boss's, then alpha's and
// beta's below it), each with its status and tokens; a child opens its
// own transcript.
func TestConsoleRunTree(t *testing.T) {
	t.Parallel()
	requireClients(t)
	browser := chromium(t)
	fake := newFake(t)
	var hang atomic.Bool
	fake.SetDefault(fakellm.Team(&hang))
	g := startGateway(t, fake, teamConfig)
	key := g.firstKey()
	if _, err := g.client(key).Chat.Completions.New(context.Background(),
		openai.ChatCompletionNewParams{Model: "boss", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("plan")}}, session("tree")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console_runs.mjs")
	cmd.Dir = clientsDir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"LAMBDACLAW_ADDR=" + g.addr, "LAMBDACLAW_KEY=" + key, "SESSION_TITLE=plan", "CHROMIUM=" + browser}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node console_runs.mjs: %v\nstderr:\n%s", err, tail(stderr.String(), 6000))
	}
	var seen struct {
		Tree []struct {
			Label string `json:"label"`
			Depth int    `json:"depth"`
			Link  bool   `json:"link"`
		} `json:"tree"`
		Child      []string `json:"child"`
		PageErrors []string `json:"pageErrors"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &seen); err != nil {
		t.Fatalf("console_runs.mjs printed %q: %v", stdout.String(), err)
	}
	tokens := regexp.MustCompile(`^(\w+) · done · [1-9][0-9]* tokens$`)
	var got []string
	for _, n := range seen.Tree {
		m := tokens.FindStringSubmatch(n.Label)
		if m == nil {
			t.Errorf("tree node %q: want agent · done · tokens", n.Label)
			continue
		}
		got = append(got, fmt.Sprintf("%d %s link=%v", n.Depth, m[1], n.Link))
	}
	if want := []string{"0 boss link=false", "1 alpha link=true", "1 beta link=true"}; !slices.Equal(got, want) {
		t.Errorf("tree %q, want %q", got, want)
	}
	if want := []string{"task alpha", "alpha done"}; !slices.Equal(seen.Child, want) {
		t.Errorf("alpha's transcript %q, want %q", seen.Child, want)
	}
	if len(seen.PageErrors) > 0 {
		t.Errorf("page errors: %q", seen.PageErrors)
	}
}
