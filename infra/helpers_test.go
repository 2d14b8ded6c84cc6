package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// Synthesizing a stack runs the CDK in a Node.js child process (jsii), so
// each variant is synthesized once and shared by every test that reads it.

// synthesized is one synthesized variant of the stack.
type synthesized struct {
	cfg      Config
	template assertions.Template
	// json is the template as plain Go values, for checks that walk it.
	json map[string]any
	// outdir is the cloud assembly the synthesis wrote: the template
	// as CloudFormation receives it, and the assets' manifest.
	outdir string
	err    error
}

// variants are the stack variants the tests read.
var variants = struct {
	sync.Mutex
	m map[string]*synthesized
}{m: map[string]*synthesized{}}

// assetsDir holds an empty bootstrap per function, standing in for the
// Makefile's dist/ (the functions' code is not under test here).
var assetsDir = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lambdaclaw-infra-assets-")
	if err != nil {
		return "", err
	}
	for _, f := range []string{"api", "ws", "telegram", "channels", "step", "scheduler", "indexer", "sandbox"} {
		if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, f, "bootstrap"), nil, 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
})

const (
	variantDefault    = "default"
	variantOpenSearch = "opensearch"
	// variantShortApproval is the default with approval_timeout=2s, whose
	// definition the offline test of an expiring approval runs.
	variantShortApproval = "short-approval"
	// variantSandbox is the default with the Fargate sandbox, in its
	// isolated network; variantSandboxPublic in the public one.
	variantSandbox       = "sandbox"
	variantSandboxPublic = "sandbox_network=public"
	// variantWAF is the default with the WAF web ACL (waf=on).
	variantWAF = "waf=on"
	// variantTracing is the default with X-Ray active tracing.
	variantTracing = "tracing=active"
	// variantChannels is the default with the Slack, Discord and
	// WhatsApp webhooks.
	variantChannels = "channels"
	// variantWebSearch is the default with web_search on Brave.
	variantWebSearch = "web_search=brave"
	// variantAll turns on every option at once.
	variantAll = "all"
)

// agentsFile defines the agents of the opensearch variant.
const agentsFile = "testdata/agents.yaml"

// variantContext is the CDK context of each variant.
var variantContext = map[string]map[string]string{
	variantDefault: {},
	// The second variant turns on every option at once: OpenSearch, the
	// Telegram webhook, the OpenAI-compatible fallback provider, a
	// non-default model and agents with their settings.
	variantOpenSearch: {
		ctxSearch:        SearchOpenSearch,
		ctxTelegram:      TelegramOn,
		ctxSlack:         "on",
		ctxDiscord:       "on",
		ctxWhatsApp:      "on",
		ctxOpenAIBaseURL: "https://openrouter.ai/api/v1",
		ctxOpenAIModel:   "anthropic/claude-sonnet-4.5",
		ctxModel:         "eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
		ctxAgentsFile:    agentsFile,
	},
	variantSandbox:       {ctxSandbox: SandboxFargate},
	variantSandboxPublic: {ctxSandbox: SandboxFargate, ctxSandboxNetwork: SandboxPublic},
	// Each option alone, for cfn-lint (cfnlint_test.go).
	"search=opensearch": {ctxSearch: SearchOpenSearch},
	"telegram=on":       {ctxTelegram: TelegramOn},
	variantChannels:     {ctxSlack: "on", ctxDiscord: "on", ctxWhatsApp: "on"},
	"slack=on":          {ctxSlack: "on"},
	"openai_base_url":   {ctxOpenAIBaseURL: "https://openrouter.ai/api/v1", ctxOpenAIModel: "anthropic/claude-sonnet-4.5"},
	// agentsFile's agents use the OpenAI-compatible provider too.
	"agents_file":  {ctxAgentsFile: agentsFile, ctxOpenAIBaseURL: "https://openrouter.ai/api/v1", ctxOpenAIModel: "anthropic/claude-sonnet-4.5"},
	"alarms=off":   {ctxAlarms: "off"},
	"alarm_email":  {ctxAlarmEmail: "ops@example.com"},
	variantWAF:     {ctxWAF: "on"},
	variantTracing: {ctxTracing: TracingActive},
	// The web_search tool on Brave, whose key is a secret, and on a
	// SearXNG instance, which needs none.
	variantWebSearch:     {ctxWebSearch: "brave"},
	"web_search=searxng": {ctxWebSearch: "searxng", ctxWebSearchURL: "https://search.example.com"},
	variantAll: {
		ctxSearch: SearchOpenSearch, ctxTelegram: TelegramOn, ctxSlack: "on", ctxDiscord: "on", ctxWhatsApp: "on", ctxSandbox: SandboxFargate, ctxAgentsFile: agentsFile,
		ctxOpenAIBaseURL: "https://openrouter.ai/api/v1", ctxOpenAIModel: "anthropic/claude-sonnet-4.5",
		ctxModel: "eu.anthropic.claude-sonnet-4-5-20250929-v1:0", ctxAlarmEmail: "ops@example.com",
		ctxApproval: "2s", ctxRetention: "30", ctxVersionDays: "7", ctxRunMemory: "1024", ctxEmbedDims: "1024",
		ctxWAF: "on", ctxWAFLimit: "2000", ctxAPIRate: "12.5", ctxAPIBurst: "40", ctxTracing: TracingActive,
		ctxWebSearch: "tavily",
	},
	variantShortApproval: {ctxApproval: "2s", ctxRetention: "30", ctxVersionDays: "7", ctxRunMemory: "1024", ctxEmbedDims: "1024"},
}

