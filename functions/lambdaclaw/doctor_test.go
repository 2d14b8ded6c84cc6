package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/fakesearch"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

// testDoctor is a doctor of a configuration with home as its data
// directory.
func testDoctor(t *testing.T, home string) *doctor {
	t.Helper()
	cfg := &config.Config{Home: home}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return newDoctor(cfg, 5*time.Second)
}

// got is a finding's verdict and whether its detail has want in it.
func verdictOf(f finding, want string) string {
	if !strings.Contains(f.Detail, want) {
		return fmt.Sprintf("%s, detail %q without %q", f.Verdict, f.Detail, want)
	}
	return string(f.Verdict)
}

const testProviderKey = "sk-test-0123456789abcdefghij"

// modelsServer answers GET /v1/models as an OpenAI-compatible server that
// accepts testProviderKey, with status when it is not 0.
func modelsServer(t *testing.T, status int) string {
	return modelsServerKey(t, status, testProviderKey)
}

// modelsServerKey is modelsServer accepting key, or any request when key
// is empty (a server that takes no key).
func modelsServerKey(t *testing.T, status int, key string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/v1/models":
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		case key != "" && r.Header.Get("Authorization") != "Bearer "+key:
			http.Error(w, `{"error":{"message":"Incorrect API key provided: `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`, http.StatusUnauthorized)
		case status != 0:
			http.Error(w, `{"error":{"message":"overloaded"}}`, status)
		default:
			fmt.Fprint(w, `{"object":"list","data":[{"id":"model-a"},{"id":"model-b"}]}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestDoctorProvider(t *testing.T) {
	t.Setenv("DOCTOR_TEST_UNSET", "")
	ok, overloaded := modelsServer(t, 0)+"/v1", modelsServer(t, http.StatusServiceUnavailable)+"/v1"
	keyless := modelsServerKey(t, 0, "") + "/v1"
	tests := []struct {
		name         string
		base, key    string
		env          string // the key's variable, when not KEY
		model        string
		want, detail string
	}{
		{"listed", ok, testProviderKey, "", "model-a", "ok", "key accepted, model model-a listed"},
		{"not listed", ok, testProviderKey, "", "model-z", "ok", "model model-z not among the 2 it lists"},
		{"key refused", ok, "sk-wrong-0123456789abcdefghij", "", "model-a", "FAIL", "refused the key in KEY (401 Unauthorized)"},
		{"key not set", ok, "", "DOCTOR_TEST_UNSET", "model-a", "FAIL", "names DOCTOR_TEST_UNSET, which is not set; 127.0.0.1"},
		// A server that takes no key works without one (issue 26: doctor
		// failed such a setup that chat used).
		{"key not set, server takes none", keyless, "", "DOCTOR_TEST_UNSET", "model-a", "warn", "answers without a key, though its api_key names DOCTOR_TEST_UNSET"},
		{"no key, server takes none", keyless, "", "-", "model-a", "ok", "answers (no key configured), model model-a listed"},
		{"not the API root", strings.TrimSuffix(ok, "/v1"), testProviderKey, "", "model-a", "FAIL", "/models not found (404)"},
		{"overloaded", overloaded, testProviderKey, "", "model-a", "FAIL", "answered 503 Service Unavailable"},
		{"down", nettest.RefusedURL(t) + "/v1", testProviderKey, "", "model-a", "FAIL", "connection refused"},
		{"not a URL", "localhost:11434", testProviderKey, "", "model-a", "FAIL", "is not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			secret := config.ResolvedSecret(or(tt.env, "KEY"), tt.key)
			if tt.env == "-" {
				secret = config.Secret{}
			}
			d.cfg.Providers = []config.Provider{{Name: "p", Type: config.ProviderOpenAI, BaseURL: tt.base, APIKey: secret, Model: tt.model}}
			checks, _ := d.checks()
			fs := d.run(context.Background(), checks)
			var f finding
			for _, x := range fs {
				if x.Check == "provider p" {
					f = x
				}
			}
			if got := verdictOf(f, tt.detail); got != tt.want {
				t.Errorf("finding %+v: got %s, want %s", f, got, tt.want)
			}
			if (f.Verdict == fail || f.Verdict == warn) && f.Fix == "" {
				t.Errorf("failure without a fix: %+v", f)
			}
			if strings.Contains(fmt.Sprint(fs), "0123456789abcdefghij") {
				t.Errorf("a key is in the findings: %+v", fs)
			}
		})
	}
}

func TestDoctorHome(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "ro")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, home   string
		want, detail string
	}{
		{"writable", dir, "ok", "is writable"},
		{"to be created", filepath.Join(dir, "new", "home"), "ok", "does not exist yet"},
		{"a file", file, "FAIL", "is not a directory"},
		{"under a file", filepath.Join(file, "home"), "FAIL", "not a directory"},
		{"read-only", readOnly, "FAIL", "is not writable: permission denied"},
		{"under a read-only directory", filepath.Join(readOnly, "home"), "FAIL", "is not writable: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.name, "read-only") && os.Geteuid() == 0 {
				t.Skip("root writes to read-only directories (tests/doctor_test.go runs this case as another user)")
			}
			f := testDoctor(t, tt.home).checkHome(context.Background())
			if got := verdictOf(f, tt.detail); got != tt.want {
				t.Errorf("finding %+v: got %s, want %s", f, got, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 2 {
				t.Errorf("the check left files behind: %v", entries)
			}
		})
	}
}

