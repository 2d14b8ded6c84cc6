package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecr"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/jsii-runtime-go"
)

// The sandbox's images, pulled through the stack's ECR pull-through cache
// rule from ECR Public (tasks in isolated subnets reach no other
// registry; in public ones they pull the same way). Both are multi-architecture (arm64 among them) and pinned.
const (
	// sandboxImage is what commands run in: Debian with a shell, the
	// coreutils and Python.
	sandboxImage = "docker/library/python:3.13-slim-bookworm"
	// sandboxInitImage copies the runner from the stack's asset into the
	// task at its start (the AWS CLI's s3 cp).
	sandboxInitImage = "aws-cli/aws-cli:2.15.0"
	// sandboxContainer is the runner's container, which RunTask's
	// overrides name (shared/adapters/ecs).
	sandboxContainer = "runner"
	// sandboxUser is the unprivileged user commands run as (nobody).
	sandboxUser = "65534:65534"
	// controlPrefix holds the objects the step function and the tasks
	// exchange (shared/adapters/ecs.ControlRoot).
	controlPrefix = "sandbox/"
)

// sandbox adds the AWS backend of the exec tool (-c sandbox=fargate): an
// ECS cluster whose Fargate tasks run the runner (functions/sandbox), one
// per owner's session, started by the step function with RunTask.
//
// # Network: isolated (default) or public
//
// -c sandbox_network=isolated (isolatedNetwork): the tasks run in a VPC
// of its own with isolated subnets in two Availability Zones (no internet
// or NAT gateway, no public IP), behind a security group whose only
// egress is HTTPS to S3 (the gateway endpoint's prefix list) and to the
// interface endpoints in the VPC. The task needs exactly: S3 (the
// workspace and control objects, the runner's asset, and the image layers
// ECR keeps in S3) through the gateway endpoint, which costs nothing, and
// ECR's API and registry (the image pull) and CloudWatch Logs (the
// runner's log) through interface endpoints. Every endpoint's policy
// admits only this account's principals on this account's resources: the
// gateway endpoint the workspace bucket and the runner's asset (and ECR's
// layer bucket, AWS's, read through URLs ECR signs), the interface
// endpoints their service's ARNs in this account and Region; so a command
// cannot send data to another account's bucket, repository or log group,
// even with credentials of its own.
//
// -c sandbox_network=public (publicNetwork), for those who accept that a
// command reaches the internet over HTTPS: public subnets, a public IP
// per task (RunTask's assignPublicIp, SANDBOX_ASSIGN_PUBLIC_IP on the step
// function), a security group whose only egress is HTTPS to anywhere, and
// no endpoint at all: the tasks reach S3, ECR and CloudWatch Logs at their
// public addresses, and a command can fetch packages, or send its
// workspace anywhere.
//
// # What it costs idle
//
// Isolated: interface endpoints bill by the hour in each Availability
// Zone: the three are placed in one zone (tasks in the other reach them
// across zones, $0.01/GB), 3 × $0.01/h × 730 h ≈ $21.90 a month in
// us-east-1, plus $0.01 per GB through them. That is why the sandbox is
// off unless asked for. Public: nothing bills idle (the internet gateway
// is free); a running task's public IPv4 address bills $0.005/h. The
// cluster, the task definition, the VPC, the gateway endpoint and the
// pull-through cache rule cost nothing; a task bills per second while it
// runs (README: Fargate sandbox).
//
// # The image, without Docker
//
// `cdk deploy` users have Go, make and npm, not necessarily Docker, so
// nothing is built into an image: the task's init container (the AWS CLI
// image) copies the runner, which `make build` compiles for linux/arm64
// into dist/sandbox/bootstrap and the CDK uploads as a file asset, into a
// volume shared with the runner's container (a stock Python image), and
// prepares the volumes for the unprivileged user. Both images come through
// the pull-through cache rule; ECR creates their repositories on the first
// pull.
//
// # The task
//
// ARM64, 1 vCPU and 2 GB (Fargate's smallest with a whole vCPU), 21 GiB of
// ephemeral storage (the least that can be set; the runner bounds a
// workspace to 1 GB). The runner's container runs as nobody with a
// read-only root filesystem and all Linux capabilities dropped, as PID 1
// (no init process: the runner kills and reaps what commands leave);
// /workspace and /tmp are task volumes, and so are the tool bridge's
// socket directory and /tools, which the runner fills for a command that
// may call the agent's tools (shared/adapters/ecs/bridge.go). Its task
// role reads and writes the workspaces and the control objects; the
// commands never see its credentials: the runner clears their environment
// and is not dumpable, so its /proc/1/environ, which names the
// credentials endpoint, is not theirs to read.
func (s *builder) sandbox() {
	stack := s.stack
	runnerAsset := awss3assets.NewAsset(stack, jsii.String("SandboxRunner"), &awss3assets.AssetProps{
		Path: jsii.String(s.cfg.Assets + "/sandbox/bootstrap"),
	})
	var net sandboxNetwork
	if s.cfg.SandboxNetwork == SandboxPublic {
		net = s.publicNetwork()
	} else {
		net = s.isolatedNetwork(runnerAsset)
	}
	// ECR Public through a pull-through cache rule of this stack.
	cachePrefix := strings.ToLower(*stack.StackName()) + "-ecr-public"
	awsecr.NewCfnPullThroughCacheRule(stack, jsii.String("SandboxImages"), &awsecr.CfnPullThroughCacheRuleProps{
		EcrRepositoryPrefix: jsii.String(cachePrefix),
		UpstreamRegistry:    jsii.String("ecr-public"),
		UpstreamRegistryUrl: jsii.String("public.ecr.aws"),
	})
	image := func(name string) awsecs.ContainerImage {
		return awsecs.ContainerImage_FromRegistry(awscdk.Fn_Join(jsii.String(""), &[]*string{
			stack.Account(), jsii.String(".dkr.ecr."), stack.Region(), jsii.String("."), stack.UrlSuffix(), jsii.String("/" + cachePrefix + "/" + name),
		}), nil)
	}

	cluster := awsecs.NewCluster(stack, jsii.String("SandboxCluster"), &awsecs.ClusterProps{Vpc: net.vpc})
	taskDef := awsecs.NewFargateTaskDefinition(stack, jsii.String("SandboxTask"), &awsecs.FargateTaskDefinitionProps{
		Family:              jsii.String(*stack.StackName() + "-sandbox"),
		Cpu:                 jsii.Number(1024),
		MemoryLimitMiB:      jsii.Number(2048),
		EphemeralStorageGiB: jsii.Number(21),
		RuntimePlatform: &awsecs.RuntimePlatform{
			CpuArchitecture:       awsecs.CpuArchitecture_ARM64(),
			OperatingSystemFamily: awsecs.OperatingSystemFamily_LINUX(),
		},
	})
	volumes := []string{"runner", "workspace", "scratch", "bridge", "tools"}
	for _, v := range volumes {
		taskDef.AddVolume(&awsecs.Volume{Name: jsii.String(v)})
	}
	logs := awslogs.NewLogGroup(stack, jsii.String("SandboxLogs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	logging := func(prefix string) awsecs.LogDriver {
		return awsecs.LogDriver_AwsLogs(&awsecs.AwsLogDriverProps{LogGroup: logs, StreamPrefix: jsii.String(prefix)})
	}
	// mounts mounts the volumes, in the order of volumes, at their paths:
	// the task definition's MountPoints are a list, and another order
	// would be another revision of the task definition on every deploy.
	mounts := func(c awsecs.ContainerDefinition, runnerReadOnly bool, paths map[string]string) {
		for _, v := range volumes {
			p, ok := paths[v]
			if !ok {
				continue
			}
			c.AddMountPoints(&awsecs.MountPoint{SourceVolume: jsii.String(v), ContainerPath: jsii.String(p), ReadOnly: jsii.Bool(v == "runner" && runnerReadOnly)})
		}
	}

	// init: as root, copy the runner in and hand the volumes to nobody.
	// The runner is also the bridge's client, lambdaclaw-tool, by the
	// name it is called by.
	initScript := "set -e; aws s3 cp --no-progress \"$RUNNER_URL\" /runner/sandbox; chmod 0555 /runner/sandbox; " +
		"ln -s sandbox /runner/lambdaclaw-tool; " +
		"chown 65534:65534 /work /bridge /tools; chmod 0700 /work; chmod 0755 /bridge /tools; chmod 1777 /scratch"
	initC := taskDef.AddContainer(jsii.String("init"), &awsecs.ContainerDefinitionOptions{
		Image:                  image(sandboxInitImage),
		Essential:              jsii.Bool(false),
		User:                   jsii.String("0"),
		ReadonlyRootFilesystem: jsii.Bool(true),
		EntryPoint:             jsii.Strings("/bin/sh", "-c"),
		Command:                jsii.Strings(initScript),
		Environment: &map[string]*string{
			"RUNNER_URL": runnerAsset.S3ObjectUrl(),
			"HOME":       jsii.String("/scratch"),
			"AWS_REGION": stack.Region(),
		},
		Logging: logging("init"),
	})
	mounts(initC, false, map[string]string{"runner": "/runner", "workspace": "/work", "scratch": "/scratch", "bridge": "/bridge", "tools": "/tools"})

	// No init process: the runner is PID 1, so /proc/1 is the
	// non-dumpable runner's, and it kills and reaps what commands leave.
	linux := awsecs.NewLinuxParameters(stack, jsii.String("SandboxLinux"), &awsecs.LinuxParametersProps{InitProcessEnabled: jsii.Bool(false)})
	linux.DropCapabilities(awsecs.Capability_ALL)
	runner := taskDef.AddContainer(jsii.String(sandboxContainer), &awsecs.ContainerDefinitionOptions{
		ContainerName:          jsii.String(sandboxContainer),
		Image:                  image(sandboxImage),
		Essential:              jsii.Bool(true),
		User:                   jsii.String(sandboxUser),
		ReadonlyRootFilesystem: jsii.Bool(true),
		LinuxParameters:        linux,
		EntryPoint:             jsii.Strings("/runner/sandbox"),
		WorkingDirectory:       jsii.String("/workspace"),
		Environment: &map[string]*string{
			"SANDBOX_DIR": jsii.String("/workspace"), "HOME": jsii.String("/workspace"), "AWS_REGION": stack.Region(),
			// The tool bridge: sandbox.SocketPath and sandbox.ToolsDir.
			"SANDBOX_SOCKET": jsii.String("/run/lambdaclaw/bridge.sock"), "SANDBOX_TOOLS": jsii.String("/tools"),
			"SANDBOX_PATH": jsii.String("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/runner"),
		},
		Logging:     logging("runner"),
		StopTimeout: awscdk.Duration_Seconds(jsii.Number(10)),
	})
	mounts(runner, true, map[string]string{"runner": "/runner", "workspace": "/workspace", "scratch": "/tmp", "bridge": "/run/lambdaclaw", "tools": "/tools"})
	runner.AddContainerDependencies(&awsecs.ContainerDependency{Container: initC, Condition: awsecs.ContainerDependencyCondition_SUCCESS})

	// The execution role pulls through the cache (ECR creates a cached
	// repository on its first pull).
	taskDef.ObtainExecutionRole().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability", "ecr:BatchImportUpstreamImage", "ecr:CreateRepository"),
		Resources: &[]*string{stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("ecr"), Resource: jsii.String("repository"), ResourceName: jsii.String(cachePrefix + "/*"),
		})},
	}))
	taskDef.ObtainExecutionRole().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("ecr:GetAuthorizationToken"),
		Resources: jsii.Strings("*"), // IAM takes this action on "*" only
	}))
	// The task role: the runner's asset, the workspaces and the control
	// objects.
	taskDef.TaskRole().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject"),
		Resources: &[]*string{runnerAsset.Bucket().ArnForObjects(runnerAsset.S3ObjectKey())},
	}))
	s.grantWorkspaceTo(taskDef.TaskRole(), controlPrefix)

	// The step function runs the tools: it starts, watches and stops the
	// tasks, and passes their roles to ECS only.
	step := s.fns["step"]
	step.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("ecs:RunTask"),
		Resources:  &[]*string{stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ecs"), Resource: jsii.String("task-definition"), ResourceName: jsii.String(*stack.StackName() + "-sandbox:*")})},
		Conditions: &map[string]any{"ArnEquals": map[string]any{"ecs:cluster": cluster.ClusterArn()}},
	}))
	step.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("ecs:DescribeTasks", "ecs:StopTask"),
		Resources: &[]*string{stack.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("ecs"), Resource: jsii.String("task"),
			ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{cluster.ClusterName(), jsii.String("/*")}),
		})},
	}))
	step.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:    jsii.Strings("iam:PassRole"),
		Resources:  &[]*string{taskDef.TaskRole().RoleArn(), taskDef.ObtainExecutionRole().RoleArn()},
		Conditions: &map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "ecs-tasks.amazonaws.com"}},
	}))
	s.grantWorkspaceTo(step.Role(), controlPrefix)
	var subnetIDs []*string
	for _, sn := range net.subnets {
		subnetIDs = append(subnetIDs, sn.SubnetId())
	}
	publicIP := "DISABLED"
	if net.publicIP {
		publicIP = "ENABLED"
	}
	addEnvironment(step, map[string]*string{
		"SANDBOX_BACKEND":          jsii.String("fargate"),
		"SANDBOX_CLUSTER":          cluster.ClusterName(),
		"SANDBOX_TASK_DEFINITION":  jsii.String(*stack.StackName() + "-sandbox"),
		"SANDBOX_CONTAINER":        jsii.String(sandboxContainer),
		"SANDBOX_SUBNETS":          awscdk.Fn_Join(jsii.String(","), &subnetIDs),
		"SANDBOX_SECURITY_GROUPS":  net.tasks.SecurityGroupId(),
		"SANDBOX_ASSIGN_PUBLIC_IP": jsii.String(publicIP),
	})
	s.sandboxCluster = cluster
}

