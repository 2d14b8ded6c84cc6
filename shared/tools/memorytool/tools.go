// Package memorytool connects agents to their memory (package memory):
//
//   - the tools memory_search, memory_get, memory_store and memory_forget
//     (seed 001 bc_memory: recall, get, store, forget), each scoped to the
//     calling agent, so that one agent never sees another's memories, and
//     to the owner of the calling session (tool.Env.Owner), so that one
//     user of an agent never sees what another told it;
//   - Files, which keeps each agent's workspace memory files searchable:
//     MEMORY.md as a core memory and the daily logs memory/YYYY-MM-DD.md
//     as daily memories, re-indexed when they change;
//   - Conversations, the agent.Recorder that keeps each exchange of a
//     durable session as a conversation memory of the session's owner.
//
// # Whose memories
//
// What a session stores (memory_store, and its conversations) belongs to
// the session's owner: only that owner's sessions find, read or forget it,
// and another owner may store under the same key without touching it. The
// workspace files are agent-wide, shared by all the agent's users. A tool
// call whose session has no owner (work that belongs to no one, such as an
// internal maintenance turn) searches and reads only agent-wide memories,
// and stores and forgets agent-wide ones: it never sees or changes a
// user's private memory, and what it stores is, like MEMORY.md, the
// agent's own. A session with an owner reads agent-wide memories but
// cannot forget them: they are not one user's to delete.
package memorytool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Key prefixes of the memories this package manages itself: the agent
// cannot store under them, and cannot forget a file's memory (it edits the
// file instead).
const (
	// FileKeyPrefix starts the keys of workspace files: "file:MEMORY.md",
	// "file:memory/2026-05-01.md".
	FileKeyPrefix = "file:"
	// ConversationKeyPrefix starts the keys of past exchanges: "run:<run id>".
	ConversationKeyPrefix = "run:"
)

// Limits of the tools' arguments.
const (
	// DefaultSearchLimit and MaxSearchLimit bound memory_search's hits.
	DefaultSearchLimit = 5
	MaxSearchLimit     = 20
	// MaxKeyLen is the longest key memory_store accepts, in bytes.
	MaxKeyLen = 200
	// MaxStoreText is the longest text memory_store accepts, in bytes:
	// memories are facts and notes; documents belong in files.
	MaxStoreText = 32 << 10
	// maxSlug is the most characters of a generated key taken from the
	// text's words.
	maxSlug = 48
)

var categoryNames = `"core", "daily", "conversation" or "custom"`

// Config configures the memory tools.
type Config struct {
	// Memory is where memories are kept and searched. Required.
	Memory *memory.Memory
	// Files, when set, brings the calling agent's workspace memory files
	// up to date in Memory before each memory_search.
	Files *Files
	// Log receives the failures of that update, which do not fail the
	// search; nil discards them.
	Log *slog.Logger
}

// Tools returns memory_search, memory_get, memory_store and
// memory_forget. memory_search and memory_get are read-only and need no
// approval; memory_store and memory_forget change the agent's own memory,
// so they need autonomy supervised, but no approval.
func Tools(c Config) ([]tool.Tool, error) {
	if c.Memory == nil {
		return nil, errors.New("memorytool: nil memory")
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return []tool.Tool{searchTool{c}, getTool{c}, storeTool{c}, forgetTool{c}}, nil
}

// agentOf returns the calling agent, which every tool is scoped to, as is
// env.Owner.
func agentOf(env tool.Env) (string, error) {
	if strings.TrimSpace(env.Agent) == "" {
		return "", errors.New("memory tools need to know which agent calls them, and this call names none")
	}
	return env.Agent, nil
}

// checkKey validates a key given by the model.
func checkKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return errors.New(`"key" must not be empty`)
	case len(key) > MaxKeyLen:
		return fmt.Errorf(`"key" is %d bytes, over the %d-byte limit`, len(key), MaxKeyLen)
	case strings.ContainsFunc(key, unicode.IsControl):
		return errors.New(`"key" must not contain control characters such as newlines`)
	}
	return nil
}

