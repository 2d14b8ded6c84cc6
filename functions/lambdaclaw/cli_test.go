package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// homeEntries lists what is in home, so that a test can tell that a
// command changed nothing.
func homeEntries(t *testing.T, home string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(home, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, path)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHelp(t *testing.T) {
	home := agentHome(t)
	before := homeEntries(t, home)
	tests := []struct {
		args []string
		want string // the start of stdout
	}{
		{[]string{"--help"}, "lambdaclaw — an AI agent gateway"},
		{[]string{"-h"}, "lambdaclaw — an AI agent gateway"},
		{[]string{"help"}, "lambdaclaw — an AI agent gateway"},
		{[]string{"serve", "--help"}, "usage: lambdaclaw serve [flags]"},
		{[]string{"serve", "-h"}, "usage: lambdaclaw serve [flags]"},
		{[]string{"chat", "--help"}, "usage: lambdaclaw chat [flags]"},
		{[]string{"agent", "--help"}, "Usage:\n  lambdaclaw agent create NAME"},
		{[]string{"agent", "help"}, "Usage:\n  lambdaclaw agent create NAME"},
		{[]string{"agent", "create", "--help"}, "usage: lambdaclaw agent create NAME [flags]"},
		{[]string{"agent", "list", "-h"}, "usage: lambdaclaw agent list [flags]"},
		{[]string{"agent", "show", "--help"}, "usage: lambdaclaw agent show NAME [flags]"},
		{[]string{"agent", "show", "nope", "--help"}, "usage: lambdaclaw agent show NAME [flags]"},
		{[]string{"agent", "delete", "--help"}, "usage: lambdaclaw agent delete NAME [flags]"},
		{[]string{"agents", "delete", "default", "--yes", "-h"}, "usage: lambdaclaw agent delete NAME [flags]"},
		{[]string{"keys", "-h"}, "Usage:\n  lambdaclaw keys create"},
		{[]string{"keys", "create", "--help"}, "usage: lambdaclaw keys create [flags]"},
		{[]string{"keys", "create", "--rate", "-5", "--help"}, "usage: lambdaclaw keys create [flags]"},
		{[]string{"keys", "list", "--help"}, "usage: lambdaclaw keys list [flags]"},
		{[]string{"keys", "revoke", "--help"}, "usage: lambdaclaw keys revoke ID [flags]"},
		{[]string{"status", "--help"}, "usage: lambdaclaw status [flags]"},
		{[]string{"telegram", "--help"}, "Usage:\n  lambdaclaw telegram setup|remove"},
		{[]string{"telegram", "setup", "--help"}, "usage: lambdaclaw telegram setup [flags]"},
		{[]string{"telegram", "remove", "-h"}, "usage: lambdaclaw telegram remove [flags]"},
		{[]string{"discord", "--help"}, "Usage:\n  lambdaclaw discord register"},
		{[]string{"discord", "register", "--help"}, "usage: lambdaclaw discord register [flags]"},
		{[]string{"version", "--help"}, "usage: lambdaclaw version\n"},
		{[]string{"help", "keys", "create"}, "usage: lambdaclaw keys create [flags]"},
		{[]string{"help", "agent"}, "Usage:\n  lambdaclaw agent create NAME"},
		{[]string{"runs", "--help"}, "Usage:\n  lambdaclaw runs list"},
		{[]string{"runs", "list", "--help"}, "usage: lambdaclaw runs list [flags]"},
		{[]string{"runs", "retry", "-h"}, "usage: lambdaclaw runs retry RUN_ID [flags]"},
		{[]string{"runs", "abandon", "--help"}, "usage: lambdaclaw runs abandon RUN_ID [flags]"},
	}
	for _, tt := range tests {
		checkRun(t, tt.args, runWant{stdout: tt.want})
	}
	if diff := cmp.Diff(before, homeEntries(t, home)); diff != "" {
		t.Errorf("--help changed the data directory (-before +after):\n%s", diff)
	}
}

// runWant is what checkRun expects of a run: the start of stdout, a part
// of stderr, and an error: errUsage when usage is set, else one containing
// err ("" is success).
type runWant struct {
	stdout, stderr, err string
	usage               bool
}

// checkRun runs lambdaclaw with args in a subtest and checks the outcome.
func checkRun(t *testing.T, args []string, want runWant) {
	t.Helper()
	t.Run(strings.Join(args, " "), func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		switch {
		case want.usage && !errors.Is(err, errUsage):
			t.Errorf("run %q = %v, want errUsage (exit status 1)", args, err)
		case !want.usage && want.err == "" && err != nil:
			t.Errorf("run %q = %v, want success", args, err)
		case want.err != "" && (err == nil || !strings.Contains(err.Error(), want.err)):
			t.Errorf("run %q = %v, want an error containing %q", args, err, want.err)
		}
		if !strings.HasPrefix(stdout.String(), want.stdout) || (want.stdout == "" && stdout.Len() > 0) {
			t.Errorf("stdout = %q, want %q", stdout.String(), want.stdout)
		}
		if !strings.Contains(stderr.String(), want.stderr) || (want.stderr == "" && stderr.Len() > 0) {
			t.Errorf("stderr = %q, want %q", stderr.String(), want.stderr)
		}
	})
}