// sandboxNetwork is where the tasks run: RunTask's subnets, security
// group and public IP (the step function's SANDBOX_* settings).
type sandboxNetwork struct {
	vpc      awsec2.Vpc
	subnets  []awsec2.ISubnet
	tasks    awsec2.SecurityGroup
	publicIP bool
}

// isolatedNetwork is -c sandbox_network=isolated (the default): isolated
// subnets, S3 through the gateway endpoint, ECR and CloudWatch Logs
// through interface endpoints, each endpoint's policy admitting only this
// account's principals and, but for ECR's layer bucket, this account's
// resources.
func (s *builder) isolatedNetwork(runnerAsset awss3assets.Asset) sandboxNetwork {
	stack := s.stack
	vpc := awsec2.NewVpc(stack, jsii.String("SandboxVpc"), &awsec2.VpcProps{
		MaxAzs:                       jsii.Number(2),
		NatGateways:                  jsii.Number(0),
		CreateInternetGateway:        jsii.Bool(false),
		RestrictDefaultSecurityGroup: jsii.Bool(false), // unused: the tasks have their own
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name:       jsii.String("sandbox"),
			SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED,
			CidrMask:   jsii.Number(24),
		}},
	})
	subnets := &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
	thisAccount := map[string]any{"StringEquals": map[string]any{"aws:PrincipalAccount": stack.Account()}}

	// S3: the workspaces and the runner's asset, by this account's
	// principals; ECR's layer bucket, AWS's, read with the presigned URLs
	// ECR's own account signs.
	layerBucket := awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("arn:"), stack.Partition(), jsii.String(":s3:::prod-"), stack.Region(), jsii.String("-starport-layer-bucket/*")})
	s3Endpoint := vpc.AddGatewayEndpoint(jsii.String("S3"), &awsec2.GatewayVpcEndpointOptions{
		Service: awsec2.GatewayVpcEndpointAwsService_S3(),
		Subnets: &[]*awsec2.SubnetSelection{subnets},
	})
	s3Endpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket"),
		Resources: &[]*string{
			s.workspaces.BucketArn(), s.workspaces.ArnForObjects(jsii.String("*")),
			runnerAsset.Bucket().ArnForObjects(runnerAsset.S3ObjectKey()),
		},
		Conditions: &thisAccount,
	}))
	s3Endpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("s3:GetObject"),
		Resources:  &[]*string{layerBucket},
	}))

	// The tasks' egress: HTTPS to S3's prefix list, which CloudFormation
	// cannot name, so a lookup at deploy time reads its id.
	prefixList := customresources.NewAwsCustomResource(stack, jsii.String("S3PrefixList"), &customresources.AwsCustomResourceProps{
		OnUpdate: &customresources.AwsSdkCall{
			Service: jsii.String("EC2"),
			Action:  jsii.String("describeManagedPrefixLists"),
			Parameters: map[string]any{"Filters": []any{map[string]any{
				"Name":   "prefix-list-name",
				"Values": []any{awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("com.amazonaws."), stack.Region(), jsii.String(".s3")})},
			}}},
			PhysicalResourceId: customresources.PhysicalResourceId_FromResponse(jsii.String("PrefixLists.0.PrefixListId")),
			OutputPaths:        jsii.Strings("PrefixLists.0.PrefixListId"),
		},
		Policy: customresources.AwsCustomResourcePolicy_FromSdkCalls(&customresources.SdkCallsPolicyOptions{Resources: customresources.AwsCustomResourcePolicy_ANY_RESOURCE()}),
		LogGroup: awslogs.NewLogGroup(stack, jsii.String("S3PrefixListLogs"), &awslogs.LogGroupProps{
			Retention:     awslogs.RetentionDays_ONE_MONTH,
			RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
		}),
		InstallLatestAwsSdk: jsii.Bool(false),
	})
	endpointsSG := awsec2.NewSecurityGroup(stack, jsii.String("SandboxEndpoints"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("lambdaclaw sandbox: the interface endpoints, reached by the tasks"),
		AllowAllOutbound: jsii.Bool(false),
	})
	tasksSG := awsec2.NewSecurityGroup(stack, jsii.String("SandboxTasks"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("lambdaclaw sandbox tasks: HTTPS to S3 and the VPC endpoints only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	// The tasks' egress rules are the group's own (inline): CDK makes
	// rules to a security group or an unresolved prefix list separate
	// resources and leaves the group's SecurityGroupEgress empty, and a
	// group created without any keeps EC2's default allow-all egress.
	tasksSG.Node().DefaultChild().(awsec2.CfnSecurityGroup).AddPropertyOverride(jsii.String("SecurityGroupEgress"), []any{
		map[string]any{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "Description": "S3 through the gateway endpoint",
			"DestinationPrefixListId": prefixList.GetResponseField(jsii.String("PrefixLists.0.PrefixListId"))},
		map[string]any{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "Description": "ECR and CloudWatch Logs endpoints",
			"DestinationSecurityGroupId": endpointsSG.SecurityGroupId()},
	})
	endpointsSG.AddIngressRule(tasksSG, awsec2.Port_Tcp(jsii.Number(443)), jsii.String("the sandbox tasks"), nil)
	oneZone := &awsec2.SubnetSelection{Subnets: &[]awsec2.ISubnet{(*vpc.IsolatedSubnets())[0]}}
	// Each interface endpoint admits this account's principals acting on
	// this account's resources of its service (an ARN with the account,
	// which needs no aws:ResourceAccount in the request); ECR's registry
	// login names no resource and is admitted on "*".
	ownResources := func(service string) *[]*string {
		return &[]*string{stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String(service), Resource: jsii.String("*"), ArnFormat: awscdk.ArnFormat_NO_RESOURCE_NAME})}
	}
	ecrLogin := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("ecr:GetAuthorizationToken"),
		Resources:  jsii.Strings("*"),
		Conditions: &thisAccount,
	})
	// A list, not a map: the template lists what is created in the order
	// it is created, the same on every synth.
	for _, e := range []struct {
		id, service string
		svc         awsec2.InterfaceVpcEndpointAwsService
	}{
		{"EcrApi", "ecr", awsec2.InterfaceVpcEndpointAwsService_ECR()},
		{"EcrDocker", "ecr", awsec2.InterfaceVpcEndpointAwsService_ECR_DOCKER()},
		{"Logs", "logs", awsec2.InterfaceVpcEndpointAwsService_CLOUDWATCH_LOGS()},
	} {
		ep := vpc.AddInterfaceEndpoint(jsii.String(e.id), &awsec2.InterfaceVpcEndpointOptions{
			Service:           e.svc,
			Subnets:           oneZone,
			SecurityGroups:    &[]awsec2.ISecurityGroup{endpointsSG},
			PrivateDnsEnabled: jsii.Bool(true),
			Open:              jsii.Bool(false),
		})
		ep.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings(e.service + ":*"),
			Resources:  ownResources(e.service),
			Conditions: &thisAccount,
		}))
		if e.service == "ecr" {
			ep.AddToPolicy(ecrLogin)
		}
	}
	return sandboxNetwork{vpc: vpc, subnets: *vpc.IsolatedSubnets(), tasks: tasksSG}
}

