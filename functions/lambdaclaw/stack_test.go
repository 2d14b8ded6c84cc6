package main

import (
	"bytes"
	"context"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// The --stack commands run against DynamoDB Local, a fake CloudFormation
// describing the stacks below and, for Telegram, fake Secrets Manager and
// Bot API servers.

const (
	botTokenName = "lambdaclaw/telegram-bot-token"
	// botTokenARN is a partial ARN, as the stack outputs it for the
	// imported bot token secret.
	botTokenARN    = "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + botTokenName
	webhookARN     = "arn:aws:secretsmanager:us-east-1:123456789012:secret:TelegramWebhookSecret-AbCdEf"
	webhookSecret  = "WebhookSecretOfTheStack0000000000000000000000000000000000000000"
	webhookURL     = "https://abc123.execute-api.us-east-1.amazonaws.com/prod/telegram/webhook"
	stackTable     = "test"   // outputs of a deployment with the table
	stackTG        = "tg"     // with telegram=on
	stackNoOutputs = "failed" // a first deployment rolled back: no outputs
	stackNoAgents  = "old"    // outputs without Agents
	stackNoTable   = "gone"   // its table was deleted
)

// stackFixture is DynamoDB Local's table and the fakes, with a local home
// that the --stack commands must leave alone.
type stackFixture struct {
	env  *cloudtest.Env
	cfn  *cloudtest.CloudFormation
	home string
}

func newStackFixture(t *testing.T) *stackFixture {
	home := agentHome(t)
	env := cloudtest.Setup(t)
	cfn := cloudtest.NewCloudFormation(t)
	t.Setenv(envCloudFormationEndpoint, cfn.URL)
	t.Setenv(envSecretsEndpoint, "")
	bucket, _ := env.Files.Bucket()
	outputs := map[string]string{outTable: env.TableName, outAgents: "research,default", outWorkspaceBucket: bucket, "ApiUrl": "https://abc123.execute-api.us-east-1.amazonaws.com/prod/"}
	cfn.Put(stackTable, cloudtest.Stack{Outputs: outputs})
	cfn.Put(stackNoOutputs, cloudtest.Stack{Status: "ROLLBACK_COMPLETE"})
	cfn.Put(stackNoAgents, cloudtest.Stack{Outputs: map[string]string{outTable: env.TableName}})
	cfn.Put(stackNoTable, cloudtest.Stack{Outputs: map[string]string{outTable: "lambdaclaw-deleted", outAgents: "default", outWorkspaceBucket: bucket}})
	tg := map[string]string{outTelegramURL: webhookURL, outBotToken: botTokenARN, outWebhookSecret: webhookARN}
	for k, v := range outputs {
		tg[k] = v
	}
	cfn.Put(stackTG, cloudtest.Stack{Outputs: tg})
	return &stackFixture{env: env, cfn: cfn, home: home}
}

// keys returns the keys in the table.
func (f *stackFixture) keys(t *testing.T) []store.APIKey {
	t.Helper()
	ks, err := f.env.Store.ListKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// cli runs lambdaclaw and returns its stdout, failing t on an error.
func cli(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("lambdaclaw %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String()
}

func TestStackKeys(t *testing.T) {
	f := newStackFixture(t)
	before := f.keys(t)

	out, _ := cli(t, "keys", "create", "--stack", stackTable, "--name", "ci", "--agents", "research, research", "--rate", "5", "--autonomy", "full")
	secret := strings.TrimSuffix(out, "\n")
	if !apikey.Plausible(secret) {
		t.Fatalf("keys create --stack printed %q, want only the key", out)
	}
	k, err := f.env.Store.KeyByHash(t.Context(), apikey.Hash(secret))
	if err != nil {
		t.Fatalf("the key is not in the stack's table: %v", err)
	}
	type shape struct {
		Name, Autonomy, Prefix string
		Agents                 []string
		Rate                   int
		Revoked                bool
	}
	if diff := cmp.Diff(shape{"ci", "full", secret[:9], []string{"research"}, 5, false},
		shape{k.Name, k.Autonomy, k.Prefix, k.Agents, k.RatePerMinute, k.RevokedAt != nil}); diff != "" {
		t.Errorf("stored key (-want +got):\n%s", diff)
	}
	if strings.Contains(strings.Join([]string{k.ID, k.Name, k.Hash, k.Prefix}, " "), secret) {
		t.Error("the table holds the secret")
	}

	// Without --rate, a key gets the default rate of a config file
	// without one: the local config is not read.
	writeHomeFile(t, filepath.Join(f.home, "config.yaml"), "default_rate_per_minute: 7\n")
	out, _ = cli(t, "keys", "create", "--stack", stackTable)
	plain, err := f.env.Store.KeyByHash(t.Context(), apikey.Hash(strings.TrimSpace(out)))
	if err != nil {
		t.Fatal(err)
	}
	if plain.RatePerMinute != 120 || plain.Autonomy != "supervised" || len(plain.Agents) > 0 {
		t.Errorf("key created without flags: rate %d, autonomy %s, agents %v; want 120, supervised, all", plain.RatePerMinute, plain.Autonomy, plain.Agents)
	}
	if got := len(f.keys(t)); got != len(before)+2 {
		t.Errorf("%d keys in the table, want %d", got, len(before)+2)
	}

	list, _ := cli(t, "keys", "list", "--stack", stackTable)
	for _, want := range []string{k.ID, "ci", k.Prefix + "…", "full", "research", plain.ID, f.env.Key.ID} {
		if !strings.Contains(list, want) {
			t.Errorf("keys list --stack does not show %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, secret) {
		t.Error("keys list shows the secret")
	}

	_, stderr := cli(t, "keys", "revoke", k.ID, "--stack", stackTable)
	if !strings.Contains(stderr, "revoked "+k.ID) {
		t.Errorf("keys revoke --stack said %q", stderr)
	}
	if k, _ = f.env.Store.KeyByHash(t.Context(), k.Hash); k.RevokedAt == nil {
		t.Error("the key is not revoked in the table")
	}
	list, _ = cli(t, "keys", "list", "--stack", stackTable)
	if !strings.Contains(list, "revoked ") {
		t.Errorf("keys list --stack after revoke:\n%s", list)
	}
	checkRun(t, []string{"keys", "revoke", k.ID, "--stack", stackTable}, runWant{err: "key " + k.ID + " was revoked already"})
	if diff := cmp.Diff([]string{"config.yaml"}, homeEntries(t, f.home)[1:]); diff != "" {
		t.Errorf("the local home changed (-want +got):\n%s", diff)
	}
}

// TestStackBadInput checks that each bad input is refused with a clear
// error, and that neither the table nor the local home changes.
func TestStackBadInput(t *testing.T) {
	f := newStackFixture(t)
	before, home := f.keys(t), homeEntries(t, f.home)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown stack", []string{"keys", "create", "--stack", "nope"}, nil,
			`no stack "nope" in us-east-1: check the name (` + "`make deploy`" + ` names it Lambdaclaw) and the Region`},
		{"unknown stack in another region", []string{"status", "--stack", "nope", "--region", "eu-west-3"}, nil, `no stack "nope" in eu-west-3`},
		{"no outputs", []string{"keys", "create", "--stack", stackNoOutputs}, nil,
			`stack "failed" (ROLLBACK_COMPLETE) has no output TableName: is it a lambdaclaw stack`},
		{"no outputs, list", []string{"keys", "list", "--stack", stackNoOutputs}, nil, "has no output TableName"},
		{"no agents output", []string{"keys", "create", "--stack", stackNoAgents, "--agents", "default"}, nil, `stack "old" (UPDATE_COMPLETE) has no output Agents`},
		{"no agents output, agent list", []string{"agent", "list", "--stack", stackNoAgents}, nil, "has no output Agents"},
		{"table gone", []string{"keys", "create", "--stack", stackNoTable}, nil, `stack gone (us-east-1): dynamo: table "lambdaclaw-deleted"`},
		{"unknown agent", []string{"keys", "create", "--stack", stackTable, "--agents", "writer"}, nil, `--agents: no agent "writer"; the agents are: default, research`},
		{"bad rate", []string{"keys", "create", "--stack", stackTable, "--rate", "0"}, nil, "--rate 0: a key's rate limit"},
		{"unknown key", []string{"keys", "revoke", "key_nope", "--stack", stackTable}, nil, `no key with id "key_nope"`},
		{"no credentials", []string{"keys", "create", "--stack", stackTable},
			map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, "no AWS credentials (set AWS_PROFILE"},
		{"no region", []string{"keys", "list", "--stack", stackTable},
			map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": ""}, "no AWS Region: pass --region or set AWS_REGION"},
		{"region without stack", []string{"keys", "create", "--region", "us-east-1"}, nil, "--region applies to --stack"},
		{"config with stack", []string{"status", "--stack", stackTable, "--config", "x.yaml"}, nil, "--config is the local server's configuration"},
		{"no telegram", []string{"telegram", "setup", "--stack", stackTable}, nil, "stack test (us-east-1) has no Telegram bot: deploy it with CDK_FLAGS='-c telegram=on'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			asked := len(f.cfn.Regions())
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if tc.env != nil && len(f.cfn.Regions()) != asked {
				t.Error("CloudFormation was called without credentials or Region")
			}
		})
	}
	if diff := cmp.Diff(before, f.keys(t)); diff != "" {
		t.Errorf("the keys in the table changed (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(home, homeEntries(t, f.home)); diff != "" {
		t.Errorf("the local home changed (-before +after):\n%s", diff)
	}
}

func TestStackRegion(t *testing.T) {
	f := newStackFixture(t)
	cli(t, "keys", "list", "--stack", stackTable)
	cli(t, "keys", "list", "--stack", stackTable, "--region", "eu-west-3")
	if diff := cmp.Diff([]string{"us-east-1", "eu-west-3"}, f.cfn.Regions()); diff != "" {
		t.Errorf("regions DescribeStacks was signed for (-want +got):\n%s", diff)
	}
}

func TestStackAgentList(t *testing.T) {
	f := newStackFixture(t)
	// A workspace pushed to the bucket is an agent as well as the
	// configured ones.
	if _, err := f.env.Files.WriteFile(t.Context(), "agents/pushed/IDENTITY.md", []byte("# Identity"), filestore.Any); err != nil {
		t.Fatal(err)
	}
	out, _ := cli(t, "agent", "list", "--stack", stackTable)
	if out != "default\npushed\nresearch\n" {
		t.Errorf("agent list --stack = %q, want the stack's agents, sorted", out)
	}
}

// TestStackStatus checks that status --stack prints what status prints
// locally, about the stack's table, under a line naming the stack.
func TestStackStatus(t *testing.T) {
	f := newStackFixture(t)
	ctx := t.Context()
	// One unfinished run, one revoked key and an outbox message.
	run := store.Run{ID: "run-1", SessionID: "s-1", State: []byte(`{"step":"begin"}`), CreatedAt: time.Now()}
	if _, _, err := f.env.Store.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s-1", Agent: "default"}, Run: run}); err != nil {
		t.Fatal(err)
	}
	_, revoked, err := apikey.Create(ctx, f.env.Store, store.APIKey{Autonomy: "supervised"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.env.Store.RevokeKey(ctx, revoked.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Store.Channel("tg").AddOutbox(ctx, []store.OutboxMessage{{ID: "m-1", Channel: "tg", To: "1", Text: "hi", NextAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}

	remote, _ := cli(t, "status", "--stack", stackTable)
	want := "stack test (us-east-1): UPDATE_COMPLETE, table " + f.env.TableName + "\n" +
		"agents: default, research\n" +
		"api keys: 1 active (2 total)\n" +
		"sessions with unfinished runs: 1\n" +
		"telegram: disabled\n" +
		"telegram outbox: 1 pending, 0 failed, 0 sent\n"
	if diff := cmp.Diff(want, remote); diff != "" {
		t.Errorf("status --stack (-want +got):\n%s", diff)
	}
	tg, _ := cli(t, "status", "--stack", stackTG)
	if !strings.Contains(tg, "\ntelegram: enabled, webhook\n") {
		t.Errorf("status --stack of a stack with telegram=on:\n%s", tg)
	}

	// Locally the same lines, without the stack's.
	db, err := sqlite.Open(filepath.Join(f.home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	local, _ := cli(t, "status")
	if diff := cmp.Diff(labels(strings.SplitN(remote, "\n", 2)[1]), labels(local)); diff != "" {
		t.Errorf("status lines, --stack against local (-stack +local):\n%s", diff)
	}
}

// labels returns what precedes the colon on each line.
func labels(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		label, _, _ := strings.Cut(l, ":")
		out = append(out, label)
	}
	return out
}

func TestStackTelegram(t *testing.T) {
	newStackFixture(t)
	bot := faketelegram.New()
	t.Cleanup(bot.Close)
	sm := cloudtest.NewSecrets(t, map[string]string{botTokenName: faketelegram.Token, webhookARN: webhookSecret})
	t.Setenv(envSecretsEndpoint, sm.URL)
	t.Setenv("TELEGRAM_API_BASE", bot.URL)
	t.Setenv("TELEGRAM_BOT_TOKEN", "")

	out, _ := cli(t, "telegram", "setup", "--stack", stackTG)
	if want := "webhook of @clawbot set to " + webhookURL + " (secret token from the stack's TelegramWebhookSecretArn)\n"; out != want {
		t.Errorf("telegram setup --stack printed %q, want %q", out, want)
	}
	if url, secret := bot.Webhook(); url != webhookURL || secret != webhookSecret {
		t.Errorf("webhook set to %q with secret %q, want the stack's URL and secret", url, secret)
	}
	if strings.Contains(out, webhookSecret) || strings.Contains(out, faketelegram.Token) {
		t.Error("telegram setup printed a secret")
	}

	out, _ = cli(t, "telegram", "remove", "--stack", stackTG)
	if !strings.HasPrefix(out, "webhook removed") {
		t.Errorf("telegram remove --stack printed %q", out)
	}
	if url, _ := bot.Webhook(); url != "" {
		t.Errorf("webhook still set to %q", url)
	}
	if sm.Calls(botTokenARN) > 0 {
		t.Error("the bot token was read by its partial ARN, not by its name")
	}

	// A bot token that is not stored is a clear error; nothing is set.
	sets := bot.Calls("setWebhook")
	t.Setenv(envSecretsEndpoint, cloudtest.NewSecrets(t, map[string]string{webhookARN: webhookSecret}).URL)
	checkRun(t, []string{"telegram", "setup", "--stack", stackTG}, runWant{err: "bot token: read secret " + botTokenName})
	if bot.Calls("setWebhook") != sets {
		t.Error("setWebhook was called without a bot token")
	}
}

// TestStackHelp checks that the commands that take --stack document it.
func TestStackHelp(t *testing.T) {
	agentHome(t)
	for _, cmd := range []string{"keys create", "keys list", "keys revoke", "agent list", "status", "telegram setup", "telegram remove"} {
		out, _ := cli(t, append(strings.Fields(cmd), "--help")...)
		for _, want := range []string{"  -stack NAME\n", "deployed CloudFormation stack NAME", "  -region REGION\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s --help does not document %q:\n%s", cmd, want, out)
			}
		}
	}
	usage, _ := cli(t, "help")
	if !strings.Contains(usage, "--stack NAME [--region R] runs the command on the AWS deployment") {
		t.Errorf("the usage does not explain --stack:\n%s", usage)
	}
}
