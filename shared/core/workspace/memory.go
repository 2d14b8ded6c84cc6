package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// MaxMemoryWrite is the largest content one workspace_memory call may write,
// and the largest a memory file may grow to by appending.
const MaxMemoryWrite = 256 << 10

// maxDailyListed is how many daily logs list_daily shows, newest first.
const maxDailyListed = 100

// editable are the bootstrap files read_bootstrap and update_bootstrap
// accept (seed 004).
var editable = []string{"IDENTITY.md", "USER.md", "SOUL.md", "TOOLS.md", "AGENTS.md"}

// actionArgs lists the arguments each action takes besides "action".
var actionArgs = map[string][]string{
	"read":               nil,
	"append":             {"content"},
	"replace":            {"content"},
	"read_daily":         {"date"},
	"append_daily":       {"content", "date"},
	"list_daily":         nil,
	"read_bootstrap":     {"file"},
	"update_bootstrap":   {"file", "content"},
	"complete_bootstrap": nil,
}

var actionNames = []string{"read", "append", "replace", "read_daily", "append_daily", "list_daily", "read_bootstrap", "update_bootstrap", "complete_bootstrap"}

// MemoryTool returns the workspace_memory tool, with which an agent reads
// and updates its MEMORY.md, its daily logs and its bootstrap files, and
// deletes BOOTSTRAP.md when its first-run ritual is done. Every path is
// a fixed name inside tool.Env.Workspace, never from the model's
// input. Its writes keep within the limits of q, shared with write_file,
// besides the MaxMemoryWrite bound of a memory file.
func MemoryTool(q *Quota) tool.Tool { return memoryTool{now: time.Now, quota: q} }

type memoryTool struct {
	now   func() time.Time
	quota *Quota
}

type memoryArgs struct {
	Action  string  `json:"action"`
	Content *string `json:"content"`
	Date    *string `json:"date"`
	File    *string `json:"file"`
}

