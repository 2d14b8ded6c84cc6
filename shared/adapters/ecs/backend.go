package ecs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// API is the part of the ECS API the backend calls; *awsapi.ECS has it.
type API interface {
	RunTask(ctx context.Context, in awsapi.RunTaskInput) (*awsapi.Tasks, error)
	DescribeTasks(ctx context.Context, cluster string, arns ...string) (*awsapi.Tasks, error)
	StopTask(ctx context.Context, cluster, task, reason string) error
}

// NewClient returns an ECS client of cfg; a non-empty endpoint replaces
// ECS's (a fake, in tests).
func NewClient(cfg aws.Config, endpoint string) (*awsapi.ECS, error) {
	c, err := awsapi.NewECS(cfg, endpoint)
	if err != nil {
		return nil, fmt.Errorf("ecs sandbox: %w", err)
	}
	return c, nil
}

// ErrCapacity is a task ECS could not start for want of capacity
// (RunTask's failures with a RESOURCE:* reason) or because it throttled
// RunTask: trying again later may work.
var ErrCapacity = errors.New("no capacity to start a sandbox task now; try again later")

// StoppedError is a task that stopped before it wrote a command's result.
type StoppedError struct {
	TaskARN string
	// ExitCode is the runner container's, if it ran; Reason is ECS's
	// stopped reason and the container's.
	ExitCode *int32
	Reason   string
	// StoppedAt is when it stopped, if ECS says.
	StoppedAt time.Time
}

func (e *StoppedError) Error() string {
	code := "no exit code"
	if e.ExitCode != nil {
		code = fmt.Sprintf("exit code %d", *e.ExitCode)
	}
	return fmt.Sprintf("the sandbox task stopped (%s: %s) before the command's result", code, e.Reason)
}

// Config says which task to start and where.
type Config struct {
	// Cluster, TaskDefinition and Container name the sandbox's cluster,
	// task definition (family or ARN) and the runner's container in it.
	Cluster, TaskDefinition, Container string
	// Subnets and SecurityGroups are the task's network; PublicIP gives
	// the task a public IP, for public subnets (none in isolated ones).
	Subnets, SecurityGroups []string
	PublicIP                bool
	// Bucket is the root of the workspace bucket, BucketName its name;
	// the control objects live under sandbox/ in it.
	Bucket     filestore.FS
	BucketName string
	// Idle is how long a task waits for its session's next command
	// (5 minutes if zero).
	Idle time.Duration
	// Start bounds how long a new task may take to start and take its
	// first command (3 minutes if zero); Sync how long the syncs of the
	// workspace around a command may take (1 minute if zero).
	Start, Sync time.Duration
	// Poll is how often the result is looked for (250 ms if zero);
	// Describe how often the task's state is (2 s if zero).
	Poll, Describe time.Duration
	// ServeBridge serves a command's tool calls with the request's
	// Bridge (sandbox.ServeBridge); ToolFiles describes the tools to the
	// script (sandbox.ToolFiles). Without ServeBridge no command is
	// offered the bridge.
	ServeBridge ServeFunc
	ToolFiles   func([]chat.ToolDef) map[string][]byte
}

// Backend runs commands in Fargate tasks (sandbox.Backend).
type Backend struct {
	api API
	cfg Config
}

var _ sandbox.Backend = (*Backend)(nil)

