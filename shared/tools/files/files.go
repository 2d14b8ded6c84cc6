// Package files provides the read_file, write_file and list_dir agent tools.
// Every path is relative to the agent's workspace (tool.Env.Workspace, a
// filestore.FS), which confines it: "..", absolute paths and, locally,
// symbolic links that lead outside the workspace are refused by the file
// store, not by string matching alone.
package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// Limits of the file tools.
const (
	// MaxRead is the most text read_file returns per call.
	MaxRead = 256 << 10
	// MaxWrite is the largest content write_file accepts per call.
	MaxWrite = 1 << 20
	// MaxEntries is the most entries list_dir shows.
	MaxEntries = 1000
	// maxCounted is the most entries list_dir counts.
	maxCounted = 10 * MaxEntries
)

// ReadFile returns the read_file tool.
func ReadFile() tool.Tool { return readFile{} }

// WriteFile returns the write_file tool. Its writes keep within the
// limits of q, which the other tools that write into the workspaces share.
func WriteFile(q *workspace.Quota) tool.Tool { return writeFile{quota: q} }

// ListDir returns the list_dir tool.
func ListDir() tool.Tool { return listDir{} }

type readFile struct{}

func (readFile) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "read_file",
		Description: fmt.Sprintf("Read a text file from your workspace. Returns up to %d KiB per call; "+
			"for longer files the result says where it stopped, and you read on with offset.", MaxRead>>10),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace, e.g. \"notes/plan.md\"."},
    "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to start reading at. Default 0."},
    "limit": {"type": "integer", "minimum": 1, "maximum": ` + fmt.Sprint(MaxRead) + `, "description": "Most bytes to return. Default and maximum ` + fmt.Sprint(MaxRead) + `."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	}
}

func (readFile) Policy() tool.Policy {
	return tool.Policy{Effect: tool.Read}
}

func (readFile) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		Path   string `json:"path"`
		Offset int64  `json:"offset"`
		Limit  *int64 `json:"limit"`
	}
	if err := tool.DecodeArgs(args, &in, "path", "offset", "limit"); err != nil {
		return "", err
	}
	name, err := checkPath(in.Path)
	if err != nil {
		return "", err
	}
	if in.Offset < 0 {
		return "", fmt.Errorf(`"offset" must be 0 or more, got %d`, in.Offset)
	}
	limit := int64(MaxRead)
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > MaxRead {
			return "", fmt.Errorf(`"limit" must be between 1 and %d, got %d`, MaxRead, *in.Limit)
		}
		limit = *in.Limit
	}
	ws, err := openWorkspace(ctx, env)
	if err != nil {
		return "", err
	}
	e, err := ws.Stat(ctx, name)
	if err != nil {
		return "", describe("read", in.Path, err)
	}
	if err := regular(in.Path, e, "list_dir"); err != nil {
		return "", err
	}
	if in.Offset > e.Size {
		return "", fmt.Errorf("offset %d is past the end of %q, which has %d bytes", in.Offset, in.Path, e.Size)
	}
	// The port reads from the start: read up to the end of the window.
	data, e, err := ws.ReadFile(ctx, name, in.Offset+limit)
	if err != nil {
		if rerr := regular(in.Path, e, "list_dir"); rerr != nil && errors.Is(err, filestore.ErrNotFile) {
			return "", rerr
		}
		return "", describe("read", in.Path, err)
	}
	size := e.Size
	if in.Offset > size {
		return "", fmt.Errorf("offset %d is past the end of %q, which has %d bytes", in.Offset, in.Path, size)
	}
	if size == 0 {
		return fmt.Sprintf("(%s is empty)", in.Path), nil
	}
	if in.Offset == size {
		return fmt.Sprintf("(end of %s: it has %d bytes)", in.Path, size), nil
	}
	buf := data[min(in.Offset, int64(len(data))):]
	n := len(buf)
	buf = buf[:n]
	end := in.Offset + int64(n)
	if end < size {
		buf = trimPartialRune(buf)
		end = in.Offset + int64(len(buf))
	}
	if bytes.IndexByte(buf, 0) >= 0 {
		return "", fmt.Errorf("%q looks like a binary file (%d bytes); read_file only shows text", in.Path, size)
	}
	var out strings.Builder
	out.WriteString(strings.ToValidUTF8(string(buf), "\uFFFD"))
	if in.Offset > 0 || end < size {
		fmt.Fprintf(&out, "\n\n[showed bytes %d-%d of %d", in.Offset, end, size)
		if end < size {
			fmt.Fprintf(&out, "; truncated, call read_file with offset=%d to read on", end)
		}
		out.WriteString("]")
	}
	return out.String(), nil
}

