package ecs

import (
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// The environment of the function that runs the loop's tools (the step
// function), set by infra/sandbox.go with -c sandbox=fargate.
const (
	// EnvBackend is "fargate" where the stack has the sandbox.
	EnvBackend = "SANDBOX_BACKEND"
	// EnvCluster, EnvTaskDefinition (a family: its latest revision) and
	// EnvContainer name what RunTask starts.
	EnvCluster        = "SANDBOX_CLUSTER"
	EnvTaskDefinition = "SANDBOX_TASK_DEFINITION"
	EnvContainer      = "SANDBOX_CONTAINER"
	// EnvSubnets and EnvSecurityGroups are comma-separated ids.
	EnvSubnets        = "SANDBOX_SUBNETS"
	EnvSecurityGroups = "SANDBOX_SECURITY_GROUPS"
	// EnvAssignPublicIP is RunTask's assignPublicIp: DISABLED (the
	// default; isolated subnets reaching AWS through VPC endpoints) or
	// ENABLED (public subnets: infra's sandbox_network=public).
	EnvAssignPublicIP = "SANDBOX_ASSIGN_PUBLIC_IP"
	// EnvEndpoint replaces ECS's endpoint (tests). EnvIdle, also read
	// here, is the tasks' idle time (5m if unset).
	EnvEndpoint = "ECS_ENDPOINT"
)

// RunTask's assignPublicIp values.
const (
	assignPublicIPDisabled = "DISABLED"
	assignPublicIPEnabled  = "ENABLED"
)

// FromEnv returns the Backend the environment configures, over bucket, the
// root of the workspace bucket (the composition root's files, cloud.NewWith), with what base sets
// and the environment does not say (the bridge: ServeBridge and
// ToolFiles). An environment without the sandbox fails with
// sandbox.ErrUnavailable.
func FromEnv(cfg aws.Config, getenv func(string) string, bucket *s3fs.FS, base Config) (*Backend, error) {
	if b := getenv(EnvBackend); b != "fargate" {
		return nil, fmt.Errorf("ecs sandbox: %w: %s=%q, want \"fargate\"", sandbox.ErrUnavailable, EnvBackend, b)
	}
	name, prefix := bucket.Bucket()
	if prefix != "" {
		return nil, fmt.Errorf("ecs sandbox: the bucket's root is wanted, not %q", prefix)
	}
	var idle time.Duration
	if v := getenv(EnvIdle); v != "" {
		var err error
		if idle, err = time.ParseDuration(v); err != nil || idle <= 0 {
			return nil, fmt.Errorf("ecs sandbox: %s=%q is not a positive duration", EnvIdle, v)
		}
	}
	base.Cluster, base.TaskDefinition, base.Container = getenv(EnvCluster), getenv(EnvTaskDefinition), getenv(EnvContainer)
	base.Subnets, base.SecurityGroups = split(getenv(EnvSubnets)), split(getenv(EnvSecurityGroups))
	switch v := getenv(EnvAssignPublicIP); v {
	case "", assignPublicIPDisabled:
	case assignPublicIPEnabled:
		base.PublicIP = true
	default:
		return nil, fmt.Errorf("ecs sandbox: %s=%q, want %q or %q", EnvAssignPublicIP, v, assignPublicIPDisabled, assignPublicIPEnabled)
	}
	base.Bucket, base.BucketName, base.Idle = bucket, name, idle
	client, err := NewClient(cfg, getenv(EnvEndpoint))
	if err != nil {
		return nil, err
	}
	return New(client, base)
}

// split returns the non-empty comma-separated fields of v.
func split(v string) []string {
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