// New returns a Backend starting tasks through api as cfg says.
func New(api API, cfg Config) (*Backend, error) {
	var missing []string
	for _, f := range []struct{ name, v string }{
		{"cluster", cfg.Cluster}, {"task definition", cfg.TaskDefinition},
		{"container", cfg.Container}, {"bucket", cfg.BucketName},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(cfg.Subnets) == 0 {
		missing = append(missing, "subnets")
	}
	if len(cfg.SecurityGroups) == 0 {
		missing = append(missing, "security groups")
	}
	if api == nil || cfg.Bucket == nil {
		missing = append(missing, "clients")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ecs sandbox: %w: no %s", sandbox.ErrUnavailable, strings.Join(missing, ", "))
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&cfg.Idle, 5 * time.Minute}, {&cfg.Start, 3 * time.Minute}, {&cfg.Sync, time.Minute}, {&cfg.Poll, 250 * time.Millisecond}, {&cfg.Describe, 2 * time.Second}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	return &Backend{api: api, cfg: cfg}, nil
}

// Bound implements sandbox.Bounded: what exec waits for at most, a
// command sent to a warm task found stopped, then to a new one (the wall
// time and the syncs twice, a task's start once).
func (b *Backend) Bound(wall time.Duration) time.Duration {
	return 2*(wall+b.cfg.Sync) + b.cfg.Start
}

// Probe implements sandbox.Backend: New checked the configuration; a
// call to ECS at every cold start would cost more than it tells.
func (b *Backend) Probe(context.Context) error { return nil }

// pointer is the task.json of a session: its warm task.
type pointer struct {
	Gen     string `json:"gen"`
	TaskARN string `json:"task_arn"`
	Owner   string `json:"owner"`
	Session string `json:"session"`
	// Seq is the last command number known sent: where the next
	// command's search starts.
	Seq int `json:"seq"`
}

// maxSeqTries bounds the numbers tried for one command on a warm task.
const maxSeqTries = 32

// Exec implements sandbox.Backend.
func (b *Backend) Exec(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	if req.Owner == "" || req.SessionID == "" || req.Command == "" {
		return sandbox.Result{}, errors.New("ecs sandbox: the owner, session and command are required")
	}
	req.Limits = req.Limits.WithDefaults()
	if err := req.Limits.Check(); err != nil {
		return sandbox.Result{}, fmt.Errorf("ecs sandbox: limits: %w", err)
	}
	prefix, err := b.workspace(req.Workspace)
	if err != nil {
		return sandbox.Result{}, err
	}
	c := command{Command: req.Command, Workspace: prefix, Wall: req.Wall(), Limits: req.Limits, Quota: req.Quota}
	if req.Bridge != nil && b.cfg.ServeBridge != nil {
		c.Bridge = true
		if b.cfg.ToolFiles != nil {
			c.Tools = map[string]string{}
			for name, data := range b.cfg.ToolFiles(req.Bridge.Tools()) {
				c.Tools[name] = string(data)
			}
		}
	}
	res, err := b.exec(ctx, req.Owner, req.SessionID, c, req.Bridge)
	if err != nil {
		return sandbox.Result{}, err
	}
	if res.Error != "" {
		return sandbox.Result{}, fmt.Errorf("ecs sandbox: the task could not run the command: %s", res.Error)
	}
	out := sandbox.Result{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, Cut: res.Cut, Duration: res.Duration}
	out.Stderr += sandbox.KeptNote(res.Kept)
	if res.WriteBack != "" {
		out.Stderr += "\n[sandbox: writing the workspace back failed: " + res.WriteBack + "]"
	}
	return out, nil
}

// exec sends c and waits for its result. A warm task found stopped before
// the command was sent (it crashed, or was stopped from outside) is
// forgotten and the command sent again, to a new task.
func (b *Backend) exec(ctx context.Context, owner, session string, c command, bridge sandbox.Bridge) (result, error) {
	for try := 0; ; try++ {
		sent := time.Now()
		ptr, n, cold, err := b.send(ctx, owner, session, c)
		if err != nil {
			return result{}, err
		}
		wait := c.Wall + b.cfg.Sync
		if cold {
			wait += b.cfg.Start
		}
		res, err := b.await(ctx, ptr, n, wait, c.Limits.Output, bridge)
		var se *StoppedError
		if !errors.As(err, &se) {
			return res, err
		}
		b.cfg.Bucket.Remove(ctx, path.Join(ControlRoot, sessionID(owner, session), "task.json"))
		if cold || try > 0 || se.StoppedAt.IsZero() || !se.StoppedAt.Before(sent) {
			return res, err
		}
	}
}

// workspace returns the key prefix of the workspace in the bucket.
func (b *Backend) workspace(w filestore.FS) (string, error) {
	bw, ok := w.(interface{ Bucket() (string, string) })
	if !ok {
		return "", errors.New("ecs sandbox: the workspace is not in the stack's bucket")
	}
	bucket, prefix := bw.Bucket()
	prefix = strings.TrimSuffix(prefix, "/")
	switch {
	case bucket != b.cfg.BucketName:
		return "", fmt.Errorf("ecs sandbox: the workspace is in bucket %q, not the stack's", bucket)
	case prefix == "" || prefix == ControlRoot || strings.HasPrefix(prefix, ControlRoot+"/"):
		return "", fmt.Errorf("ecs sandbox: %q cannot be a workspace", prefix)
	}
	return prefix, nil
}

// send gives c to the session's warm task, or to a new task when there is
// none; it returns the task, the command's number and whether the task is
// new.
func (b *Backend) send(ctx context.Context, owner, session string, c command) (pointer, int, bool, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return pointer{}, 0, false, fmt.Errorf("ecs sandbox: %w", err)
	}
	if len(data) > maxCommandBytes {
		return pointer{}, 0, false, fmt.Errorf("ecs sandbox: the command is over %d bytes", maxCommandBytes)
	}
	sid := sessionID(owner, session)
	ptrName := path.Join(ControlRoot, sid, "task.json")
	ptr, version, err := b.pointer(ctx, ptrName)
	if err != nil {
		return pointer{}, 0, false, err
	}
	if ptr.Gen != "" {
		if ptr.Owner != owner || ptr.Session != session {
			return pointer{}, 0, false, errors.New("ecs sandbox: the session's control directory names another session")
		}
		n, err := b.offer(ctx, path.Join(ControlRoot, sid, ptr.Gen), ptr.Seq+1, data)
		if err != nil {
			return pointer{}, 0, false, err
		}
		if n > 0 {
			ptr.Seq = n
			b.save(ctx, ptrName, ptr, filestore.Any)
			return ptr, n, false, nil
		}
	}
	// No warm task: start one, its first command waiting for it.
	gen, err := newGen()
	if err != nil {
		return pointer{}, 0, false, err
	}
	control := path.Join(ControlRoot, sid, gen)
	if _, err := b.cfg.Bucket.WriteFile(ctx, reqName(control, 1), data, filestore.Absent); err != nil {
		return pointer{}, 0, false, fmt.Errorf("ecs sandbox: send the command: %w", err)
	}
	arn, err := b.runTask(ctx, gen, control)
	if err != nil {
		return pointer{}, 0, false, err
	}
	ptr = pointer{Gen: gen, TaskARN: arn, Owner: owner, Session: session, Seq: 1}
	// A conflict is another instance's task started meanwhile: the
	// pointer names that one; this task serves this command and closes.
	b.save(ctx, ptrName, ptr, version)
	return ptr, 1, true, nil
}

