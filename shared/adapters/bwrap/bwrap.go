//go:build linux

// Package bwrap is the local sandbox backend (sandbox.Backend) on
// bubblewrap: each command runs in new user, pid, ipc, network, uts and
// cgroup namespaces, without capabilities, under a seccomp filter
// (seccomp.go) and unable to make further user namespaces, dies with the
// server, sees an empty environment but
// PATH, HOME=/workspace and LANG, the host's /usr and /bin, /lib* read-only,
// a copy of the agent's workspace at /workspace, a /tmp of its own session
// and no network at all.
//
// A session's sandbox is its directory under <home>/sandbox/ (named by a
// hash of owner, agent and session id, so another owner never shares it),
// which keeps its /tmp between commands: each exec is a fresh bwrap
// invocation, kept for Idle after its last exec and then removed by the
// reaper; New removes whatever a crashed server left there.
//
// Disk: /workspace, /tmp and /tools are each a tmpfs of bounded size, so a
// command cannot fill the host's disk while it runs. The sandbox's pid 1
// is the helper, this program itself re-executed as "sandbox-init --box"
// (box.go): it fills them from a tar the server streams (the workspace's
// regular files, the session's /tmp, the tools' descriptions), runs the
// command, and when it ends (or the server stops it at a limit) kills
// what is left and streams /tmp and /workspace back. The server then keeps
// that /tmp for the session and writes back to the workspace the files the
// command changed (sync.go): each only if nobody changed it meanwhile, and
// only as much growth as the disk limit (less /tmp) and the workspace
// quota's room allow; links and other files that are not regular are
// refused. Nothing in the sandbox names a host path of the data directory
// or the server's working directory: pid 1 is the helper, run as
// /opt/lambdaclaw/lambdaclaw in /workspace, and the only bind mounts of
// host directories are /usr, a few files of /etc, the helper and the
// bridge's socket directory (made under the system's temporary directory).
//
// Limits are set by the helper again (Init without --box), the command's
// first process: it sets the rlimits (data, processes, file size, CPU
// time) and the CPU affinity, then execs /bin/sh. The kernel does not
// apply RLIMIT_NPROC to root, so a server running as root puts each
// command in a pids cgroup of its own as well, and refuses to run anything
// when it cannot make one. The wall time and the output limit are
// enforced here: the box is told to stop the command, and the whole
// process tree is killed (its pid namespace goes with bwrap) if it does
// not end within stopGrace.
package bwrap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// Paths inside the sandbox.
const (
	helperPath = "/opt/lambdaclaw/lambdaclaw"
	clientDir  = "/opt/lambdaclaw/bin"
	// ClientName is the bridge client's name in the sandbox; the helper
	// binary is it when called by that name (argv[0]).
	ClientName = "lambdaclaw-tool"
	// InitCommand is the helper's subcommand that sets the limits.
	InitCommand = "sandbox-init"
	sandboxPath = clientDir + ":/usr/local/bin:/usr/bin:/bin"
)

// DefaultIdle is how long a session's sandbox outlives its last exec.
const DefaultIdle = 10 * time.Minute

// Config configures the backend.
type Config struct {
	// Home is the data directory; sandboxes live in Home/sandbox.
	Home string
	// Workspace returns the host directory of an agent's workspace.
	Workspace func(agent string) (string, error)
	// Helper is the program bwrap starts first (Init) and the bridge
	// client (Client); default the running executable.
	Helper string
	// Bwrap is the bubblewrap program; default "bwrap" on PATH.
	Bwrap string
	// Idle is how long a session's sandbox is kept after its last exec;
	// default DefaultIdle.
	Idle time.Duration
	Log  *slog.Logger
	// Now is the clock of the reaper; default time.Now.
	Now func() time.Time
}

// Backend runs commands under bubblewrap. It is safe for concurrent use.
type Backend struct {
	cfg  Config
	dir  string
	pids *cgroup // nil when the server is not root
	// filter is the seccomp program; nil on an architecture without one.
	filter []byte
	mu     sync.Mutex
	boxes  map[string]*session
	stop   chan struct{}
	reaped sync.WaitGroup
}

// execSeq numbers the commands of this process, for their cgroups' names.
var execSeq atomic.Int64

// session is one session's sandbox: its directory and when it was last
// used.
type session struct {
	dir      string
	lastUsed time.Time
	running  int
}

