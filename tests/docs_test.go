package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// The docs test runs every example of the documentation: the fenced shell
// and JavaScript blocks of README.md and of the pages beside the code,
// against a real `lambdaclaw serve` on a temporary home with the fake
// model. An example that cannot run here says so in its info string,
// "```sh no-test: <reason>"; the test skips only those, and fails on an
// unmarked example it cannot run.

// docExample is a fenced block of a markdown page.
type docExample struct {
	Line int    // of the opening fence, from 1
	Lang string // the info string's first word
	// NoTest is the reason after "no-test"; empty for an example to run.
	NoTest string
	Code   string
}

// docLangs sorts info strings: shell and JavaScript blocks are examples
// the test runs; data and output blocks are none; any other language is an
// example the test cannot run, which must be marked no-test.
var docLangs = map[string]string{
	"sh": "shell", "bash": "shell", "shell": "shell",
	"js": "node", "javascript": "node", "mjs": "node",
	"": "data", "json": "data", "yaml": "data", "yml": "data", "markdown": "data",
	"md": "data", "text": "data", "txt": "data", "toml": "data", "ini": "data",
}

// parseExamples returns the fenced blocks of a markdown text, with their
// indentation (a block in a list item) removed.
func parseExamples(text string) ([]docExample, error) {
	var (
		out    []docExample
		cur    *docExample
		fence  string
		indent int
		body   []string
	)
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if !strings.HasPrefix(trimmed, "```") {
				continue
			}
			indent = len(line) - len(trimmed)
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			info := strings.TrimSpace(trimmed[len(fence):])
			lang, rest, _ := strings.Cut(info, " ")
			ex := docExample{Line: i + 1, Lang: lang}
			if rest = strings.TrimSpace(rest); rest != "" {
				reason, ok := strings.CutPrefix(rest, "no-test")
				reason = strings.TrimSpace(strings.TrimPrefix(reason, ":"))
				if !ok || reason == "" {
					return nil, fmt.Errorf("line %d: info string %q: after the language only \"no-test: <reason>\" may follow", i+1, info)
				}
				ex.NoTest = reason
			}
			cur, body = &ex, nil
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`") == "" {
			cur.Code = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
			continue
		}
		// Remove the block's indentation, at most as much as the fence's.
		n := min(indent, len(line)-len(strings.TrimLeft(line, " ")))
		body = append(body, line[n:])
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: the fenced block is not closed", cur.Line)
	}
	return out, nil
}

// docServer is what an example runs against.
type docServer struct {
	url string   // http://127.0.0.1:PORT
	env []string // the environment of the examples' processes
}

// docDefaultURL is the address the docs show, the server's default; an
// example's copy of it is the one thing the test rewrites.
const docDefaultURL = "http://127.0.0.1:8080"

// shellPrelude makes a shell example fail on the first failed command, on
// a variable that is not set (a misspelt name) and on an HTTP error.
const shellPrelude = `set -euo pipefail
curl() { command curl --silent --show-error --fail-with-body --max-time 60 "$@"; }
`

// runExample runs one example and returns an error saying why it failed,
// with its output.
func runExample(ctx context.Context, ex docExample, srv docServer) error {
	kind, known := docLangs[ex.Lang]
	switch {
	case ex.NoTest != "" || kind == "data":
		return nil
	case !known:
		return fmt.Errorf("a %q example cannot run in this test: run it, or mark it \"```%s no-test: <reason>\"", ex.Lang, ex.Lang)
	}
	u, err := url.Parse(srv.url)
	if err != nil {
		return err
	}
	code := strings.ReplaceAll(ex.Code, docDefaultURL, srv.url)
	code = strings.ReplaceAll(code, strings.TrimPrefix(docDefaultURL, "http://"), u.Host)
	dir, err := os.MkdirTemp("", "lambdaclaw-doc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	switch kind {
	case "shell":
		cmd = exec.CommandContext(ctx, "bash", "-c", shellPrelude+code)
	case "node":
		// The snippet imports the pinned clients of tests/testdata/clients.
		modules, err := filepath.Abs(filepath.Join(clientsDir, "node_modules"))
		if err != nil {
			return err
		}
		if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "example.mjs"), []byte(code), 0o600); err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, "node", "example.mjs")
	}
	cmd.Dir = dir
	cmd.Env = srv.env
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n--- example\n%s--- output\n%s", err, code, tail(out.String(), 4000))
	}
	return nil
}