func TestDoctorDatabase(t *testing.T) {
	tests := []struct {
		name         string
		make         func(t *testing.T, path string)
		want, detail string
	}{
		{"none yet", func(*testing.T, string) {}, "info", "no database yet"},
		{"current", func(t *testing.T, path string) {
			db, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, "ok", fmt.Sprintf("integrity ok, schema version %d (current)", sqlite.SchemaVersion())},
		{"older", func(t *testing.T, path string) { setUserVersion(t, path, 1) }, "ok", fmt.Sprintf("serve migrates it to %d", sqlite.SchemaVersion())},
		{"newer", func(t *testing.T, path string) { setUserVersion(t, path, sqlite.SchemaVersion()+1) }, "FAIL", "is newer than this binary's"},
		{"not a database", func(t *testing.T, path string) {
			if err := os.WriteFile(path, bytes.Repeat([]byte("not sqlite "), 1000), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "FAIL", "not a database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			tt.make(t, d.cfg.DBPath())
			f := d.checkDatabase(context.Background())
			if got := verdictOf(f, tt.detail); got != tt.want {
				t.Errorf("finding %+v: got %s, want %s", f, got, tt.want)
			}
		})
	}
}

// setUserVersion creates a database at path with schema version v.
func setUserVersion(t *testing.T, path string, v int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
}

func TestDoctorDisk(t *testing.T) {
	tests := []struct {
		name         string
		free         uint64
		err          error
		want, detail string
	}{
		{"plenty", 3 << 30, nil, "ok", "3.0 GiB free"},
		{"little", 100 << 20, nil, "FAIL", "100.0 MiB free on the file system of"},
		{"unknown", 0, errors.New("statfs: input/output error"), "FAIL", "input/output error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			d.freeBytes = func(string) (uint64, error) { return tt.free, tt.err }
			f := d.checkDisk(context.Background())
			if got := verdictOf(f, tt.detail); got != tt.want {
				t.Errorf("finding %+v: got %s, want %s", f, got, tt.want)
			}
		})
	}
}

func TestDoctorClock(t *testing.T) {
	// The servers' clock; the local clock is off by the case's skew.
	remote := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", remote.Format(http.TimeFormat))
	}))
	defer srv.Close()
	tests := []struct {
		name         string
		skew         time.Duration
		requests     int
		want, detail string
	}{
		{"same", 300 * time.Millisecond, 1, "ok", "within 1s of"},
		{"ahead", 5 * time.Minute, 1, "FAIL", "is 4m59s ahead of"}, // at least: Date is to the second,
		{"behind", -3 * time.Minute, 1, "FAIL", "is 3m0s behind"},
		// It says what it compares with, and what to do.
		{"no answers", 0, 0, "info", "the time (the Date header) of the answers of the servers the other checks call (providers, embeddings, Telegram), and none answered; fix those checks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			d.now = func() time.Time { return remote.Add(tt.skew) }
			for range tt.requests {
				resp, err := d.http.Get(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			f := d.checkClock(context.Background())
			if got := verdictOf(f, tt.detail); got != tt.want {
				t.Errorf("finding %+v: got %s, want %s", f, got, tt.want)
			}
		})
	}
}