// regular refuses anything but a regular file, pointing the model at the
// tool to use for directories.
func regular(name string, e filestore.Entry, dirTool string) error {
	switch {
	case e.IsDir():
		return fmt.Errorf("%q is a directory; use %s to see what it holds", name, dirTool)
	case !e.Mode.IsRegular():
		return fmt.Errorf("%q is not a regular file (%s)", name, fileKind(e.Mode))
	}
	return nil
}

// trimPartialRune drops an incomplete UTF-8 sequence cut off at the end of
// b, unless that would leave nothing.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) && i > 0 {
				return b[:i]
			}
			break
		}
	}
	return b
}

func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeIrregular != 0:
		return "irregular file"
	default:
		return "special file"
	}
}

type writeFile struct{ quota *workspace.Quota }

func (w writeFile) Definition() chat.ToolDef {
	l := w.quota.Limits()
	return chat.ToolDef{
		Name: "write_file",
		Description: fmt.Sprintf("Write text to a file in your workspace, creating parent directories as needed. "+
			"Replaces the whole file unless append is true. Content is limited to %d KiB per call, "+
			"a file to %s and the whole workspace to %s; a write that would go over is refused whole.",
			MaxWrite>>10, workspace.SizeText(l.MaxFileBytes), workspace.SizeText(l.WorkspaceQuotaBytes)),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace, e.g. \"notes/plan.md\"."},
    "content": {"type": "string", "description": "The text to write."},
    "append": {"type": "boolean", "description": "Add content to the end of the file instead of replacing it. Default false."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	}
}

func (writeFile) Policy() tool.Policy {
	return tool.Policy{Effect: tool.WriteShared, Idempotent: true}
}

func (w writeFile) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		Append  bool    `json:"append"`
	}
	if err := tool.DecodeArgs(args, &in, "path", "content", "append"); err != nil {
		return "", err
	}
	name, err := checkPath(in.Path)
	if err != nil {
		return "", err
	}
	if name == "." {
		return "", fmt.Errorf("%q names the workspace itself; give a file path", in.Path)
	}
	if in.Content == nil {
		return "", errors.New(`"content" is required (use "" to write an empty file)`)
	}
	if len(*in.Content) > MaxWrite {
		return "", fmt.Errorf("content is %d bytes, over the %d KiB limit per call; write it in parts with append=true", len(*in.Content), MaxWrite>>10)
	}
	ws, err := openWorkspace(ctx, env)
	if err != nil {
		return "", err
	}
	wr, err := w.quota.Begin(ctx, env)
	if err != nil {
		return "", err
	}
	defer wr.End()

	data := []byte(*in.Content)
	if in.Append {
		return appendTo(ctx, ws, wr, in.Path, name, data)
	}
	verb := "created"
	var old int64
	if e, err := ws.Stat(ctx, name); err == nil {
		if err := regular(in.Path, e, "list_dir"); err != nil {
			return "", err
		}
		old = e.Size
		verb = "replaced"
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return "", describe("write", in.Path, err)
	}
	if err := wr.Fit(in.Path, int64(len(data)), int64(len(data))-old); err != nil {
		return "", err
	}
	if _, err := ws.WriteFile(ctx, name, data, filestore.Any); err != nil {
		wr.Unknown()
		return "", describe("write", in.Path, err)
	}
	wr.Grew(int64(len(data)) - old)
	return fmt.Sprintf("%s %s (%d bytes)", verb, in.Path, len(data)), nil
}

