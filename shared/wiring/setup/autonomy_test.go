package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/files"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/memorytool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// What the loop does with one call of a tool action at one autonomy.
const (
	runs    = "runs"    // offered, and runs without asking
	asks    = "asks"    // offered, asks a person, and runs after /yes
	refused = "refused" // offered (another action of the tool may run), refused
	hidden  = "hidden"  // not offered, and refused if called anyway
)

// autonomyRow is one tool action: what the loop does with a call of it at
// read_only, supervised and full, and whether a call interrupted by a
// restart may run again (tool.Policy.Retryable).
type autonomyRow struct {
	readOnly, supervised, full string
	retry                      bool
}

// The table of issue 23: every action of every tool an agent gets (the
// built-in tools as the local server and the step function make them, and
// MCP tools with and without trusted hints) × autonomy, through the real
// loop. A tool or action without a row fails the test, so a new one
// cannot go unjudged.
var autonomyTable = map[string]autonomyRow{
	"read_file":     {runs, runs, runs, true},
	"list_dir":      {runs, runs, runs, true},
	"load_skill":    {runs, runs, runs, true},
	"web_fetch":     {runs, runs, runs, true}, // a GET behind the SSRF rules is a read
	"web_search":    {runs, runs, runs, true}, // a query to the configured provider changes nothing
	"memory_get":    {runs, runs, runs, true},
	"memory_search": {runs, runs, runs, true},

	"memory_store":  {hidden, runs, runs, false}, // the owner's own memories
	"memory_forget": {hidden, runs, runs, false},
	"schedule":      {hidden, runs, runs, false}, // the owner's own jobs
	"send_file":     {hidden, runs, runs, false}, // to the owner's own conversation, once

	"write_file": {hidden, asks, runs, true}, // the shared workspace; writing the same bytes again is harmless
	"exec":       {hidden, asks, runs, false},

	"workspace_memory read":               {runs, runs, runs, true},
	"workspace_memory read_daily":         {runs, runs, runs, true},
	"workspace_memory list_daily":         {runs, runs, runs, true},
	"workspace_memory read_bootstrap":     {runs, runs, runs, true},
	"workspace_memory append":             {refused, asks, runs, false},
	"workspace_memory replace":            {refused, asks, runs, false},
	"workspace_memory append_daily":       {refused, asks, runs, false},
	"workspace_memory update_bootstrap":   {refused, asks, runs, false},
	"workspace_memory complete_bootstrap": {refused, asks, runs, false},

	// The hints of a server the operator does not trust count for nothing.
	"plain__lookup": {hidden, asks, runs, false},
	"plain__put":    {hidden, asks, runs, false},
	"plain__send":   {hidden, asks, runs, false},
	// A trusted server's readOnlyHint makes a read, its idempotentHint
	// a call that may run again.
	"trusted__lookup": {runs, runs, runs, true},
	"trusted__put":    {hidden, asks, runs, true},
	"trusted__send":   {hidden, asks, runs, false},
}