func TestDoctorSandbox(t *testing.T) {
	refused := errors.New("sandbox unavailable: bubblewrap is not installed")
	tests := []struct {
		name, backend string
		probe         error
		want, detail  string
	}{
		{"default, working", "", nil, "ok", "bubblewrap makes sandboxes here"},
		{"default, not working", "", refused, "info", "serve offers no exec tool: sandbox unavailable"},
		{"bubblewrap, not working", config.SandboxBubblewrap, refused, "FAIL", "bubblewrap is not installed"},
		{"bubblewrap, working", config.SandboxBubblewrap, nil, "ok", "agents have the exec tool"},
		{"none", config.SandboxNone, refused, "info", "sandbox.backend is none"},
		{"fargate", config.SandboxFargate, nil, "FAIL", "runs on AWS only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			d.cfg.Sandbox.Backend = tt.backend
			d.probeSandbox = func(context.Context) error { return tt.probe }
			f := d.checkSandbox(context.Background())
			if got := verdictOf(f, tt.detail); got != tt.want {
				t.Errorf("finding %+v: got %s, want %s", f, got, tt.want)
			}
		})
	}
}

// The real probe runs in a throwaway directory, never in the home of a
// server whose sandboxes it would reap.
func TestDoctorProbeLeavesHomeAlone(t *testing.T) {
	home := t.TempDir()
	d := testDoctor(t, home)
	d.checkSandbox(context.Background())
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the sandbox check wrote into the home: %v", entries)
	}
}

