package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// fixture builds a workspace next to files that must stay out of reach:
//
//	tmp/outside/secret.txt    "TOP SECRET"
//	tmp/ws/hello.txt          "hello world"
//	tmp/ws/sub/inner.txt      "inner"
//	tmp/ws/link_out       ->  ../outside/secret.txt
//	tmp/ws/link_abs       ->  <abs>/outside/secret.txt
//	tmp/ws/dirlink_out    ->  ../outside
//	tmp/ws/link_in        ->  hello.txt
//	tmp/ws/dirlink_in     ->  sub
type fixture struct {
	tmp, ws, outside string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	tmp := t.TempDir()
	f := fixture{tmp: tmp, ws: filepath.Join(tmp, "ws"), outside: filepath.Join(tmp, "outside")}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(f.ws, "sub"), 0o755))
	must(os.MkdirAll(f.outside, 0o755))
	must(os.WriteFile(filepath.Join(f.outside, "secret.txt"), []byte("TOP SECRET"), 0o644))
	must(os.WriteFile(filepath.Join(f.ws, "hello.txt"), []byte("hello world"), 0o644))
	must(os.WriteFile(filepath.Join(f.ws, "sub", "inner.txt"), []byte("inner"), 0o644))
	for link, target := range map[string]string{
		"link_out":    filepath.Join("..", "outside", "secret.txt"),
		"link_abs":    filepath.Join(f.outside, "secret.txt"),
		"dirlink_out": filepath.Join("..", "outside"),
		"link_in":     "hello.txt",
		"dirlink_in":  "sub",
	} {
		if err := os.Symlink(target, filepath.Join(f.ws, link)); err != nil {
			t.Skipf("symbolic links unavailable: %v", err)
		}
	}
	return f
}

// defaultQuota is a workspace.Quota with the default limits of the configuration.
func defaultQuota(t *testing.T) *workspace.Quota {
	t.Helper()
	q, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: config.DefaultMaxFileBytes, WorkspaceQuotaBytes: config.DefaultWorkspaceQuotaBytes})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func (f fixture) env() tool.Env { return tool.Env{Agent: "a", Workspace: osroot.New(f.ws)} }

// call runs a tool and checks that no error names a host path.
func call(t *testing.T, f fixture, tl tool.Tool, env tool.Env, args string) (string, error) {
	t.Helper()
	out, err := tl.Call(context.Background(), env, json.RawMessage(args))
	if err != nil && strings.Contains(err.Error(), f.tmp) {
		t.Errorf("error leaks a host path: %v", err)
	}
	if strings.Contains(out, "TOP SECRET") {
		t.Errorf("result shows a file outside the workspace: %q", out)
	}
	return out, err
}

type toolCase struct {
	name    string
	args    string
	want    string
	wantErr string // substring of the error; "" means success
}

