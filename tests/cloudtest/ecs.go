package cloudtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// ECSCluster and ECSTaskDefinition are what the fake ECS runs tasks of.
const (
	ECSCluster        = "lambdaclaw-sandbox"
	ECSTaskDefinition = "lambdaclaw-sandbox:1"
	ECSContainer      = "runner"
)

// TaskFunc plays a task's container: it runs until it returns the
// container's exit code, or until ctx is cancelled (StopTask). env is the
// container's environment from RunTask's overrides.
type TaskFunc func(ctx context.Context, env map[string]string) int

// ECS is a fake of the ECS API (the awsJson1_1 protocol, X-Amz-Target
// AmazonEC2ContainerServiceV20141113.*) for what the sandbox backend
// calls: RunTask, DescribeTasks and StopTask. It refuses a request the
// service's model refuses (awsmodel; ValidationException, and the
// test fails), and what the stack
// would not allow: another cluster or task definition, a launch type other
// than FARGATE, no subnets or security groups, a public IP (or, after
// PublicNetwork, none). Each task it starts is played by the TaskFunc
// given to Play, in a goroutine.
type ECS struct {
	URL string

	t      testing.TB
	model  *awsmodel.Model
	ctx    context.Context
	wg     sync.WaitGroup
	mu     sync.Mutex
	play   TaskFunc
	tasks  map[string]*ECSTask // by ARN
	order  []string
	tokens map[string]string // client token → ARN
	// failures are the RunTask failure reasons to answer, one a call;
	// throttle the calls to refuse with ThrottlingException.
	failures []string
	throttle int
	// publicIP is the assignPublicIp the stack's network wants.
	publicIP string
}

// ECSTask is one task the fake started.
type ECSTask struct {
	ARN string
	// Env is the container's environment, from the overrides.
	Env map[string]string
	// Input is the RunTask request as sent.
	Input json.RawMessage

	cancel    context.CancelFunc
	done      chan struct{}
	status    string
	exitCode  *int32
	reason    string
	stopCode  string
	stoppedAt time.Time
	stopping  bool
}

// NewECS starts the fake; it stops its tasks and waits for them when the
// test ends.
func NewECS(t testing.TB) *ECS {
	f := &ECS{t: t, model: awsmodel.Load(t, "ecs"), tasks: map[string]*ECSTask{}, tokens: map[string]string{}, publicIP: "DISABLED"}
	f.ctx, f.URL = startFake(t, f.serve, &f.wg)
	return f
}

// Client returns an ECS client of the fake with static test credentials
// and, as retries of throttled calls would only slow the tests, no
// retries.
func (f *ECS) Client() *awsapi.ECS {
	cfg := aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("local", "local", ""),
		RetryMaxAttempts: 1,
	}
	c, err := ecs.NewClient(cfg, f.URL)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// Play makes play run every task started from now on.
func (f *ECS) Play(play TaskFunc) {
	f.mu.Lock()
	f.play = play
	f.mu.Unlock()
}

// PublicNetwork makes the fake the stack's public network
// (sandbox_network=public): RunTask must ask for a public IP.
func (f *ECS) PublicNetwork() {
	f.mu.Lock()
	f.publicIP = "ENABLED"
	f.mu.Unlock()
}

// FailRunTask makes the next RunTask calls answer with a failure of each
// reason in turn (such as "RESOURCE:CPU"), starting no task.
func (f *ECS) FailRunTask(reasons ...string) {
	f.mu.Lock()
	f.failures = append(f.failures, reasons...)
	f.mu.Unlock()
}

// Throttle makes the next n calls fail with ThrottlingException.
func (f *ECS) Throttle(n int) {
	f.mu.Lock()
	f.throttle += n
	f.mu.Unlock()
}

// Tasks returns the tasks started, in order.
func (f *ECS) Tasks() []*ECSTask {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*ECSTask, len(f.order))
	for i, arn := range f.order {
		out[i] = f.tasks[arn]
	}
	return out
}

