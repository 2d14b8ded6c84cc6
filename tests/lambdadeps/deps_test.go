// Package lambdadeps checks what the Lambda functions link (DESIGN.md §3):
// the binaries deployed to AWS must not carry the embedded adapters
// (SQLite, bubblewrap) nor the local server, and each carries only the
// parts of the composition root it uses (shared/wiring/cloud); and what
// every production package links: no test support (testing, tests/…,
// conformance suites).
package lambdadeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// forbidden are import path prefixes no Lambda function may depend on;
// DynamoDB, S3 and the API Gateway Management API are called through
// awsapi, not the SDK's clients (their code and schemas' init work: S3's
// client alone was 1 MiB of each bootstrap).
var forbidden = []string{
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite",
	"github.com/lambdaclaw/lambdaclaw/shared/bwrap",
	"github.com/lambdaclaw/lambdaclaw/functions/lambdaclaw",
	"modernc.org/sqlite",
	"github.com/aws/aws-sdk-go-v2/service/dynamodb",
	"github.com/aws/aws-sdk-go-v2/service/s3",
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi",
}

// turnsOnly are the adapters and SDKs of the parts only a function that
// runs the loop's steps links (cloud/turns and cloud/fargate): the
// models, the sandbox, the MCP client and OpenSearch.
var turnsOnly = []string{
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock",
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs",
	"github.com/modelcontextprotocol/go-sdk",
	"github.com/opensearch-project/opensearch-go",
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns",
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate",
}

// forbiddenIn are, by function, the import path prefixes it may not
// depend on besides forbidden: the functions that start runs but step
// none link no part of the turns; the api function, which runs turns but
// has no sandbox, not the sandbox's.
var forbiddenIn = map[string][]string{
	"ws":        turnsOnly,
	"telegram":  turnsOnly,
	"channels":  turnsOnly,
	"scheduler": turnsOnly,
	"indexer": {
		"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock",
		"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs",
		"github.com/modelcontextprotocol/go-sdk",
		"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset",
		"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns",
	},
	"api": {
		"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs",
		"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate",
	},
}

// defaultChain is the SDK's default configuration (LoadDefaultConfig)
// and the credential providers of its chain (STS, SSO, SSO OIDC,
// Sign-In, IMDS, the container endpoint, processes): some 2 MiB of each
// bootstrap, for sources a Lambda function has none of. The functions
// take the credentials and Region Lambda sets in their environment
// (awsapi.EnvConfig); the Fargate sandbox, whose task role is served at
// the container endpoint, keeps the chain (chainUsers).
var defaultChain = []string{
	"github.com/aws/aws-sdk-go-v2/config",
	"github.com/aws/aws-sdk-go-v2/credentials/", // its providers; the root's static one is used
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds",
	"github.com/aws/aws-sdk-go-v2/service/sts",
	"github.com/aws/aws-sdk-go-v2/service/sso",
	"github.com/aws/aws-sdk-go-v2/service/ssooidc",
	"github.com/aws/aws-sdk-go-v2/service/signin",
}

// chainUsers are the functions that may link defaultChain.
var chainUsers = []string{"sandbox"}

// root is the repository: the directory above that holds go.mod.
func root(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// lambdas are the Lambda functions: every directory under functions/ but
// the local binary (and sandbox, the Fargate task's runner, built the
// same way).
func lambdas(t *testing.T, repo string) []string {
	entries, err := os.ReadDir(filepath.Join(repo, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var fns []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "lambdaclaw" {
			fns = append(fns, e.Name())
		}
	}
	if len(fns) == 0 {
		t.Fatal("no Lambda functions under functions/")
	}
	return fns
}

// TestLambdaDeps runs go list -deps for every Lambda function, for the
// platform and tags the Makefile builds them with.
func TestLambdaDeps(t *testing.T) {
	repo := root(t)
	for _, fn := range lambdas(t, repo) {
		t.Run(fn, func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "-tags", "lambda.norpc", "./functions/"+fn)
			cmd.Dir = repo
			cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("go list -deps ./functions/%s: %v\n%s", fn, err, out)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 10 {
				t.Fatalf("go list printed too little: %q", out)
			}
			rules := slices.Concat(forbidden, forbiddenIn[fn])
			if !slices.Contains(chainUsers, fn) {
				rules = append(rules, defaultChain...)
			}
			for _, d := range deps {
				for _, f := range rules {
					if d == f || strings.HasPrefix(d, strings.TrimSuffix(f, "/")+"/") {
						t.Errorf("functions/%s links %s", fn, d)
					}
				}
			}
		})
	}
}

// maxBootstrapMiB bounds each Lambda bootstrap, stripped, for linux/arm64
// (issue 25's budget), so that a new dependency of a function is a
// deliberate choice: raising it is a change of its own. `make bench`
// (BenchmarkFootprint) reports each size.
const maxBootstrapMiB = 15

// TestLambdaSize builds every Lambda function as `make build` does
// (stripped, linux/arm64, lambda.norpc) in one go build, and bounds each
// bootstrap. The packages are compiled for arm64 by the release test
// already; this adds the links, some seconds.
func TestLambdaSize(t *testing.T) {
	repo := root(t)
	fns := lambdas(t, repo)
	dir := t.TempDir()
	args := []string{"build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", dir + "/"}
	for _, fn := range fns {
		args = append(args, "./functions/"+fn)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, fn := range fns {
		st, err := os.Stat(filepath.Join(dir, fn))
		if err != nil {
			t.Fatal(err)
		}
		if got := float64(st.Size()) / (1 << 20); got > maxBootstrapMiB {
			t.Errorf("functions/%s's bootstrap is %.2f MiB (linux/arm64, stripped), more than its bound of %d MiB: "+
				"measure what grew it (go tool nm -size -sort size) and choose a smaller dependency, or raise the bound on purpose", fn, got, maxBootstrapMiB)
		}
	}
}