// stack returns the synthesized variant, synthesizing it on first use.
func stack(t *testing.T, variant string) *synthesized {
	t.Helper()
	ctx, ok := variantContext[variant]
	if !ok {
		t.Fatalf("no variant %q", variant)
	}
	variants.Lock()
	defer variants.Unlock()
	s, ok := variants.m[variant]
	if !ok {
		s = synth(ctx)
		variants.m[variant] = s
	}
	if s.err != nil {
		t.Fatalf("synthesizing the %s stack: %v", variant, s.err)
	}
	return s
}

func synth(ctx map[string]string) (s *synthesized) {
	s = &synthesized{}
	defer func() {
		if r := recover(); r != nil {
			s.err = fmt.Errorf("panic: %v", r)
		}
	}()
	dir, err := assetsDir()
	if err != nil {
		s.err = err
		return s
	}
	c := map[string]any{ctxAssets: dir}
	for k, v := range ctx {
		c[k] = v
	}
	outdir, err := os.MkdirTemp("", "lambdaclaw-infra-cdkout-")
	if err != nil {
		s.err = err
		return s
	}
	s.outdir = outdir
	app := awscdk.NewApp(&awscdk.AppProps{Context: &c, Outdir: jsii.String(outdir)})
	s.cfg, s.err = ConfigFromContext(app)
	if s.err != nil {
		return s
	}
	st, err := NewStack(app, StackName, s.cfg, nil)
	if err != nil {
		s.err = err
		return s
	}
	s.template = assertions.Template_FromStack(st, nil)
	b, err := json.Marshal(s.template.ToJSON())
	if err != nil {
		s.err = err
		return s
	}
	s.err = json.Unmarshal(b, &s.json)
	return s
}

// assert runs a CDK assertion, which panics on a mismatch, and reports the
// mismatch as a test error.
func assert(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// resources returns the template's resources of type typ by logical id.
func (s *synthesized) resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if typ == "" || r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// props returns a resource's Properties.
func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// functionID returns the logical id of the Lambda function whose
// description names it ("lambdaclaw <name>: …").
func (s *synthesized) functionID(t *testing.T, name string) string {
	t.Helper()
	for id, r := range s.resources("AWS::Lambda::Function") {
		if d, _ := props(r)["Description"].(string); strings.HasPrefix(d, "lambdaclaw "+name+":") {
			return id
		}
	}
	t.Fatalf("no Lambda function %q", name)
	return ""
}

// render turns a CloudFormation value into a string: literals as they are,
// Ref and Fn::GetAtt as ${LogicalId} or ${LogicalId.Attr}, Fn::Join joined.
func render(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if ref, ok := v["Ref"].(string); ok {
			return "${" + ref + "}"
		}
		if ga, ok := v["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			return fmt.Sprintf("${%v.%v}", ga[0], ga[1])
		}
		if j, ok := v["Fn::Join"].([]any); ok && len(j) == 2 {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, render(p))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// list returns v as a list: a JSON array as it is, anything else alone.
func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// statement is one IAM policy statement with the policy's roles.
type statement struct {
	policy    string
	roles     []string
	actions   []string
	resources []any
	raw       map[string]any
}

// statements returns every statement of every AWS::IAM::Policy.
func (s *synthesized) statements() []statement {
	var out []statement
	ids := keys(s.resources("AWS::IAM::Policy"))
	for _, id := range ids {
		p := props(s.resources("AWS::IAM::Policy")[id])
		var roles []string
		for _, r := range list(p["Roles"]) {
			roles = append(roles, render(r))
		}
		for _, st := range list(p["PolicyDocument"].(map[string]any)["Statement"]) {
			st := st.(map[string]any)
			var actions []string
			for _, a := range list(st["Action"]) {
				actions = append(actions, a.(string))
			}
			out = append(out, statement{policy: id, roles: roles, actions: actions, resources: list(st["Resource"]), raw: st})
		}
	}
	return out
}

// roleOf returns the logical id of the role of the function.
func (s *synthesized) roleOf(t *testing.T, fnID string) string {
	t.Helper()
	r := s.resources("AWS::Lambda::Function")[fnID]
	role := render(props(r)["Role"])
	return strings.TrimSuffix(strings.TrimPrefix(role, "${"), ".Arn}")
}

// actionsOf returns every action granted to the role, with the rendered
// resources of each.
func (s *synthesized) actionsOf(role string) map[string][]string {
	out := map[string][]string{}
	for _, st := range s.statements() {
		for _, r := range st.roles {
			if r != "${"+role+"}" {
				continue
			}
			for _, a := range st.actions {
				for _, res := range st.resources {
					out[a] = append(out[a], render(res))
				}
			}
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
