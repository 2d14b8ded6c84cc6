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
	"strings"
	"testing"
)

// forbidden are import path prefixes no Lambda function may depend on;
// DynamoDB is called through awsapi/dynamodb, not the SDK's client (its
// code and schemas' init work).
var forbidden = []string{
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite",
	"github.com/lambdaclaw/lambdaclaw/shared/bwrap",
	"github.com/lambdaclaw/lambdaclaw/functions/lambdaclaw",
	"modernc.org/sqlite",
	"github.com/aws/aws-sdk-go-v2/service/dynamodb",
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

// TestLambdaDeps runs go list -deps for every Lambda function (every
// directory under functions/ but the local binary), for the platform and
// tags the Makefile builds them with.
func TestLambdaDeps(t *testing.T) {
	repo := root(t)
	entries, err := os.ReadDir(filepath.Join(repo, "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var lambdas []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "lambdaclaw" {
			lambdas = append(lambdas, e.Name())
		}
	}
	if len(lambdas) == 0 {
		t.Fatal("no Lambda functions under functions/")
	}
	for _, fn := range lambdas {
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
			for _, d := range deps {
				for _, f := range append(forbidden, forbiddenIn[fn]...) {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("functions/%s links %s", fn, d)
					}
				}
			}
		})
	}
}