// pointer reads the session's task.json and its version (Absent if none).
func (b *Backend) pointer(ctx context.Context, name string) (pointer, filestore.Version, error) {
	data, e, err := b.cfg.Bucket.ReadFile(ctx, name, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return pointer{}, filestore.Absent, nil
	}
	if err != nil {
		return pointer{}, "", fmt.Errorf("ecs sandbox: read the session's task: %w", err)
	}
	var p pointer
	if err := json.Unmarshal(data, &p); err != nil {
		return pointer{}, "", fmt.Errorf("ecs sandbox: the session's task.json: %w", err)
	}
	return p, e.Version, nil
}

// save writes the pointer; it only speeds up what follows, so a failure
// changes no outcome.
func (b *Backend) save(ctx context.Context, name string, p pointer, cond filestore.Version) {
	data, _ := json.Marshal(p)
	b.cfg.Bucket.WriteFile(ctx, name, data, cond)
}

// offer writes the command as the first free number from seq of the
// task's control directory; 0 when the task closed there.
func (b *Backend) offer(ctx context.Context, control string, seq int, data []byte) (int, error) {
	for n := max(seq, 1); n < max(seq, 1)+maxSeqTries; n++ {
		_, err := b.cfg.Bucket.WriteFile(ctx, reqName(control, n), data, filestore.Absent)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, filestore.ErrConflict) {
			return 0, fmt.Errorf("ecs sandbox: send the command: %w", err)
		}
		held, _, err := b.cfg.Bucket.ReadFile(ctx, reqName(control, n), maxCommandBytes+1)
		if err != nil {
			return 0, fmt.Errorf("ecs sandbox: read command %d: %w", n, err)
		}
		var c command
		if json.Unmarshal(held, &c) == nil && c.Closed {
			return 0, nil
		}
	}
	return 0, fmt.Errorf("ecs sandbox: no free command number from %d", seq)
}