func TestDoctorMCP(t *testing.T) {
	d := testDoctor(t, t.TempDir())
	d.cfg.MCP = config.MCP{Servers: map[string]config.MCPServer{"broken": {Command: "/bin/false"}}}
	checks, _ := d.checks()
	fs := d.run(context.Background(), checks)
	d.close()
	var got []finding
	for _, f := range fs {
		if strings.HasPrefix(f.Check, "mcp") {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Check != "mcp broken" || got[0].Verdict != fail || !strings.Contains(got[0].Fix, "mcp.servers.broken") {
		t.Errorf("MCP findings = %+v, want one failure of mcp broken", got)
	}
	// Without servers there is no MCP line.
	d = testDoctor(t, t.TempDir())
	checks, _ = d.checks()
	for _, c := range checks {
		if strings.HasPrefix(c.name, "mcp") {
			t.Errorf("check %q without MCP servers", c.name)
		}
	}
}

// setWebhook is the body of a setWebhook call of webhook, the URL and,
// after a "#", the kinds of update it gets (comma-separated; all of them
// when there is no "#").
func setWebhook(webhook string) string {
	url, kinds, some := strings.Cut(webhook, "#")
	p := map[string]any{"url": url, "allowed_updates": []string{}}
	if some {
		p["allowed_updates"] = strings.Split(kinds, ",")
	}
	b, _ := json.Marshal(p)
	return string(b)
}

func TestDoctorTelegram(t *testing.T) {
	tg := faketelegram.New()
	defer tg.Close()
	const public = "https://bot.example.com"
	tests := []struct {
		name  string
		token string
		mode  string // "": the channel off
		// webhook is registered before the check, with the update kinds
		// after a "#", when there are any (else all).
		webhook string
		// want are the verdicts and details of the token and webhook checks.
		want [2]string
	}{
		{"polling", faketelegram.Token, "polling", "", [2]string{"ok: token of @clawbot accepted", "ok: no webhook"}},
		{"polling with a webhook", faketelegram.Token, "polling", public + "/x", [2]string{"ok: token of @clawbot accepted", "FAIL: so long polling gets no updates"}},
		{"webhook", faketelegram.Token, "webhook", public + config.TelegramWebhookPath, [2]string{"ok: the channel is on, mode webhook", "ok: webhook set to " + public}},
		{"webhook missing", faketelegram.Token, "webhook", "", [2]string{"ok: mode webhook", "FAIL: the webhook is none, want " + public}},
		{"webhook without button presses", faketelegram.Token, "webhook", public + config.TelegramWebhookPath + "#message",
			[2]string{"ok: mode webhook", "FAIL: the webhook gets only message updates, not button presses"}},
		{"token refused", "123456:wrong-token-0123456789", "polling", "", [2]string{"FAIL: Telegram refused the token", "FAIL: 401 Unauthorized"}},
		{"channel off, token set", faketelegram.Token, "", "", [2]string{"ok: the channel is off", "ok: no webhook"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tg.Client().Post(tg.URL+"/bot"+faketelegram.Token+"/setWebhook", "application/json", strings.NewReader(setWebhook(tt.webhook))); err != nil {
				t.Fatal(err)
			}
			d := testDoctor(t, t.TempDir())
			d.cfg.Telegram = config.Telegram{Enabled: tt.mode != "", Mode: tt.mode, PublicURL: public, Token: tt.token, APIBase: tg.URL, Agent: "default"}
			checks, _ := d.checks()
			var got []finding
			for _, f := range d.run(context.Background(), checks) {
				if strings.HasPrefix(f.Check, "telegram") {
					got = append(got, f)
				}
			}
			if len(got) != 2 {
				t.Fatalf("telegram findings = %+v, want 2", got)
			}
			for i, f := range got {
				verdict, detail, _ := strings.Cut(tt.want[i], ": ")
				if v := verdictOf(f, detail); v != verdict {
					t.Errorf("finding %+v: got %s, want %s", f, v, verdict)
				}
				if strings.Contains(f.Detail+f.Fix, tt.token) {
					t.Errorf("the token is in %+v", f)
				}
			}
		})
	}
}

func TestDoctorWhatsApp(t *testing.T) {
	wa := fakewhatsapp.New()
	defer wa.Close()
	tests := []struct {
		name, token, phone string
		// want is the verdict and a part of the detail.
		want string
	}{
		{"number read", fakewhatsapp.Token, fakewhatsapp.PhoneNumberID, "ok: number +1 555-078-3881 (" + fakewhatsapp.PhoneNumberID + `) of "Lambdaclaw Test", quality GREEN`},
		{"token refused", "EAAwrong-token-0123456789", fakewhatsapp.PhoneNumberID, "FAIL: WhatsApp refused the access token in WA_TOKEN"},
		{"another number id", fakewhatsapp.Token, "999999", "FAIL: the token may not use the phone number id 999999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			d.cfg.Channels.WhatsApp = config.WhatsApp{Enabled: true, PhoneNumberID: tt.phone, APIBase: wa.APIBase(),
				AccessToken: config.ResolvedSecret("WA_TOKEN", tt.token)}
			checks, _ := d.checks()
			var got []finding
			for _, f := range d.run(context.Background(), checks) {
				if f.Check == "whatsapp" {
					got = append(got, f)
				}
			}
			if len(got) != 1 {
				t.Fatalf("whatsapp findings = %+v, want 1", got)
			}
			verdict, detail, _ := strings.Cut(tt.want, ": ")
			if v := verdictOf(got[0], detail); v != verdict {
				t.Errorf("finding %+v: got %s, want %s", got[0], v, verdict)
			}
			if strings.Contains(got[0].Detail+got[0].Fix, tt.token) {
				t.Errorf("the token is in %+v", got[0])
			}
		})
	}
	d := testDoctor(t, t.TempDir())
	checks, _ := d.checks()
	for _, c := range checks {
		if c.name == "whatsapp" {
			t.Error("a whatsapp check without the channel")
		}
	}
}

func TestReport(t *testing.T) {
	var b bytes.Buffer
	failed := report(&b, []finding{
		{Verdict: pass, Check: "data directory", Detail: "/h is writable", Fix: "not printed"},
		{Verdict: fail, Check: "provider openai", Detail: "cannot reach x", Fix: "start it"},
		{Verdict: info, Check: "sandbox", Detail: "bwrap is not installed"},
	})
	want := "ok    data directory   /h is writable\n" +
		"FAIL  provider openai  cannot reach x. Fix: start it\n" +
		"info  sandbox          bwrap is not installed\n"
	if diff := cmp.Diff(want, b.String()); diff != "" || failed != 1 {
		t.Errorf("report = %d failed, (-want +got):\n%s", failed, diff)
	}
}

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/health",
		"0.0.0.0:80":     "http://127.0.0.1:80/health",
		":9000":          "http://127.0.0.1:9000/health",
		"[::]:8080":      "http://[::1]:8080/health",
		"gw.local:8080":  "http://gw.local:8080/health",
	} {
		if got, err := healthURL(addr); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := healthURL("no-port"); err == nil {
		t.Error("healthURL(no-port) succeeded")
	}
}

