package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
	gocmp "github.com/google/go-cmp/cmp"
)

// TestSandboxOff: without -c sandbox=fargate the stack has no VPC, ECS or
// endpoint (the interface endpoints cost money idle) and the step function
// no sandbox settings.
func TestSandboxOff(t *testing.T) {
	s := stack(t, variantDefault)
	for _, typ := range []string{"AWS::EC2::VPC", "AWS::ECS::Cluster", "AWS::ECS::TaskDefinition", "AWS::EC2::VPCEndpoint", "AWS::ECR::PullThroughCacheRule"} {
		if n := len(s.resources(typ)); n != 0 {
			t.Errorf("%d %s without the sandbox", n, typ)
		}
	}
	vars := props(s.resources("AWS::Lambda::Function")[s.functionID(t, "step")])["Environment"].(map[string]any)["Variables"].(map[string]any)
	for k := range vars {
		if strings.HasPrefix(k, "SANDBOX_") {
			t.Errorf("step has %s without the sandbox", k)
		}
	}
}

// TestSandboxTask: the task definition is ARM64 Fargate; the runner runs
// unprivileged as PID 1 on a read-only root with every capability
// dropped, after the init container.
func TestSandboxTask(t *testing.T) {
	s := stack(t, variantSandbox)
	defs := s.resources("AWS::ECS::TaskDefinition")
	if len(defs) != 1 {
		t.Fatalf("%d task definitions, want 1", len(defs))
	}
	var def map[string]any
	for _, d := range defs {
		def = props(d)
	}
	if got := def["Family"]; got != StackName+"-sandbox" {
		t.Errorf("family %v", got)
	}
	wantDef := map[string]any{
		"RequiresCompatibilities": []any{"FARGATE"},
		"NetworkMode":             "awsvpc",
		"Cpu":                     "1024",
		"Memory":                  "2048",
		"EphemeralStorage":        map[string]any{"SizeInGiB": float64(21)},
		"RuntimePlatform":         map[string]any{"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
	}
	for k, v := range wantDef {
		if diff := gocmp.Diff(v, def[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	containers := map[string]map[string]any{}
	for _, c := range list(def["ContainerDefinitions"]) {
		c := c.(map[string]any)
		containers[c["Name"].(string)] = c
	}
	runner, init := containers[sandboxContainer], containers["init"]
	if runner == nil || init == nil || len(containers) != 2 {
		t.Fatalf("containers %v, want runner and init", keys(containers))
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"runner user", runner["User"], sandboxUser},
		{"runner read-only root", runner["ReadonlyRootFilesystem"], true},
		{"runner essential", runner["Essential"], true},
		{"runner capabilities", runner["LinuxParameters"].(map[string]any)["Capabilities"], map[string]any{"Drop": []any{"ALL"}}},
		{"runner is PID 1", runner["LinuxParameters"].(map[string]any)["InitProcessEnabled"], false},
		{"runner after init", runner["DependsOn"], []any{map[string]any{"Condition": "SUCCESS", "ContainerName": "init"}}},
		{"runner program", runner["EntryPoint"], []any{"/runner/sandbox"}},
		{"init read-only root", init["ReadonlyRootFilesystem"], true},
		{"init not essential", init["Essential"], false},
	}
	for _, c := range checks {
		if diff := gocmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.what, diff)
		}
	}
	// The runner's writable places are volumes; its own program is not
	// writable.
	mounts := map[string]string{}
	for _, mp := range list(runner["MountPoints"]) {
		mp := mp.(map[string]any)
		mounts[mp["ContainerPath"].(string)] = mp["SourceVolume"].(string)
		if ro, _ := mp["ReadOnly"].(bool); ro != (mp["SourceVolume"] == "runner") {
			t.Errorf("mount %v: read-only %v", mp["ContainerPath"], ro)
		}
	}
	want := map[string]string{"/runner": "runner", "/workspace": "workspace", "/tmp": "scratch", "/run/lambdaclaw": "bridge", "/tools": "tools"}
	if diff := gocmp.Diff(want, mounts); diff != "" {
		t.Errorf("runner mounts (-want +got):\n%s", diff)
	}
	for _, c := range containers {
		if img := render(c["Image"]); !strings.Contains(img, ".dkr.ecr.") || !strings.Contains(img, "/lambdaclaw-ecr-public/") {
			t.Errorf("image %s is not pulled through the stack's cache", img)
		}
	}
}

// TestSandboxNetwork: isolated subnets, no internet or NAT gateway, no
// public IP; the tasks' only egress is HTTPS to S3's prefix list and to
// the interface endpoints; the gateway endpoint admits only the buckets
// the task needs.
func TestSandboxNetwork(t *testing.T) {
	s := stack(t, variantSandbox)
	for typ, want := range map[string]int{"AWS::EC2::VPC": 1, "AWS::EC2::InternetGateway": 0, "AWS::EC2::NatGateway": 0, "AWS::EC2::EIP": 0, "AWS::EC2::Subnet": 2} {
		if n := len(s.resources(typ)); n != want {
			t.Errorf("%d %s, want %d", n, typ, want)
		}
	}
	for id, sn := range s.resources("AWS::EC2::Subnet") {
		if props(sn)["MapPublicIpOnLaunch"] != false {
			t.Errorf("subnet %s maps public IPs", id)
		}
	}
	var tasksSG, endpointsSG string
	for id, sg := range s.resources("AWS::EC2::SecurityGroup") {
		d, _ := props(sg)["GroupDescription"].(string)
		switch {
		case strings.HasPrefix(d, "lambdaclaw sandbox tasks"):
			tasksSG = id
		case strings.HasPrefix(d, "lambdaclaw sandbox: the interface endpoints"):
			endpointsSG = id
		}
		for _, e := range list(props(sg)["SecurityGroupEgress"]) {
			if e, ok := e.(map[string]any); ok && e["CidrIp"] == "0.0.0.0/0" && !strings.Contains(render(e), "Disallow all traffic") {
				t.Errorf("security group %s (%s) has egress to the internet: %v", id, d, e)
			}
		}
	}
	if tasksSG == "" || endpointsSG == "" {
		t.Fatal("no tasks' or endpoints' security group")
	}
	// The tasks' group holds its egress inline: a group created with
	// none keeps EC2's default allow-all egress beside any separate
	// AWS::EC2::SecurityGroupEgress.
	rule := func(p map[string]any) string {
		to := render(p["DestinationSecurityGroupId"])
		if pl, ok := p["DestinationPrefixListId"]; ok {
			to = "prefix list " + render(pl)
		}
		if cidr, ok := p["CidrIp"]; ok {
			to = render(cidr)
		}
		return render(p["IpProtocol"]) + "/" + render(p["FromPort"]) + "-" + render(p["ToPort"]) + " to " + to
	}
	var egress []string
	for _, e := range list(props(s.resources("AWS::EC2::SecurityGroup")[tasksSG])["SecurityGroupEgress"]) {
		if e, ok := e.(map[string]any); ok {
			egress = append(egress, rule(e))
		}
	}
	if len(egress) == 0 {
		t.Error("the tasks' security group has no inline egress: CloudFormation keeps the default allow-all egress")
	}
	for _, e := range s.resources("AWS::EC2::SecurityGroupEgress") {
		if p := props(e); render(p["GroupId"]) == "${"+tasksSG+".GroupId}" {
			egress = append(egress, rule(p))
		}
	}
	slices.Sort(egress)
	want := []string{"tcp/443-443 to ${" + endpointsSG + ".GroupId}", "tcp/443-443 to prefix list ${S3PrefixList" + "}"}
	if len(egress) != 2 || egress[0] != want[0] || !strings.HasPrefix(egress[1], "tcp/443-443 to prefix list ${S3PrefixList") {
		t.Errorf("tasks' egress %v, want HTTPS to the endpoints and to S3's prefix list", egress)
	}

	services := map[string]string{}
	for id, ep := range s.resources("AWS::EC2::VPCEndpoint") {
		p := props(ep)
		name := render(p["ServiceName"])
		service := name[strings.LastIndex(name, ".")+1:]
		services[service] = render(p["VpcEndpointType"])
		if p["VpcEndpointType"] == "Interface" && len(list(p["SubnetIds"])) != 1 {
			t.Errorf("%s endpoint in %d subnets, want 1 (each zone bills by the hour)", name, len(list(p["SubnetIds"])))
		}
		// Every endpoint admits this account's principals on this
		// account's resources; the exceptions are ECR's registry login,
		// which names no resource, and ECR's layer bucket, which AWS owns
		// and ECR's own account signs the reads of.
		policy, _ := p["PolicyDocument"].(map[string]any)
		if policy == nil {
			t.Errorf("%s endpoint %s has no policy: it admits anyone's requests to anything", service, id)
			continue
		}
		var got []string
		for _, st := range list(policy["Statement"]) {
			st := st.(map[string]any)
			if st["Effect"] != "Allow" || render(st["Principal"]) != `{"AWS":"*"}` {
				t.Errorf("%s endpoint: statement %s", service, render(st))
			}
			var res []string
			for _, r := range list(st["Resource"]) {
				res = append(res, render(r))
			}
			slices.Sort(res)
			var actions []string
			for _, a := range list(st["Action"]) {
				actions = append(actions, a.(string))
			}
			got = append(got, fmt.Sprintf("%v on %v if %s", actions, res, render(st["Condition"])))
		}
		slices.Sort(got)
		thisAccount := `{"StringEquals":{"aws:PrincipalAccount":{"Ref":"AWS::AccountId"}}}`
		own := func(svc string) string { return "arn:${AWS::Partition}:" + svc + ":${AWS::Region}:${AWS::AccountId}:*" }
		var want []string
		switch service {
		case "api", "dkr":
			want = []string{"[ecr:*] on [" + own("ecr") + "] if " + thisAccount, "[ecr:GetAuthorizationToken] on [*] if " + thisAccount}
		case "logs":
			want = []string{"[logs:*] on [" + own("logs") + "] if " + thisAccount}
		case "s3":
			bucket := "${" + keys(s.resources("AWS::S3::Bucket"))[0] + ".Arn}"
			want = []string{
				"[s3:GetObject s3:PutObject s3:DeleteObject s3:ListBucket] on [" + bucket + " " + bucket + "/* " + runnerObject(t, s) + "] if " + thisAccount,
				"[s3:GetObject] on [arn:${AWS::Partition}:s3:::prod-${AWS::Region}-starport-layer-bucket/*] if null",
			}
			slices.Sort(want)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("the %s endpoint's policy (-want +got):\n%s", service, diff)
		}
	}
	if diff := gocmp.Diff(map[string]string{"s3": "Gateway", "api": "Interface", "dkr": "Interface", "logs": "Interface"}, services); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	if got := stepVars(t, s)["SANDBOX_ASSIGN_PUBLIC_IP"]; got != "DISABLED" {
		t.Errorf("SANDBOX_ASSIGN_PUBLIC_IP=%v, want DISABLED", got)
	}
}

// runnerObject is the ARN of the runner's object in the CDK's asset
// bucket, as rendered in the template.
func runnerObject(t *testing.T, s *synthesized) string {
	t.Helper()
	for _, st := range s.statements() {
		if slices.Contains(st.actions, "s3:GetObject") {
			for _, r := range st.resources {
				if r := render(r); runnerAsset.MatchString(r) {
					return r
				}
			}
		}
	}
	t.Fatal("no grant of the runner's object")
	return ""
}

// stepVars returns the step function's environment.
func stepVars(t *testing.T, s *synthesized) map[string]any {
	t.Helper()
	return props(s.resources("AWS::Lambda::Function")[s.functionID(t, "step")])["Environment"].(map[string]any)["Variables"].(map[string]any)
}

// TestSandboxPublicNetwork: with sandbox_network=public the tasks run in
// public subnets with a public IP (RunTask's, not the subnets'), their
// only egress HTTPS to anywhere, and nothing bills by the hour: no
// endpoint, no NAT gateway.
func TestSandboxPublicNetwork(t *testing.T) {
	s := stack(t, variantSandboxPublic)
	for typ, want := range map[string]int{"AWS::EC2::VPC": 1, "AWS::EC2::InternetGateway": 1, "AWS::EC2::NatGateway": 0, "AWS::EC2::EIP": 0,
		"AWS::EC2::Subnet": 2, "AWS::EC2::VPCEndpoint": 0, "AWS::EC2::SecurityGroupEgress": 0, "AWS::EC2::SecurityGroupIngress": 0} {
		if n := len(s.resources(typ)); n != want {
			t.Errorf("%d %s, want %d", n, typ, want)
		}
	}
	var subnetIDs []string
	for id, sn := range s.resources("AWS::EC2::Subnet") {
		subnetIDs = append(subnetIDs, "${"+id+"}")
		if props(sn)["MapPublicIpOnLaunch"] != false {
			t.Errorf("subnet %s maps public IPs to whatever starts in it", id)
		}
	}
	// Each subnet routes to the internet gateway.
	routes := 0
	for _, r := range s.resources("AWS::EC2::Route") {
		if p := props(r); p["DestinationCidrBlock"] == "0.0.0.0/0" && strings.HasPrefix(render(p["GatewayId"]), "${SandboxVpcIGW") {
			routes++
		}
	}
	if routes != 2 {
		t.Errorf("%d routes to the internet gateway, want one per subnet", routes)
	}
	groups := s.resources("AWS::EC2::SecurityGroup")
	if len(groups) != 1 {
		t.Fatalf("%d security groups, want the tasks' only", len(groups))
	}
	var tasksSG string
	var egress []any
	for id, sg := range groups {
		tasksSG, egress = id, list(props(sg)["SecurityGroupEgress"])
	}
	want := []any{map[string]any{"CidrIp": "0.0.0.0/0", "IpProtocol": "tcp", "FromPort": float64(443), "ToPort": float64(443),
		"Description": "HTTPS: S3, ECR, CloudWatch Logs and what commands fetch"}}
	if diff := gocmp.Diff(want, egress); diff != "" {
		t.Errorf("the tasks' egress (-want +got):\n%s", diff)
	}
	vars := stepVars(t, s)
	slices.Sort(subnetIDs)
	gotSubnets := strings.Split(render(vars["SANDBOX_SUBNETS"]), ",")
	slices.Sort(gotSubnets)
	for k, c := range map[string]struct{ got, want any }{
		"SANDBOX_ASSIGN_PUBLIC_IP": {vars["SANDBOX_ASSIGN_PUBLIC_IP"], "ENABLED"},
		"SANDBOX_SECURITY_GROUPS":  {render(vars["SANDBOX_SECURITY_GROUPS"]), "${" + tasksSG + ".GroupId}"},
		"SANDBOX_SUBNETS":          {gotSubnets, subnetIDs},
	} {
		if diff := gocmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
}

// TestSandboxGrants: the step function may run the sandbox's task
// definition in its cluster only, watch and stop its tasks, and pass its
// two roles to ECS only; it and the task role reach the control objects.
func TestSandboxGrants(t *testing.T) {
	s := stack(t, variantSandbox)
	step := s.functionID(t, "step")
	role := "${" + s.roleOf(t, step) + "}"
	var taskRole, execRole string
	for _, d := range s.resources("AWS::ECS::TaskDefinition") {
		taskRole, execRole = render(props(d)["TaskRoleArn"]), render(props(d)["ExecutionRoleArn"])
	}
	found := map[string]bool{}
	for _, st := range s.statements() {
		if !slices.Contains(st.roles, role) {
			continue
		}
		for _, a := range st.actions {
			var res []string
			for _, r := range st.resources {
				res = append(res, render(r))
			}
			cond := render(st.raw["Condition"])
			switch {
			case a == "ecs:RunTask":
				found[a] = true
				if len(res) != 1 || !strings.HasSuffix(res[0], ":task-definition/"+StackName+"-sandbox:*") || !strings.Contains(cond, "ecs:cluster") {
					t.Errorf("ecs:RunTask on %v if %s", res, cond)
				}
			case a == "ecs:DescribeTasks" || a == "ecs:StopTask":
				found[a] = true
				if len(res) != 1 || !strings.Contains(res[0], ":task/${SandboxCluster") {
					t.Errorf("%s on %v", a, res)
				}
			case a == "iam:PassRole" && strings.Contains(cond, "ecs-tasks.amazonaws.com"):
				found[a] = true
				slices.Sort(res)
				want := []string{execRole, taskRole}
				slices.Sort(want)
				if !slices.Equal(res, want) {
					t.Errorf("iam:PassRole on %v, want %v", res, want)
				}
			case strings.HasPrefix(a, "ecs:"):
				t.Errorf("step may %s on %v", a, res)
			}
		}
	}
	for _, a := range []string{"ecs:RunTask", "ecs:DescribeTasks", "ecs:StopTask", "iam:PassRole"} {
		if !found[a] {
			t.Errorf("step may not %s", a)
		}
	}
	bucket := "${" + keys(s.resources("AWS::S3::Bucket"))[0] + ".Arn}"
	for what, r := range map[string]string{"step": role, "task role": "${" + strings.TrimSuffix(strings.TrimPrefix(taskRole, "${"), ".Arn}") + "}"} {
		var objects []string
		for _, st := range s.statements() {
			if slices.Contains(st.roles, r) && slices.Contains(st.actions, "s3:PutObject") {
				for _, res := range st.resources {
					objects = append(objects, render(res))
				}
			}
		}
		if !slices.Contains(objects, bucket+"/sandbox/*") || !slices.Contains(objects, bucket+"/agents/*") {
			t.Errorf("%s writes %v, want the workspaces and the control objects", what, objects)
		}
	}
	vars := props(s.resources("AWS::Lambda::Function")[step])["Environment"].(map[string]any)["Variables"].(map[string]any)
	for _, k := range []string{"SANDBOX_BACKEND", "SANDBOX_CLUSTER", "SANDBOX_TASK_DEFINITION", "SANDBOX_CONTAINER", "SANDBOX_SUBNETS", "SANDBOX_SECURITY_GROUPS"} {
		if vars[k] == nil {
			t.Errorf("step has no %s", k)
		}
	}
	assert(t, "the control objects expire", func() {
		s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), m{
			"LifecycleConfiguration": objectLike(m{"Rules": arrayWith(objectLike(m{"Prefix": "sandbox/", "ExpirationInDays": 1, "Status": "Enabled"}))}),
		})
	})
}
