package schedule

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
)

func TestHeartbeatActive(t *testing.T) {
	day := func(h, m int) time.Time { return time.Date(2026, 5, 1, h, m, 0, 0, time.UTC) }
	for _, tt := range []struct {
		hours, tz string
		at        time.Time
		want      bool
	}{
		{"", "", day(3, 0), true},
		{"08:00-22:00", "", day(8, 0), true},
		{"08:00-22:00", "", day(7, 59), false},
		{"08:00-22:00", "", day(22, 0), false},
		{"08:00-24:00", "", day(23, 59), true},
		{"22:00-06:00", "", day(23, 0), true},
		{"22:00-06:00", "", day(5, 59), true},
		{"22:00-06:00", "", day(12, 0), false},
		// 06:30 UTC is 08:30 in Berlin (summer time).
		{"08:00-22:00", "Europe/Berlin", day(6, 30), true},
		{"08:00-22:00", "Europe/Berlin", day(5, 30), false},
	} {
		if got := (Heartbeat{ActiveHours: tt.hours, TZ: tt.tz}).Active(tt.at); got != tt.want {
			t.Errorf("Active(%q %s, %s) = %v, want %v", tt.hours, tt.tz, tt.at.Format(time.TimeOnly), got, tt.want)
		}
	}
}

func TestHeartbeatValidate(t *testing.T) {
	for _, tt := range []struct {
		h       Heartbeat
		wantErr string
	}{
		{Heartbeat{}, ""},
		{Heartbeat{ActiveHours: "08:00-22:00", TZ: "Europe/Berlin"}, ""},
		{Heartbeat{ActiveHours: "8-22"}, "want HH:MM-HH:MM"},
		{Heartbeat{ActiveHours: "25:00-02:00"}, "want HH:MM-HH:MM"},
		{Heartbeat{ActiveHours: "24:30-02:00"}, "past 24:00"},
		{Heartbeat{ActiveHours: "09:00-09:00"}, "the same"},
		{Heartbeat{TZ: "Mars/Olympus"}, "not an IANA time zone"},
		{Heartbeat{TZ: "Local"}, "name an IANA zone"},
	} {
		err := tt.h.Validate()
		if got := errText(err); tt.wantErr == "" && err != nil || !strings.Contains(got, tt.wantErr) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.h, err, tt.wantErr)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Outside its active hours a heartbeat's firing is claimed as skipped
// (and the job moves on); inside, it runs; a manual one always runs.
func TestDecideActiveHours(t *testing.T) {
	start := time.Date(2026, 5, 1, 21, 0, 0, 0, time.UTC)
	j, err := Prepare(heartbeatJob("a", HeartbeatConfig{Every: time.Hour, Heartbeat: Heartbeat{ActiveHours: "08:00-22:00"}}), start, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := Decide(j, j.Next, j.Next, 0, false) // 22:00: outside
	if in.Status != RunSkipped || !strings.Contains(in.Reason, "outside the heartbeat's active hours") || !in.Next.Equal(j.Next.Add(time.Hour)) {
		t.Errorf("at 22:00: %+v; want skipped, next at 23:00", in)
	}
	if d := Decide(j, j.Next, j.Next, 0, true); d.Status != RunRunning {
		t.Errorf("manual at 22:00: %+v; want running", d)
	}
	j.Next = time.Date(2026, 5, 2, 8, 0, 0, 0, time.UTC)
	if d := Decide(j, j.Next, j.Next, 0, false); d.Status != RunRunning {
		t.Errorf("at 08:00: %+v; want running", d)
	}
}

func TestChecklist(t *testing.T) {
	for in, want := range map[string]string{
		"":                           "",
		"\n  \n":                     "",
		"# Heartbeat\n\n## Checks\n": "",
		"# Heartbeat\n<!-- what to check,\none per line -->\n": "",
		"# Heartbeat\n- check the build\n":                     "# Heartbeat\n- check the build",
		"<!-- c --> check mail":                                "<!-- c --> check mail",
		"<!-- never closed":                                    "",
	} {
		if got := checklist(in); got != want {
			t.Errorf("checklist(%q) = %q, want %q", in, got, want)
		}
	}
}

// files is a workspace of fixed files; only ReadFile is used.
type files struct {
	filestore.FS
	m map[string]string
}

func (f files) ReadFile(_ context.Context, name string, limit int64) ([]byte, filestore.Entry, error) {
	s, ok := f.m[name]
	if !ok {
		return nil, filestore.Entry{}, fs.ErrNotExist
	}
	return []byte(s[:min(int64(len(s)), limit)]), filestore.Entry{Name: name, Size: int64(len(s))}, nil
}

// finishes records the runs an engine is told have ended; nothing else
// of it is used.
type finishes struct {
	Engine
	got map[Firing]Result
}

func (e *finishes) Finish(_ context.Context, f Firing, r Result) error {
	e.got[f] = r
	return nil
}

type kicks []string

func (k *kicks) Kick(_ context.Context, s string) error       { *k = append(*k, s); return nil }
func (k *kicks) Resume(context.Context, store.Approval) error { return nil }

// The runner's rules of a heartbeat, on a fake clock: a missing or empty
// HEARTBEAT.md is skipped without a run (so without a model call); a
// checklist starts one run with it; a firing while that run is queued is
// skipped as busy; the first firing started again (after a restart) goes
// on with its run.
func TestRunnerHeartbeat(t *testing.T) {
	ctx := context.Background()
	ws := files{m: map[string]string{}}
	e := &finishes{got: map[Firing]Result{}}
	var k kicks
	st := memstore.New()
	loop := &agent.Loop{Store: st, Agents: agent.Registry{"a": {Name: "a", Workspace: ws}}}
	r := &Runner{Engine: e, Loop: loop, Lane: &k}
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	j, err := Prepare(heartbeatJob("a", HeartbeatConfig{Every: time.Minute}), t0, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	fire := func(i int) Run {
		at := t0.Add(time.Duration(i) * time.Minute)
		if err := r.Start(ctx, Run{Firing: Firing{JobID: j.ID, At: at}, Job: j}); err != nil {
			t.Fatal(err)
		}
		return Run{Firing: Firing{JobID: j.ID, At: at}, Job: j}
	}

	fire(1)
	ws.m[HeartbeatFile] = "# Heartbeat\n\n<!-- one item a line -->\n"
	fire(2)
	ws.m[HeartbeatFile] = "- Is the build green?\n"
	first := fire(3)
	fire(4)
	fire(3) // started again
	want := map[Firing]Result{
		{j.ID, t0.Add(1 * time.Minute)}: {Status: RunSkipped, Reason: "HEARTBEAT.md is missing"},
		{j.ID, t0.Add(2 * time.Minute)}: {Status: RunSkipped, Reason: "HEARTBEAT.md is empty"},
		{j.ID, t0.Add(4 * time.Minute)}: {Status: RunSkipped, Reason: "session busy: run " + first.RunID() + " is queued or running"},
	}
	if diff := cmp.Diff(want, e.got); diff != "" {
		t.Errorf("finished runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(kicks{SessionID(j), SessionID(j)}, k); diff != "" {
		t.Errorf("kicks (-want +got):\n%s", diff)
	}
	msgs, err := st.Messages(ctx, SessionID(j))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Message.Content != heartbeatPrompt("- Is the build green?") {
		t.Errorf("session messages = %+v; want the one heartbeat prompt", msgs)
	}
}

// The replier records a heartbeat's HEARTBEAT_OK without delivering it,
// and delivers any other answer.
func TestReplierHeartbeatOK(t *testing.T) {
	j := heartbeatJob("a", HeartbeatConfig{Every: time.Minute, Deliver: Target{Kind: DeliverTelegram, To: "111"}})
	e := &finishes{got: map[Firing]Result{}}
	tg := &sink{}
	p := &Replier{Engine: e, Jobs: func(context.Context, string) (Job, error) { return j, nil },
		Deliver: map[string]Delivery{DeliverTelegram: Via(tg, "tg")}, Log: slog.New(slog.DiscardHandler)}
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for i, reply := range []string{"HEARTBEAT_OK", "  HEARTBEAT_OK — all quiet", "The build is red."} {
		f := Firing{JobID: j.ID, At: at.Add(time.Duration(i) * time.Minute)}
		p.Finish(agent.RunState{RunID: f.RunID(), Reply: agent.Reply{Channel: Channel, To: f.String()}}, agent.Result{Content: reply})
	}
	want := map[Firing]Result{
		{j.ID, at}:                      {Status: RunDone, Reply: "HEARTBEAT_OK", Reason: "HEARTBEAT_OK: not delivered"},
		{j.ID, at.Add(time.Minute)}:     {Status: RunDone, Reply: "  HEARTBEAT_OK — all quiet", Reason: "HEARTBEAT_OK: not delivered"},
		{j.ID, at.Add(2 * time.Minute)}: {Status: RunDone, Reply: "The build is red.", Delivered: "telegram:111"},
	}
	if diff := cmp.Diff(want, e.got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tg 111: The build is red."}, tg.got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// A delivery that fails, or a target this process cannot deliver to, is
// recorded on the run with the reason, and the run stays done.
func TestReplierUndelivered(t *testing.T) {
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		target Target
		want   Result
	}{
		{"failing webhook", Target{Kind: DeliverWebhook, To: "https://example.com/hook"},
			Result{Status: RunDone, Reply: "hi", Reason: "not delivered: the webhook answered 503 Service Unavailable"}},
		{"no WebSocket delivery here", Target{Kind: DeliverWS, To: "alice"},
			Result{Status: RunDone, Reply: "hi", Reason: "delivery to ws is not available here"}},
		{"delivered", Target{Kind: DeliverTelegram, To: "111"},
			Result{Status: RunDone, Reply: "hi", Delivered: "telegram:111"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := Job{ID: "job_1", Owner: "user:a", Agent: "default", Deliver: tt.target}
			e := &finishes{got: map[Firing]Result{}}
			p := &Replier{Engine: e, Jobs: func(context.Context, string) (Job, error) { return j, nil }, Log: slog.New(slog.DiscardHandler),
				Deliver: map[string]Delivery{
					DeliverWebhook:  func(context.Context, Answer) error { return errors.New("the webhook answered 503 Service Unavailable") },
					DeliverTelegram: Via(&sink{}, "tg"),
				}}
			f := Firing{JobID: j.ID, At: at}
			p.Finish(agent.RunState{RunID: f.RunID(), Reply: agent.Reply{Channel: Channel, To: f.String()}}, agent.Result{Content: "hi"})
			if diff := cmp.Diff(map[Firing]Result{f: tt.want}, e.got); diff != "" {
				t.Errorf("recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// sink is a delivery replier that records the answers.
type sink struct{ got []string }

func (*sink) Delta(agent.RunState, string)            {}
func (*sink) Approval(agent.RunState, store.Approval) {}
func (s *sink) Finish(st agent.RunState, res agent.Result) {
	s.got = append(s.got, st.Reply.Channel+" "+st.Reply.To+": "+res.Content)
}

// A firing whose run ended without its end recorded (the process died
// between the commit that ended the run and the telling of its answer)
// and is started again has its answer delivered and recorded then.
func TestRunnerDeliversEndedRun(t *testing.T) {
	ctx := context.Background()
	e := &finishes{got: map[Firing]Result{}}
	tg := &sink{}
	j := Job{ID: "job_1", Owner: "user:a", Agent: "a", Message: "status?", Deliver: Target{Kind: DeliverTelegram, To: "111"}}
	replier := &Replier{Engine: e, Jobs: func(context.Context, string) (Job, error) { return j, nil },
		Deliver: map[string]Delivery{DeliverTelegram: Via(tg, "tg")}, Log: slog.New(slog.DiscardHandler)}
	st := memstore.New()
	loop := &agent.Loop{Store: st, Agents: agent.Registry{"a": {Name: "a", Provider: answer("all green")}}}
	var k kicks
	r := &Runner{Engine: e, Loop: loop, Lane: &k}
	run := Run{Firing: Firing{JobID: j.ID, At: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}, Job: j}
	if err := r.Start(ctx, run); err != nil {
		t.Fatal(err)
	}
	// The run is stepped with no reply channel: it ends told nobody, as
	// when the process dies right after the commit.
	rs, err := st.GetRun(ctx, run.RunID())
	if err != nil {
		t.Fatal(err)
	}
	state, err := agent.DecodeState(rs)
	if err != nil {
		t.Fatal(err)
	}
	if state, err = loop.Step(ctx, state); err != nil || state.Step != agent.StepDone {
		t.Fatalf("step: %v at %s", err, state.Step)
	}
	if len(e.got) != 0 || len(tg.got) != 0 {
		t.Fatalf("recorded %v, delivered %q before the restart", e.got, tg.got)
	}
	loop.Replier = agent.Router{Channel: replier}
	if err := r.Start(ctx, run); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[Firing]Result{run.Firing: {Status: RunDone, Reply: "all green", Delivered: "telegram:111"}}, e.got); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tg 111: all green"}, tg.got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// answer is a model that answers text at once.
type answer string

func (answer) Name() string { return "answer" }

func (a answer) Generate(context.Context, llm.Request, llm.OnDelta) (llm.Response, error) {
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: string(a)}}, nil
}