// Wait waits until the task has stopped and returns its status and exit
// code (-1 for none).
func (f *ECS) Wait(task *ECSTask, timeout time.Duration) (string, int) {
	f.t.Helper()
	select {
	case <-task.done:
	case <-time.After(timeout):
		f.t.Fatalf("task %s did not stop within %s", task.ARN, timeout)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	code := -1
	if task.exitCode != nil {
		code = int(*task.exitCode)
	}
	return task.status, code
}

// awsVpc is RunTask's network configuration as sent.
type awsVpc struct {
	Subnets        []string `json:"subnets"`
	SecurityGroups []string `json:"securityGroups"`
	AssignPublicIP string   `json:"assignPublicIp"`
}

func (f *ECS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	reply := awsJSON{w, "application/x-amz-json-1.1"}
	fail, ok := reply.fail, reply.ok
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m == nil || m[2] != "ecs" {
		fail(http.StatusForbidden, "AccessDeniedException", "want a SigV4 signature for ecs")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
		fail(http.StatusBadRequest, "SerializationException", "content type "+ct)
		return
	}
	f.mu.Lock()
	throttled := f.throttle > 0
	if throttled {
		f.throttle--
	}
	f.mu.Unlock()
	if throttled {
		fail(http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op, in, err := f.model.FromAWSJSON(target, body)
	if err := refused(f.t, f.model, op, in, err); err != nil {
		fail(http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	switch target {
	case "AmazonEC2ContainerServiceV20141113.RunTask":
		var in struct {
			Cluster              string `json:"cluster"`
			TaskDefinition       string `json:"taskDefinition"`
			LaunchType           string `json:"launchType"`
			Count                int    `json:"count"`
			ClientToken          string `json:"clientToken"`
			NetworkConfiguration struct {
				AwsvpcConfiguration awsVpc `json:"awsvpcConfiguration"`
			} `json:"networkConfiguration"`
			Overrides struct {
				ContainerOverrides []struct {
					Name        string `json:"name"`
					Environment []struct {
						Name  string `json:"name"`
						Value string `json:"value"`
					} `json:"environment"`
				} `json:"containerOverrides"`
			} `json:"overrides"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			fail(http.StatusBadRequest, "ClientException", err.Error())
			return
		}
		vpc := in.NetworkConfiguration.AwsvpcConfiguration
		f.mu.Lock()
		publicIP := f.publicIP
		f.mu.Unlock()
		switch {
		case in.Cluster != ECSCluster:
			fail(http.StatusBadRequest, "ClusterNotFoundException", "Cluster not found.")
			return
		case in.TaskDefinition != ECSTaskDefinition:
			fail(http.StatusBadRequest, "ClientException", "TaskDefinition not found.")
			return
		case in.LaunchType != "FARGATE" || in.Count != 1:
			fail(http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("launch type %q, count %d", in.LaunchType, in.Count))
			return
		case len(vpc.Subnets) == 0 || len(vpc.SecurityGroups) == 0 || vpc.AssignPublicIP != publicIP:
			fail(http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("the sandbox's network wants subnets, security groups and assignPublicIp %s: %+v", publicIP, vpc))
			return
		}
		env := map[string]string{}
		for _, o := range in.Overrides.ContainerOverrides {
			if o.Name != ECSContainer {
				fail(http.StatusBadRequest, "InvalidParameterException", "Override for container named "+o.Name+" is not a container in the TaskDefinition.")
				return
			}
			for _, kv := range o.Environment {
				env[kv.Name] = kv.Value
			}
		}
		f.mu.Lock()
		if len(f.failures) > 0 {
			reason := f.failures[0]
			f.failures = f.failures[1:]
			f.mu.Unlock()
			ok(map[string]any{"tasks": []any{}, "failures": []any{map[string]string{"reason": reason}}})
			return
		}
		if arn, dup := f.tokens[in.ClientToken]; dup && in.ClientToken != "" {
			task := f.tasks[arn]
			out := f.describe(task)
			f.mu.Unlock()
			ok(map[string]any{"tasks": []any{out}, "failures": []any{}})
			return
		}
		ctx, cancel := context.WithCancel(f.ctx)
		arn := fmt.Sprintf("arn:aws:ecs:us-east-1:123456789012:task/%s/%032x", ECSCluster, len(f.order)+1)
		task := &ECSTask{ARN: arn, Env: env, Input: body, cancel: cancel, done: make(chan struct{}), status: "RUNNING"}
		f.tasks[arn] = task
		f.order = append(f.order, arn)
		f.tokens[in.ClientToken] = arn
		play := f.play
		out := f.describe(task)
		f.mu.Unlock()
		f.wg.Go(func() {
			code := 0
			if play != nil {
				code = play(ctx, env)
			}
			f.mu.Lock()
			c := int32(code)
			task.status, task.exitCode, task.stoppedAt = "STOPPED", &c, time.Now()
			if task.stopCode == "" {
				task.stopCode, task.reason = "EssentialContainerExited", "Essential container in task exited"
			}
			f.mu.Unlock()
			cancel()
			close(task.done)
		})
		ok(map[string]any{"tasks": []any{out}, "failures": []any{}})
	case "AmazonEC2ContainerServiceV20141113.DescribeTasks":
		var in struct {
			Cluster string   `json:"cluster"`
			Tasks   []string `json:"tasks"`
		}
		if err := json.Unmarshal(body, &in); err != nil || len(in.Tasks) == 0 || len(in.Tasks) > 100 {
			fail(http.StatusBadRequest, "InvalidParameterException", "Tasks cannot be empty.")
			return
		}
		if in.Cluster != ECSCluster {
			fail(http.StatusBadRequest, "ClusterNotFoundException", "Cluster not found.")
			return
		}
		tasks, failures := []any{}, []any{}
		f.mu.Lock()
		for _, arn := range in.Tasks {
			if task, found := f.tasks[arn]; found {
				tasks = append(tasks, f.describe(task))
			} else {
				failures = append(failures, map[string]string{"arn": arn, "reason": "MISSING"})
			}
		}
		f.mu.Unlock()
		ok(map[string]any{"tasks": tasks, "failures": failures})
	case "AmazonEC2ContainerServiceV20141113.StopTask":
		var in struct {
			Cluster string `json:"cluster"`
			Task    string `json:"task"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			fail(http.StatusBadRequest, "InvalidParameterException", err.Error())
			return
		}
		f.mu.Lock()
		task, found := f.tasks[in.Task]
		if !found || in.Cluster != ECSCluster {
			f.mu.Unlock()
			fail(http.StatusBadRequest, "InvalidParameterException", "The referenced task was not found.")
			return
		}
		if task.status != "STOPPED" && !task.stopping {
			// ECS stops the task after the call: it answers at once.
			task.stopping, task.stopCode, task.reason = true, "UserInitiated", in.Reason
			task.cancel()
		}
		out := f.describe(task)
		f.mu.Unlock()
		ok(map[string]any{"task": out})
	default:
		fail(http.StatusBadRequest, "UnknownOperationException", "unknown operation "+target)
	}
}

// describe is task as DescribeTasks shows it; f.mu is held.
func (f *ECS) describe(t *ECSTask) map[string]any {
	container := map[string]any{"name": ECSContainer, "lastStatus": t.status}
	out := map[string]any{
		"taskArn":           t.ARN,
		"clusterArn":        "arn:aws:ecs:us-east-1:123456789012:cluster/" + ECSCluster,
		"taskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/" + ECSTaskDefinition,
		"launchType":        "FARGATE",
		"lastStatus":        t.status,
		"desiredStatus":     "RUNNING",
		"containers":        []any{container},
	}
	if t.stopping {
		out["desiredStatus"] = "STOPPED"
	}
	if t.status == "STOPPED" {
		out["desiredStatus"] = "STOPPED"
		out["stopCode"] = t.stopCode
		out["stoppedReason"] = t.reason
		out["stoppedAt"] = float64(t.stoppedAt.UnixMilli()) / 1000
		container["exitCode"] = *t.exitCode
	}
	return out
}
