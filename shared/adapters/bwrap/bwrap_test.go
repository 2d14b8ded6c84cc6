//go:build linux

package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox/sandboxtest"
)

// TestMain makes the test binary the helper too: bwrap starts it as
// "sandbox-init", and scripts call it as lambdaclaw-tool.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == InitCommand {
		if err := Init(os.Args[2:], os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(127)
		}
	}
	if filepath.Base(os.Args[0]) == ClientName {
		os.Exit(sandbox.Client(sandbox.SocketPath, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

type fixture struct {
	b    *Backend
	home string
	ws   string
	now  time.Time
	mu   sync.Mutex
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed (make test installs it)")
	}
	f := &fixture{home: t.TempDir(), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.ws = filepath.Join(f.home, "agents", "a")
	if err := os.MkdirAll(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Home: f.home, Idle: time.Minute, Now: f.clock,
		Workspace: func(agent string) (string, error) { return filepath.Join(f.home, "agents", agent), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Probe(context.Background()); err != nil {
		t.Fatalf("probe: %v", err)
	}
	f.b = b
	return f
}

func (f *fixture) exec(t *testing.T, req sandbox.Request) sandbox.Result {
	t.Helper()
	if req.Owner == "" {
		req.Owner = "key:1"
	}
	if req.Agent == "" {
		req.Agent = "a"
	}
	if req.SessionID == "" {
		req.SessionID = "s1"
	}
	res, err := f.b.Exec(context.Background(), req)
	if err != nil {
		t.Fatalf("Exec(%q): %v", req.Command, err)
	}
	return res
}

func TestExec(t *testing.T) {
	f := newFixture(t)
	secret := filepath.Join(f.home, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOPSECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LAMBDACLAW_TEST_SECRET", "sk-proj-server-environment")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	small := sandbox.Limits{WallTime: 3 * time.Second, Output: 64 << 10}
	tests := []struct {
		name    string
		command string
		limits  sandbox.Limits
		want    sandbox.Result
		// stderr, when set, must be in the result's stderr.
		stderr string
	}{
		{name: "in the workspace with a clean environment", command: "pwd; env | sort",
			want: sandbox.Result{Stdout: "/workspace\nHOME=/workspace\nLANG=C.UTF-8\nPATH=" + sandboxPath + "\nPWD=/workspace\n"}},
		// A listener on the host's loopback refuses: the sandbox has a
		// loopback of its own and no other interface.
		{name: "no network, not even loopback", command: "bash -c 'echo > /dev/tcp/127.0.0.1/" + port + "' 2>&1; cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '",
			want: sandbox.Result{Stdout: "bash: connect: Connection refused\nbash: line 1: /dev/tcp/127.0.0.1/" + port + ": Connection refused\nlo\n"}},
		{name: "signals to pid 1 change nothing", command: "for s in TERM INT HUP QUIT USR1 USR2 PIPE ALRM KILL STOP; do kill -$s 1; done; echo alive",
			want: sandbox.Result{Stdout: "alive\n"}},
		{name: "no nested user namespaces", command: "unshare -U true 2>/dev/null; echo rc=$?",
			want: sandbox.Result{Stdout: "rc=1\n"}},
		{name: "cannot write /usr", command: "touch /usr/x 2>&1; echo $?",
			want: sandbox.Result{Stdout: "touch: cannot touch '/usr/x': Read-only file system\n1\n"}},
		{name: "cannot write /dev but its bounded shared memory", command: "touch /dev/x 2>&1; head -c 40000000 /dev/zero > /dev/shm/a; head -c 40000000 /dev/zero > /dev/shm/b; echo $?; echo > /dev/null && echo null",
			want: sandbox.Result{Stdout: "touch: cannot touch '/dev/x': Read-only file system\n1\nnull\n", Stderr: "head: error writing 'standard output': No space left on device\n"}},
		{name: "the data directory is not there", command: "cat " + secret + " 2>&1; ls " + f.home + " 2>&1; grep -rs TOPSECRET /workspace /tmp /tools /run /etc; echo done",
			want: sandbox.Result{Stdout: fmt.Sprintf("cat: %s: No such file or directory\nls: cannot access '%s': No such file or directory\ndone\n", secret, f.home)}},
		{name: "none of the server's environment", command: "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c LAMBDACLAW_TEST_SECRET; true",
			want: sandbox.Result{Stdout: "0\n"}},
		{name: "infinite loop cut at the wall time", command: "while :; do :; done", limits: small,
			want: sandbox.Result{ExitCode: 137, Cut: sandbox.WallTime}},
		{name: "100 MB of output cut while reading", command: "head -c 100000000 /dev/zero | tr '\\0' x", limits: small,
			want: sandbox.Result{Stdout: strings.Repeat("x", 64<<10), ExitCode: 137, Cut: sandbox.Output}},
		{name: "2 GB allocation fails", command: "dd if=/dev/zero of=/dev/null bs=2G count=1", limits: small,
			want: sandbox.Result{ExitCode: 1}, stderr: "memory exhausted"},
		{name: "file size", command: "head -c 2000000 /dev/zero > big", limits: sandbox.Limits{FileSize: 1 << 20, WallTime: 3 * time.Second},
			want: sandbox.Result{Stderr: "File size limit exceeded\n", ExitCode: 128 + 25, Cut: sandbox.FileSize}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.exec(t, sandbox.Request{Command: tt.command, Limits: tt.limits})
			if tt.stderr != "" {
				if !strings.Contains(got.Stderr, tt.stderr) {
					t.Errorf("stderr %q does not say %q", got.Stderr, tt.stderr)
				}
				got.Stderr = ""
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(sandbox.Result{}, "Duration")); diff != "" {
				t.Errorf("Exec(%q) (-want +got):\n%s", tt.command, diff)
			}
		})
	}
}

// The backend passes the suite, and the helper sets the limits.
func TestConformance(t *testing.T) {
	f := newFixture(t)
	sandboxtest.Run(t, sandboxtest.Target{Backend: f.b, Agent: "a", Workspace: osroot.New(f.ws)})
	got := f.exec(t, sandbox.Request{Command: "grep -E 'Max (data size|processes|file size|cpu time|core file size|open files)' /proc/self/limits | tr -s ' '; grep Cpus_allowed_list /proc/self/status",
		Limits: sandbox.Limits{Memory: 100 << 20, Pids: 40, FileSize: 1 << 20, WallTime: 9 * time.Second}})
	cpus, err := firstCPUs(1)
	if err != nil {
		t.Fatal(err)
	}
	first := 0
	for !cpus.IsSet(first) {
		first++
	}
	want := "Max cpu time 10 10 seconds \nMax file size 1048576 1048576 bytes \nMax data size 104857600 104857600 bytes \n" +
		"Max core file size 0 0 bytes \nMax processes 40 40 processes \nMax open files 1024 1024 files \nCpus_allowed_list:\t" + fmt.Sprint(first) + "\n"
	if diff := cmp.Diff(want, got.Stdout); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
}

// The seccomp filter refuses the syscalls it names with EPERM and lets the
// others through.
func TestSeccomp(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to make raw syscalls with")
	}
	f := newFixture(t)
	tests := []struct {
		name  string
		nr    uintptr
		errno int
	}{
		{"keyctl", unix.SYS_KEYCTL, 1},
		{"bpf", unix.SYS_BPF, 1},
		{"userfaultfd", unix.SYS_USERFAULTFD, 1},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, 1},
		{"getppid", unix.SYS_GETPPID, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := fmt.Sprintf(`python3 -c "import ctypes; l=ctypes.CDLL(None, use_errno=True); l.syscall(%d,0,0,0,0,0); print(ctypes.get_errno())"`, tt.nr)
			if got := f.exec(t, sandbox.Request{Command: cmd}); got.Stdout != fmt.Sprintln(tt.errno) {
				t.Errorf("errno of %s: %+v, want %d", tt.name, got, tt.errno)
			}
		})
	}
}

func TestForkBomb(t *testing.T) {
	f := newFixture(t)
	res := f.exec(t, sandbox.Request{Command: "b() { b | b & }; b; sleep 10", Limits: sandbox.Limits{Pids: 64, WallTime: 3 * time.Second}})
	if res.Cut != sandbox.Pids && res.Cut != sandbox.WallTime {
		t.Errorf("a fork bomb ended %+v, want cut by the process limit or the wall time", res)
	}
	// The sandbox still works afterwards.
	if got := f.exec(t, sandbox.Request{Command: "echo alive"}); got.Stdout != "alive\n" {
		t.Errorf("after the fork bomb: %+v", got)
	}
}

func TestCannotWriteOutsideWorkspace(t *testing.T) {
	f := newFixture(t)
	res := f.exec(t, sandbox.Request{Command: "echo hi > note.txt && echo ok; echo x > /etc/x 2>/dev/null || echo no-etc"})
	if diff := cmp.Diff("ok\nno-etc\n", res.Stdout); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(f.ws, "note.txt"))
	if err != nil || string(b) != "hi\n" {
		t.Errorf("the workspace file is %q, %v", b, err)
	}
}

// Idle sandboxes are reaped; the session then starts afresh.
func TestReaper(t *testing.T) {
	f := newFixture(t)
	for _, owner := range []string{"key:1", "key:2"} {
		f.exec(t, sandbox.Request{Owner: owner, Command: "echo mine > /tmp/state"})
	}
	if n := f.b.Reap(); n != 0 {
		t.Errorf("reaped %d sandboxes in use a moment ago", n)
	}
	f.advance(2 * time.Minute)
	if n := f.b.Reap(); n != 2 {
		t.Errorf("reaped %d idle sandboxes, want 2", n)
	}
	if got := f.exec(t, sandbox.Request{Owner: "key:1", Command: "cat /tmp/state 2>/dev/null || echo none"}); got.Stdout != "none\n" {
		t.Errorf("after the reaper: %q", got.Stdout)
	}
}

func TestOrphansRemoved(t *testing.T) {
	home := t.TempDir()
	orphan := filepath.Join(home, "sandbox", "deadbeef", "tmp")
	if err := os.MkdirAll(orphan, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Home: home, Workspace: func(string) (string, error) { return home, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a crashed server's sandbox is still there: %v", err)
	}
}

func TestBridge(t *testing.T) {
	f := newFixture(t)
	br := &sandboxtest.Bridge{}
	script := `cat /tools/index.txt /tools/upper/description.txt /tools/upper/schema.json /tools/nope/schema.json
echo '{"text":"there"}' | lambdaclaw-tool upper -
lambdaclaw-tool upper not-json || echo "exit $?"
lambdaclaw-tool || echo "exit $?"`
	res := f.exec(t, sandbox.Request{Command: script, Bridge: br})
	want := sandbox.Result{
		Stdout: "nope\tRefuses.\nupper\tUpper-cases text.\nUpper-cases text.\n" +
			`{"type":"object","properties":{"text":{"type":"string"}}}` + "\n" + `{"type":"object","properties":{}}` + "\nTHERE\nexit 2\nexit 2\n",
		Stderr: "lambdaclaw-tool: the arguments are not valid JSON\n" + sandbox.ClientUsage,
	}
	if diff := cmp.Diff(want, res, cmpopts.IgnoreFields(sandbox.Result{}, "Duration")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`upper {"text":"there"}`}, br.Calls()); diff != "" {
		t.Errorf("bridge calls (-want +got):\n%s", diff)
	}
}

func TestNoBridge(t *testing.T) {
	f := newFixture(t)
	res := f.exec(t, sandbox.Request{Command: "cat /tools/index.txt; lambdaclaw-tool upper; echo $?"})
	if res.Stdout != "1\n" || !strings.Contains(res.Stderr, "not reachable") {
		t.Errorf("without a bridge: %+v", res)
	}
}

func TestBridgeProtocolLimits(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sandbox.ServeBridge(ctx, ln, &sandboxtest.Bridge{}); close(done) }()
	defer func() { cancel(); <-done }()
	tests := []struct {
		name, tool string
		args       json.RawMessage
		want       string
		wantErr    string
	}{
		{"a call", "upper", json.RawMessage(`{"text":"a"}`), "A", ""},
		{"a refusal", "nope", json.RawMessage(`{}`), "", "refused: no tool nope"},
		{"too large", "upper", json.RawMessage(`{"text":"` + strings.Repeat("a", sandbox.MaxBridgeRequest) + `"}`), "", "the request is over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sandbox.CallBridge(context.Background(), sock, tt.tool, tt.args)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("CallBridge = %q, %v; want %q, %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// dirSize is the sum of the sizes of the regular files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			fi, err := e.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return n
}

// A command writes at most its disk limit, /tmp and its additions to the
// workspace together, and no more than the workspace quota has room for:
// writes past it fail while it runs (the sandbox's disks are bounded
// tmpfs, not the host's disk), it is reported cut by the disk limit, and
// what did not fit is not written back.
func TestDisk(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name    string
		command string
		quota   int64
		// files are the workspace's files after the command, by name and
		// size; tmp is what the session's /tmp holds after it, at most.
		files map[string]int64
		tmp   int64
		cut   sandbox.Cut
	}{
		{name: "within the limits", command: "head -c 3000000 /dev/zero > /tmp/t && head -c 2000000 /dev/zero > w",
			files: map[string]int64{"seed.txt": 4, "w": 2000000}, tmp: 3000000},
		{name: "1 GB into /tmp", command: "head -c 1100000000 /dev/zero > /tmp/big; echo $?",
			files: map[string]int64{"seed.txt": 4}, tmp: 8*mb + 1*mb, cut: sandbox.Disk},
		{name: "over the quota's room in the workspace", command: "head -c 3000000 /dev/zero > w1 && head -c 3000000 /dev/zero > w2",
			quota: 5 * mb, files: map[string]int64{"seed.txt": 4, "w1": 3000000}, cut: sandbox.Disk},
		{name: "/tmp and the workspace together", command: "head -c 5000000 /dev/zero > /tmp/t; head -c 4000000 /dev/zero > w",
			files: map[string]int64{"seed.txt": 4}, tmp: 5000000, cut: sandbox.Disk},
		{name: "many files into the workspace", command: "for i in $(seq 1 40); do head -c 1000000 /dev/zero > f$i || exit 1; done",
			cut: sandbox.Disk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if err := os.WriteFile(filepath.Join(f.ws, "seed.txt"), []byte("seed"), 0o644); err != nil {
				t.Fatal(err)
			}
			res := f.exec(t, sandbox.Request{Command: tt.command, Quota: tt.quota,
				Limits: sandbox.Limits{Disk: 8 * mb, FileSize: 64 * mb, WallTime: 20 * time.Second}})
			if res.Cut != tt.cut {
				t.Errorf("cut %q, want %q: %+v", res.Cut, tt.cut, res)
			}
			if total := dirSize(t, f.home); total > 20*mb {
				t.Errorf("the data directory holds %d bytes after the command", total)
			}
			got := map[string]int64{}
			filepath.WalkDir(f.ws, func(p string, e os.DirEntry, err error) error {
				if err == nil && e.Type().IsRegular() {
					fi, _ := e.Info()
					got[p[len(f.ws)+1:]] = fi.Size()
				}
				return nil
			})
			if tt.files != nil {
				if diff := cmp.Diff(tt.files, got); diff != "" {
					t.Errorf("workspace (-want +got):\n%s", diff)
				}
			}
			var wsAdded int64
			for name, n := range got {
				if name != "seed.txt" {
					wsAdded += n
				}
			}
			tmp := dirSize(t, filepath.Join(f.b.dir, Key("key:1", "a", "s1"), "tmp"))
			if tmp+wsAdded > 8*mb+1*mb || (tt.tmp > 0 && tmp > tt.tmp) {
				t.Errorf("kept %d bytes of /tmp and %d of workspace files, want at most the disk limit", tmp, wsAdded)
			}
			// The session still works.
			if res := f.exec(t, sandbox.Request{Command: "echo alive"}); res.Stdout != "alive\n" {
				t.Errorf("after: %+v", res)
			}
		})
	}
}

