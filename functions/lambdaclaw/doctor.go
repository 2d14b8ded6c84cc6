package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/mcp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// `lambdaclaw doctor` checks what the server needs and explains, one line
// a check, what is wrong and how to fix it. The checks are small functions
// of a doctor, whose dependencies on the machine (the clock, the PATH, the
// file system's free space, HTTP) are fields that tests replace. The checks
// run concurrently; their lines print in a fixed order. doctor_checks.go
// holds the checks of the local home, doctor_stack.go those of a deployed
// stack.

// verdict is the outcome of a check. Only fail makes doctor exit 1.
type verdict string

const (
	pass verdict = "ok"
	fail verdict = "FAIL"
	// info is a finding that is not a failure: something not configured,
	// or checked for information only.
	info verdict = "info"
	// warn is a finding that is not a failure but wants action: its Fix
	// is printed.
	warn verdict = "warn"
)

// finding is one line of doctor's report.
type finding struct {
	Verdict verdict
	// Check names what was checked, as "provider openai".
	Check string
	// Detail says what was found; Fix, for a failure, what to do.
	Detail, Fix string
}

// check is one check: its name and what it does.
type check struct {
	name string
	run  func(ctx context.Context) finding
}

// doctor holds what the checks need.
type doctor struct {
	cfg *config.Config
	// http makes the checks' HTTP requests; its transport records the
	// Date headers of the answers for the clock check.
	http *http.Client
	// now is the local clock.
	now func() time.Time
	// probeSandbox checks that the local sandbox backend works.
	probeSandbox func(ctx context.Context) error
	// freeBytes is the space free for the user on path's file system.
	freeBytes func(path string) (uint64, error)
	// minFree is the free space below which the disk check fails;
	// maxSkew the clock difference above which the clock check fails.
	minFree uint64
	maxSkew time.Duration

	mu    sync.Mutex
	dates []dateSample

	// mcp is the registry of the configured MCP servers, made once by
	// the first MCP check; close stops them.
	mcpOnce sync.Once
	mcp     *mcp.Registry
	mcpErr  error
}

// close stops what the checks started.
func (d *doctor) close() {
	if d.mcp != nil {
		d.mcp.Close()
	}
}

// dateSample is the Date header of an answer and the local time it came.
type dateSample struct {
	host         string
	remote, sent time.Time
	received     time.Time
}

// Thresholds of the checks.
const (
	defaultMinFree = 512 << 20
	defaultMaxSkew = time.Minute
)

// newDoctor returns a doctor of cfg that works on this machine, each
// network call bounded by timeout.
func newDoctor(cfg *config.Config, timeout time.Duration) *doctor {
	d := &doctor{
		cfg: cfg, now: time.Now, probeSandbox: probeBubblewrap, freeBytes: freeBytes,
		minFree: defaultMinFree, maxSkew: defaultMaxSkew,
	}
	d.http = &http.Client{Timeout: timeout, Transport: &dateRecorder{next: http.DefaultTransport, d: d}}
	return d
}

// dateRecorder is a transport that records the Date header of every answer.
type dateRecorder struct {
	next http.RoundTripper
	d    *doctor
}

func (t *dateRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	sent := t.d.now()
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if at, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
		t.d.mu.Lock()
		t.d.dates = append(t.d.dates, dateSample{host: r.URL.Host, remote: at, sent: sent, received: t.d.now()})
		t.d.mu.Unlock()
	}
	return resp, nil
}

// checks lists the checks of the local home, in report order. The clock
// check comes last: it reads the Date headers the others received.
func (d *doctor) checks() (first []check, last check) {
	first = []check{
		{"data directory", d.checkHome},
		{"database", d.checkDatabase},
		{"disk space", d.checkDisk},
	}
	if len(d.cfg.Providers) == 0 {
		first = append(first, check{"provider", func(context.Context) finding {
			return finding{Verdict: fail, Detail: "no LLM provider is configured: chat requests fail with 503",
				Fix: "run `lambdaclaw serve` at a terminal for a short setup, or set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server), or add providers to " + d.configPath()}
		}})
	}
	for _, p := range d.cfg.Providers {
		first = append(first, check{"provider " + p.Name, func(ctx context.Context) finding { return d.checkProvider(ctx, p) }})
	}
	first = append(first, check{"embeddings", d.checkEmbedder}, check{"sandbox", d.checkSandbox})
	for _, name := range slices.Sorted(maps.Keys(d.cfg.MCP.Servers)) {
		first = append(first, check{"mcp " + name, func(context.Context) finding { return d.checkMCP(name) }})
	}
	if d.cfg.Telegram.Enabled || d.cfg.Telegram.Token != "" {
		first = append(first, check{"telegram", d.checkTelegram}, check{"telegram webhook", d.checkWebhook})
	}
	if d.cfg.Channels.WhatsApp.Enabled {
		first = append(first, check{"whatsapp", d.checkWhatsApp})
	}
	if d.cfg.Channels.Discord.Enabled {
		first = append(first, check{"discord", d.checkDiscord})
	}
	if d.cfg.Tools.WebSearch != nil {
		first = append(first, check{"web search", d.checkWebSearch})
	}
	if d.cfg.Channels.Slack.Enabled {
		first = append(first, check{"slack", d.checkSlack})
	}
	return first, check{"clock", d.checkClock}
}

