package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/webhook"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// jobRuns reads the runs of a job of the local user from the database,
// newest first, as `lambdaclaw cron runs` does, with exact times.
func (g *gateway) jobRuns(t *testing.T, id string) []schedule.Run {
	t.Helper()
	return g.ownerRuns(t, "user:local", id)
}

// ownerRuns reads the runs of owner's job id, newest first.
func (g *gateway) ownerRuns(t *testing.T, owner, id string) []schedule.Run {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(g.home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Schedule(nil).Runs(context.Background(), owner, id, 1000)
	if err != nil {
		t.Fatalf("runs of %s: %v", id, err)
	}
	return runs
}

// waitRuns waits until a job of the local user has at least n finished
// runs and returns its runs; it fails the test after the deadline.
func (g *gateway) waitRuns(t *testing.T, id string, n int, within time.Duration) []schedule.Run {
	t.Helper()
	return g.waitOwnerRuns(t, "user:local", id, n, within)
}

// waitOwnerRuns is waitRuns for a job of owner.
func (g *gateway) waitOwnerRuns(t *testing.T, owner, id string, n int, within time.Duration) []schedule.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		runs := g.ownerRuns(t, owner, id)
		done := 0
		for _, r := range runs {
			if r.Status != schedule.RunRunning {
				done++
			}
		}
		if done >= n {
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s has %d finished runs after %s, want %d: %v", id, done, within, n, runs)
		}
		time.Sleep(50 * time.Millisecond) // polling an observable outcome
	}
}

// asked counts the model requests whose last message is the user text.
func asked(fake *fakellm.Server, text string) int {
	n := 0
	for _, r := range fake.Requests() {
		if m := r.Messages; len(m) > 0 && m[len(m)-1].Role == "user" && m[len(m)-1].Content == text {
			n++
		}
	}
	return n
}