// TestHelpListsFlags checks that --help shows each flag of a command.
func TestHelpListsFlags(t *testing.T) {
	agentHome(t)
	for cmd, flags := range map[string][]string{
		"serve":        {"-addr", "-config"},
		"chat":         {"-addr", "-agent", "-user", "-key"},
		"keys create":  {"-name", "-agents", "-autonomy", "-rate", "-admin", "-config"},
		"agent delete": {"-yes", "-config"},
	} {
		var stdout bytes.Buffer
		if err := run(context.Background(), append(strings.Fields(cmd), "--help"), &stdout, &bytes.Buffer{}); err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(?m)^  ` + f + `\b`).MatchString(stdout.String()) {
				t.Errorf("%s --help does not list %s:\n%s", cmd, f, stdout.String())
			}
		}
	}
}

// TestUsageErrors checks that unknown commands, unknown flags and wrong
// arguments fail with a message and the usage on stderr, and change
// nothing.
func TestUsageErrors(t *testing.T) {
	home := agentHome(t)
	before := homeEntries(t, home)
	tests := []struct {
		args       []string
		wantStderr string
	}{
		{nil, "Usage:\n  lambdaclaw serve"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"agent"}, "Usage:\n  lambdaclaw agent create NAME"},
		{[]string{"agent", "rename", "a"}, `unknown agent command "rename"`},
		{[]string{"keys"}, "Usage:\n  lambdaclaw keys create"},
		{[]string{"keys", "rotate"}, `unknown keys command "rotate"`},
		{[]string{"telegram"}, "Usage:\n  lambdaclaw telegram setup|remove"},
		{[]string{"telegram", "start"}, `unknown telegram command "start"`},
		{[]string{"serve", "--port", "1"}, "flag provided but not defined: -port\nusage: lambdaclaw serve [flags]"},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "--addr", ""}, "--addr is empty"},
		{[]string{"chat", "hello"}, `unexpected argument "hello"`},
		{[]string{"chat", "--model", "x"}, "flag provided but not defined: -model"},
		{[]string{"chat", "--key", ""}, "--key is empty"},
		{[]string{"agent", "list", "--force"}, "flag provided but not defined: -force"},
		{[]string{"agent", "create", "a", "--yes"}, "flag provided but not defined: -yes"},
		{[]string{"keys", "create", "extra"}, `unexpected argument "extra"`},
		{[]string{"keys", "create", "--rate", "five"}, `invalid value "five" for flag -rate`},
		{[]string{"keys", "create", "--name", ""}, "--name is empty"},
		{[]string{"keys", "create", "--agents", ""}, "--agents is empty"},
		{[]string{"keys", "list", "--rate", "5"}, "flag provided but not defined: -rate"},
		{[]string{"keys", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"keys", "revoke"}, "missing arguments\nusage: lambdaclaw keys revoke ID"},
		{[]string{"keys", "revoke", "a", "b"}, `unexpected argument "b"`},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"status", "--verbose"}, "flag provided but not defined: -verbose"},
		{[]string{"telegram", "setup", "extra"}, `unexpected argument "extra"`},
		{[]string{"version", "extra"}, `unexpected argument "extra"`},
		{[]string{"runs"}, "Usage:\n  lambdaclaw runs list"},
		{[]string{"runs", "redrive"}, `unknown runs command "redrive"`},
		{[]string{"runs", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"runs", "abandon"}, "missing arguments\nusage: lambdaclaw runs abandon RUN_ID"},
		{[]string{"runs", "abandon", "a", "--all"}, "flag provided but not defined: -all"},
		{[]string{"runs", "retry", "a", "b"}, `unexpected argument "b"`},
	}
	for _, tt := range tests {
		checkRun(t, tt.args, runWant{stderr: tt.wantStderr, usage: true})
	}
	if diff := cmp.Diff(before, homeEntries(t, home)); diff != "" {
		t.Errorf("the data directory changed (-before +after):\n%s", diff)
	}
}

// TestBadValuesChangeNothing checks that invalid flag values and missing
// agents are refused with a clear error before anything is written.
func TestBadValuesChangeNothing(t *testing.T) {
	home := agentHome(t)
	for _, n := range []string{"default", "writer"} {
		if _, err := workspace.Create(context.Background(), osroot.New(home), n); err != nil {
			t.Fatal(err)
		}
	}
	before := homeEntries(t, home)
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"keys", "create", "--rate", "-5"}, "--rate -5: a key's rate limit is a number of requests per minute, at least 1"},
		{[]string{"keys", "create", "--rate", "0"}, "--rate 0: "},
		{[]string{"keys", "create", "--autonomy", "root"}, `--autonomy: unknown autonomy level "root" (want read_only, supervised or full)`},
		{[]string{"keys", "create", "--autonomy", "FULL"}, `unknown autonomy level "FULL"`},
		{[]string{"keys", "create", "--agents", "nope"}, `--agents: no agent "nope"; the agents are: default, writer`},
		{[]string{"keys", "create", "--agents", "writer,nope"}, `--agents: no agent "nope"`},
		{[]string{"keys", "create", "--agents", "writer,,default"}, `--agents "writer,,default": an agent name is empty`},
		{[]string{"keys", "create", "--agents", " , "}, "an agent name is empty"},
		{[]string{"keys", "create", "--agents", "Writer"}, `--agents: agent name "Writer" is invalid`},
		{[]string{"keys", "create", "--name", "a\nb"}, "--name \"a\\nb\" has control characters"},
		{[]string{"keys", "create", "--name", strings.Repeat("n", 65)}, "--name is 65 characters long; at most 64 are allowed"},
		{[]string{"keys", "list"}, "no database at " + filepath.Join(home, "lambdaclaw.db") + " yet"},
		{[]string{"keys", "revoke", "key_x"}, "no database at"},
		{[]string{"status"}, "no database at"},
		{[]string{"runs", "list"}, "no database at"},
		{[]string{"runs", "list", "--limit", "0"}, "--limit 0: want 1 to 1000"},
		{[]string{"runs", "list", "--idle", "-1s"}, "--idle is negative"},
		{[]string{"runs", "retry"}, "give a RUN_ID or --all"},
		{[]string{"runs", "retry", "r1", "--all"}, "give a RUN_ID or --all"},
		{[]string{"runs", "retry", "--all"}, "--all retries the runs of a stack's RunFailures queue"},
		{[]string{"runs", "abandon", "r1"}, "no database at"},
		{[]string{"serve", "--addr", "localhost"}, `listen address "localhost": want HOST:PORT`},
		{[]string{"serve", "--addr", "127.0.0.1:http-ish"}, `listen address "127.0.0.1:http-ish"`},
		{[]string{"agent", "show", "nope"}, `no agent "nope"; the agents are: default, writer`},
		{[]string{"agent", "delete", "nope", "--yes"}, `no agent "nope"; the agents are: default, writer`},
		{[]string{"agent", "create", "Bad/Name"}, "is invalid"},
		{[]string{"agent", "create", ""}, "agent name is empty"},
		{[]string{"agent", "show", ""}, "agent name is empty"},
		{[]string{"chat", "--agent", "Bad/Name", "--key", "lc_x"}, `--agent: agent name "Bad/Name" is invalid`},
		{[]string{"chat", "--user", strings.Repeat("u", 257), "--key", "lc_x"}, "--user is longer than 256 bytes"},
		{[]string{"chat", "--user", "a\xffb", "--key", "lc_x"}, "--user is not valid UTF-8"},
		{[]string{"chat", "--user", "a\tb", "--key", "lc_x"}, "--user has a control character (U+0009 at byte 1)"},
	}
	for _, tt := range tests {
		checkRun(t, tt.args, runWant{err: tt.wantErr})
	}
	if diff := cmp.Diff(before, homeEntries(t, home)); diff != "" {
		t.Errorf("the data directory changed (-before +after):\n%s", diff)
	}
}

// TestServeChecksFirst checks that serve refuses a bad listen address and
// a Telegram agent that does not exist before it creates anything.
func TestServeChecksFirst(t *testing.T) {
	home := agentHome(t)
	writeHomeFile(t, filepath.Join(home, "config.yaml"), "telegram:\n  enabled: true\n  agent: helper\nagents:\n  coder: {}\n")
	t.Setenv("TELEGRAM_BOT_TOKEN", "123:abc")
	before := homeEntries(t, home)
	checkRun(t, []string{"serve", "--addr", "127.0.0.1:0"}, runWant{err: `config: telegram.agent: no agent "helper"; the agents are: coder, default`})
	checkRun(t, []string{"serve", "--addr", "nowhere"}, runWant{err: `listen address "nowhere": want HOST:PORT`})
	if diff := cmp.Diff(before, homeEntries(t, home)); diff != "" {
		t.Errorf("the data directory changed (-before +after):\n%s", diff)
	}
}

func TestKeys(t *testing.T) {
	home := agentHome(t)
	if _, err := workspace.Create(context.Background(), osroot.New(home), "writer"); err != nil {
		t.Fatal(err)
	}
	create := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), append([]string{"keys", "create"}, args...), &stdout, &stderr); err != nil {
			t.Fatalf("keys create %q: %v", args, err)
		}
		if !strings.HasPrefix(stdout.String(), "lc_") {
			t.Fatalf("keys create printed %q, want the key", stdout.String())
		}
	}
	// The default agent is one before `serve` first makes its workspace.
	create("--name", "ci", "--agents", "writer, writer,default", "--rate", "5", "--autonomy", "read_only")
	create("--name", "ops", "--admin")
	create()
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--rate", "-1"}, &bytes.Buffer{}, &stderr); err == nil {
		t.Fatal("keys create --rate -1 succeeded")
	}

	db, err := sqlite.Open(filepath.Join(home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ks, err := db.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		Name, Autonomy string
		Agents         []string
		Rate           int
		Admin          bool
	}
	var got []key
	for _, k := range ks {
		got = append(got, key{k.Name, k.Autonomy, k.Agents, k.RatePerMinute, k.Admin})
	}
	slices.SortFunc(got, func(a, b key) int { return strings.Compare(a.Name, b.Name) })
	want := []key{{"", "supervised", nil, 120, false}, {"ci", "read_only", []string{"writer", "default"}, 5, false}, {"ops", "supervised", nil, 120, true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}

	id := ks[0].ID
	runCLI(t, home, []cliStep{
		{name: "revoke unknown", args: []string{"keys", "revoke", "key_nope"}, wantErr: `no key with id "key_nope"`},
		{name: "revoke", args: []string{"keys", "revoke", id}, wantStderr: "revoked " + id},
	})
	first := revokedAt(t, db, id)
	runCLI(t, home, []cliStep{
		{name: "revoke again", args: []string{"keys", "revoke", id}, wantErr: "key " + id + " was revoked already, on "},
	})
	if again := revokedAt(t, db, id); again == nil || first == nil || !again.Equal(*first) {
		t.Errorf("revoked at %v, then %v after revoking again; want the first time kept", first, again)
	}
}

// revokedAt returns when the key id was revoked.
func revokedAt(t *testing.T, db *sqlite.DB, id string) *time.Time {
	t.Helper()
	ks, err := db.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks {
		if k.ID == id {
			return k.RevokedAt
		}
	}
	t.Fatalf("no key %s", id)
	return nil
}
