// Package files provides the read_file, write_file and list_dir agent tools.
// Every path is relative to the agent's workspace (tool.Env.Workspace) and is
// resolved through an *os.Root, so "..", absolute paths and symbolic links
// that lead outside the workspace are refused by the operating system checks
// of os.Root, not by string matching alone.
package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
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
	// maxSymlinks bounds symbolic link resolution in write_file.
	maxSymlinks = 16
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
	return tool.Policy{RequiresApproval: false, MinAutonomy: tool.ReadOnly}
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
	root, err := openWorkspace(env)
	if err != nil {
		return "", err
	}
	defer root.Close()

	fi, err := root.Stat(name)
	if err != nil {
		return "", describe("read", in.Path, err)
	}
	if err := regular(in.Path, fi, "list_dir"); err != nil {
		return "", err
	}
	// O_NONBLOCK keeps a file swapped for a FIFO after the Stat from
	// blocking the open; the Stat of the open file below then refuses it.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", describe("read", in.Path, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", describe("read", in.Path, err)
	}
	if err := regular(in.Path, fi, "list_dir"); err != nil {
		return "", err
	}
	size := fi.Size()
	if in.Offset > size {
		return "", fmt.Errorf("offset %d is past the end of %q, which has %d bytes", in.Offset, in.Path, size)
	}
	if size == 0 {
		return fmt.Sprintf("(%s is empty)", in.Path), nil
	}
	if in.Offset == size {
		return fmt.Sprintf("(end of %s: it has %d bytes)", in.Path, size), nil
	}
	buf := make([]byte, min(limit, size-in.Offset))
	n, err := io.ReadFull(io.NewSectionReader(f, in.Offset, int64(len(buf))), buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", describe("read", in.Path, err)
	}
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
func regular(name string, fi fs.FileInfo, dirTool string) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("%q is a directory; use %s to see what it holds", name, dirTool)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%q is not a regular file (%s)", name, fileKind(fi.Mode()))
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
	return tool.Policy{RequiresApproval: true, MinAutonomy: tool.Supervised}
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
	root, err := openWorkspace(env)
	if err != nil {
		return "", err
	}
	defer root.Close()
	wr, err := w.quota.Begin(env.Workspace, root)
	if err != nil {
		return "", err
	}
	defer wr.End()

	data := []byte(*in.Content)
	if in.Append {
		return appendTo(root, wr, in.Path, name, data)
	}
	target, err := resolveLinks(root, in.Path, name)
	if err != nil {
		return "", err
	}
	perm := fs.FileMode(0o644)
	verb := "created"
	var old int64
	if fi, err := root.Stat(target); err == nil {
		if err := regular(in.Path, fi, "list_dir"); err != nil {
			return "", err
		}
		perm, old = fi.Mode().Perm(), fi.Size()
		verb = "replaced"
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return "", describe("write", in.Path, err)
	}
	if err := wr.Fit(in.Path, int64(len(data)), int64(len(data))-old); err != nil {
		return "", err
	}
	if err := mkdirFor(root, in.Path, name); err != nil {
		return "", err
	}
	if err := workspace.WriteAtomic(root, target, data, perm); err != nil {
		wr.Unknown()
		return "", describe("write", in.Path, err)
	}
	wr.Grew(int64(len(data)) - old)
	return fmt.Sprintf("%s %s (%d bytes)", verb, in.Path, len(data)), nil
}

// mkdirFor creates the parent directories of name, a file to be written.
func mkdirFor(root *os.Root, shown, name string) error {
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return describe("create the directory for", shown, err)
		}
	}
	return nil
}

// appendTo appends data to name, creating it when missing. An append that
// would cross a limit is refused before anything is created or written,
// and a failed write is undone.
func appendTo(root *os.Root, wr *workspace.Write, shown, name string, data []byte) (string, error) {
	var size int64
	if fi, err := root.Stat(name); err == nil {
		if err := regular(shown, fi, "list_dir"); err != nil {
			return "", err
		}
		size = fi.Size()
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return "", describe("append to", shown, err)
	}
	grow := int64(len(data))
	if err := wr.Fit(shown, size+grow, grow); err != nil {
		return "", err
	}
	if err := mkdirFor(root, shown, name); err != nil {
		return "", err
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return "", describe("append to", shown, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		err = regular(shown, fi, "list_dir")
	}
	if err == nil && fi.Size() != size {
		// Changed by someone else since the check: check again.
		err = wr.Fit(shown, fi.Size()+grow, grow)
	}
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		if terr := f.Truncate(fi.Size()); terr != nil {
			wr.Unknown()
		}
		return "", describe("append to", shown, err)
	}
	if err := f.Close(); err != nil {
		wr.Unknown()
		return "", describe("append to", shown, err)
	}
	wr.Grew(grow)
	return fmt.Sprintf("appended %d bytes to %s (now %d bytes)", len(data), shown, fi.Size()+grow), nil
}

// resolveLinks follows symbolic links at the final component of name so an
// atomic write replaces the file a link points to rather than the link. Link
// targets must stay inside the workspace; the Root checks every step again.
func resolveLinks(root *os.Root, shown, name string) (string, error) {
	for range maxSymlinks {
		fi, err := root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
		if err != nil {
			return "", describe("write", shown, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return name, nil
		}
		target, err := root.Readlink(name)
		if err != nil {
			return "", describe("write", shown, err)
		}
		next := filepath.Join(filepath.Dir(name), target)
		if filepath.IsAbs(target) || !filepath.IsLocal(next) {
			return "", fmt.Errorf("cannot write %q: it is a symbolic link leading outside the workspace", shown)
		}
		name = next
	}
	return "", fmt.Errorf("cannot write %q: too many levels of symbolic links", shown)
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
	return tool.Policy{RequiresApproval: false, MinAutonomy: tool.ReadOnly}
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
	root, err := openWorkspace(env)
	if err != nil {
		return "", err
	}
	defer root.Close()

	f, err := root.Open(name)
	if err != nil {
		return "", describe("list", shown, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", describe("list", shown, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%q is not a directory; use read_file to read a file", shown)
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return "", describe("list", shown, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })

	var out strings.Builder
	if len(entries) == 0 {
		fmt.Fprintf(&out, "%s is empty", shown)
		return out.String(), nil
	}
	fmt.Fprintf(&out, "%s (%d entries)\n", shown, len(entries))
	for i, e := range entries {
		if i == MaxEntries {
			fmt.Fprintf(&out, "... %d more entries not shown\n", len(entries)-MaxEntries)
			break
		}
		out.WriteString(entryLine(root, name, e))
		out.WriteByte('\n')
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// entryLine formats one directory entry. Symbolic links are described by
// what they lead to inside the workspace; links leading out are marked.
func entryLine(root *os.Root, dir string, e fs.DirEntry) string {
	n := e.Name()
	mode := e.Type()
	link := ""
	var fi fs.FileInfo
	var err error
	if mode&fs.ModeSymlink != 0 {
		fi, err = root.Stat(filepath.Join(dir, n))
		if err != nil {
			return n + " (symbolic link, target missing or outside the workspace)"
		}
		link = ", symbolic link"
	} else {
		fi, err = e.Info()
		if err != nil {
			return n + " (vanished while listing)"
		}
	}
	switch {
	case fi.IsDir():
		if link != "" {
			return n + "/ (symbolic link)"
		}
		return n + "/"
	case fi.Mode().IsRegular():
		return fmt.Sprintf("%s (%d bytes%s)", n, fi.Size(), link)
	default:
		return fmt.Sprintf("%s (%s%s)", n, fileKind(fi.Mode()), link)
	}
}