func TestDoctorCommandFlags(t *testing.T) {
	t.Setenv("LAMBDACLAW_HOME", t.TempDir())
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
		}
	}))
	defer healthy.Close()
	tests := []struct {
		name    string
		addr    string
		args    []string
		wantErr string // "": success
		wantOut string
	}{
		{"health of a running server", strings.TrimPrefix(healthy.URL, "http://"), []string{"--health"}, "", "/health: 200 OK"},
		{"health of a stopped server", strings.TrimPrefix(nettest.RefusedURL(t), "http://"), []string{"--health"}, "connection refused", ""},
		{"health of a stack", "127.0.0.1:1", []string{"--health", "--stack", "s"}, "--health checks the local server", ""},
		{"no timeout", "127.0.0.1:1", []string{"--timeout", "0s"}, "--timeout must be positive", ""},
		{"region without stack", "127.0.0.1:1", []string{"--region", "eu-west-1"}, "--region applies to --stack", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LAMBDACLAW_ADDR", tt.addr)
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"doctor"}, tt.args...), &out, &errOut)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("doctor %v: %v", tt.args, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("doctor %v: error %v, want one with %q", tt.args, err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("output %q, want %q in it", out.String(), tt.wantOut)
			}
		})
	}
}

func TestDoctorWebSearch(t *testing.T) {
	const key = "BSA-doctor-key-0123456789"
	fake := fakesearch.New(key)
	defer fake.Close()
	fake.SetResults(fakesearch.Result{Title: "lambdaclaw", URL: "https://example.com/"})
	tests := []struct {
		name string
		ws   config.WebSearch
		// setup changes the fake before the check.
		setup func()
		want  string
	}{
		{"brave", config.WebSearch{Provider: "brave", URL: fake.URL + "/res/v1", APIKey: config.ResolvedSecret("BRAVE_API_KEY", key)}, nil,
			"ok: brave answered a search (1 result)"},
		{"brave key refused", config.WebSearch{Provider: "brave", URL: fake.URL + "/res/v1", APIKey: config.ResolvedSecret("BRAVE_API_KEY", "BSA-wrong-key-0123456789")}, nil,
			"FAIL: brave: the API key was refused (HTTP 422 SUBSCRIPTION_TOKEN_INVALID)"},
		{"tavily rate limited", config.WebSearch{Provider: "tavily", URL: fake.URL, APIKey: config.ResolvedSecret("TAVILY_API_KEY", key)}, func() { fake.RateLimit(1) },
			"warn: tavily: rate limited (HTTP 429)"},
		{"searxng", config.WebSearch{Provider: "searxng", URL: fake.URL}, nil, "ok: searxng answered a search (1 result)"},
		{"searxng without json", config.WebSearch{Provider: "searxng", URL: fake.URL}, fake.DisableJSON,
			"FAIL: searxng: search failed (HTTP 403)"},
		{"searxng down", config.WebSearch{Provider: "searxng", URL: nettest.RefusedURL(t)}, nil, "FAIL: searxng: GET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			ws := tt.ws
			d.cfg.Tools.WebSearch = &ws
			if tt.setup != nil {
				tt.setup()
			}
			checks, _ := d.checks()
			var got []finding
			for _, f := range d.run(context.Background(), checks) {
				if f.Check == "web search" {
					got = append(got, f)
				}
			}
			if len(got) != 1 {
				t.Fatalf("web search findings = %+v, want 1", got)
			}
			verdict, detail, _ := strings.Cut(tt.want, ": ")
			if v := verdictOf(got[0], detail); v != verdict {
				t.Errorf("finding %+v: got %s, want %s", got[0], v, verdict)
			}
			if strings.Contains(got[0].Detail+got[0].Fix, "wrong-key") {
				t.Errorf("the key is in %+v", got[0])
			}
		})
	}
}