func runCases(t *testing.T, f fixture, tl tool.Tool, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := call(t, f, tl, f.env(), tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q (output %q)", err, tc.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	f := newFixture(t)
	big := strings.Repeat("0123456789abcdef", (MaxRead+100)/16)
	if err := os.WriteFile(filepath.Join(f.ws, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "utf8.txt"), []byte("aé"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "bin.dat"), []byte{'x', 0, 'y'}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "empty.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, f, ReadFile(), []toolCase{
		{name: "plain", args: `{"path":"hello.txt"}`, want: "hello world"},
		{name: "nested", args: `{"path":"sub/inner.txt"}`, want: "inner"},
		{name: "dot segments inside", args: `{"path":"sub/../hello.txt"}`, want: "hello world"},
		{name: "symlink inside", args: `{"path":"link_in"}`, want: "hello world"},
		{name: "dir symlink inside", args: `{"path":"dirlink_in/inner.txt"}`, want: "inner"},
		{name: "offset and limit", args: `{"path":"hello.txt","offset":6,"limit":3}`,
			want: "wor\n\n[showed bytes 6-9 of 11; truncated, call read_file with offset=9 to read on]"},
		{name: "offset to the end", args: `{"path":"hello.txt","offset":6}`, want: "world\n\n[showed bytes 6-11 of 11]"},
		{name: "offset at end", args: `{"path":"hello.txt","offset":11}`, want: "(end of hello.txt: it has 11 bytes)"},
		{name: "offset past end", args: `{"path":"hello.txt","offset":12}`, wantErr: "past the end"},
		{name: "cut before a partial rune", args: `{"path":"utf8.txt","limit":2}`,
			want: "a\n\n[showed bytes 0-1 of 3; truncated, call read_file with offset=1 to read on]"},
		{name: "huge file truncated", args: `{"path":"big.txt"}`,
			want: big[:MaxRead] + fmt.Sprintf("\n\n[showed bytes 0-%d of %d; truncated, call read_file with offset=%d to read on]", MaxRead, len(big), MaxRead)},
		{name: "huge file read on", args: fmt.Sprintf(`{"path":"big.txt","offset":%d}`, MaxRead),
			want: big[MaxRead:] + fmt.Sprintf("\n\n[showed bytes %d-%d of %d]", MaxRead, len(big), len(big))},
		{name: "empty file", args: `{"path":"empty.txt"}`, want: "(empty.txt is empty)"},
		{name: "binary", args: `{"path":"bin.dat"}`, wantErr: "binary file"},
		{name: "directory", args: `{"path":"sub"}`, wantErr: "is a directory; use list_dir"},
		{name: "workspace itself", args: `{"path":"."}`, wantErr: "is a directory"},
		{name: "missing", args: `{"path":"nope.txt"}`, wantErr: "no such file"},
		{name: "parent", args: `{"path":"../outside/secret.txt"}`, wantErr: "leads outside the workspace"},
		{name: "parent bare", args: `{"path":"../x"}`, wantErr: "leads outside the workspace"},
		{name: "dot segments escape", args: `{"path":"a/../../x"}`, wantErr: "leads outside the workspace"},
		{name: "absolute", args: `{"path":"/etc/passwd"}`, wantErr: "absolute path"},
		{name: "symlink file outside", args: `{"path":"link_out"}`, wantErr: "leads outside the workspace"},
		{name: "absolute symlink outside", args: `{"path":"link_abs"}`, wantErr: "leads outside the workspace"},
		{name: "symlink dir outside", args: `{"path":"dirlink_out/secret.txt"}`, wantErr: "leads outside the workspace"},
		{name: "nul byte", args: `{"path":"hello.txt\u0000.png"}`, wantErr: "NUL byte"},
		{name: "empty path", args: `{"path":""}`, wantErr: `"path" is required`},
		{name: "no arguments", args: ``, wantErr: `"path" is required`},
		{name: "negative offset", args: `{"path":"hello.txt","offset":-1}`, wantErr: `"offset" must be 0 or more`},
		{name: "zero limit", args: `{"path":"hello.txt","limit":0}`, wantErr: `"limit" must be between 1 and`},
		{name: "limit too big", args: `{"path":"hello.txt","limit":999999999}`, wantErr: `"limit" must be between 1 and`},
		{name: "bad json", args: `{"path":`, wantErr: "incomplete"},
		{name: "not json", args: `hello`, wantErr: "not valid JSON"},
		{name: "array", args: `["hello.txt"]`, wantErr: "expected a JSON object, got array"},
		{name: "trailing data", args: `{"path":"hello.txt"} {}`, wantErr: "more data"},
		{name: "unknown field", args: `{"path":"hello.txt","mode":"r"}`, wantErr: `unknown argument "mode" (allowed: path, offset, limit)`},
		{name: "wrong type", args: `{"path":42}`, wantErr: `"path" must be a string, got number`},
		{name: "fractional offset", args: `{"path":"hello.txt","offset":1.5}`, wantErr: `"offset" must be an integer, got number 1.5`},
	})
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.ws, "script.sh"), []byte("old"), 0o700); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", MaxWrite+1)
	runCases(t, f, WriteFile(defaultQuota(t)), []toolCase{
		{name: "create", args: `{"path":"new.txt","content":"one"}`, want: "created new.txt (3 bytes)"},
		{name: "create with parents", args: `{"path":"a/b/c.txt","content":"deep"}`, want: "created a/b/c.txt (4 bytes)"},
		{name: "replace", args: `{"path":"hello.txt","content":"bye"}`, want: "replaced hello.txt (3 bytes)"},
		{name: "append", args: `{"path":"sub/inner.txt","content":"+more","append":true}`, want: "appended 5 bytes to sub/inner.txt (now 10 bytes)"},
		{name: "append creates", args: `{"path":"log.txt","content":"l1","append":true}`, want: "appended 2 bytes to log.txt (now 2 bytes)"},
		{name: "empty content", args: `{"path":"blank.txt","content":""}`, want: "created blank.txt (0 bytes)"},
		{name: "keeps mode", args: `{"path":"script.sh","content":"new"}`, want: "replaced script.sh (3 bytes)"},
		{name: "max size", args: fmt.Sprintf(`{"path":"max.txt","content":%q}`, huge[:MaxWrite]), want: fmt.Sprintf("created max.txt (%d bytes)", MaxWrite)},
		{name: "through symlink inside", args: `{"path":"dirlink_in/via.txt","content":"via"}`, want: "created dirlink_in/via.txt (3 bytes)"},
		{name: "huge content", args: fmt.Sprintf(`{"path":"huge.txt","content":%q}`, huge), wantErr: "over the 1024 KiB limit"},
		{name: "missing content", args: `{"path":"x.txt"}`, wantErr: `"content" is required`},
		{name: "directory", args: `{"path":"sub","content":"x"}`, wantErr: "is a directory"},
		{name: "workspace itself", args: `{"path":".","content":"x"}`, wantErr: "names the workspace itself"},
		{name: "parent", args: `{"path":"../x","content":"x"}`, wantErr: "leads outside the workspace"},
		{name: "dot segments escape", args: `{"path":"a/../../x","content":"x"}`, wantErr: "leads outside the workspace"},
		{name: "absolute", args: `{"path":"/etc/passwd","content":"x"}`, wantErr: "absolute path"},
		{name: "symlink file outside", args: `{"path":"link_out","content":"pwned"}`, wantErr: "outside the workspace"},
		{name: "symlink file outside append", args: `{"path":"link_out","content":"pwned","append":true}`, wantErr: "outside the workspace"},
		{name: "absolute symlink outside", args: `{"path":"link_abs","content":"pwned"}`, wantErr: "outside the workspace"},
		{name: "symlink dir outside", args: `{"path":"dirlink_out/new.txt","content":"pwned"}`, wantErr: "outside the workspace"},
		{name: "symlink dir outside nested", args: `{"path":"dirlink_out/d/new.txt","content":"pwned"}`, wantErr: "outside the workspace"},
		{name: "nul byte", args: `{"path":"a\u0000b","content":"x"}`, wantErr: "NUL byte"},
		{name: "bad json", args: `{"path":"x.txt","content":}`, wantErr: "not valid JSON"},
		{name: "unknown field", args: `{"path":"x.txt","content":"x","mode":"0777"}`, wantErr: `unknown argument "mode"`},
		{name: "append wrong type", args: `{"path":"x.txt","content":"x","append":"yes"}`, wantErr: `"append" must be true or false, got string`},
	})

	want := map[string]string{
		"new.txt":               "one",
		"a/b/c.txt":             "deep",
		"hello.txt":             "bye",
		"sub/inner.txt":         "inner+more",
		"log.txt":               "l1",
		"blank.txt":             "",
		"sub/via.txt":           "via",
		"script.sh":             "new",
		"../outside/secret.txt": "TOP SECRET",
	}
	for name, content := range want {
		b, err := os.ReadFile(filepath.Join(f.ws, name))
		if err != nil {
			t.Errorf("read back %s: %v", name, err)
			continue
		}
		if string(b) != content {
			t.Errorf("%s = %q, want %q", name, b, content)
		}
	}
	for _, name := range []string{"huge.txt", "x.txt", "../outside/new.txt", "../outside/d", "../x"} {
		if _, err := os.Lstat(filepath.Join(f.ws, name)); err == nil {
			t.Errorf("%s exists, want it never written", name)
		}
	}
	if fi, err := os.Stat(filepath.Join(f.ws, "script.sh")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("script.sh mode = %v (err %v), want 0700 kept", fi.Mode(), err)
	}
	// No temporary files are left behind.
	err := filepath.WalkDir(f.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestWriteFileThroughInnerLink(t *testing.T) {
	f := newFixture(t)
	if _, err := call(t, f, WriteFile(defaultQuota(t)), f.env(), `{"path":"link_in","content":"via link"}`); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(f.ws, "hello.txt"))
	if err != nil || string(b) != "via link" {
		t.Errorf("hello.txt = %q (err %v), want %q", b, err, "via link")
	}
	if fi, err := os.Lstat(filepath.Join(f.ws, "link_in")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link_in is no longer a symbolic link (err %v)", err)
	}
}

