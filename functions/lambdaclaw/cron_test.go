package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cron runs lambdaclaw with args and returns stdout, failing on an error.
func cronRun(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v\nstderr: %s", args, err, stderr.String())
	}
	return stdout.String()
}

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCronCommands(t *testing.T) {
	agentHome(t)
	out := cronRun(t, "cron", "add", "--agent", "default", "--every", "2s", "--message", "check the build", "--name", "ci", "--deliver", "telegram:42")
	id := lastLine(out)
	if !strings.HasPrefix(id, "job_") || !strings.Contains(out, "every 2s") {
		t.Fatalf("cron add printed %q; want the schedule and the id last", out)
	}
	list := cronRun(t, "cron", "list")
	if !strings.Contains(list, id) || !strings.Contains(list, "telegram:42") || !strings.Contains(list, "active") {
		t.Errorf("cron list = %q; want the job, its target, active", list)
	}
	if other := cronRun(t, "cron", "list", "--owner", "user:bob"); strings.Contains(other, id) {
		t.Errorf("another owner lists the job: %q", other)
	}
	checkRun(t, []string{"cron", "rm", id, "--owner", "user:bob"}, runWant{err: "no job"})
	if out := cronRun(t, "cron", "pause", id); !strings.Contains(out, "paused") {
		t.Errorf("cron pause = %q", out)
	}
	if out := cronRun(t, "cron", "resume", id); !strings.Contains(out, "active") {
		t.Errorf("cron resume = %q", out)
	}
	if out := cronRun(t, "cron", "run", id); !strings.Contains(out, "fired "+id) {
		t.Errorf("cron run = %q", out)
	}
	runs := cronRun(t, "cron", "runs", id)
	if lines := strings.Split(strings.TrimSpace(runs), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "running (manual)") {
		t.Errorf("cron runs = %q; want the manual run, running", runs)
	}
	checkRun(t, []string{"cron", "rm", id}, runWant{stderr: "deleted " + id})
	checkRun(t, []string{"cron", "runs", id}, runWant{err: "no job"})
	if list := cronRun(t, "cron", "list"); strings.Contains(list, id) {
		t.Errorf("cron list after rm = %q", list)
	}
}

func TestCronBadInputChangesNothing(t *testing.T) {
	home := agentHome(t)
	before := homeEntries(t, home)
	for _, c := range []struct {
		args []string
		want runWant
	}{
		{[]string{"cron", "add", "--every", "2s"}, runWant{err: "--message is required"}},
		{[]string{"cron", "add", "--message", "hi"}, runWant{err: "exactly one of --every, --cron and --at"}},
		{[]string{"cron", "add", "--message", "hi", "--every", "1m", "--cron", "* * * * *"}, runWant{err: "exactly one"}},
		{[]string{"cron", "add", "--message", "hi", "--every", "500ms"}, runWant{err: "shorter than 1s"}},
		{[]string{"cron", "add", "--message", "hi", "--cron", "0 9 * *"}, runWant{err: "want 5 fields"}},
		{[]string{"cron", "add", "--message", "hi", "--cron", "0 9 * * *", "--tz", "Moon/Base"}, runWant{err: "not an IANA time zone"}},
		{[]string{"cron", "add", "--message", "hi", "--cron", "0 0 31 2 *"}, runWant{err: `cron "0 0 31 2 *" never fires`}},
		{[]string{"cron", "add", "--message", "hi", "--at", "tomorrow"}, runWant{err: "RFC 3339"}},
		{[]string{"cron", "add", "--message", "hi", "--at", "2001-01-01T00:00:00Z"}, runWant{err: "in the past"}},
		{[]string{"cron", "add", "--message", "hi", "--every", "1m", "--deliver", "sms:1"}, runWant{err: "unknown kind"}},
		{[]string{"cron", "add", "--message", "hi", "--every", "1m", "--agent", "nobody"}, runWant{err: `no agent "nobody"`}},
		{[]string{"cron", "add", "--message", "hi", "--every", "1m", "--owner", "root"}, runWant{err: "--owner"}},
		{[]string{"cron", "add", "--message", "hi", "--every", "1m", "--catch-up", "all"}, runWant{err: "catch-up"}},
		{[]string{"cron", "rm"}, runWant{usage: true, stderr: "missing arguments"}},
		{[]string{"cron", "list"}, runWant{err: "no database"}},
		{[]string{"cron", "frob"}, runWant{usage: true, stderr: "unknown cron command"}},
	} {
		checkRun(t, c.args, c.want)
	}
	if diff := cmp.Diff(before, homeEntries(t, home)); diff != "" {
		t.Errorf("bad input changed the data directory (-before +after):\n%s", diff)
	}
}