// What a command cut by its wall time wrote is still written back.
func TestWallTimeWritesBack(t *testing.T) {
	f := newFixture(t)
	res := f.exec(t, sandbox.Request{Command: "echo before > note.txt; echo kept > /tmp/t; sleep 60", Limits: sandbox.Limits{WallTime: 2 * time.Second}})
	if res.Cut != sandbox.WallTime {
		t.Errorf("cut %q, want the wall time", res.Cut)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "note.txt")); err != nil || string(b) != "before\n" {
		t.Errorf("note.txt: %q, %v", b, err)
	}
	if got := f.exec(t, sandbox.Request{Command: "cat /tmp/t"}); got.Stdout != "kept\n" {
		t.Errorf("/tmp after the cut: %+v", got)
	}
}

// A link a command leaves in the workspace is not written back: the file
// it replaced stays, and the result says so.
func TestLinksNotWrittenBack(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.ws, "SOUL.md"), []byte("calm"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := f.exec(t, sandbox.Request{Command: "ln -sf ../../config.yaml SOUL.md && ln -s /etc/passwd pw && mkfifo pipe && ln -s SOUL.md inside && echo done"})
	if res.Stdout != "done\n" || !strings.Contains(res.Stderr, "not written back") || !strings.Contains(res.Stderr, "SOUL.md") {
		t.Errorf("result %+v, want the links named as not written back", res)
	}
	es, err := os.ReadDir(f.ws)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if !e.Type().IsRegular() {
			t.Errorf("%s in the workspace is a %s", e.Name(), e.Type())
		}
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"SOUL.md"}, names); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws, "SOUL.md")); string(b) != "calm" {
		t.Errorf("SOUL.md is %q", b)
	}
}

