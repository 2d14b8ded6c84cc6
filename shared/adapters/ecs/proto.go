// Package ecs is the AWS sandbox backend (sandbox.Backend): each owner's
// session runs its commands in an ECS Fargate task of the stack's sandbox
// task definition, started with RunTask and kept warm for the session's
// next commands until it has been idle for a while.
//
// The orchestrator (Backend, in the function that runs the loop's tools)
// and the task (Runner, in functions/sandbox) talk through objects of the
// stack's workspace bucket, the only AWS service the task reaches (through
// the VPC's S3 gateway endpoint):
//
//	sandbox/<sid>/task.json            the session's warm task: generation, task ARN, owner, session
//	sandbox/<sid>/<gen>/req/<n>.json   the n-th command for the task of generation gen (n from 1)
//	sandbox/<sid>/<gen>/res/<n>.json   its result, written by the task
//	sandbox/<sid>/<gen>/call/<n>/<k>.json, ret/<n>/<k>.json  the k-th tool call of command n through the bridge, and its answer (bridge.go)
//
// sid is a hash of the owner and the session id, so no other owner's
// session reaches the task. The orchestrator writes req/<n> only if it is
// absent (a conditional PUT) and polls for res/<n>; the task polls for
// req/<n>, syncs the agent's workspace prefix into its local disk, runs
// the command under the limits, writes the files it changed back
// (conditionally: a file changed meanwhile in the bucket is left as it is
// and reported) and writes res/<n>. When no command came for its idle time,
// the task closes: it writes req/<n> itself, as a closed marker, only if
// still absent, and exits 0. Either the orchestrator's command or the
// marker wins that write, so a command is never left to a task that has
// gone; the orchestrator that finds the marker starts a new task. The
// bucket's lifecycle rule expires what is left under sandbox/ after a day.
package ecs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// ControlRoot is the key prefix of the control objects in the bucket.
const ControlRoot = "sandbox"

// The environment of the task's container, set by RunTask's overrides.
// None of it is secret.
const (
	// EnvBucket names the workspace bucket.
	EnvBucket = "SANDBOX_BUCKET"
	// EnvControl is the control directory of the task's generation
	// (sandbox/<sid>/<gen>).
	EnvControl = "SANDBOX_CONTROL"
	// EnvIdle is how long the task waits for a command before it closes,
	// as a Go duration.
	EnvIdle = "SANDBOX_IDLE"
)

// command is one req/<n> object.
type command struct {
	// Closed marks the object the task wrote when it closed: no command.
	Closed bool `json:"closed,omitempty"`
	// Command is run with /bin/sh -c in the workspace.
	Command string `json:"command,omitempty"`
	// Workspace is the key prefix of the agent's workspace in the bucket.
	Workspace string `json:"workspace,omitempty"`
	// Wall bounds the command's run.
	Wall time.Duration `json:"wall,omitempty"`
	// Limits are the command's limits; memory and CPU are also the task's.
	Limits sandbox.Limits `json:"limits"`
	// Quota, when positive, is the workspace's quota (sandbox.Request):
	// the runner writes back no more growth than it has room for, nor
	// than Limits.Disk.
	Quota int64 `json:"quota,omitempty"`
	// Bridge offers the tool bridge during the command, whose tools
	// Tools describes (files by name under the tools directory).
	Bridge bool              `json:"bridge,omitempty"`
	Tools  map[string]string `json:"tools,omitempty"`
}

// result is one res/<n> object.
type result struct {
	Stdout   string        `json:"stdout"`
	Stderr   string        `json:"stderr"`
	ExitCode int           `json:"exit_code"`
	Cut      sandbox.Cut   `json:"cut,omitempty"`
	Duration time.Duration `json:"duration"`
	// Error is why the task could not run the command (the workspace
	// would not sync in, the command would not start): nothing ran.
	Error string `json:"error,omitempty"`
	// Kept lists the files the command changed that were not written
	// back because the bucket's copy changed meanwhile, or that were
	// over the limits; WriteBack tells the error of the write-back.
	Kept      []string `json:"kept,omitempty"`
	WriteBack string   `json:"write_back,omitempty"`
}

// sessionID is the control directory name of an owner's session.
func sessionID(owner, session string) string {
	sum := sha256.Sum256([]byte(owner + "\x00" + session))
	return hex.EncodeToString(sum[:20])
}

// seqName is the object name of the n-th command or result: fixed width,
// so names sort as numbers.
func seqName(n int) string { return fmt.Sprintf("%010d.json", n) }

// reqName and resName are the names of the n-th command and result
// under a control directory.
func reqName(control string, n int) string { return path.Join(control, "req", seqName(n)) }
func resName(control string, n int) string { return path.Join(control, "res", seqName(n)) }

// TaskEnv is what the task's environment tells the runner.
type TaskEnv struct {
	Bucket, Control string
	Idle            time.Duration
}

// ParseTaskEnv reads the task's environment through getenv.
func ParseTaskEnv(getenv func(string) string) (TaskEnv, error) {
	e := TaskEnv{Bucket: getenv(EnvBucket), Control: getenv(EnvControl)}
	idle, err := time.ParseDuration(getenv(EnvIdle))
	switch {
	case e.Bucket == "" || e.Control == "":
		return TaskEnv{}, fmt.Errorf("%s and %s are required", EnvBucket, EnvControl)
	case !strings.HasPrefix(e.Control, ControlRoot+"/") || !fs.ValidPath(e.Control):
		return TaskEnv{}, fmt.Errorf("%s %q is not a control directory", EnvControl, e.Control)
	case err != nil || idle <= 0:
		return TaskEnv{}, fmt.Errorf("%s %q is not a positive duration", EnvIdle, getenv(EnvIdle))
	}
	e.Idle = idle
	return e, nil
}