// mcpTestServer serves, over streamable HTTP, lookup (readOnlyHint and
// idempotentHint), put (idempotentHint) and send (no hints).
func mcpTestServer(t *testing.T) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	for name, ann := range map[string]*sdk.ToolAnnotations{
		"lookup": {ReadOnlyHint: true, IdempotentHint: true},
		"put":    {IdempotentHint: true},
		"send":   nil,
	} {
		s.AddTool(&sdk.Tool{Name: name, Annotations: ann, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " done"}}}, nil
			})
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// productAgent is the agent "a" as the local server builds it: every
// built-in tool (exec on a backend that records its commands), the memory
// tools, and the tools of two MCP servers, one whose hints are trusted.
func productAgent(t *testing.T) *agent.Agent {
	home := t.TempDir()
	url := mcpTestServer(t)
	cfg := &config.Config{
		Providers: []config.Provider{{Name: "p", BaseURL: "http://127.0.0.1:1/v1", Model: "m"}},
		MCP: config.MCP{Servers: map[string]config.MCPServer{
			"plain":   {URL: url},
			"trusted": {URL: url, TrustReadOnlyHints: true},
		}},
		Tools: config.Tools{WebSearch: &config.WebSearch{Provider: "searxng", URL: "http://127.0.0.1:1"}},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	quota, err := agentset.Quota(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := agentset.Tools(cfg, skill.NewCatalog(""), quota, db.Schedule(nil))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := ExecTool(cfg, &recordingBackend{}, quota)
	if err != nil {
		t.Fatal(err)
	}
	tools = append(tools, files.SendFile(&media.Store{FS: osroot.New(home)}, nil))
	mem, err := memory.New(db.MemoryIndex(), memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	memTools, err := memorytool.Tools(memorytool.Config{Memory: mem})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(t.Context(), cfg, osroot.New(home), slices.Concat(tools, []tool.Tool{exec}, memTools), EnvAWS)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := MCP(cfg.MCP, func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	UseMCP(b, reg)
	if _, err := b.CreateWorkspaces(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	a, err := b.Build("a")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// recordingBackend stands for the sandbox: it runs nothing.
type recordingBackend struct{}

func (recordingBackend) Exec(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
	return sandbox.Result{Stdout: "ran " + req.Command}, nil
}
func (recordingBackend) Probe(context.Context) error { return nil }

// actions returns the actions of t: "" for a tool of one action, else
// each value its definition's schema allows for its policy's ActionArg,
// checked to be those its policy declares.
func actions(t *testing.T, tl tool.Tool) []string {
	p := tl.Policy()
	if p.ActionArg == "" {
		return []string{""}
	}
	var schema struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Definition().Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	enum := slices.Sorted(slices.Values(schema.Properties[p.ActionArg].Enum))
	if declared := slices.Sorted(maps.Keys(p.Actions)); !slices.Equal(enum, declared) {
		t.Errorf("%s: the schema's actions %v are not the policy's %v", tl.Definition().Name, enum, declared)
	}
	return enum
}

// eventLog keeps the tool calls the loop started.
type eventLog struct {
	mu      sync.Mutex
	started map[string][]string // by run: the tools started
}

func (e *eventLog) Emit(ev obs.Event) {
	if ev.Type != obs.ToolCallStart {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range ev.Attrs {
		if a.Key == "tool_name" {
			e.started[ev.RunID] = append(e.started[ev.RunID], a.Value.String())
		}
	}
}

func (e *eventLog) ran(runID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.started[runID]) > 0
}

// scripted calls one tool, then answers, and keeps the tools it was
// offered.
type scripted struct {
	mu      sync.Mutex
	call    chat.ToolCall
	offered []string
	n       int
}

func (s *scripted) Name() string { return "scripted" }
func (s *scripted) Generate(_ context.Context, req llm.Request, _ llm.OnDelta) (llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.n == 1 {
		for _, d := range req.Tools {
			s.offered = append(s.offered, d.Name)
		}
		return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{s.call}}}, nil
	}
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "done"}}, nil
}

// outcome runs one call of action of tool name at autonomy through the
// loop, in a session where a person can be asked, answering /yes if it
// is asked, and says what happened.
func outcome(t *testing.T, a agent.Agent, name, action string, autonomy tool.Autonomy) string {
	args := `{}`
	if action != "" {
		args = fmt.Sprintf(`{"action":%q,"file":"SOUL.md","content":"x"}`, action)
	}
	p := &scripted{call: chat.ToolCall{ID: "c1", Name: name, Arguments: args}}
	a.Provider = p
	events := &eventLog{started: map[string][]string{}}
	loop := &agent.Loop{Store: memstore.New(), Agents: agent.Registry{"a": &a}, Events: events, ToolTimeout: 10 * time.Second}
	ctx := t.Context()
	st, err := loop.Enqueue(ctx, agent.Input{SessionID: "s", Agent: "a", Owner: "key:k1", Autonomy: autonomy, Interactive: true,
		Messages: []chat.Message{{Role: chat.User, Content: "go"}}})
	if err != nil {
		t.Fatal(err)
	}
	asked := false
	for i := 0; st.Step != agent.StepDone; i++ {
		if i > 20 {
			t.Fatalf("%s %s at %s: the run did not end; at step %s", name, action, autonomy, st.Step)
		}
		if st.Parked() {
			if asked || events.ran(st.RunID) {
				t.Fatalf("%s %s at %s: asked twice, or after running", name, action, autonomy)
			}
			asked = true
			ap, err := loop.PendingApproval(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if err := loop.Answer(ctx, ap, agent.Yes); err != nil {
				t.Fatal(err)
			}
		}
		if st, err = loop.Step(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	offered := slices.Contains(p.offered, name)
	switch ran := events.ran(st.RunID); {
	case asked && ran && offered:
		return asks
	case !asked && ran && offered:
		return runs
	case !asked && !ran && offered:
		return refused
	case !asked && !ran && !offered:
		return hidden
	}
	return fmt.Sprintf("offered %v, asked %v, ran %v", offered, asked, events.ran(st.RunID))
}

// TestAutonomyTable holds every tool action an agent gets to the table.
func TestAutonomyTable(t *testing.T) {
	a := productAgent(t)
	reg := a.Registry()
	got := map[string]autonomyRow{}
	for _, d := range reg.Definitions() {
		tl, _ := reg.Get(d.Name)
		for _, action := range actions(t, tl) {
			row := d.Name
			args := json.RawMessage(`{}`)
			if action != "" {
				row += " " + action
				args = json.RawMessage(fmt.Sprintf(`{"action":%q}`, action))
			}
			got[row] = autonomyRow{
				readOnly:   outcome(t, *a, d.Name, action, tool.ReadOnly),
				supervised: outcome(t, *a, d.Name, action, tool.Supervised),
				full:       outcome(t, *a, d.Name, action, tool.Full),
				retry:      tl.Policy().Retryable(args),
			}
		}
	}
	if diff := cmp.Diff(autonomyTable, got, cmp.AllowUnexported(autonomyRow{})); diff != "" {
		t.Errorf("tool actions × autonomy (-table +loop):\n%s", diff)
	}
}
