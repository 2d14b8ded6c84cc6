package tests

// The web console in a real browser (issues 17 and 26): headless
// Chromium, driven by playwright-core (testdata/clients/console.mjs),
// against the real `lambdaclaw serve` and the fake model. The scenario
// looks at the signed-out page, signs in, chats with a streamed reply and
// a markdown reply that tries to inject HTML and run scripts, approves a
// write inline, finds, edits and closes the file in the agent view,
// searches and forgets a memory the agent stored, lists and searches the
// sessions (and, as an admin, a Telegram chat's), makes a job with the form, reads the metrics, and creates,
// copies, uses and revokes a key. It screenshots every view at 1280 and
// 390 px wide into $LAMBDACLAW_SCREENSHOTS (kept) or a temporary
// directory; the log says where.

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

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
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

// renderedReply is what console.mjs finds in a markdown reply.
type renderedReply struct {
	Heading  string   `json:"heading"`
	Items    []string `json:"items"`
	Strong   []string `json:"strong"`
	Em       []string `json:"em"`
	Code     []string `json:"code"`
	Pre      []string `json:"pre"`
	Links    []string `json:"links"`
	Injected int      `json:"injected"`
	Pwned    []int    `json:"pwned"`
}

// sessionItem is a row of the sessions list.
type sessionItem struct {
	Title   string `json:"title"`
	Channel string `json:"channel"`
	Preview string `json:"preview"`
	HasTime bool   `json:"hasTime"`
}