// runTask starts the runner's task for the control directory.
func (b *Backend) runTask(ctx context.Context, gen, control string) (string, error) {
	publicIP := assignPublicIPDisabled
	if b.cfg.PublicIP {
		publicIP = assignPublicIPEnabled
	}
	out, err := b.api.RunTask(ctx, awsapi.RunTaskInput{
		Cluster:        b.cfg.Cluster,
		TaskDefinition: b.cfg.TaskDefinition,
		LaunchType:     "FARGATE",
		Count:          1,
		ClientToken:    gen,
		StartedBy:      "lambdaclaw-sandbox",
		NetworkConfiguration: &awsapi.NetworkConfiguration{AwsvpcConfiguration: awsapi.AwsVpcConfiguration{
			Subnets:        b.cfg.Subnets,
			SecurityGroups: b.cfg.SecurityGroups,
			AssignPublicIP: publicIP,
		}},
		Overrides: &awsapi.TaskOverride{ContainerOverrides: []awsapi.ContainerOverride{{
			Name: b.cfg.Container,
			Environment: []awsapi.KeyValuePair{
				{Name: EnvBucket, Value: b.cfg.BucketName},
				{Name: EnvControl, Value: control},
				{Name: EnvIdle, Value: b.cfg.Idle.String()},
			},
		}}},
	})
	if err != nil {
		if api, ok := errors.AsType[*awsapi.Error](err); ok && api.Code == "ThrottlingException" {
			return "", fmt.Errorf("ecs sandbox: %w (RunTask throttled: %s)", ErrCapacity, api.Message)
		}
		return "", fmt.Errorf("ecs sandbox: RunTask: %w", err)
	}
	if len(out.Failures) > 0 {
		f := out.Failures[0] // one task asked for: one failure at most
		if strings.HasPrefix(f.Reason, "RESOURCE:") || strings.Contains(strings.ToLower(f.Reason), "capacity") {
			return "", fmt.Errorf("ecs sandbox: %w (%s)", ErrCapacity, f.Reason)
		}
		return "", fmt.Errorf("ecs sandbox: RunTask failed: %s %s", f.Reason, f.Detail)
	}
	if len(out.Tasks) != 1 || out.Tasks[0].TaskArn == "" {
		return "", fmt.Errorf("ecs sandbox: RunTask started %d tasks, want 1", len(out.Tasks))
	}
	return out.Tasks[0].TaskArn, nil
}