func TestListDir(t *testing.T) {
	f := newFixture(t)
	if err := os.MkdirAll(filepath.Join(f.ws, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range MaxEntries + 5 {
		if err := os.WriteFile(filepath.Join(f.ws, "many", fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(f.ws, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := strings.Join([]string{
		". (9 entries)",
		"dirlink_in/ (symbolic link)",
		"dirlink_out (symbolic link, target missing or outside the workspace)",
		"empty/",
		"hello.txt (11 bytes)",
		"link_abs (symbolic link, target missing or outside the workspace)",
		"link_in (11 bytes, symbolic link)",
		"link_out (symbolic link, target missing or outside the workspace)",
		"many/",
		"sub/",
	}, "\n")
	var many strings.Builder
	fmt.Fprintf(&many, "many (%d entries)\n", MaxEntries+5)
	for i := range MaxEntries {
		fmt.Fprintf(&many, "f%04d (0 bytes)\n", i)
	}
	many.WriteString("... 5 more entries not shown")

	runCases(t, f, ListDir(), []toolCase{
		{name: "default", args: `{}`, want: root},
		{name: "no arguments", args: ``, want: root},
		{name: "null", args: `null`, want: root},
		{name: "dot", args: `{"path":"."}`, want: root},
		{name: "sub", args: `{"path":"sub"}`, want: "sub (1 entries)\ninner.txt (5 bytes)"},
		{name: "symlink inside", args: `{"path":"dirlink_in"}`, want: "dirlink_in (1 entries)\ninner.txt (5 bytes)"},
		{name: "empty", args: `{"path":"empty"}`, want: "empty is empty"},
		{name: "capped", args: `{"path":"many"}`, want: many.String()},
		{name: "file", args: `{"path":"hello.txt"}`, wantErr: "not a directory; use read_file"},
		{name: "missing", args: `{"path":"nope"}`, wantErr: "no such file"},
		{name: "parent", args: `{"path":".."}`, wantErr: "leads outside the workspace"},
		{name: "dot segments escape", args: `{"path":"a/../../x"}`, wantErr: "leads outside the workspace"},
		{name: "absolute", args: `{"path":"/etc"}`, wantErr: "absolute path"},
		{name: "symlink dir outside", args: `{"path":"dirlink_out"}`, wantErr: "leads outside the workspace"},
		{name: "nul byte", args: `{"path":"sub\u0000"}`, wantErr: "NUL byte"},
		{name: "unknown field", args: `{"path":".","recursive":true}`, wantErr: `unknown argument "recursive" (allowed: path)`},
		{name: "wrong type", args: `{"path":["."]}`, wantErr: `"path" must be a string, got array`},
	})
}

func TestMissingWorkspace(t *testing.T) {
	f := newFixture(t)
	tools := []struct {
		tool tool.Tool
		args string
	}{
		{ReadFile(), `{"path":"hello.txt"}`},
		{WriteFile(defaultQuota(t)), `{"path":"x.txt","content":"x"}`},
		{ListDir(), `{}`},
	}
	envs := []struct {
		name    string
		env     tool.Env
		wantErr string
	}{
		{"unset", tool.Env{Agent: "a"}, "has no workspace"},
		{"does not exist", tool.Env{Agent: "a", Workspace: osroot.New(filepath.Join(f.tmp, "gone"))}, "workspace does not exist"},
		{"is a file", tool.Env{Agent: "a", Workspace: osroot.New(filepath.Join(f.ws, "hello.txt"))}, "not a directory"},
	}
	for _, tl := range tools {
		for _, e := range envs {
			t.Run(tl.tool.Definition().Name+"/"+e.name, func(t *testing.T) {
				_, err := call(t, f, tl.tool, e.env, tl.args)
				if err == nil || !strings.Contains(err.Error(), e.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, e.wantErr)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(f.tmp, "gone")); err == nil {
		t.Error("a missing workspace was created")
	}
}

func TestDefinitionsAndPolicies(t *testing.T) {
	type summary struct {
		Name   string
		Policy tool.Policy
		Schema map[string]any
	}
	var got []summary
	for _, tl := range []tool.Tool{ReadFile(), WriteFile(defaultQuota(t)), ListDir()} {
		d := tl.Definition()
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			t.Fatalf("%s parameters are not JSON: %v", d.Name, err)
		}
		if d.Description == "" {
			t.Errorf("%s has no description", d.Name)
		}
		got = append(got, summary{d.Name, tl.Policy(), map[string]any{"type": schema["type"], "required": schema["required"]}})
	}
	want := []summary{
		{"read_file", tool.Policy{Effect: tool.Read}, map[string]any{"type": "object", "required": []any{"path"}}},
		{"write_file", tool.Policy{Effect: tool.WriteShared, Idempotent: true}, map[string]any{"type": "object", "required": []any{"path", "content"}}},
		{"list_dir", tool.Policy{Effect: tool.Read}, map[string]any{"type": "object", "required": nil}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("definitions mismatch (-want +got):\n%s", diff)
	}
	if _, err := tool.NewRegistry(ReadFile(), WriteFile(defaultQuota(t)), ListDir()); err != nil {
		t.Errorf("tools do not register together: %v", err)
	}
}