// consoleSeen is what console.mjs prints.
type consoleSeen struct {
	// SignedOut is what shows before signing in.
	SignedOut struct {
		Nav     bool   `json:"nav"`
		Views   int    `json:"views"`
		Signout bool   `json:"signout"`
		Error   string `json:"error"`
	} `json:"signedOut"`
	Favicon         []string      `json:"favicon"`
	ShiftEnter      string        `json:"shiftEnter"`
	Markdown        renderedReply `json:"markdown"`
	HistoryMarkdown renderedReply `json:"historyMarkdown"`
	BootstrapTwice  []string      `json:"bootstrapTwice"`
	FileEdited      string        `json:"fileEdited"`
	Sessions        []sessionItem `json:"sessions"`
	SearchFocused   string        `json:"searchFocused"`
	SearchHits      []string      `json:"searchHits"`
	ChannelSessions [][]string    `json:"channelSessions"`
	ChannelSession  string        `json:"channelSession"`
	JobFormError    string        `json:"jobFormError"`
	FormJob         []string      `json:"formJob"`
	Copied          bool          `json:"copied"`
	ReadOnlyFile    []any         `json:"readOnlyFile"`
	ReadOnlyWrite   string        `json:"readOnlyWrite"`
	JobsEmpty       []string      `json:"jobsEmpty"`
	Pwned           []int         `json:"pwned"`
	// Shots are the screenshots taken, Overflow each one's horizontal
	// overflow in pixels, PhoneHeader the tallest header at 390 px and
	// PhoneFileTop where an opened file starts at 390 px.
	Shots          []string       `json:"shots"`
	Overflow       map[string]int `json:"overflow"`
	PhoneHeader    int            `json:"phoneHeader"`
	PhoneFileTop   int            `json:"phoneFileTop"`
	DarkBackground string         `json:"darkBackground"`

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
	// HistoryImage is the width of the picture a session's history shows.
	HistoryImage int      `json:"historyImage"`
	Job          []string `json:"job"`
	JobRuns      string   `json:"jobRuns"`
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
		case last.Content == "show markdown":
			return fakellm.Reply{Content: markdownReply, ChunkSize: 7}
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

	// A Telegram chat's conversation, which no key owns.
	db, err := sqlite.Open(filepath.Join(g.home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateSession(t.Context(), store.Session{ID: "tg-console", Agent: "default", Owner: "tg:4242", Channel: "tg"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.AppendMessage(t.Context(), store.Message{SessionID: "tg-console", Key: "m1", Message: chat.Message{Role: chat.User, Content: "hello from telegram"}}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	shots := os.Getenv("LAMBDACLAW_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "console.mjs")
	cmd.Dir = clientsDir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"XSS_MESSAGE=" + xssMessage, "XSS_TITLE=" + xssTitle,
		"LAMBDACLAW_ADDR=" + g.addr, "LAMBDACLAW_KEY=" + key, "CHROMIUM=" + browser, "SCREENSHOTS=" + shots,
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
	checkShots(t, shots, seen)
	seen.Shots, seen.Overflow, seen.PhoneHeader, seen.PhoneFileTop, seen.DarkBackground = nil, nil, 0, 0, ""

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
	for _, s := range seen.Sessions {
		if !s.HasTime {
			t.Errorf("session %q shows no last activity", s.Title)
		}
	}
	want := consoleSeen{
		Favicon:         []string{"200 image/svg+xml", "200 image/svg+xml"},
		ShiftEnter:      "line one\n",
		Markdown:        wantMarkdown,
		HistoryMarkdown: wantMarkdown,
		FileEdited:      "edited in the console",
		Sessions: []sessionItem{
			{Title: xssTitle, Channel: "http", Preview: "echo: " + xssTitle, HasTime: true},
			{Title: "hello console", Channel: "ws", Preview: "Notes written.", HasTime: true},
		},
		SearchFocused:   "session-query",
		SearchHits:      []string{"hello console"},
		ChannelSessions: [][]string{{"hello from telegram", "tg", "tg:4242 · "}},
		ChannelSession:  "tg:4242 · read only · default · tg-console",
		JobFormError:    seen.JobFormError,
		FormJob:         []string{"from-form", "default", "cron 0 9 * * 1-5 Europe/Berlin"},
		Copied:          true,
		ReadOnlyFile:    []any{false, "Read-only: this key may not change the agent's files."},
		ReadOnlyWrite:   "403 read_only",
		JobsEmpty:       []string{"No scheduled jobs. Make one above, ask an agent to remind you of something, or use lambdaclaw cron add.", "lambdaclaw cron add"},
		WrongKey:        "The key was refused: it is unknown or revoked.",
		KeysTab:         true,
		Stored:          true,
		Reply:           "echo: hello console",
		Approval:        "Approval needed: write_file",
		File:            "from the console",
		Bootstrap:       seen.Bootstrap,
		MemoryText:      "The user likes green tea",
		History:         []string{"hello console", "show markdown", xssMessage, "remember my tea", "please write notes"},
		HistoryImage:    1,
		Job:             []string{"hourly", "default", "every 1h0m0s"},
		JobRuns:         "It has not run yet.",
		JobRows:         []int{50, 51},
		MoreAfter:       false,
		Turns:           6,
		TokensIn:        true,
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
	if !strings.Contains(seen.JobFormError, "cron") {
		t.Errorf("the job form's error for a bad cron expression: %q, want it to say what is wrong", seen.JobFormError)
	}
	if len(seen.Bootstrap) == 0 || seen.Bootstrap[0] != "AGENTS.md" {
		t.Errorf("bootstrap files %q: want the agent's, AGENTS.md first", seen.Bootstrap)
	}

	// What the browser did is in the server's state.
	if data, err := os.ReadFile(filepath.Join(g.workspace(), "notes.txt")); err != nil || string(data) != "edited in the console" {
		t.Errorf("notes.txt = %q, %v; want it written after the approval, then edited in the console", data, err)
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
	if jobs := g.cli(t, "cron", "list", "--owner", "key:"+keyID); !strings.Contains(jobs, "paused") || !strings.Contains(jobs, "from-form") {
		t.Errorf("cron list after the browser paused a job and made one:\n%s", jobs)
	}
}

// xssMessage and xssTitle are a user's message and a session's title
// that would run scripts if the console set them as HTML.
const (
	xssMessage = `<img src=x onerror="window.__pwned.push(5)"><script>window.__pwned.push(6)</script>`
	xssTitle   = `<b>unrelated</b> <img src=x onerror="window.__pwned.push(7)">`
)

// markdownReply is a reply in markdown that tries, every way it can, to
// put HTML into the page or run a script; wantMarkdown is what the
// console renders of it: elements whose text is the reply's, nothing run.
const markdownReply = "# Markdown title\n\nSome **bold** and *italic* text with `inline code`.\n\n" +
	"- first item\n- second [safe link](https://example.com/docs)\n\n1. one\n2. two\n\n" +
	"```html\n<script>window.__pwned.push(1)</script>\n```\n\n" +
	"[bad link](javascript:window.__pwned.push(2)) <img src=x onerror=\"window.__pwned.push(3)\"> " +
	"<script>window.__pwned.push(4)</script> [data link](data:text/html,<b>x</b>) <a href=\"javascript:alert(1)\">raw</a>"

var wantMarkdown = renderedReply{
	Heading: "Markdown title",
	Items:   []string{"first item", "second safe link", "one", "two"},
	Strong:  []string{"bold"},
	Em:      []string{"italic"},
	Code:    []string{"inline code"},
	Pre:     []string{"<script>window.__pwned.push(1)</script>"},
	Links:   []string{"https://example.com/docs noopener noreferrer"},
}

// checkShots checks the screenshots: one of every view at both widths,
// none wider than its window, a compact header and an opened file at
// the top on a phone, a dark page in dark mode.
func checkShots(t *testing.T, dir string, seen consoleSeen) {
	t.Helper()
	var want []string
	for _, w := range []string{"1280", "390"} {
		for _, v := range []string{"chat", "sessions", "approvals", "jobs", "agents", "keys", "metrics"} {
			want = append(want, v+"-"+w)
		}
	}
	want = append([]string{"signin-1280", "signin-390", "approval-1280"}, want...)
	want = append(want, "chat-390-dark", "chat-1280-dark")
	if diff := cmp.Diff(want, seen.Shots); diff != "" {
		t.Errorf("screenshots (-want +got):\n%s", diff)
	}
	for _, name := range seen.Shots {
		if info, err := os.Stat(filepath.Join(dir, name+".png")); err != nil || info.Size() == 0 {
			t.Errorf("screenshot %s: %v", name, err)
		}
		if over := seen.Overflow[name]; over > 0 {
			t.Errorf("%s: the page is %d px wider than the window (it scrolls sideways)", name, over)
		}
	}
	if seen.PhoneHeader == 0 || seen.PhoneHeader > 110 {
		t.Errorf("at 390 px the header is %d px tall, want it compact (at most 110 of 844)", seen.PhoneHeader)
	}
	if seen.PhoneFileTop > 10 {
		t.Errorf("at 390 px an opened file starts %d px down, want it over the lists", seen.PhoneFileTop)
	}
	if seen.DarkBackground == "" || seen.DarkBackground == "rgb(247, 248, 250)" {
		t.Errorf("in dark mode the page's background is %q, want the dark one", seen.DarkBackground)
	}
	t.Logf("screenshots of the console (%d): %s", len(seen.Shots), dir)
}