// toJSON renders v on one line without HTML escaping, for the model.
func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// when formats a memory's time for the model.
func when(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// searchTool is memory_search.
type searchTool struct{ c Config }

type searchArgs struct {
	Query    string  `json:"query"`
	Limit    *int    `json:"limit"`
	Category *string `json:"category"`
}

// searchHit is one hit as the model sees it.
type searchHit struct {
	Key      string          `json:"key"`
	Category memory.Category `json:"category"`
	Source   string          `json:"source,omitempty"`
	Score    float64         `json:"score"`
	Updated  string          `json:"updated"`
	Snippet  string          `json:"snippet"`
}

// searchOutput is memory_search's result.
type searchOutput struct {
	Method string      `json:"method"`
	Hits   []searchHit `json:"hits"`
	Note   string      `json:"note,omitempty"`
}

func (searchTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "memory_search",
		Description: "Search your long-term memory: facts you stored with memory_store, your MEMORY.md and daily logs, and past conversations. " +
			"Facts and conversations are those of the person you are talking with; MEMORY.md and the daily logs are shared by everyone you talk with. " +
			"Search by meaning and by keywords together; phrase the query as what you want to know. " +
			"Returns the best hits with their key, category, source, score (0 to 1, recent memories rank higher) and a snippet, " +
			"and the method used (hybrid, or bm25_fallback when only keyword search was possible). Use memory_get for a memory's whole text.",
		Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What to look for, in your own words."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Most hits to return (default %d)."},
    "category": {"type": "string", "enum": ["core", "daily", "conversation", "custom"], "description": "Search only this category: core (MEMORY.md and lasting facts), daily (daily logs), conversation (past exchanges), custom (your notes)."}
  },
  "required": ["query"],
  "additionalProperties": false
}`, MaxSearchLimit, DefaultSearchLimit)),
	}
}

func (searchTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.Read}
}

func (s searchTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in searchArgs
	if err := tool.DecodeArgs(args, &in, "query", "limit", "category"); err != nil {
		return "", err
	}
	agent, err := agentOf(env)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(in.Query) == "" {
		return "", errors.New(`"query" is required: say what you want to find`)
	}
	limit := DefaultSearchLimit
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > MaxSearchLimit {
			return "", fmt.Errorf(`"limit" must be between 1 and %d, got %d`, MaxSearchLimit, *in.Limit)
		}
		limit = *in.Limit
	}
	var f memory.Filter
	if in.Category != nil {
		c := memory.Category(*in.Category)
		if !c.Valid() {
			return "", fmt.Errorf(`"category" must be %s, got %q`, categoryNames, *in.Category)
		}
		f.Categories = []memory.Category{c}
	}
	if s.c.Files != nil && env.Workspace != nil {
		if _, err := s.c.Files.Sync(ctx, agent, env.Workspace); err != nil {
			s.c.Log.Warn("memory files not indexed", "agent", agent, "error", err)
		}
	}
	res, err := s.c.Memory.Search(ctx, agent, env.Owner, in.Query, memory.SearchOptions{Limit: limit, Filter: f})
	if err != nil {
		return "", fmt.Errorf("memory search failed: %v", err)
	}
	out := searchOutput{Method: res.Method, Hits: make([]searchHit, len(res.Hits))}
	for i, h := range res.Hits {
		out.Hits[i] = searchHit{
			Key: h.Entry.Key, Category: h.Entry.Category, Source: h.Entry.Source,
			Score: math.Round(h.Score*1000) / 1000, Updated: when(h.Entry.UpdatedAt), Snippet: h.Snippet,
		}
	}
	switch {
	case res.Method == memory.MethodNone:
		out.Note = "memory search is unavailable right now; try again later"
	case len(out.Hits) == 0 && res.Method == memory.MethodBM25Fallback:
		out.Note = "no memory matches; only keyword search is available, so try other words for the same thing"
	case len(out.Hits) == 0:
		out.Note = "no memory matches"
	}
	return toJSON(out)
}

// getTool is memory_get.
type getTool struct{ c Config }

type keyArgs struct {
	Key *string `json:"key"`
}

// entryOutput is a whole memory as the model sees it.
type entryOutput struct {
	Key      string          `json:"key"`
	Category memory.Category `json:"category"`
	Source   string          `json:"source,omitempty"`
	Created  string          `json:"created"`
	Updated  string          `json:"updated"`
	Text     string          `json:"text"`
}

func (getTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name:        "memory_get",
		Description: "Read one memory in full by its key (keys come from memory_search or memory_store).",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "key": {"type": "string", "description": "The memory's key."}
  },
  "required": ["key"],
  "additionalProperties": false
}`),
	}
}