// publicNetwork is -c sandbox_network=public: public subnets, a public IP
// per task, HTTPS to anywhere and no VPC endpoint, so nothing bills by
// the hour.
func (s *builder) publicNetwork() sandboxNetwork {
	vpc := awsec2.NewVpc(s.stack, jsii.String("SandboxVpc"), &awsec2.VpcProps{
		MaxAzs:                       jsii.Number(2),
		NatGateways:                  jsii.Number(0),
		RestrictDefaultSecurityGroup: jsii.Bool(false), // unused: the tasks have their own
		SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
			Name:       jsii.String("sandbox"),
			SubnetType: awsec2.SubnetType_PUBLIC,
			CidrMask:   jsii.Number(24),
			// Only the tasks, which ask RunTask for one, get a public IP.
			MapPublicIpOnLaunch: jsii.Bool(false),
		}},
	})
	tasksSG := awsec2.NewSecurityGroup(s.stack, jsii.String("SandboxTasks"), &awsec2.SecurityGroupProps{
		Vpc:              vpc,
		Description:      jsii.String("lambdaclaw sandbox tasks: HTTPS to anywhere only"),
		AllowAllOutbound: jsii.Bool(false),
	})
	tasksSG.AddEgressRule(awsec2.Peer_AnyIpv4(), awsec2.Port_Tcp(jsii.Number(443)), jsii.String("HTTPS: S3, ECR, CloudWatch Logs and what commands fetch"), nil)
	return sandboxNetwork{vpc: vpc, subnets: *vpc.PublicSubnets(), tasks: tasksSG, publicIP: true}
}