// configPath is the config file doctor read, for fixes to name.
func (d *doctor) configPath() string { return or(d.cfg.Path, "the config file") }

// run runs the checks concurrently, then last, and returns the findings
// in order, each scrubbed of the configured secrets.
func (d *doctor) run(ctx context.Context, checks []check, last ...check) []finding {
	out := make([]finding, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { out[i] = runCheck(ctx, c) })
	}
	wg.Wait()
	for _, c := range last {
		out = append(out, runCheck(ctx, c))
	}
	for i := range out {
		out[i].Detail, out[i].Fix = d.scrub(out[i].Detail), d.scrub(out[i].Fix)
	}
	return out
}

// runCheck runs c and names its finding after it.
func runCheck(ctx context.Context, c check) finding {
	f := c.run(ctx)
	if f.Check == "" {
		f.Check = c.name
	}
	return f
}

// scrub removes the configured secrets, and whatever looks like one, from
// a line of the report.
func (d *doctor) scrub(s string) string {
	for _, p := range d.cfg.Providers {
		s = scrub.Known(s, p.APIKey.Value())
	}
	if e := d.cfg.Embeddings; e != nil {
		s = scrub.Known(s, e.APIKey.Value())
	}
	s = scrub.Known(s, d.cfg.Telegram.Token)
	wa := d.cfg.Channels.WhatsApp
	sl := d.cfg.Channels.Slack
	for _, secret := range []config.Secret{wa.AccessToken, wa.AppSecret, wa.VerifyToken, d.cfg.Channels.Discord.BotToken, sl.BotToken, sl.AppToken, sl.SigningSecret} {
		s = scrub.Known(s, secret.Value())
	}
	return scrub.Scrub(s)
}

// report writes the findings, one line each, and returns how many failed.
func report(w io.Writer, fs []finding) (failed int) {
	width := 0
	for _, f := range fs {
		width = max(width, len(f.Check))
	}
	for _, f := range fs {
		line := fmt.Sprintf("%-4s  %-*s  %s", f.Verdict, width, f.Check, f.Detail)
		if f.Verdict == fail {
			failed++
		}
		if (f.Verdict == fail || f.Verdict == warn) && f.Fix != "" {
			line += ". Fix: " + f.Fix
		}
		fmt.Fprintln(w, line)
	}
	return failed
}

// doctorCommand is `lambdaclaw doctor`.
func doctorCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", "", "Check the server's data directory, database, providers, embeddings, sandbox, Telegram bot,\n"+
		"clock and free disk, and say how to fix what fails: one line a check. With --stack, check the\n"+
		"deployed stack instead: its outputs, its table, its CloudWatch alarms, its Bedrock model and the account's\n"+
		"Lambda concurrency. Exits 1 when a check fails.\n"+
		"Secrets are never printed.", stderr)
	loadConfig := fs.withConfig()
	st := fs.withStack()
	timeout := fs.Duration("timeout", 15*time.Second, "how long each network check may take")
	health := fs.Bool("health", false, "only check that the server at $LAMBDACLAW_ADDR answers GET /health\n(a container's health check: no provider is called)")
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	if err := st.check(fs); err != nil {
		return err
	}
	if *timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if *health {
		if st.remote() {
			return errors.New("--health checks the local server; it takes no --stack")
		}
		cfg, err := loadConfig()
		if err != nil {
			return err
		}
		return checkHealth(ctx, &http.Client{Timeout: *timeout}, cfg.Addr, stdout)
	}
	var findings []finding
	if st.remote() {
		findings = stackDoctor(ctx, st, *timeout)
		for i := range findings {
			findings[i].Detail, findings[i].Fix = scrub.Scrub(findings[i].Detail), scrub.Scrub(findings[i].Fix)
		}
	} else {
		cfg, err := loadConfig()
		if err != nil {
			fmt.Fprintf(stdout, "%-4s  config  %s. Fix: correct the config file or the environment variable it names\n", fail, scrub.Scrub(err.Error()))
			return errors.New("doctor: the configuration does not load")
		}
		d := newDoctor(cfg, *timeout)
		defer d.close()
		checks, last := d.checks()
		findings = d.run(ctx, checks, last)
	}
	if n := report(stdout, findings); n > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed", n, len(findings))
	}
	return nil
}

// checkHealth is doctor --health: GET /health of the server at addr.
func checkHealth(ctx context.Context, client *http.Client, addr string, stdout io.Writer) error {
	u, err := healthURL(addr)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", u, resp.Status)
	}
	fmt.Fprintf(stdout, "%s: %s\n", u, resp.Status)
	return nil
}

// healthURL is the /health URL of the server listening at addr; a
// wildcard host (0.0.0.0, ::, empty) is reached on the loopback address.
func healthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: want HOST:PORT: %w", addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/health", nil
}

// firstLine is s up to its first line break, at most 200 bytes.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