// TestCronCheckIns runs scheduled jobs in the real server: a job every 2 s
// fires and its reply is delivered through the (fake) Telegram server,
// another's to a webhook; the server stopped for several periods gives
// one catch-up run on restart, not a burst; a job deleted while the
// server runs never fires again.
func TestCronCheckIns(t *testing.T) {
	fake := newFake(t)
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "checked: " + r.Messages[len(r.Messages)-1].Content}
	})
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	hooks := make(chan webhook.Payload, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p webhook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		select {
		case hooks <- p:
		default:
		}
	}))
	t.Cleanup(hook.Close)
	// The webhook is on this machine: the operator allows it explicitly.
	g := newGateway(t, fake, "telegram:\n  enabled: true\n  mode: polling\n  allowed_users: [111]\noutbound:\n  allow_networks: [127.0.0.1/32]\n")
	g.env = append(g.env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "TELEGRAM_API_BASE="+tg.URL)
	g.start()
	id := lastLine(g.cli(t, "cron", "add", "--every", "2s", "--message", "check the build", "--name", "build", "--deliver", "telegram:111"))
	if !strings.HasPrefix(id, "job_") {
		t.Fatalf("cron add printed %q last, want the job id", id)
	}
	hooked := lastLine(g.cli(t, "cron", "add", "--at", time.Now().Add(time.Second).Format(time.RFC3339Nano), "--message", "ring the bell", "--deliver", "webhook:"+hook.URL+"/hook"))

	if ms := waitMessages(t, tg, 111, 1); ms[0].Text != "checked: check the build" {
		t.Errorf("delivered to Telegram: %q; want the model's reply", ms[0].Text)
	}
	runs := g.waitRuns(t, id, 1, 20*time.Second)
	last := runs[0]
	for _, r := range runs {
		if r.Status != schedule.RunRunning {
			last = r
			break
		}
	}
	if last.Status != schedule.RunDone || last.Reply != "checked: check the build" || last.Delivered != "telegram:111" {
		t.Fatalf("first run = %+v; want done with the model's reply, delivered", last)
	}
	if out := g.cli(t, "cron", "runs", id); !strings.Contains(out, "checked: check the build") || !strings.Contains(out, "done") {
		t.Errorf("cron runs = %q; want the reply", out)
	}
	select {
	case p := <-hooks:
		if p.JobID != hooked || p.Content != "checked: ring the bell" || p.IdempotencyKey == "" {
			t.Errorf("webhook got %+v; want the one-shot's reply", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the one-shot's reply never reached the webhook")
	}
	if r := g.waitRuns(t, hooked, 1, 20*time.Second); r[0].Delivered != "webhook:"+hook.URL+"/hook" {
		t.Errorf("one-shot run = %+v; want it recorded as delivered to the webhook", r[0])
	}

	// Stopped for several periods, then restarted: one catch-up.
	g.stop()
	stopped := time.Now()
	before := len(g.jobRuns(t, id))
	time.Sleep(7 * time.Second) // the server is down for three and a half periods
	restarted := time.Now()
	g.start()
	runs = g.waitRuns(t, id, before+2, 20*time.Second)
	var inGap []schedule.Run
	for _, r := range runs {
		if r.At.After(stopped) && r.At.Before(restarted) {
			inGap = append(inGap, r)
		}
	}
	if len(inGap) != 1 || inGap[0].Status != schedule.RunDone {
		t.Errorf("runs of firings missed while stopped = %v; want one catch-up run", inGap)
	}
	if len(runs) > before+4 {
		t.Errorf("%d runs right after the restart (had %d): a burst", len(runs)-before, before)
	}

	// Deleted while the server runs: it never fires again.
	control := lastLine(g.cli(t, "cron", "add", "--every", "1s", "--message", "control"))
	g.waitRuns(t, control, 1, 20*time.Second)
	g.cli(t, "cron", "rm", id)
	atDelete := asked(fake, "check the build")
	n := len(g.jobRuns(t, control))
	g.waitRuns(t, control, n+2, 20*time.Second) // a run in flight at rm has ended
	settled := asked(fake, "check the build")
	if settled > atDelete+1 {
		t.Errorf("the deleted job asked the model %d times after rm", settled-atDelete)
	}
	g.waitRuns(t, control, n+5, 20*time.Second)
	if after := asked(fake, "check the build"); after != settled {
		t.Errorf("the deleted job fired again: %d model requests after it settled", after-settled)
	}
	if _, stderr, status := g.run(t, "cron", "runs", id); status == 0 || !strings.Contains(stderr, "no job") {
		t.Errorf("cron runs of the deleted job: status %d, stderr %q", status, stderr)
	}
}

// lastLine is the last line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestCronResumesAfterKill kills the server (SIGKILL) while a check-in's
// turn waits for the model: after the restart that firing's run finishes,
// recorded once, instead of being lost or repeated as a new firing.
func TestCronResumesAfterKill(t *testing.T) {
	fake := newFake(t)
	var calls atomic.Int32
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		reply := fakellm.Reply{Content: "checked: " + r.Messages[len(r.Messages)-1].Content}
		if calls.Add(1) == 1 {
			reply.Delay = time.Minute // the server is killed meanwhile
		}
		return reply
	})
	g := startGateway(t, fake, "")
	id := lastLine(g.cli(t, "cron", "add", "--every", "1h", "--message", "slow"))
	g.cli(t, "cron", "run", id)
	deadline := time.Now().Add(20 * time.Second)
	for calls.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the fired job never reached the model")
		}
		time.Sleep(20 * time.Millisecond) // polling an observable outcome
	}
	runs := g.jobRuns(t, id)
	if len(runs) != 1 || runs[0].Status != schedule.RunRunning {
		t.Fatalf("runs while the model answers = %v; want one running", runs)
	}
	firing := runs[0].At
	g.kill()
	g.start()
	runs = g.waitRuns(t, id, 1, 20*time.Second)
	if len(runs) != 1 || !runs[0].At.Equal(firing) || runs[0].Status != schedule.RunDone || runs[0].Reply != "checked: slow" {
		t.Errorf("runs after the restart = %+v; want the one firing, done with the reply", runs)
	}
	if n := asked(fake, "slow"); n != 2 {
		t.Errorf("the model was asked %d times; want 2 (the killed call and its retry)", n)
	}
}

