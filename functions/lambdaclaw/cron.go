package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// localOwner is the owner the CLI acts as by default: the person at this
// machine, who owns the jobs made here, and whose admin keys see them in
// the web console.
const localOwner = schedule.OperatorOwner

// cronRunsShown is how many runs `cron runs` lists.
const cronRunsShown = 50

// cronCommand runs `lambdaclaw cron add|list|rm|runs|run|pause|resume` on
// the local database, whether or not the server runs: a running server
// sees the changes within a second; or, with --stack, on a deployed
// stack's table and schedule group. Every flag and argument is checked
// before the database is opened, so bad input changes nothing.
func cronCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("cron", []string{"add", "list", "rm", "runs", "run", "pause", "resume"}, args, stdout, stderr)
	if err != nil {
		return err
	}
	if sub == "add" {
		return cronAdd(ctx, args[1:], stdout, stderr)
	}
	about := map[string]string{
		"list":   "List your scheduled jobs: id, name, agent, schedule, next firing, state and delivery target.",
		"rm":     "Delete a job and its runs. It never fires again, also in a running server; a run in progress finishes.",
		"runs":   "List a job's latest runs: when, the outcome, tokens, where the reply was delivered, and the reply or the reason.",
		"run":    "Fire a job now, whatever its schedule (also a paused job). The running server starts the turn within a second;\nwith the server stopped, it starts when the server does.",
		"pause":  "Pause a job: it does not fire until resumed.",
		"resume": "Resume a paused job from its next firing after now (what fell in the pause is not caught up).",
	}
	fs, want := newFlags("cron "+sub, "ID", about[sub], stderr), 1
	if sub == "list" {
		fs, want = newFlags("cron list", "", about[sub], stderr), 0
	}
	loadConfig := fs.withConfig()
	st := fs.withStack()
	owner := ownerFlag(fs)
	pos, err := fs.parse(args[1:], want, want, stdout)
	if err != nil {
		return err
	}
	if err := st.check(fs); err != nil {
		return err
	}
	if err := checkOwner(*owner); err != nil {
		return err
	}
	dest, err := openJobs(ctx, st, loadConfig, "")
	if err != nil {
		return err
	}
	defer dest.close()
	jobs := dest.engine
	switch sub {
	case "list":
		return listJobs(ctx, jobs, *owner, stdout)
	case "rm":
		if err := jobs.Delete(ctx, *owner, pos[0]); err != nil {
			return jobError(err, pos[0], *owner)
		}
		fmt.Fprintln(stderr, "deleted", pos[0])
		return nil
	case "runs":
		return listJobRuns(ctx, jobs, *owner, pos[0], stdout)
	case "run":
		msg, err := dest.runNow(ctx, *owner, pos[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	default:
		j, err := jobs.SetPaused(ctx, *owner, pos[0], sub == "pause")
		if err != nil {
			return jobError(err, pos[0], *owner)
		}
		fmt.Fprintf(stdout, "%s %s, next %s\n", pos[0], jobState(j), when(j.Next))
		return nil
	}
}

// cronAdd is `lambdaclaw cron add`.
func cronAdd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("cron add", "", "Schedule a check-in: at each firing the agent gets the message as a user message, in a session of\nthe job (or --session), with its tools and memory; the reply is recorded (`cron runs`) and delivered to --deliver.\nGive one of --every, --cron and --at. The job's id is printed on the last line.", stderr)
	loadConfig := fs.withConfig()
	st := fs.withStack()
	owner := ownerFlag(fs)
	agentName := fs.String("agent", config.DefaultAgent, "the agent that answers")
	every := fs.Duration("every", 0, "fire every interval (at least 1s), as 30s, 15m, 2h")
	cronExpr := fs.String("cron", "", `fire on a 5-field cron expression (minute hour day-of-month month day-of-week), as "0 9 * * 1-5"`)
	tz := fs.String("tz", "", "the IANA time zone of --cron, as Europe/Berlin (default UTC)")
	at := fs.String("at", "", "fire once, at an RFC 3339 time, as 2026-05-01T09:00:00+02:00")
	message := fs.String("message", "", "the user message of each turn (required)")
	name := fs.String("name", "", "a name to tell the job apart")
	session := fs.String("session", "", "the session key of the turns (default a session of the job's own)")
	deliver := fs.String("deliver", "none", "where replies go besides `cron runs`: none, telegram:CHAT_ID, webhook:URL or ws:USER")
	perDay := fs.Int("max-runs-per-day", 0, "skip firings beyond this many runs a day (0: no cap)")
	tokens := fs.Int("token-budget", 0, "end a turn once its model calls used this many tokens, prompt and completion (0: no budget)")
	catchUp := fs.String("catch-up", string(schedule.CatchUpOne), "firings missed while the server was stopped: one (a single catch-up turn) or skip")
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	if err := st.check(fs); err != nil {
		return err
	}
	if err := checkOwner(*owner); err != nil {
		return err
	}
	if !fs.isSet("message") {
		return errors.New("--message is required: the text the agent gets at each firing")
	}
	target, err := schedule.ParseTarget(*deliver)
	if err != nil {
		return fmt.Errorf("--deliver: %w", err)
	}
	j := schedule.Job{Owner: *owner, Agent: *agentName, Name: *name, Message: *message, SessionKey: *session, Deliver: target,
		Limits: schedule.Limits{RunsPerDay: *perDay, TokensPerRun: *tokens}, CatchUp: schedule.CatchUp(*catchUp),
		Schedule: schedule.Schedule{Every: schedule.Duration(*every), Cron: *cronExpr, TZ: *tz}}
	if *at != "" {
		if j.Schedule.At, err = time.Parse(time.RFC3339, *at); err != nil {
			return fmt.Errorf("--at %q: want an RFC 3339 time, as 2026-05-01T09:00:00+02:00", *at)
		}
	}
	if n := setCount(fs, "every", "cron", "at"); n != 1 {
		return errors.New("give exactly one of --every, --cron and --at")
	}
	// The engine validates again; checking here keeps bad input from
	// creating the database.
	minEvery := sqlite.MinEvery
	if st.remote() {
		minEvery = dynamo.ScheduleMinEvery
	}
	if err := j.Validate(time.Now(), minEvery); err != nil {
		return err
	}
	dest, err := openJobs(ctx, st, loadConfig, j.Agent)
	if err != nil {
		return err
	}
	defer dest.close()
	j, err = dest.engine.Create(ctx, j)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scheduled %s for agent %s, next %s, deliver %s\n", j.Schedule, j.Agent, when(j.Next), j.Deliver)
	fmt.Fprintln(stdout, j.ID)
	return nil
}