// appendTo appends data to name, creating it when missing, as a
// filestore.Update: an append racing another process's lands after it,
// and one that would cross a limit is refused before anything is written.
func appendTo(ctx context.Context, ws filestore.FS, wr *workspace.Write, shown, name string, data []byte) (string, error) {
	var size int64
	if e, err := ws.Stat(ctx, name); err == nil {
		if err := regular(shown, e, "list_dir"); err != nil {
			return "", err
		}
		size = e.Size
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return "", describe("append to", shown, err)
	}
	grow := int64(len(data))
	if err := wr.Fit(shown, size+grow, grow); err != nil {
		return "", err
	}
	e, err := filestore.Update(ctx, ws, name, wr.MaxFile(), func(old []byte, _ bool) ([]byte, error) {
		if int64(len(old)) != size {
			// Changed by someone else since the check: check again.
			if err := wr.Fit(shown, int64(len(old))+grow, grow); err != nil {
				return nil, err
			}
		}
		return append(old, data...), nil
	})
	if errors.Is(err, workspace.ErrLimit) {
		return "", err
	}
	if err != nil {
		wr.Unknown()
		return "", describe("append to", shown, err)
	}
	wr.Grew(grow)
	return fmt.Sprintf("appended %d bytes to %s (now %d bytes)", len(data), shown, e.Size), nil
}

type listDir struct{}

func (listDir) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "list_dir",
		Description: fmt.Sprintf("List a directory of your workspace, one entry per line, sorted by name: "+
			"directories end with \"/\", files show their size. At most %d entries are shown.", MaxEntries),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory path relative to the workspace. Default \".\", the workspace itself."}
  },
  "additionalProperties": false
}`),
	}
}

func (listDir) Policy() tool.Policy {
	return tool.Policy{Effect: tool.Read}
}

func (listDir) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		Path *string `json:"path"`
	}
	if err := tool.DecodeArgs(args, &in, "path"); err != nil {
		return "", err
	}
	shown := "."
	if in.Path != nil && *in.Path != "" {
		shown = *in.Path
	}
	name, err := checkPath(shown)
	if err != nil {
		return "", err
	}
	ws, err := openWorkspace(ctx, env)
	if err != nil {
		return "", err
	}
	e, err := ws.Stat(ctx, name)
	if err != nil {
		return "", describe("list", shown, err)
	}
	if !e.IsDir() {
		return "", fmt.Errorf("%q is not a directory; use read_file to read a file", shown)
	}
	entries, err := ws.ReadDir(ctx, name, maxCounted+1)
	if err != nil {
		return "", describe("list", shown, err)
	}
	var out strings.Builder
	if len(entries) == 0 {
		fmt.Fprintf(&out, "%s is empty", shown)
		return out.String(), nil
	}
	count := fmt.Sprint(len(entries))
	if len(entries) > maxCounted {
		count = fmt.Sprintf("more than %d", maxCounted)
	}
	fmt.Fprintf(&out, "%s (%s entries)\n", shown, count)
	for i, e := range entries {
		if i == MaxEntries {
			if len(entries) > maxCounted {
				out.WriteString("... more entries not shown\n")
			} else {
				fmt.Fprintf(&out, "... %d more entries not shown\n", len(entries)-MaxEntries)
			}
			break
		}
		out.WriteString(entryLine(ctx, ws, name, e))
		out.WriteByte('\n')
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// entryLine formats one directory entry. Symbolic links are described by
// what they lead to inside the workspace; links leading out are marked.
func entryLine(ctx context.Context, ws filestore.FS, dir string, e filestore.Entry) string {
	n := e.Name
	link := ""
	if e.Mode&fs.ModeSymlink != 0 {
		var err error
		if e, err = ws.Stat(ctx, path.Join(dir, n)); err != nil {
			return n + " (symbolic link, target missing or outside the workspace)"
		}
		link = ", symbolic link"
	}
	switch {
	case e.IsDir():
		if link != "" {
			return n + "/ (symbolic link)"
		}
		return n + "/"
	case e.Mode.IsRegular():
		return fmt.Sprintf("%s (%d bytes%s)", n, e.Size, link)
	default:
		return fmt.Sprintf("%s (%s%s)", n, fileKind(e.Mode), link)
	}
}