// New makes a backend: it removes the sandboxes a previous server left
// (the reaper of orphans after a crash) and starts the idle reaper. It does
// not check that bubblewrap works: Probe does.
func New(cfg Config) (*Backend, error) {
	if cfg.Home == "" || cfg.Workspace == nil {
		return nil, errors.New("bwrap: Home and Workspace are required")
	}
	if cfg.Helper == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("bwrap: the helper program: %w", err)
		}
		cfg.Helper = exe
	}
	if cfg.Bwrap == "" {
		cfg.Bwrap = "bwrap"
	}
	if p, err := exec.LookPath(cfg.Bwrap); err == nil {
		cfg.Bwrap = p // run with an empty environment, so without PATH
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := &Backend{cfg: cfg, dir: filepath.Join(cfg.Home, "sandbox"), boxes: map[string]*session{}, stop: make(chan struct{})}
	if f, err := seccompFilter(); err == nil {
		b.filter = f
	} else {
		cfg.Log.Warn("sandbox: no seccomp filter", "err", err.Error())
	}
	if err := os.RemoveAll(b.dir); err != nil {
		return nil, fmt.Errorf("bwrap: removing orphaned sandboxes: %w", err)
	}
	if err := os.MkdirAll(b.dir, 0o700); err != nil {
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	if os.Geteuid() == 0 {
		b.pids = findCgroup()
		if b.pids != nil {
			b.pids.removeOrphans()
		}
	}
	b.reaped.Go(b.reapLoop)
	return b, nil
}

// Close stops the reaper and removes every sandbox. Commands still running
// are not waited for.
func (b *Backend) Close() error {
	close(b.stop)
	b.reaped.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.boxes = map[string]*session{}
	return os.RemoveAll(b.dir)
}

func (b *Backend) reapLoop() {
	t := time.NewTicker(min(b.cfg.Idle/2, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.Reap()
		}
	}
}

// Reap removes the sandboxes idle for longer than Idle, and returns how
// many it removed. The reaper calls it periodically.
func (b *Backend) Reap() int {
	now := b.cfg.Now()
	b.mu.Lock()
	var dirs []string
	for k, bx := range b.boxes {
		if bx.running == 0 && now.Sub(bx.lastUsed) > b.cfg.Idle {
			// Renamed while locked: the session's next exec makes a new
			// directory, which the removal below cannot reach.
			gone := bx.dir + ".reaped"
			if err := os.Rename(bx.dir, gone); err != nil {
				b.cfg.Log.Warn("sandbox: removing an idle sandbox", "err", err)
				continue
			}
			dirs = append(dirs, gone)
			delete(b.boxes, k)
		}
	}
	b.mu.Unlock()
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			b.cfg.Log.Warn("sandbox: removing an idle sandbox", "err", err)
		}
	}
	if b.pids != nil {
		b.pids.removeOrphans()
	}
	return len(dirs)
}

// Key names the sandbox of an owner's session of an agent.
func Key(owner, agent, session string) string {
	h := sha256.Sum256([]byte(owner + "\x00" + agent + "\x00" + session))
	return hex.EncodeToString(h[:12])
}

// acquire returns the directory of req's sandbox, made if needed, marked
// as running until release.
func (b *Backend) acquire(req sandbox.Request) (string, func(), error) {
	k := Key(req.Owner, req.Agent, req.SessionID)
	b.mu.Lock()
	defer b.mu.Unlock()
	bx, ok := b.boxes[k]
	if !ok {
		bx = &session{dir: filepath.Join(b.dir, k)}
		if err := os.MkdirAll(filepath.Join(bx.dir, "tmp"), 0o700); err != nil {
			return "", nil, fmt.Errorf("sandbox directory: %w", err)
		}
		b.boxes[k] = bx
	}
	bx.running++
	return bx.dir, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		bx.running--
		bx.lastUsed = b.cfg.Now()
	}, nil
}