func (memoryTool) Definition() chat.ToolDef {
	enum := func(values []string) string {
		b, _ := json.Marshal(values)
		return string(b)
	}
	return chat.ToolDef{
		Name: "workspace_memory",
		Description: "Keep your memory in your workspace. " +
			"read, append, replace: MEMORY.md, your long-term memory (append adds content at the end, replace rewrites the whole file). " +
			"read_daily, append_daily, list_daily: daily logs memory/YYYY-MM-DD.md; date defaults to today and append_daily adds a timestamped line. " +
			"read_bootstrap, update_bootstrap: one of your bootstrap files, named by file (update_bootstrap rewrites the whole file). " +
			"complete_bootstrap: delete BOOTSTRAP.md once you have done what it asks, ending your first-run ritual for good. " +
			fmt.Sprintf("Content is limited to %d KiB.", MaxMemoryWrite>>10),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ` + enum(actionNames) + `, "description": "What to do."},
    "content": {"type": "string", "description": "Text to write: for append, replace, append_daily and update_bootstrap."},
    "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "description": "Day of the log, YYYY-MM-DD, for read_daily and append_daily. Default today."},
    "file": {"type": "string", "enum": ` + enum(editable) + `, "description": "Bootstrap file, for read_bootstrap and update_bootstrap."}
  },
  "required": ["action"],
  "additionalProperties": false
}`),
	}
}

func (memoryTool) Policy() tool.Policy {
	// Every write is seen by every key of the agent: MEMORY.md and the
	// bootstrap files shape each one's system prompt.
	return tool.Policy{Effect: tool.WriteShared, ActionArg: "action", Actions: map[string]tool.Effect{
		"read": tool.Read, "read_daily": tool.Read, "list_daily": tool.Read, "read_bootstrap": tool.Read,
		"append": tool.WriteShared, "replace": tool.WriteShared, "append_daily": tool.WriteShared,
		"update_bootstrap": tool.WriteShared, "complete_bootstrap": tool.WriteShared,
	}}
}

func (m memoryTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in memoryArgs
	if err := tool.DecodeArgs(args, &in, "action", "content", "date", "file"); err != nil {
		return "", err
	}
	if err := in.check(); err != nil {
		return "", err
	}
	ws, err := Open(ctx, env, "it has no memory files")
	if err != nil {
		return "", err
	}

	now := m.now()
	var wr *Write
	switch in.Action {
	case "append", "replace", "append_daily", "update_bootstrap":
		if wr, err = m.quota.Begin(ctx, env); err != nil {
			return "", err
		}
		defer wr.End()
	}
	switch in.Action {
	case "read":
		out, err := readShown(ctx, ws, MemoryFile, MemoryFile)
		if errors.Is(err, fs.ErrNotExist) {
			return MemoryFile + " is empty", nil
		}
		return out, err
	case "append":
		size, err := appendText(ctx, ws, wr, MemoryFile, MemoryFile, "", *in.Content)
		if err != nil {
			return "", explain(MemoryFile, err, "condense it with replace first")
		}
		return fmt.Sprintf("appended %d bytes to %s (now %d bytes)", len(*in.Content), MemoryFile, size), nil
	case "replace":
		if err := writeWhole(ctx, ws, wr, MemoryFile, MemoryFile, []byte(*in.Content)); err != nil {
			return "", explain(MemoryFile, err, "")
		}
		return fmt.Sprintf("replaced %s (%d bytes)", MemoryFile, len(*in.Content)), nil
	case "read_daily":
		date, err := in.date(now)
		if err != nil {
			return "", err
		}
		name := dailyPath(date)
		out, err := readShown(ctx, ws, name, name)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("there is no daily log for %s", date), nil
		}
		return out, err
	case "append_daily":
		date, err := in.date(now)
		if err != nil {
			return "", err
		}
		name := dailyPath(date)
		line := "- " + now.Format("15:04") + " " + strings.ReplaceAll(strings.TrimSpace(*in.Content), "\n", "\n  ")
		size, err := appendText(ctx, ws, wr, name, name, "# "+date+"\n\n", line)
		if err != nil {
			return "", explain(name, err, "start a new day's log or condense this one")
		}
		return fmt.Sprintf("added to %s (now %d bytes): %s", name, size, firstLine(line)), nil
	case "list_daily":
		return listDaily(ctx, ws)
	case "read_bootstrap":
		out, err := readShown(ctx, ws, *in.File, *in.File)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("%s does not exist yet; update_bootstrap creates it", *in.File), nil
		}
		return out, err
	case "update_bootstrap":
		if err := writeWhole(ctx, ws, wr, *in.File, *in.File, []byte(*in.Content)); err != nil {
			return "", explain(*in.File, err, "")
		}
		return fmt.Sprintf("replaced %s (%d bytes)", *in.File, len(*in.Content)), nil
	case "complete_bootstrap":
		return completeBootstrap(ctx, ws)
	}
	return "", fmt.Errorf("unknown action %q", in.Action)
}

// completeBootstrap deletes BOOTSTRAP.md and nothing else. It is
// idempotent: without the file the ritual is already completed. A symbolic
// link named BOOTSTRAP.md is removed itself, never what it points to.
func completeBootstrap(ctx context.Context, ws filestore.FS) (string, error) {
	err := ws.Remove(ctx, BootstrapFile)
	if errors.Is(err, fs.ErrNotExist) {
		return "the first-run ritual is already completed: there is no " + BootstrapFile, nil
	}
	if err != nil {
		return "", explain(BootstrapFile, err, "")
	}
	return "deleted " + BootstrapFile + ": the first-run ritual is completed and will not be shown again", nil
}

// check validates the arguments against the action before anything is
// touched: unknown actions, missing or extra arguments, oversized content
// and files outside the editable set are refused.
func (in *memoryArgs) check() error {
	if in.Action == "" {
		return fmt.Errorf(`"action" is required: one of %s`, strings.Join(actionNames, ", "))
	}
	want, ok := actionArgs[in.Action]
	if !ok {
		return fmt.Errorf("unknown action %q: use one of %s", in.Action, strings.Join(actionNames, ", "))
	}
	given := map[string]bool{"content": in.Content != nil, "date": in.Date != nil, "file": in.File != nil}
	for _, arg := range []string{"content", "date", "file"} {
		takes := slices.Contains(want, arg)
		if given[arg] && !takes {
			return fmt.Errorf("action %s does not take %q", in.Action, arg)
		}
		if !given[arg] && takes && arg != "date" {
			return fmt.Errorf("action %s needs %q", in.Action, arg)
		}
	}
	if in.Content != nil {
		if len(*in.Content) > MaxMemoryWrite {
			return fmt.Errorf("content is %d bytes, over the %d KiB limit", len(*in.Content), MaxMemoryWrite>>10)
		}
		if strings.ContainsRune(*in.Content, 0) {
			return errors.New("content contains a NUL byte; memory files hold text")
		}
		if (in.Action == "append" || in.Action == "append_daily") && strings.TrimSpace(*in.Content) == "" {
			return fmt.Errorf("action %s needs non-empty content", in.Action)
		}
	}
	if in.File != nil && !slices.Contains(editable, *in.File) {
		return fmt.Errorf("file %q cannot be used here: use one of %s", *in.File, strings.Join(editable, ", "))
	}
	return nil
}

// date returns the requested day, YYYY-MM-DD, defaulting to now's.
func (in *memoryArgs) date(now time.Time) (string, error) {
	if in.Date == nil || *in.Date == "" {
		return now.Format(dateLayout), nil
	}
	if !validDate(*in.Date) {
		return "", fmt.Errorf("date %q is not a day in the form YYYY-MM-DD", *in.Date)
	}
	return *in.Date, nil
}

// validDate reports whether s is a real calendar day written YYYY-MM-DD.
func validDate(s string) bool {
	if len(s) != len(dateLayout) {
		return false
	}
	t, err := time.Parse(dateLayout, s)
	return err == nil && t.Format(dateLayout) == s
}

// dailyPath returns the name of a daily log in the workspace.
func dailyPath(date string) string { return DailyDir + "/" + date + ".md" }

// readShown reads a memory file for the model. A missing file gives an
// error matching fs.ErrNotExist for the caller to phrase.
func readShown(ctx context.Context, ws filestore.FS, name, shown string) (string, error) {
	text, truncated, err := readCapped(ctx, ws, name, MaxMemoryWrite)
	if errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err != nil {
		return "", explain(shown, err, "")
	}
	if strings.TrimSpace(text) == "" {
		return fmt.Sprintf("%s is empty", shown), nil
	}
	if truncated {
		text += fmt.Sprintf("\n\n[%s is longer than %d KiB; the rest is not shown]", shown, MaxMemoryWrite>>10)
	}
	return text, nil
}

// listDaily lists the daily logs, newest first.
func listDaily(ctx context.Context, ws filestore.FS) (string, error) {
	logs, err := DailyLogs(ctx, ws)
	if err != nil {
		return "", explain(DailyDir, err, "")
	}
	if len(logs) == 0 {
		return "there are no daily logs yet", nil
	}
	slices.Reverse(logs)
	var b strings.Builder
	fmt.Fprintf(&b, "%d daily logs, newest first:\n", len(logs))
	for i, l := range logs {
		if i == maxDailyListed {
			fmt.Fprintf(&b, "... %d older logs not shown\n", len(logs)-maxDailyListed)
			break
		}
		fmt.Fprintf(&b, "%s (%d bytes)\n", l.Date, l.Size)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// DailyLog is one daily log of a workspace, memory/YYYY-MM-DD.md.
type DailyLog struct {
	// Date is the day of the log, YYYY-MM-DD.
	Date string
	// Size is the length of the file in bytes.
	Size int64
}

// maxDailyLogs bounds the daily logs DailyLogs reads.
const maxDailyLogs = 100000

// DailyLogs returns the daily logs of the workspace ws, oldest first.
// Files in memory/ that are not regular files named after a calendar day
// are left out; a workspace without memory/ has none.
func DailyLogs(ctx context.Context, ws filestore.FS) ([]DailyLog, error) {
	entries, err := ws.ReadDir(ctx, DailyDir, maxDailyLogs)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := ws.Stat(ctx, "."); err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var logs []DailyLog
	for _, e := range entries {
		date, ok := strings.CutSuffix(e.Name, ".md")
		if !ok || !validDate(date) || e.Mode.Type() != 0 {
			continue
		}
		logs = append(logs, DailyLog{Date: date, Size: e.Size})
	}
	return logs, nil
}

// explain turns a file error into a message for the model without host
// paths; hint, when set, says how to get past a size limit.
func explain(shown string, err error, hint string) error {
	var large *tooLargeError
	var pe *fs.PathError
	switch {
	case errors.Is(err, ErrLimit):
		return err
	case errors.As(err, &large):
		msg := fmt.Sprintf("%s would grow to %d bytes, over the %d KiB limit", shown, large.size, large.limit>>10)
		if hint != "" {
			msg += "; " + hint
		}
		return errors.New(msg)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot use %s: permission denied", shown)
	case errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes"):
		return fmt.Errorf("cannot use %s: it is a symbolic link leading outside the workspace", shown)
	case errors.Is(err, filestore.ErrNotFile):
		return fmt.Errorf("cannot use %s: it is not a regular file", shown)
	case errors.Is(err, filestore.ErrConflict):
		return fmt.Errorf("cannot write %s: it kept changing while this write was made; try again", shown)
	case errors.As(err, &pe):
		return fmt.Errorf("cannot use %s: %v", shown, pe.Err)
	}
	return fmt.Errorf("cannot use %s: %v", shown, err)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