// docPages returns the markdown files of the repository, relative to its
// root, skipping installed packages, build output and dot directories.
func docPages(t *testing.T) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(name, ".") || slices.Contains([]string{"node_modules", "cdk.out", "dist", "bin"}, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel("..", path)
			if err != nil {
				return err
			}
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// newDocServer starts a gateway with the fake model and the environment
// the docs promise: the lambdaclaw binary on PATH, and LAMBDACLAW_ADDR and
// LAMBDACLAW_API_KEY set to the server and its first (admin) key.
func newDocServer(t *testing.T) docServer {
	t.Helper()
	g := startGateway(t, newFake(t), "")
	key := g.firstKey()
	u, err := url.Parse(g.addr)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range g.env {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"LAMBDACLAW_ADDR="+u.Host,
		"LAMBDACLAW_API_KEY="+key)
	return docServer{url: g.addr, env: env}
}

// TestDocsExamples runs the examples of every page, each page against a
// server of its own, in the page's order.
func TestDocsExamples(t *testing.T) {
	for _, page := range docPages(t) {
		text, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		examples, err := parseExamples(string(text))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		runnable := slices.ContainsFunc(examples, func(ex docExample) bool {
			return ex.NoTest == "" && docLangs[ex.Lang] != "data"
		})
		if !runnable {
			continue
		}
		t.Run(page, func(t *testing.T) {
			if slices.ContainsFunc(examples, func(ex docExample) bool { return ex.NoTest == "" && docLangs[ex.Lang] == "node" }) {
				requireClients(t)
			}
			srv := newDocServer(t)
			for _, ex := range examples {
				if err := runExample(context.Background(), ex, srv); err != nil {
					t.Errorf("%s:%d: %v", page, ex.Line, err)
				}
			}
		})
	}
}

// TestDocsExamplesParse holds the extractor to the markdown it reads:
// indented blocks, markers with reasons, and markers without one refused.
func TestDocsExamplesParse(t *testing.T) {
	sample := "# Page\n\n```sh\nlambdaclaw version\n```\n\n" +
		"1. In a list:\n\n   ```sh no-test: needs AWS\n   make deploy\n     indented more\n   ```\n\n" +
		"````markdown\n```sh\nnot a block\n```\n````\n"
	got, err := parseExamples(sample)
	if err != nil {
		t.Fatal(err)
	}
	want := []docExample{
		{Line: 3, Lang: "sh", Code: "lambdaclaw version\n"},
		{Line: 9, Lang: "sh", NoTest: "needs AWS", Code: "make deploy\n  indented more\n"},
		{Line: 14, Lang: "markdown", Code: "```sh\nnot a block\n```\n"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("parseExamples =\n%+v\nwant\n%+v", got, want)
	}
	for _, bad := range []string{"```sh no-test\nx\n```\n", "```sh notest: typo\nx\n```\n", "```sh\nnot closed\n"} {
		if _, err := parseExamples(bad); err == nil {
			t.Errorf("parseExamples(%q) = nil error, want one", bad)
		}
	}
}

// TestDocsExamplesFail proves the runner fails the examples that are
// wrong: a misspelt variable, a refused key, a failing command and an
// unmarked example in a language it cannot run; and passes a right one.
func TestDocsExamplesFail(t *testing.T) {
	srv := newDocServer(t)
	models := func(header string) docExample {
		return docExample{Line: 1, Lang: "sh", Code: "curl http://127.0.0.1:8080/v1/models -H \"Authorization: Bearer " + header + "\"\n"}
	}
	for _, tc := range []struct {
		name    string
		ex      docExample
		wantErr string
	}{
		{"documented variable", models("$LAMBDACLAW_API_KEY"), ""},
		{"misspelt variable", models("$LAMBDACLAW_KEY"), "LAMBDACLAW_KEY: unbound variable"},
		{"refused key", models("lc_not_a_key"), "401"},
		{"failing command", docExample{Lang: "bash", Code: "lambdaclaw cron add --at 2001-01-01T00:00:00Z --message late\n"}, "in the past"},
		{"unmarked python", docExample{Lang: "python", Code: "print(1)\n"}, "no-test"},
		{"marked python", docExample{Lang: "python", NoTest: "no openai package here", Code: "print(1)\n"}, ""},
		{"data", docExample{Lang: "json", Code: "{\n"}, ""},
		{"node, documented variable", docExample{Lang: "js", Code: `import OpenAI from "openai";
const client = new OpenAI({ baseURL: "http://127.0.0.1:8080/v1", apiKey: process.env.LAMBDACLAW_API_KEY });
await client.models.list();
`}, ""},
		{"node, misspelt variable", docExample{Lang: "js", Code: `import OpenAI from "openai";
const client = new OpenAI({ baseURL: "http://127.0.0.1:8080/v1", apiKey: process.env.LAMBDACLAW_KEY ?? "unset" });
await client.models.list();
`}, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if docLangs[tc.ex.Lang] == "node" {
				requireClients(t)
			}
			err := runExample(context.Background(), tc.ex, srv)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("runExample: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("runExample = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// docLink is a markdown link's target: [text](target).
var docLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinks checks that every relative link of the pages names a file
// of the repository and, with #anchor, a heading of that page.
func TestDocsLinks(t *testing.T) {
	headings := map[string][]string{} // page → its anchors
	anchors := func(page string) ([]string, error) {
		if a, ok := headings[page]; ok {
			return a, nil
		}
		text, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			return nil, err
		}
		a, err := headingAnchors(string(text))
		headings[page] = a
		return a, err
	}
	for _, page := range docPages(t) {
		text, err := os.ReadFile(filepath.Join("..", page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docLink.FindAllStringSubmatch(withoutCode(string(text)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
				if _, err := os.Stat(filepath.Join("..", file)); err != nil {
					t.Errorf("%s: link %q: %v", page, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			a, err := anchors(file)
			if err != nil {
				t.Errorf("%s: link %q: %v", page, target, err)
				continue
			}
			if !slices.Contains(a, anchor) {
				t.Errorf("%s: link %q: %s has no heading with that anchor", page, target, file)
			}
		}
	}
}

// withoutCode blanks the fenced blocks and code spans of a markdown text,
// where brackets are no links.
func withoutCode(text string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, ""))
		}
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives a page's headings:
// lower case, punctuation dropped, spaces as hyphens, repeats numbered.
func headingAnchors(text string) ([]string, error) {
	var out []string
	seen := map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "```") {
			fenced = !fenced
			continue
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(title)), ""), " ", "-")
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("no headings")
	}
	return out, nil
}