// Probe runs a command in a throwaway sandbox and checks its output.
func (b *Backend) Probe(ctx context.Context) error {
	if _, err := exec.LookPath(b.cfg.Bwrap); err != nil {
		return fmt.Errorf("%w: bubblewrap is not installed (%v); install it with: apt-get install bubblewrap", sandbox.ErrUnavailable, err)
	}
	if os.Geteuid() == 0 && b.pids == nil {
		return fmt.Errorf("%w: the server runs as root, to whom the kernel applies no process limit, and no pids cgroup could be made under /sys/fs/cgroup; run lambdaclaw as an ordinary user", sandbox.ErrUnavailable)
	}
	ws, err := os.MkdirTemp(b.dir, "probe-")
	if err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	req := sandbox.Request{Owner: "system:probe", Agent: "probe", SessionID: filepath.Base(ws),
		Command: "echo ok", Limits: sandbox.Limits{WallTime: 20 * time.Second}.WithDefaults()}
	defer func() {
		b.mu.Lock()
		delete(b.boxes, Key(req.Owner, req.Agent, req.SessionID))
		b.mu.Unlock()
		os.RemoveAll(filepath.Join(b.dir, Key(req.Owner, req.Agent, req.SessionID)))
		os.RemoveAll(ws)
	}()
	res, err := b.run(ctx, req, ws)
	if err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	if res.ExitCode != 0 || res.Stdout != "ok\n" {
		return fmt.Errorf("%w: a test command exited %d: %s", sandbox.ErrUnavailable, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return nil
}

// Exec runs req's command in its session's sandbox.
func (b *Backend) Exec(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	req.Limits = req.Limits.WithDefaults()
	if err := req.Limits.Check(); err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox limits: %w", err)
	}
	ws, err := b.cfg.Workspace(req.Agent)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("workspace of %s: %w", req.Agent, err)
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return sandbox.Result{}, fmt.Errorf("agent %s has no workspace directory", req.Agent)
	}
	return b.run(ctx, req, ws)
}

func (b *Backend) run(ctx context.Context, req sandbox.Request, workspace string) (sandbox.Result, error) {
	dir, release, err := b.acquire(req)
	if err != nil {
		return sandbox.Result{}, err
	}
	defer release()
	run, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(run)
	var tools map[string][]byte
	if req.Bridge != nil {
		tools = sandbox.ToolFiles(req.Bridge.Tools())
	} else {
		tools = sandbox.ToolFiles(nil)
	}
	fill, err := plan(ctx, workspace, filepath.Join(dir, "tmp"), req, tools)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	// The socket's directory is bound into the sandbox, whose mount table
	// shows where it came from: it is made outside the data directory.
	sock, err := os.MkdirTemp("", "lambdaclaw-bridge-")
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer os.RemoveAll(sock)
	if req.Bridge != nil {
		ln, err := net.Listen("unix", filepath.Join(sock, filepath.Base(sandbox.SocketPath)))
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("tool bridge: %w", err)
		}
		bctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			sandbox.ServeBridge(bctx, ln, req.Bridge)
			close(done)
		}()
		defer func() {
			stop()
			<-done
		}()
	}
	args := b.args(req, fill, sock)
	// The box's descriptors: 3 bwrap's seccomp program (or /dev/null), 4
	// what the sandbox starts with, 5 what it sends back, 6 the stop.
	var fds [4]*os.File
	if b.filter != nil {
		f, err := seccompFile(run, b.filter)
		if err != nil {
			return sandbox.Result{}, err
		}
		fds[0] = f
		args = append([]string{"--seccomp", "3"}, args...)
	} else if fds[0], err = os.Open(os.DevNull); err != nil {
		return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
	}
	defer fds[0].Close()
	var pipes [6]*os.File // in, out, stop: read and write ends
	for i := 0; i < len(pipes); i += 2 {
		if pipes[i], pipes[i+1], err = os.Pipe(); err != nil {
			return sandbox.Result{}, fmt.Errorf("sandbox: %w", err)
		}
		defer pipes[i].Close()
		defer pipes[i+1].Close()
	}
	inR, inW, outR, outW, stopR, stopW := pipes[0], pipes[1], pipes[2], pipes[3], pipes[4], pipes[5]
	fds[1], fds[2], fds[3] = inR, outW, stopR
	var (
		sent            sync.WaitGroup
		sendErr, gotErr error
		got             back
	)
	started := func() {
		// The box's ends are its own now; the box's end of what it
		// sends is closed once it (and bwrap) are gone.
		inR.Close()
		outW.Close()
		stopR.Close()
		sent.Go(func() {
			sendErr = fill.send(ctx, inW)
			inW.Close()
		})
		sent.Go(func() {
			got, gotErr = fill.receive(ctx, outR, req.Limits, req.Quota)
		})
	}
	var cg *execCgroup
	prog := b.cfg.Bwrap
	if b.pids != nil {
		cg, err = b.pids.make(fmt.Sprintf("%d-%d", os.Getpid(), execSeq.Add(1)), req.Limits.Pids)
		if err != nil {
			return sandbox.Result{}, fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
		}
		defer cg.remove()
		// The shell joins the cgroup, then becomes bwrap: every process of
		// the sandbox is born in it.
		args = append([]string{"-c", `echo $$ >"$1" && shift && exec "$@"`, "sh", cg.procs, b.cfg.Bwrap}, args...)
		prog = "/bin/sh"
	}
	res, err := b.start(ctx, req, prog, args, fds[:], started, stopW, cg)
	inW.Close()
	sent.Wait()
	if err != nil {
		return res, err
	}
	if sendErr != nil && !got.done {
		return res, fmt.Errorf("sandbox: filling it: %w", sendErr)
	}
	if !got.done && gotErr == nil && res.Cut == sandbox.NotCut {
		// The box ended without sending the sandbox back, and no limit
		// killed it: it failed (its error is the output's last line).
		return res, fmt.Errorf("sandbox: its first process failed: %s", lastLine(res.Stderr))
	}
	if gotErr != nil {
		res.Stderr += "\n[sandbox: writing the workspace back failed: " + gotErr.Error() + "]"
	}
	res.Stderr += sandbox.KeptNote(got.kept)
	if got.full && (res.Cut == sandbox.NotCut || res.Cut == sandbox.FileSize) {
		res.Cut = sandbox.Disk
	}
	return res, nil
}