// Nothing in the sandbox's /proc names the data directory or the server's
// working directory: pid 1 is the helper, under its sandbox name, and not
// dumpable (its cwd and descriptors are not shown); the mount table
// names only /usr, files of /etc, the helper program and the bridge's
// socket directory of the host.
func TestNoHostPaths(t *testing.T) {
	f := newFixture(t)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	res := f.exec(t, sandbox.Request{Command: "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; readlink $p/cwd $p/exe $p/root; done; cat /proc/[0-9]*/mountinfo /proc/[0-9]*/environ 2>/dev/null; ls -l /proc/1/cwd; cat /proc/1/cmdline"})
	if res.ExitCode != 0 && res.Stdout == "" {
		t.Fatalf("%+v", res)
	}
	if want := helperPath + " " + InitCommand + " " + boxFlag + " "; !strings.HasPrefix(res.Stdout, want) {
		t.Errorf("pid 1 is not %q…:\n%s", want, res.Stdout)
	}
	for _, host := range []string{f.home, cwd} {
		if strings.Contains(res.Stdout, host) {
			t.Errorf("the sandbox's /proc names %s:\n%s", host, res.Stdout)
		}
	}
}

// The workspace's directories, empty ones too, are the command's, and the
// ones it makes or removes are made or removed.
func TestDirectories(t *testing.T) {
	f := newFixture(t)
	for _, d := range []string{"empty", "gone", "notes/deep"} {
		if err := os.MkdirAll(filepath.Join(f.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	res := f.exec(t, sandbox.Request{Command: "find . -type d | sort; rmdir gone && mkdir -p made/sub"})
	if diff := cmp.Diff(".\n./empty\n./gone\n./notes\n./notes/deep\n", res.Stdout); diff != "" || res.ExitCode != 0 {
		t.Errorf("directories in the sandbox (-want +got):\n%s%+v", diff, res)
	}
	var dirs []string
	filepath.WalkDir(f.ws, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() && p != f.ws {
			dirs = append(dirs, p[len(f.ws)+1:])
		}
		return nil
	})
	if diff := cmp.Diff([]string{"empty", "made", "made/sub", "notes", "notes/deep"}, dirs); diff != "" {
		t.Errorf("directories after (-want +got):\n%s", diff)
	}
}

// Executable files stay executable in the sandbox, and what the command
// makes executable is so in the workspace.
func TestExecutableBits(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.ws, "run.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "later.sh"), []byte("#!/bin/sh\necho later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := f.exec(t, sandbox.Request{Command: "./run.sh && printf '#!/bin/sh\\necho new\\n' > new.sh && chmod +x new.sh later.sh"})
	if res.Stdout != "ran\n" || res.ExitCode != 0 {
		t.Errorf("%+v", res)
	}
	for _, name := range []string{"run.sh", "new.sh", "later.sh"} {
		fi, err := os.Stat(filepath.Join(f.ws, name))
		if err != nil || fi.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s: %v, %v; want it executable", name, fi.Mode(), err)
		}
	}
}

// Commands of one session may run at once: each gets the workspace and
// /tmp, and writes back its own files.
func TestConcurrentCommands(t *testing.T) {
	f := newFixture(t)
	f.exec(t, sandbox.Request{Command: "echo shared > /tmp/t"})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			res, err := f.b.Exec(context.Background(), sandbox.Request{Owner: "key:1", Agent: "a", SessionID: "s1",
				Command: fmt.Sprintf("cat /tmp/t && echo %d > out%d.txt && echo %d > /tmp/mine%d", i, i, i, i)})
			if err != nil || res.Stdout != "shared\n" || res.ExitCode != 0 {
				t.Errorf("command %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	for i := range 4 {
		if b, err := os.ReadFile(filepath.Join(f.ws, fmt.Sprintf("out%d.txt", i))); err != nil || string(b) != fmt.Sprintln(i) {
			t.Errorf("out%d.txt: %q, %v", i, b, err)
		}
	}
}