func (getTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.Read}
}

func (g getTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	key, agent, err := decodeKey(args, env)
	if err != nil {
		return "", err
	}
	e, err := g.c.Memory.Get(ctx, agent, env.Owner, key)
	if errors.Is(err, memory.ErrNotFound) {
		return "", fmt.Errorf("there is no memory with key %q; memory_search finds memories and their keys", key)
	}
	if err != nil {
		return "", fmt.Errorf("reading memory %q failed: %v", key, err)
	}
	return toJSON(entryOutput{
		Key: e.Key, Category: e.Category, Source: e.Source,
		Created: when(e.CreatedAt), Updated: when(e.UpdatedAt), Text: e.Text,
	})
}

// decodeKey reads the arguments of memory_get and memory_forget.
func decodeKey(args json.RawMessage, env tool.Env) (key, agent string, err error) {
	var in keyArgs
	if err := tool.DecodeArgs(args, &in, "key"); err != nil {
		return "", "", err
	}
	if agent, err = agentOf(env); err != nil {
		return "", "", err
	}
	if in.Key == nil {
		return "", "", errors.New(`"key" is required`)
	}
	if err := checkKey(*in.Key); err != nil {
		return "", "", err
	}
	return *in.Key, agent, nil
}

// storeTool is memory_store.
type storeTool struct{ c Config }

type storeArgs struct {
	Key      *string `json:"key"`
	Text     string  `json:"text"`
	Category *string `json:"category"`
}