// args are bubblewrap's arguments for req, whose sandbox starts with fill.
func (b *Backend) args(req sandbox.Request, fill *fill, sock string) []string {
	l := req.Limits
	a := []string{
		"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--cap-drop", "ALL", "--as-pid-1",
		"--uid", "1000", "--gid", "1000", "--hostname", "sandbox",
		"--clearenv", "--setenv", "PATH", sandboxPath, "--setenv", "HOME", "/workspace", "--setenv", "LANG", "C.UTF-8",
		"--ro-bind", "/usr", "/usr",
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	size := func(n int64) string { return strconv.FormatInt(n, 10) }
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		// /dev is a tmpfs too: read-only but for its shared memory, a
		// quarter of the disk limit.
		"--size", size(l.Disk/4), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--size", size(fill.tmpSize), "--tmpfs", "/tmp",
		"--size", size(fill.wsSize), "--tmpfs", "/workspace",
		"--size", size(fill.toolsSize), "--tmpfs", sandbox.ToolsDir,
		"--bind", sock, filepath.Dir(sandbox.SocketPath),
		"--ro-bind", b.cfg.Helper, helperPath,
		"--symlink", helperPath, clientDir+"/"+ClientName,
		"--remount-ro", "/",
		"--chdir", "/workspace",
		"--",
	)
	cpuSeconds := strconv.Itoa(int(req.Wall().Seconds()) + 1)
	return append(a, helperPath, InitCommand, boxFlag,
		"--memory", strconv.FormatInt(l.Memory, 10),
		"--pids", strconv.Itoa(l.Pids),
		"--file-size", strconv.FormatInt(l.FileSize, 10),
		"--cpu-seconds", cpuSeconds,
		"--cpus", strconv.Itoa(l.CPUs),
		"--", "/bin/sh", "-c", req.Command)
}

// firstCPUs is the set of the first n CPUs this process may run on.
func firstCPUs(n int) (unix.CPUSet, error) {
	var have, want unix.CPUSet
	if err := unix.SchedGetaffinity(0, &have); err != nil {
		return want, fmt.Errorf("CPU affinity: %w", err)
	}
	for i := 0; i < 1024 && want.Count() < n; i++ {
		if have.IsSet(i) {
			want.Set(i)
		}
	}
	return want, nil
}

// etcFiles are the files of /etc that programs need to start (the dynamic
// linker's cache, alternatives' links, the time zone); the rest of /etc
// stays outside.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/localtime", "/etc/nsswitch.conf", "/etc/mime.types",
}

