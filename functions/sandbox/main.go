// Command sandbox is the runner of the AWS sandbox: the program of the
// stack's Fargate sandbox task (infra/sandbox.go). It serves the commands
// of one owner's session, sent as objects of the workspace bucket by the
// ecs backend (shared/adapters/ecs), until it has been idle for its idle
// time, then exits 0; it exits 1 when it fails and 0 on SIGTERM (ECS's
// StopTask).
//
// Environment (RunTask's overrides; nothing secret: the bucket is reached
// with the task role's credentials, which the commands never see):
//
//	SANDBOX_BUCKET   the workspace bucket
//	SANDBOX_CONTROL  the task's control directory, sandbox/<sid>/<gen>
//	SANDBOX_IDLE     how long to wait for a command, e.g. 5m
//	SANDBOX_DIR      where the workspace is synced to (default /workspace)
//	SANDBOX_SOCKET   where the tool bridge listens during a command that offers it (none if unset)
//	SANDBOX_TOOLS    where the tools are described for it (/tools in the task)
//	SANDBOX_PATH     the commands' PATH (the usual directories if unset)
//	S3_ENDPOINT      S3 endpoint override (tests)
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/config"
	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

func main() {
	// The task links /runner/lambdaclaw-tool to this binary: invoked by
	// that name, it is the tool bridge's client of a command's script.
	if filepath.Base(os.Args[0]) == "lambdaclaw-tool" {
		os.Exit(sandbox.Client(sandbox.SocketPath, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Getenv))
}

// run serves the task's commands and returns the exit code.
func run(ctx context.Context, getenv func(string) string) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := serve(ctx, getenv, log); err != nil {
		if ctx.Err() != nil {
			log.Info("stopped")
			return 0
		}
		log.Error("sandbox runner failed", "err", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, getenv func(string) string, log *slog.Logger) error {
	// The commands run as this user: they must not read this process's
	// environment or memory, where the task role's credentials endpoint
	// is named (/proc/<pid>/environ of a non-dumpable process is root's).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl: %w", err)
	}
	te, err := ecs.ParseTaskEnv(getenv)
	if err != nil {
		return err
	}
	dir := getenv("SANDBOX_DIR")
	if dir == "" {
		dir = "/workspace"
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("workspace directory: %w", err)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("aws config: %w", err)
	}
	bucket, err := s3fs.Open(cfg, getenv("S3_ENDPOINT"), te.Bucket)
	if err != nil {
		return err
	}
	log.Info("sandbox runner", "control", te.Control, "idle", te.Idle.String())
	r := &ecs.Runner{Bucket: bucket, Control: te.Control, Dir: dir, Idle: te.Idle,
		Socket: getenv("SANDBOX_SOCKET"), ToolsDir: getenv("SANDBOX_TOOLS"), Path: getenv("SANDBOX_PATH"),
		Logf: func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }}
	return r.Serve(ctx)
}
