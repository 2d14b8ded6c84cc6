package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// ownerJobs reads an owner's jobs and the runs of each from the database.
func (g *gateway) ownerJobs(t *testing.T, owner string) (map[string][]schedule.Run, []schedule.Job) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(g.home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := db.Schedule(nil)
	ctx := context.Background()
	jobs, err := e.List(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]schedule.Run{}
	for _, j := range jobs {
		if runs[j.ID], err = e.Runs(ctx, owner, j.ID, 1000); err != nil {
			t.Fatal(err)
		}
	}
	return runs, jobs
}

// waitFor polls cond, an observable outcome, until it holds; it fails the
// test after the deadline.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s", what, within)
		}
		time.Sleep(50 * time.Millisecond) // polling an observable outcome
	}
}

// TestScheduleToolReminder: in a Telegram chat the model calls the
// schedule tool ("remind me in 2 seconds"); the reminder is Ada's, fires
// into the same conversation (the model sees what was said), and its
// answer is delivered into the chat.
func TestScheduleToolReminder(t *testing.T) {
	llm := newFake(t)
	const ask, remind = "remind me in 2 seconds to stretch", "Tell Ada to stretch now"
	var offered atomic.Bool
	llm.SetDefault(func(r fakellm.Request) fakellm.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "tool":
			if !strings.Contains(last.Content, `"created"`) {
				return fakellm.Reply{Content: "the tool failed: " + last.Content}
			}
			return fakellm.Reply{Content: "Reminder set."}
		case last.Content == ask:
			for _, name := range r.Tools {
				if name == "schedule" {
					offered.Store(true)
				}
			}
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "schedule",
				Arguments: `{"action":"create","in":"2s","message":"` + remind + `","name":"stretch"}`}}}
		case last.Content == remind:
			for _, m := range r.Messages {
				if m.Content == ask {
					return fakellm.Reply{Content: "Time to stretch, Ada!"}
				}
			}
			return fakellm.Reply{Content: "a reminder outside its conversation"}
		}
		return fakellm.Echo(r)
	})
	g, tg := startTelegram(t, llm, "polling")
	tg.Push(faketelegram.Message(1, 111, 111, "private", ask))
	ms := waitMessages(t, tg, 111, 2)
	if ms[0].Text != "Reminder set." || ms[1].Text != "Time to stretch, Ada!" {
		t.Fatalf("chat = %+v; want the confirmation, then the reminder in its conversation", ms)
	}
	if !offered.Load() {
		t.Error("the schedule tool was not offered to the model")
	}
	runs, jobs := g.ownerJobs(t, "tg:111")
	if len(jobs) != 1 || jobs[0].Name != "stretch" || jobs[0].Deliver.String() != "telegram:111" || jobs[0].SessionID == "" {
		t.Fatalf("Ada's jobs = %+v; want the reminder, delivered to her chat, in her session", jobs)
	}
	waitFor(t, "the reminder's run recorded", 10*time.Second, func() bool {
		runs, _ = g.ownerJobs(t, "tg:111")
		r := runs[jobs[0].ID]
		return len(r) == 1 && r[0].Status != schedule.RunRunning
	})
	if r := runs[jobs[0].ID][0]; r.Status != schedule.RunDone || r.Delivered != "telegram:111" || r.Reply != "Time to stretch, Ada!" {
		t.Errorf("the reminder's run = %+v; want done and delivered", r)
	}
	if _, others := g.ownerJobs(t, "user:local"); len(others) != 0 {
		t.Errorf("the local user sees %v", others)
	}
}

// TestHeartbeat runs the default agent's heartbeat every second,
// delivering to a Telegram chat: without HEARTBEAT.md, or with one that
// holds only a heading, nothing asks the model; with a checklist, a reply
// of HEARTBEAT_OK is recorded but not delivered, and one that says
// something is.
func TestHeartbeat(t *testing.T) {
	llm := newFake(t)
	var beats atomic.Int32
	llm.SetDefault(func(r fakellm.Request) fakellm.Reply {
		if strings.HasPrefix(r.LastUser(), "Heartbeat:") {
			if !strings.Contains(r.LastUser(), "Check whether the build is green.") {
				return fakellm.Reply{Content: "no checklist in " + r.LastUser()}
			}
			if beats.Add(1) == 1 {
				return fakellm.Reply{Content: "HEARTBEAT_OK"}
			}
			return fakellm.Reply{Content: "The build is red."}
		}
		return fakellm.Echo(r)
	})
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	cfg := "telegram:\n  enabled: true\n  mode: polling\n  allowed_users: [111]\n" +
		"agents:\n  default:\n    heartbeat: {every: 1s, deliver: \"telegram:111\"}\n"
	g := newGateway(t, llm, cfg)
	g.env = append(g.env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "TELEGRAM_API_BASE="+tg.URL)
	g.start()

	id := schedule.HeartbeatID("default")
	skipped := func(reason string) func() bool {
		return func() bool {
			runs, _ := g.ownerJobs(t, schedule.HeartbeatOwner)
			for _, r := range runs[id] {
				if r.Status == schedule.RunSkipped && r.Reason == reason {
					return true
				}
			}
			return false
		}
	}
	waitFor(t, "a heartbeat skipped for the missing file", 15*time.Second, skipped("HEARTBEAT.md is missing"))
	g.writeWorkspaceFile("HEARTBEAT.md", "# Heartbeat\n\n<!-- add what to check -->\n")
	waitFor(t, "a heartbeat skipped for the empty file", 15*time.Second, skipped("HEARTBEAT.md is empty"))
	for _, r := range llm.Requests() {
		if strings.HasPrefix(r.LastUser(), "Heartbeat:") {
			t.Fatalf("the model was asked without a checklist: %q", r.LastUser())
		}
	}

	g.writeWorkspaceFile("HEARTBEAT.md", "# Heartbeat\n\n- Check whether the build is green.\n")
	ms := waitMessages(t, tg, 111, 1)
	waitFor(t, "two heartbeats answered", 15*time.Second, func() bool { return beats.Load() >= 2 })
	for _, m := range tg.Messages(111) {
		if m.Text != "The build is red." {
			t.Errorf("delivered %q; want only the heartbeats that say something", m.Text)
		}
	}
	if ms[0].Text != "The build is red." {
		t.Errorf("first delivery = %q", ms[0].Text)
	}
	runs, jobs := g.ownerJobs(t, schedule.HeartbeatOwner)
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("heartbeat jobs = %+v; want %s", jobs, id)
	}
	var ok, delivered bool
	for _, r := range runs[id] {
		switch {
		case r.Status == schedule.RunDone && r.Reply == "HEARTBEAT_OK":
			ok = r.Delivered == "" && strings.Contains(r.Reason, "not delivered")
		case r.Status == schedule.RunDone && r.Reply == "The build is red.":
			delivered = delivered || r.Delivered == "telegram:111"
		}
	}
	if !ok || !delivered {
		t.Errorf("heartbeat runs = %v; want HEARTBEAT_OK recorded, not delivered, and the other delivered", runs[id])
	}

	// A restart without the heartbeat in the configuration removes its job.
	g.stop()
	if err := os.WriteFile(filepath.Join(g.home, "config.yaml"), []byte("telegram:\n  enabled: true\n  mode: polling\n  allowed_users: [111]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.start()
	if _, jobs := g.ownerJobs(t, schedule.HeartbeatOwner); len(jobs) != 0 {
		t.Errorf("heartbeat jobs after it left the configuration = %+v", jobs)
	}
}