// await waits for the n-th result of the task, at most wait, looking at
// the task's state as it goes (a task that stopped has no more results)
// and serving the command's tool calls with bridge.
func (b *Backend) await(ctx context.Context, p pointer, n int, wait time.Duration, output int64, bridge sandbox.Bridge) (result, error) {
	control := path.Join(ControlRoot, sessionID(p.Owner, p.Session), p.Gen)
	deadline := time.Now().Add(wait)
	nextDescribe := time.Now().Add(b.cfg.Describe)
	calls := b.newCalls(ctx, control, n, bridge)
	defer calls.close()
	for {
		if err := calls.poll(); err != nil {
			return result{}, err
		}
		res, ok, err := b.result(ctx, control, n, output)
		if err != nil || ok {
			return res, err
		}
		if time.Now().After(nextDescribe) {
			nextDescribe = time.Now().Add(b.cfg.Describe)
			stopped, err := b.stopped(ctx, p.TaskARN)
			if err != nil {
				return result{}, err
			}
			if stopped != nil {
				// Its last result may have come just before it stopped.
				if res, ok, err := b.result(ctx, control, n, output); err != nil || ok {
					return res, err
				}
				return result{}, fmt.Errorf("ecs sandbox: %w", stopped)
			}
		}
		if time.Now().After(deadline) {
			b.api.StopTask(ctx, b.cfg.Cluster, p.TaskARN, "lambdaclaw: no result in time")
			b.cfg.Bucket.Remove(ctx, path.Join(ControlRoot, sessionID(p.Owner, p.Session), "task.json"))
			return result{}, fmt.Errorf("ecs sandbox: no result within %s; the task was stopped", wait)
		}
		if err := sleep(ctx, b.cfg.Poll); err != nil {
			return result{}, fmt.Errorf("ecs sandbox: %w", err)
		}
	}
}

// result reads and removes the n-th result, if it is there.
func (b *Backend) result(ctx context.Context, control string, n int, output int64) (result, bool, error) {
	name := resName(control, n)
	// Both streams and the rest, six times over: JSON may write a byte
	// as \u00XX.
	limit := (2*output + 1<<20) * 6
	data, _, err := b.cfg.Bucket.ReadFile(ctx, name, limit+1)
	if errors.Is(err, fs.ErrNotExist) {
		return result{}, false, nil
	}
	if err != nil {
		return result{}, false, fmt.Errorf("ecs sandbox: read the result: %w", err)
	}
	if int64(len(data)) > limit {
		return result{}, false, errors.New("ecs sandbox: the result is over its limit")
	}
	var res result
	if err := json.Unmarshal(data, &res); err != nil {
		return result{}, false, fmt.Errorf("ecs sandbox: the result: %w", err)
	}
	b.cfg.Bucket.Remove(ctx, name) // its expiry removes it otherwise
	return res, true, nil
}

// stopped returns why the task stopped, or nil while it has not.
func (b *Backend) stopped(ctx context.Context, arn string) (*StoppedError, error) {
	out, err := b.api.DescribeTasks(ctx, b.cfg.Cluster, arn)
	if err != nil {
		return nil, fmt.Errorf("ecs sandbox: DescribeTasks: %w", err)
	}
	if len(out.Tasks) == 0 {
		reason := "missing"
		if len(out.Failures) > 0 {
			reason = out.Failures[0].Reason
		}
		return &StoppedError{TaskARN: arn, Reason: "the task is not known to ECS: " + reason}, nil
	}
	t := out.Tasks[0]
	if t.LastStatus != "STOPPED" {
		return nil, nil
	}
	e := &StoppedError{TaskARN: arn, Reason: strings.TrimSpace(t.StopCode + " " + t.StoppedReason)}
	if t.StoppedAt != nil {
		e.StoppedAt = t.StoppedAt.Time
	}
	for _, c := range t.Containers {
		if c.Name == b.cfg.Container {
			e.ExitCode = c.ExitCode
			if c.Reason != "" {
				e.Reason += "; " + c.Reason
			}
		}
	}
	return e, nil
}

// newGen returns a new task generation's name.
func newGen() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("ecs sandbox: %w", err)
	}
	return fmt.Sprintf("%x-%s", time.Now().Unix(), hex.EncodeToString(b[:])), nil
}