// TestCheckInToWebSocket delivers a check-in to a WebSocket user of the
// job's owner: a check_in frame on the user's open connection, and none
// on another key's connection of a user of the same name. A job of
// another owner cannot target the user.
func TestCheckInToWebSocket(t *testing.T) {
	fake := newFake(t)
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "checked: " + r.Messages[len(r.Messages)-1].Content}
	})
	g := startGateway(t, fake, "")
	mine, theirs := g.createKey(t, "--name", "mine"), g.createKey(t, "--name", "theirs")
	ws, other := g.dialWS(t, mine), g.dialWS(t, theirs)
	for _, c := range []*wsConn{ws, other} {
		c.message("m1", "hello")
		c.reply(c.ack("m1", false))
	}

	soon := func() string { return time.Now().Add(time.Second).Format(time.RFC3339Nano) }
	owner := "key:" + g.keyID(t, "mine")
	id := lastLine(g.cli(t, "cron", "add", "--owner", owner, "--at", soon(), "--message", "ping", "--deliver", "ws:ws-user"))
	f := ws.read()
	if f.Type != "check_in" || f.Text != "checked: ping" || f.RunID == "" {
		t.Fatalf("frame %+v; want the check-in's answer", f)
	}
	if r := g.waitOwnerRuns(t, owner, id, 1, 20*time.Second); r[0].Delivered != "ws:ws-user" {
		t.Errorf("run = %+v; want it delivered to ws:ws-user", r[0])
	}
	other.message("m2", "still there?")
	other.ack("m2", false) // the next frame: no check-in came before it

	local := lastLine(g.cli(t, "cron", "add", "--at", soon(), "--message", "ping", "--deliver", "ws:ws-user"))
	if r := g.waitRuns(t, local, 1, 20*time.Second); r[0].Delivered != "" || !strings.Contains(r[0].Reason, "names no API key") {
		t.Errorf("run of user:local's job = %+v; want it not delivered", r[0])
	}
}

// TestCronJobsInConsole: a job made with `lambdaclaw cron add` (owner
// user:local, the operator) is in the console's jobs of an admin key,
// marked with its owner, and the admin may pause it; another key neither
// sees nor touches it (issue 26: such jobs appeared for no key).
func TestCronJobsInConsole(t *testing.T) {
	t.Parallel()
	g := startGateway(t, nil, "")
	admin := g.createKey(t, "--admin")
	plain := g.createKey(t, "--name", "plain")
	id := lastLine(g.cli(t, "cron", "add", "--every", "1h", "--message", "check in", "--name", "operator's"))
	var page struct {
		Jobs []struct{ ID, Owner, Name string }
	}
	consoleGet(t, g, admin, "/v1/lambdaclaw/jobs", &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].Owner != "user:local" {
		t.Errorf("the admin key's jobs = %+v, want %s of user:local", page.Jobs, id)
	}
	page.Jobs = nil
	consoleGet(t, g, plain, "/v1/lambdaclaw/jobs", &page)
	if len(page.Jobs) != 0 {
		t.Errorf("another key's jobs = %+v, want none", page.Jobs)
	}
	for _, tt := range []struct {
		key  string
		want int
	}{{plain, http.StatusNotFound}, {admin, http.StatusOK}} {
		req, _ := http.NewRequest(http.MethodPost, g.addr+"/v1/lambdaclaw/jobs/"+id, strings.NewReader(`{"paused":true}`))
		req.Header.Set("Authorization", "Bearer "+tt.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("pause as %s: %s, want %d", tt.key[:6], resp.Status, tt.want)
		}
	}
	if list := g.cli(t, "cron", "list"); !strings.Contains(list, "paused") {
		t.Errorf("cron list after the admin paused the job:\n%s", list)
	}
}
