package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// TestMCP checks the MCP servers of agents_file: every function that gets
// AGENTS_CONFIG gets MCP_CONFIG, which decodes, as the functions decode
// it, to the file's servers; each ${VAR} of their headers is a secret
// the stack creates without a value, named in MCP_SECRET_<VAR> of the
// functions that run turns (api, step), which alone may read it; the
// McpSecrets output names the secrets. Without the option there is none
// of it.
func TestMCP(t *testing.T) {
	b, err := os.ReadFile(agentsFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentenv.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(config.MCP{Start: "eager", Servers: map[string]config.MCPServer{
		"remote": {URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
		"docs":   {URL: "https://docs.example.com/mcp", Headers: map[string]string{"X-Api-Key": "${DOCS_KEY}", "X-Team": "research"}},
	}}, f.MCP); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", agentsFile, diff)
	}
	names := map[string]string{"DOCS_KEY": "Lambdaclaw/mcp/DOCS_KEY", "REMOTE_TOKEN": "Lambdaclaw/mcp/REMOTE_TOKEN"}
	secretEnv := map[string]any{"MCP_SECRET_DOCS_KEY": names["DOCS_KEY"], "MCP_SECRET_REMOTE_TOKEN": names["REMOTE_TOKEN"]}

	for variant, tc := range map[string]struct {
		mcp     *config.MCP // nil: no MCP_CONFIG
		secrets map[string]string
	}{
		variantDefault:    {},
		variantOpenSearch: {mcp: &f.MCP, secrets: names},
	} {
		s := stack(t, variant)
		turns := map[string]bool{s.functionID(t, "api"): true, s.functionID(t, "step"): true}
		for id, fn := range s.resources("AWS::Lambda::Function") {
			vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if _, ok := vars["WORKSPACE_BUCKET"]; !ok {
				continue // not a function of the agents (a CDK helper)
			}
			got := map[string]any{}
			for k, v := range vars {
				if strings.HasPrefix(k, agentenv.MCPSecretPrefix) {
					got[k] = v
				}
			}
			want := map[string]any{}
			if tc.mcp != nil && turns[id] {
				want = secretEnv
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("%s: function %s's secret variables (-want +got):\n%s", variant, id, diff)
			}
			v, ok := vars[agentenv.MCPVar].(string)
			if ok != (tc.mcp != nil) {
				t.Errorf("%s: function %s has %s=%v", variant, id, agentenv.MCPVar, vars[agentenv.MCPVar])
				continue
			}
			if !ok {
				continue
			}
			m, err := agentenv.DecodeMCP(v, f.Agents)
			if err != nil {
				t.Errorf("%s: function %s: %v", variant, id, err)
			}
			if diff := gocmp.Diff(*tc.mcp, m); diff != "" {
				t.Errorf("%s: function %s's MCP servers (-want +got):\n%s", variant, id, diff)
			}
		}

		// The secrets: one per variable, without a value.
		secrets := map[string]string{} // logical id by name
		for id, r := range s.resources("AWS::SecretsManager::Secret") {
			p := props(r)
			name, _ := p["Name"].(string)
			if !strings.Contains(name, "/mcp/") {
				continue
			}
			secrets[name] = id
			if p["SecretString"] != nil || p["GenerateSecretString"] != nil {
				t.Errorf("%s: secret %s has a value: %v", variant, name, p)
			}
		}
		if diff := gocmp.Diff(sortedValues(tc.secrets), keys(secrets)); diff != "" {
			t.Errorf("%s: the MCP secrets (-want +got):\n%s", variant, diff)
		}

		// Who may read them: the roles of api and step, nobody else.
		wantRoles := []string{"${" + s.roleOf(t, s.functionID(t, "api")) + "}", "${" + s.roleOf(t, s.functionID(t, "step")) + "}"}
		slices.Sort(wantRoles)
		for name, id := range secrets {
			var roles []string
			for _, st := range s.statements() {
				for _, res := range st.resources {
					if render(res) != "${"+id+"}" {
						continue
					}
					if !slices.Contains(st.actions, "secretsmanager:GetSecretValue") {
						t.Errorf("%s: secret %s: statement %v without GetSecretValue", variant, name, st.actions)
					}
					roles = append(roles, st.roles...)
				}
			}
			slices.Sort(roles)
			if diff := gocmp.Diff(wantRoles, slices.Compact(roles)); diff != "" {
				t.Errorf("%s: the roles that may read %s (-want +got):\n%s", variant, name, diff)
			}
		}

		out, ok := s.json["Outputs"].(map[string]any)["McpSecrets"].(map[string]any)
		if ok != (tc.secrets != nil) {
			t.Errorf("%s: McpSecrets output: %v", variant, out)
		}
		if ok && out["Value"] != "Lambdaclaw/mcp/DOCS_KEY,Lambdaclaw/mcp/REMOTE_TOKEN" {
			t.Errorf("%s: McpSecrets = %v", variant, out["Value"])
		}
	}
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// TestMCPRefused: MCP servers the functions could not use, and
// definitions too large for the functions' environment, fail the
// synthesis with a message that says what is wrong.
func TestMCPRefused(t *testing.T) {
	dir, err := assetsDir()
	if err != nil {
		t.Fatal(err)
	}
	servers := func(n int) string {
		s := "mcp:\n  servers:\n"
		for i := range n {
			s += fmt.Sprintf("    server-%02d: {url: \"https://mcp-%02d.example.com/mcp\", headers: {Authorization: \"Bearer ${TOKEN_%02d}\"}}\n", i, i, i)
		}
		return s
	}
	agents := "agents:\n"
	for i := range 15 {
		agents += fmt.Sprintf("  agent-%02d: {model: us.amazon.nova-pro-v1:0, tools: [web_fetch]}\n", i)
	}
	for name, tc := range map[string]struct {
		file string
		want string
	}{
		"stdio": {file: "mcp:\n  servers:\n    local: {command: node, args: [server.js]}\n",
			want: "config: mcp.servers.local: stdio servers (command) run only in the local server; on AWS use an HTTP server (url)"},
		"unknown server": {file: servers(1) + "agents:\n  research: {mcp: [docs]}\n",
			want: `config: agent "research": mcp: unknown MCP server "docs" (the servers are server-00)`},
		"bad url":         {file: "mcp:\n  servers:\n    remote: {url: mcp.example.com}\n", want: `url "mcp.example.com" is not an http:// or https:// URL`},
		"too many":        {file: servers(25), want: "of the functions' environment (AGENTS_CONFIG, MCP_CONFIG and MCP_SECRET_<VAR> for each ${VAR} of the headers), more than the 2048 it has room for"},
		"too much in all": {file: servers(10) + agents, want: "of the functions' environment (AGENTS_CONFIG, MCP_CONFIG and MCP_SECRET_<VAR> for each ${VAR} of the headers), more than the 2048 it has room for"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agents.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := map[string]any{ctxAssets: dir, ctxAgentsFile: path}
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
			cfg, err := ConfigFromContext(app)
			if err == nil {
				_, err = NewStack(app, StackName, cfg, nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ctxAgentsFile) {
				t.Errorf("error %v, want one about %s containing %q", err, ctxAgentsFile, tc.want)
			}
		})
	}
}
