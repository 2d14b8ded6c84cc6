package awsapi

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ECS is the ECS API (awsJson 1.1), for the tasks of the Fargate sandbox:
// RunTask, DescribeTasks and StopTask.
type ECS struct{ c *Client }

var ecsService = Service{Name: "ECS", Prefix: "ecs", Signing: "ecs", protocol: awsJSON, target: "AmazonEC2ContainerServiceV20141113", jsonVersion: "1.1"}

// NewECS returns an ECS client of cfg; endpoint, when not empty,
// overrides the Region's.
func NewECS(cfg aws.Config, endpoint string) (*ECS, error) {
	c, err := newClient(cfg, ecsService, endpoint)
	return &ECS{c}, err
}

// RunTaskInput is what RunTask starts (what lambdaclaw sets of it).
type RunTaskInput struct {
	Cluster              string                `json:"cluster"`
	TaskDefinition       string                `json:"taskDefinition"`
	LaunchType           string                `json:"launchType,omitempty"`
	Count                int                   `json:"count,omitempty"`
	ClientToken          string                `json:"clientToken,omitempty"`
	StartedBy            string                `json:"startedBy,omitempty"`
	NetworkConfiguration *NetworkConfiguration `json:"networkConfiguration,omitempty"`
	Overrides            *TaskOverride         `json:"overrides,omitempty"`
}

// NetworkConfiguration is a task's network in awsvpc mode.
type NetworkConfiguration struct {
	AwsvpcConfiguration AwsVpcConfiguration `json:"awsvpcConfiguration"`
}

// AwsVpcConfiguration is a task's subnets and security groups;
// AssignPublicIP is ENABLED or DISABLED.
type AwsVpcConfiguration struct {
	Subnets        []string `json:"subnets"`
	SecurityGroups []string `json:"securityGroups,omitempty"`
	AssignPublicIP string   `json:"assignPublicIp,omitempty"`
}

// TaskOverride changes what the task definition says of its containers.
type TaskOverride struct {
	ContainerOverrides []ContainerOverride `json:"containerOverrides"`
}

// ContainerOverride adds to a container's environment.
type ContainerOverride struct {
	Name        string         `json:"name"`
	Environment []KeyValuePair `json:"environment,omitempty"`
}

// KeyValuePair is an environment variable.
type KeyValuePair struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Tasks is the answer of RunTask and DescribeTasks: the tasks, and the
// failures of those it could not start or find.
type Tasks struct {
	Tasks    []Task
	Failures []TaskFailure
}

// Task is a task as ECS describes it (what lambdaclaw reads of it).
type Task struct {
	TaskArn string
	// LastStatus is PROVISIONING, …, RUNNING, …, STOPPED.
	LastStatus              string
	StopCode, StoppedReason string
	StoppedAt               *Time
	Containers              []TaskContainer
}

// TaskContainer is a container of a task.
type TaskContainer struct {
	Name     string
	ExitCode *int32
	Reason   string
}

// TaskFailure is a task RunTask could not start or DescribeTasks find.
type TaskFailure struct {
	Arn, Reason, Detail string
}

// RunTask starts the task in asks for.
func (e *ECS) RunTask(ctx context.Context, in RunTaskInput) (*Tasks, error) {
	var out Tasks
	err := e.c.callJSON(ctx, "RunTask", in, &out)
	return &out, err
}

// DescribeTasks describes the tasks arns of cluster.
func (e *ECS) DescribeTasks(ctx context.Context, cluster string, arns ...string) (*Tasks, error) {
	var out Tasks
	err := e.c.callJSON(ctx, "DescribeTasks", map[string]any{"cluster": cluster, "tasks": arns}, &out)
	return &out, err
}

// StopTask stops the task of cluster, saying why (reason may be empty).
func (e *ECS) StopTask(ctx context.Context, cluster, task, reason string) error {
	in := map[string]string{"cluster": cluster, "task": task}
	if reason != "" {
		in["reason"] = reason
	}
	return e.c.callJSON(ctx, "StopTask", in, nil)
}