func (storeTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "memory_store",
		Description: "Remember something for later conversations: a fact about the user, a decision, a preference, an open task. " +
			"Write it so that it makes sense on its own. Storing under an existing key replaces that memory; without a key one is made from the text. " +
			"It is kept for the person you are talking with: others you talk with never see it (what everyone should know belongs in MEMORY.md). " +
			fmt.Sprintf("Text is limited to %d KiB.", MaxStoreText>>10),
		Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "text": {"type": "string", "description": "What to remember."},
    "key": {"type": "string", "maxLength": %d, "description": "A short name for the memory, such as user-coffee-preference; reuse a key to update that memory. Made from the text when omitted."},
    "category": {"type": "string", "enum": ["core", "daily", "conversation", "custom"], "description": "core for lasting facts (they never fade in search), custom for other notes (the default)."}
  },
  "required": ["text"],
  "additionalProperties": false
}`, MaxKeyLen)),
	}
}

func (storeTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.WriteOwn}
}

func (s storeTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in storeArgs
	if err := tool.DecodeArgs(args, &in, "key", "text", "category"); err != nil {
		return "", err
	}
	agent, err := agentOf(env)
	if err != nil {
		return "", err
	}
	switch {
	case strings.TrimSpace(in.Text) == "":
		return "", errors.New(`"text" is required: say what to remember`)
	case len(in.Text) > MaxStoreText:
		return "", fmt.Errorf(`"text" is %d bytes, over the %d KiB limit; keep the essentials or split it into several memories`, len(in.Text), MaxStoreText>>10)
	case strings.ContainsRune(in.Text, 0):
		return "", errors.New(`"text" contains a NUL byte; memories hold text`)
	}
	cat := memory.Custom
	if in.Category != nil {
		cat = memory.Category(*in.Category)
		if !cat.Valid() {
			return "", fmt.Errorf(`"category" must be %s, got %q`, categoryNames, *in.Category)
		}
	}
	key := KeyFor(in.Text)
	if in.Key != nil {
		key = *in.Key
		if err := checkKey(key); err != nil {
			return "", err
		}
		for _, p := range []string{FileKeyPrefix, ConversationKeyPrefix} {
			if strings.HasPrefix(key, p) {
				return "", fmt.Errorf("keys starting with %q are kept up to date automatically; choose another key", p)
			}
		}
	}
	// Get may find an agent-wide memory under the key; storing makes the
	// owner a memory of their own, which does not replace it.
	old, err := s.c.Memory.Get(ctx, agent, env.Owner, key)
	existed := err == nil && old.Owner == env.Owner
	if err != nil && !errors.Is(err, memory.ErrNotFound) {
		return "", fmt.Errorf("storing memory %q failed: %v", key, err)
	}
	err = s.c.Memory.Store(ctx, memory.Entry{Agent: agent, Owner: env.Owner, Key: key, Text: in.Text, Category: cat, Source: "tool"})
	var note string
	switch {
	case errors.Is(err, memory.ErrNotEmbedded):
		note = "; the embedding service failed, so for now it is found by keyword search only"
	case err != nil:
		return "", fmt.Errorf("storing memory %q failed: %v", key, err)
	}
	if existed {
		return fmt.Sprintf("updated memory %q (%s): the new text replaced the old%s", key, cat, note), nil
	}
	return fmt.Sprintf("stored memory %q (%s)%s", key, cat, note), nil
}

// KeyFor is the key memory_store gives a text stored without one: its
// first words, lower-cased and joined by '-', then the first 8 hex digits
// of its SHA-256, so the same text always gets the same key
// ("user-prefers-dark-roast-coffee-3fa9c2d1").
func KeyFor(text string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}) {
		if b.Len() > 0 {
			if b.Len()+1+len(w) > maxSlug {
				break
			}
			b.WriteByte('-')
		} else if len(w) > maxSlug {
			w = truncateUTF8(w, maxSlug)
		}
		b.WriteString(w)
	}
	sum := sha256.Sum256([]byte(text))
	if b.Len() == 0 {
		b.WriteString("memory")
	}
	return b.String() + "-" + hex.EncodeToString(sum[:4])
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// forgetTool is memory_forget.
type forgetTool struct{ c Config }

func (forgetTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name:        "memory_forget",
		Description: "Delete one memory by its key, for good: when it is wrong, outdated, or the user asks you to forget it.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "key": {"type": "string", "description": "The key of the memory to delete."}
  },
  "required": ["key"],
  "additionalProperties": false
}`),
	}
}

func (forgetTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.WriteOwn}
}

func (f forgetTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	key, agent, err := decodeKey(args, env)
	if err != nil {
		return "", err
	}
	if name, ok := strings.CutPrefix(key, FileKeyPrefix); ok {
		return "", fmt.Errorf("memory %q mirrors your workspace file %s: edit the file instead (workspace_memory), and the memory follows it", key, name)
	}
	e, err := f.c.Memory.Get(ctx, agent, env.Owner, key)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Sprintf("there is no memory with key %q: nothing to forget", key), nil
	case err != nil:
		return "", fmt.Errorf("forgetting memory %q failed: %v", key, err)
	case e.Owner != env.Owner:
		return "", fmt.Errorf("memory %q is shared by everyone who talks with this agent, so it cannot be forgotten in this conversation", key)
	}
	if err := f.c.Memory.Forget(ctx, agent, env.Owner, key); err != nil {
		return "", fmt.Errorf("forgetting memory %q failed: %v", key, err)
	}
	return fmt.Sprintf("forgot memory %q", key), nil
}