// seccompFile is the seccomp program in a file of dir, open for bwrap to
// read.
func seccompFile(dir string, filter []byte) (*os.File, error) {
	p := filepath.Join(dir, "seccomp.bpf")
	if err := os.WriteFile(p, filter, 0o600); err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	return f, nil
}

// stopGrace is how long the box has to stop a command cut by a limit and
// send the sandbox back before everything is killed.
const stopGrace = 10 * time.Second

// start runs the sandbox's process and collects its result, cutting it at
// the wall time and the output limit: it writes to stop, which has the box
// kill the command, and kills the whole process group if that is not over
// within stopGrace. started is called once the process runs.
func (b *Backend) start(ctx context.Context, req sandbox.Request, prog string, args []string, extra []*os.File, started func(), stop *os.File, cg *execCgroup) (sandbox.Result, error) {
	cmd := exec.Command(prog, args...)
	cmd.Env = []string{}
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	outR, outW, err := os.Pipe()
	if err != nil {
		return sandbox.Result{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return sandbox.Result{}, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	start := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return sandbox.Result{}, fmt.Errorf("starting bubblewrap: %w", err)
	}
	started()
	var (
		cutMu  sync.Mutex
		cut    sandbox.Cut
		exited bool
		grace  *time.Timer
	)
	// hardKill kills the process group, bwrap's; its pid namespace dies
	// with it.
	hardKill := func() {
		cutMu.Lock()
		defer cutMu.Unlock()
		if !exited {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	kill := func(why sandbox.Cut) {
		cutMu.Lock()
		defer cutMu.Unlock()
		if cut == sandbox.NotCut {
			cut = why
		}
		if grace == nil && !exited {
			stop.Write([]byte{1})
			grace = time.AfterFunc(stopGrace, hardKill)
		}
	}
	timer := time.AfterFunc(req.Wall(), func() { kill(sandbox.WallTime) })
	defer timer.Stop()
	stopCtx := context.AfterFunc(ctx, func() {
		kill(sandbox.WallTime)
		hardKill()
	})
	defer stopCtx()
	var stdout, stderr capped
	stdout.limit, stderr.limit = req.Limits.Output, req.Limits.Output
	var readers sync.WaitGroup
	for _, p := range []struct {
		r   *os.File
		buf *capped
	}{{outR, &stdout}, {errR, &stderr}} {
		readers.Go(func() {
			defer p.r.Close()
			if p.buf.fill(p.r) {
				kill(sandbox.Output)
				io.Copy(io.Discard, p.r)
			}
		})
	}
	readers.Wait()
	cutMu.Lock()
	exited = true // from here on, the process group's id may be another's
	if grace != nil {
		grace.Stop()
	}
	cutMu.Unlock()
	werr := cmd.Wait()
	res := sandbox.Result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start)}
	cutMu.Lock()
	res.Cut = cut
	cutMu.Unlock()
	res.ExitCode = exitCode(cmd, werr)
	if res.Cut == sandbox.NotCut {
		switch res.ExitCode {
		case 128 + int(syscall.SIGXCPU):
			res.Cut = sandbox.CPUTime
		case 128 + int(syscall.SIGXFSZ):
			res.Cut = sandbox.FileSize
		}
	}
	// A refused fork is the cause of whatever followed it (its error
	// lines flooding the output, a shell waiting past the wall time), so
	// it is the reason given, whichever limit noticed first.
	if cg != nil && cg.hitMax() {
		res.Cut = sandbox.Pids
	}
	if ctx.Err() != nil {
		return res, fmt.Errorf("exec stopped: %w", ctx.Err())
	}
	if werr != nil && res.ExitCode == -1 && res.Cut == sandbox.NotCut {
		return res, fmt.Errorf("bubblewrap: %w", werr)
	}
	return res, nil
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && cmd.ProcessState.ExitCode() < 0 {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// capped keeps at most limit bytes of what it reads.
type capped struct {
	bytes.Buffer
	limit int64
}

// fill reads r until its end, or until more than the limit came, which it
// reports (the extra bytes are not kept).
func (c *capped) fill(r io.Reader) (over bool) {
	n, _ := io.Copy(&c.Buffer, io.LimitReader(r, c.limit))
	if n < c.limit {
		return false
	}
	var one [1]byte
	m, _ := r.Read(one[:])
	return m > 0
}