// ownerFlag adds --owner.
func ownerFlag(fs *cmdFlags) *string {
	return fs.String("owner", localOwner, "the owner the command acts as: user:NAME, key:KEY_ID or tg:CHAT_ID; only the owner's jobs are seen")
}

// checkOwner checks an --owner value.
func checkOwner(o string) error {
	if o == schedule.HeartbeatOwner {
		return nil // the agents' heartbeats, kept in step with the configuration by serve
	}
	kind, id, _ := strings.Cut(o, ":")
	if id == "" || !slices.Contains([]string{"user", "key", "tg"}, kind) {
		return fmt.Errorf("--owner %q: want user:NAME, key:KEY_ID, tg:CHAT_ID or %s", o, schedule.HeartbeatOwner)
	}
	return nil
}

// setCount counts the flags given among names.
func setCount(fs *cmdFlags, names ...string) int {
	n := 0
	for _, name := range names {
		if fs.isSet(name) {
			n++
		}
	}
	return n
}

// jobError explains an error about the job id.
func jobError(err error, id, owner string) error {
	if errors.Is(err, schedule.ErrNotFound) {
		return fmt.Errorf("no job %q of %s (see `lambdaclaw cron list`; --owner acts as another owner)", id, owner)
	}
	return err
}

func when(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.Local().Format(time.DateTime + " MST")
}

func jobState(j schedule.Job) string {
	switch {
	case j.Paused:
		return "paused"
	case j.Next.IsZero():
		return "finished"
	}
	return "active"
}

// listJobs prints the owner's jobs as a table.
func listJobs(ctx context.Context, jobs schedule.Engine, owner string, stdout io.Writer) error {
	js, err := jobs.List(ctx, owner)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tAGENT\tSCHEDULE\tNEXT\tSTATE\tDELIVER")
	for _, j := range js {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Name, j.Agent, j.Schedule, when(j.Next), jobState(j), j.Deliver)
	}
	return tw.Flush()
}

// listJobRuns prints a job's latest runs, newest first.
func listJobRuns(ctx context.Context, jobs schedule.Engine, owner, id string, stdout io.Writer) error {
	runs, err := jobs.Runs(ctx, owner, id, cronRunsShown)
	if err != nil {
		return jobError(err, id, owner)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tOUTCOME\tTOKENS\tDELIVERED\tREPLY")
	for _, r := range runs {
		outcome := string(r.Status)
		if r.Manual {
			outcome += " (manual)"
		}
		text := r.Reply
		if r.Reason != "" {
			text = r.Reason
		}
		delivered := r.Delivered
		if delivered == "" {
			delivered = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.At.Local().Format(time.DateTime), outcome, r.Tokens, delivered, oneLine(text, 80))
	}
	return tw.Flush()
}

// oneLine shortens s to one line of at most n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
