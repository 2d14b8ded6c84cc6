package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// env returns a getenv func that reads only m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeConfig writes body to config.yaml in a new directory and returns the
// directory and the file's path.
func writeConfig(t *testing.T, body string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

func intp(n int) *int { return &n }

func dur(d time.Duration) config.Duration { return config.Duration(d) }

// defaultProvider is what validate fills in for a provider named name.
func defaultProvider(name string) config.Provider {
	return config.Provider{Name: name, Type: "openai", Model: config.DefaultModel, Timeout: dur(120 * time.Second), Retries: intp(2)}
}

func TestLoad(t *testing.T) {
	withKey := func(p config.Provider, envName string) config.Provider {
		p.APIKey = config.Secret{Env: envName}
		return p
	}
	tests := []struct {
		name string
		yaml string // "" writes no file
		env  map[string]string
		want config.Config // Home is filled in by the test
	}{
		{
			name: "no file, no env: defaults",
			want: config.Config{Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"}},
		},
		{
			name: "no file, OpenAI env: one default provider",
			env:  map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://llm.local/v1", "OPENAI_MODEL": "gpt-x"},
			want: config.Config{
				Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"},
				Providers: []config.Provider{{Name: "openai", Type: "openai", BaseURL: "http://llm.local/v1", Model: "gpt-x",
					APIKey: config.Secret{Env: "OPENAI_API_KEY"}, Timeout: dur(120 * time.Second), Retries: intp(2)}},
			},
		},
		{
			name: "no file, only OPENAI_API_KEY: default model",
			env:  map[string]string{"OPENAI_API_KEY": "sk-test"},
			want: config.Config{
				Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"},
				Providers: []config.Provider{withKey(defaultProvider("openai"), "OPENAI_API_KEY")},
			},
		},
		{
			name: "no file, only OPENAI_BASE_URL: keyless provider",
			env:  map[string]string{"OPENAI_BASE_URL": "http://localhost:11434/v1"},
			want: config.Config{
				Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"},
				Providers: []config.Provider{func() config.Provider {
					p := defaultProvider("openai")
					p.BaseURL = "http://localhost:11434/v1"
					return p
				}()},
			},
		},
		{
			name: "providers in the file: OpenAI env ignored",
			yaml: "providers:\n  - name: local\n    base_url: http://localhost:8000/v1\n",
			env:  map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://other/v1", "OPENAI_MODEL": "gpt-x"},
			want: config.Config{
				Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"},
				Providers: []config.Provider{func() config.Provider {
					p := defaultProvider("local")
					p.BaseURL = "http://localhost:8000/v1"
					return p
				}()},
			},
		},
		{
			name: "LAMBDACLAW_ADDR overrides the file",
			yaml: "addr: 0.0.0.0:9000\n",
			env:  map[string]string{"LAMBDACLAW_ADDR": "127.0.0.1:7000"},
			want: config.Config{Addr: "127.0.0.1:7000", MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"}},
		},
		{
			name: "everything from the file",
			yaml: `addr: 0.0.0.0:9000
log_level: debug
max_body_bytes: 4096
default_rate_per_minute: 30
providers:
  - name: main
    base_url: https://api.example.com/v1
    api_key: {env: MAIN_KEY}
    model: big
    timeout: 45s
    retries: 0
  - base_url: http://localhost:11434/v1
    timeout: 2m30s
agents:
  default:
    providers: [main, provider2]
    model: small
    max_tool_iterations: 5
    tools: [read_file]
    client_system: replace
    heartbeat: {every: 30m, active_hours: "08:00-22:00", tz: Europe/Berlin, deliver: "telegram:42"}
    delegate_to: [researcher, writer]
sessions:
  sharing: per_channel
  users:
    ada: [tg:42, ws:key_1/ada]
`,
			want: config.Config{
				Addr: "0.0.0.0:9000", LogLevel: "debug", MaxBodyBytes: 4096, DefaultRatePerMinute: 30,
				Sessions: config.Sessions{Sharing: "per_channel", Users: map[string][]string{"ada": {"tg:42", "ws:key_1/ada"}}},
				Providers: []config.Provider{
					{Name: "main", Type: "openai", BaseURL: "https://api.example.com/v1", APIKey: config.Secret{Env: "MAIN_KEY"}, Model: "big", Timeout: dur(45 * time.Second), Retries: intp(0)},
					{Name: "provider2", Type: "openai", BaseURL: "http://localhost:11434/v1", Model: config.DefaultModel, Timeout: dur(150 * time.Second), Retries: intp(2)},
				},
				Agents: map[string]config.AgentConfig{
					"default": {Providers: []string{"main", "provider2"}, Model: "small", MaxToolIterations: 5, Tools: []string{"read_file"}, ClientSystem: "replace",
						Heartbeat:  &config.Heartbeat{Every: dur(30 * time.Minute), ActiveHours: "08:00-22:00", TZ: "Europe/Berlin", Deliver: "telegram:42"},
						DelegateTo: []string{"researcher", "writer"}},
				},
			},
		},
		{
			name: "bedrock providers: region from the file or AWS_REGION",
			yaml: "providers:\n  - name: claude\n    type: bedrock\n    region: eu-west-3\n    model: anthropic.claude-x-v1:0\n" +
				"  - name: nova\n    type: bedrock\n    model: amazon.nova-lite-v1:0\n",
			env: map[string]string{"AWS_REGION": "us-east-1"},
			want: config.Config{
				Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"},
				Providers: []config.Provider{
					{Name: "claude", Type: "bedrock", Region: "eu-west-3", Model: "anthropic.claude-x-v1:0", Timeout: dur(120 * time.Second), Retries: intp(2)},
					{Name: "nova", Type: "bedrock", Region: "us-east-1", Model: "amazon.nova-lite-v1:0", Timeout: dur(120 * time.Second), Retries: intp(2)},
				},
			},
		},
		{
			name: "empty file",
			yaml: "# nothing here\n",
			want: config.Config{Addr: config.DefaultAddr, MaxBodyBytes: config.DefaultMaxBodyBytes, DefaultRatePerMinute: 120, Sessions: config.Sessions{Sharing: "shared"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if tt.yaml != "" {
				if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(tt.yaml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e := map[string]string{"LAMBDACLAW_HOME": home}
			for k, v := range tt.env {
				e[k] = v
			}
			got, err := config.Load("", env(e))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := tt.want
			want.Home, want.Path = home, filepath.Join(home, "config.yaml")
			// TestLoadLimits covers the limits and server settings.
			if diff := cmp.Diff(&want, got, cmpopts.IgnoreUnexported(config.Secret{}), cmpopts.IgnoreFields(config.Config{}, "Limits", "Server")); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadSecretResolvesWithGetenv(t *testing.T) {
	dir, path := writeConfig(t, "providers:\n  - name: a\n    api_key: {env: A_KEY}\n  - name: b\n    api_key: {env: UNSET_KEY}\n  - name: c\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir, "A_KEY": "sk-from-getenv"}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range c.Providers {
		got[p.Name] = p.APIKey.Value()
	}
	if diff := cmp.Diff(map[string]string{"a": "sk-from-getenv", "b": "", "c": ""}, got); diff != "" {
		t.Errorf("resolved keys (-want +got):\n%s", diff)
	}
}

func TestLoadDefaultProviderKeyResolvesWithGetenv(t *testing.T) {
	c, err := config.Load("", env(map[string]string{"LAMBDACLAW_HOME": t.TempDir(), "OPENAI_API_KEY": "sk-env"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Providers) != 1 || c.Providers[0].APIKey.Value() != "sk-env" {
		t.Errorf("providers = %+v, want one whose key resolves to sk-env", c.Providers)
	}
}

func TestSecretValueOutsideLoad(t *testing.T) {
	t.Setenv("LAMBDACLAW_TEST_SECRET", "from-os")
	if got := (config.Secret{Env: "LAMBDACLAW_TEST_SECRET"}).Value(); got != "from-os" {
		t.Errorf("Value() = %q, want from-os", got)
	}
	if got := (config.Secret{}).Value(); got != "" {
		t.Errorf("empty Secret Value() = %q, want empty", got)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"literal api_key", "providers:\n  - name: a\n    api_key: sk-abcdef\n",
			[]string{"line 3", "secrets are not written in config files", "{env: OPENAI_API_KEY}"}},
		{"quoted literal api_key", "providers:\n  - api_key: \"sk-abcdef\"\n",
			[]string{"{env: OPENAI_API_KEY}"}},
		{"list api_key", "providers:\n  - api_key: [a]\n",
			[]string{"{env: OPENAI_API_KEY}"}},
		{"reference without env", "providers:\n  - api_key: {}\n",
			[]string{"env: VARIABLE_NAME"}},
		{"unknown provider", "providers:\n  - name: main\nagents:\n  bot:\n    providers: [main, backup]\n",
			[]string{`agent "bot"`, `unknown provider "backup"`}},
		{"agent provider beside the env provider", "agents:\n  bot:\n    providers: [openai, backup]\n",
			[]string{`unknown provider "backup"`}},
		{"duplicate provider", "providers:\n  - name: a\n  - name: a\n",
			[]string{`provider "a" defined twice`}},
		{"bedrock without model", "providers:\n  - name: b\n    type: bedrock\n    region: us-east-1\n",
			[]string{`provider "b"`, "bedrock needs a model"}},
		{"bedrock without region", "providers:\n  - name: b\n    type: bedrock\n    model: amazon.nova-lite-v1:0\n",
			[]string{`provider "b"`, "region", "AWS_REGION"}},
		{"bedrock with api_key", "providers:\n  - type: bedrock\n    region: us-east-1\n    model: m\n    api_key: {env: K}\n",
			[]string{"IAM", "api_key"}},
		{"unknown input", "providers:\n  - name: x\n    input: [text, video]\n",
			[]string{`provider "x"`, `input "video"`}},
		{"input without text", "providers:\n  - name: x\n    input: [image]\n",
			[]string{`provider "x"`, "must include text"}},
		{"bedrock with audio input", "providers:\n  - name: b\n    type: bedrock\n    region: us-east-1\n    model: m\n    input: [text, audio]\n",
			[]string{`provider "b"`, "no audio"}},
		{"unknown type", "providers:\n  - name: x\n    type: anthropic\n",
			[]string{`provider "x"`, `type is "anthropic"`}},
		{"negative iterations", "agents:\n  bot:\n    max_tool_iterations: -1\n",
			[]string{`agent "bot"`, "max_tool_iterations"}},
		{"bad client_system", "agents:\n  bot:\n    client_system: merge\n",
			[]string{`agent "bot"`, "client_system"}},
		{"delegate to itself", "agents:\n  bot:\n    delegate_to: [bot]\n",
			[]string{`agent "bot"`, "delegate_to[0] must name another agent"}},
		{"delegate twice", "agents:\n  bot:\n    delegate_to: [a, a]\n",
			[]string{`agent "bot"`, `delegate_to names "a" twice`}},
		{"negative delegation depth", "limits:\n  delegation_depth: -1\n",
			[]string{"limits.delegation_depth"}},
		{"heartbeat without every", "agents:\n  bot:\n    heartbeat: {deliver: none}\n",
			[]string{`agent "bot"`, "heartbeat: every is required"}},
		{"heartbeat in no time zone", "agents:\n  bot:\n    heartbeat: {every: 1h, tz: Mars/Olympus}\n",
			[]string{`agent "bot"`, `tz "Mars/Olympus" is not an IANA time zone`}},
		{"negative job limit", "limits: {max_jobs_per_owner: -1}\n",
			[]string{"limits.max_jobs_per_owner must not be negative"}},
		{"bad duration", "providers:\n  - timeout: soon\n",
			[]string{"line 2", "invalid duration"}},
		{"duration without unit", "providers:\n  - timeout: 30\n",
			[]string{"missing unit"}},
		{"not YAML", "addr: [unclosed\n",
			[]string{"config "}},
		{"link without a channel", "sessions:\n  users:\n    ada: [tg:1, ada]\n",
			[]string{"sessions.users.ada", `"ada" needs a channel prefix`, "tg:, ws: or api:"}},
		{"link without a key", "sessions:\n  users:\n    ada: [tg:1, ws:ada]\n",
			[]string{"sessions.users.ada", `"ws:ada" must name the API key`, "ws:<key id>/<user>"}},
		{"bad groups respond", "telegram:\n  enabled: true\n  groups: {respond: sometimes}\n",
			[]string{`telegram.groups.respond is "sometimes"`, "mention or all"}},
		{"groups context too large", "telegram:\n  enabled: true\n  groups: {context: 101}\n",
			[]string{"telegram.groups.context is 101", "0 to 100"}},
		{"link with an empty user", "sessions:\n  users:\n    ada: [api:key_1/]\n",
			[]string{`"api:key_1/" must name the API key`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, tt.yaml)
			_, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir, "OPENAI_API_KEY": "sk-test"}))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestLoadLiteralSecretNotEchoed(t *testing.T) {
	dir, path := writeConfig(t, "providers:\n  - api_key: sk-verysecret123\n")
	_, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
	if err == nil || strings.Contains(err.Error(), "sk-verysecret123") {
		t.Errorf("err = %v, want an error that does not repeat the secret", err)
	}
}

func TestLoadConfigPath(t *testing.T) {
	home := t.TempDir()
	missing := filepath.Join(home, "nope.yaml")
	_, path := writeConfig(t, "addr: 10.0.0.1:1\n")
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("addr: 10.0.0.2:2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		env      map[string]string
		wantAddr string // empty means an error is wanted
	}{
		{"explicit path", path, nil, "10.0.0.1:1"},
		{"explicit path beats LAMBDACLAW_CONFIG", path, map[string]string{"LAMBDACLAW_CONFIG": missing}, "10.0.0.1:1"},
		{"LAMBDACLAW_CONFIG", "", map[string]string{"LAMBDACLAW_CONFIG": path}, "10.0.0.1:1"},
		{"home config.yaml", "", nil, "10.0.0.2:2"},
		{"explicit path missing", missing, nil, ""},
		{"LAMBDACLAW_CONFIG missing", "", map[string]string{"LAMBDACLAW_CONFIG": missing}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"LAMBDACLAW_HOME": home}
			for k, v := range tt.env {
				e[k] = v
			}
			c, err := config.Load(tt.path, env(e))
			if tt.wantAddr == "" {
				if err == nil {
					t.Fatalf("Load succeeded with a missing named file; addr %q", c.Addr)
				}
				if !strings.Contains(err.Error(), "nope.yaml") {
					t.Errorf("error %q does not name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Addr != tt.wantAddr {
				t.Errorf("Addr = %q, want %q", c.Addr, tt.wantAddr)
			}
		})
	}
}

func TestLoadDefaultPathMissing(t *testing.T) {
	home := filepath.Join(t.TempDir(), "not-created-yet")
	c, err := config.Load("", env(map[string]string{"LAMBDACLAW_HOME": home}))
	if err != nil {
		t.Fatalf("Load with no config file: %v", err)
	}
	if c.Home != home {
		t.Errorf("Home = %q, want %q", c.Home, home)
	}
	if want := filepath.Join(home, "lambdaclaw.db"); c.DBPath() != want {
		t.Errorf("DBPath = %q, want %q", c.DBPath(), want)
	}
}

func TestLoadLimits(t *testing.T) {
	tests := []struct {
		name       string
		yaml       string
		wantLimits config.Limits
		wantServer config.Server
	}{
		{
			name: "defaults",
			yaml: "addr: 127.0.0.1:9\n",
			wantLimits: config.Limits{
				MaxReplyBytes: config.DefaultMaxReplyBytes, MaxToolArgsBytes: config.DefaultMaxToolArgsBytes,
				MaxToolResultBytes: config.DefaultMaxToolResultBytes, MaxFileBytes: config.DefaultMaxFileBytes,
				WorkspaceQuotaBytes: config.DefaultWorkspaceQuotaBytes, MaxJobsPerOwner: config.DefaultMaxJobsPerOwner,
			},
			wantServer: config.Server{
				ReadHeaderTimeout: dur(config.DefaultReadHeaderTimeout), ReadTimeout: dur(config.DefaultReadTimeout),
				IdleTimeout: dur(config.DefaultIdleTimeout), MaxConcurrentPerKey: config.DefaultMaxConcurrentPerKey,
				MaxWebSocketsPerKey: config.DefaultMaxWebSocketsPerKey,
			},
		},
		{
			name: "set",
			yaml: "limits: {max_reply_bytes: 10, max_tool_args_bytes: 11, max_tool_result_bytes: 12, max_file_bytes: 13, workspace_quota_bytes: 14, max_jobs_per_owner: 15}\n" +
				"server: {read_header_timeout: 1s, read_timeout: 2s, idle_timeout: 3s, max_concurrent_requests_per_key: 4, max_websockets_per_key: 5}\n",
			wantLimits: config.Limits{MaxReplyBytes: 10, MaxToolArgsBytes: 11, MaxToolResultBytes: 12, MaxFileBytes: 13, WorkspaceQuotaBytes: 14, MaxJobsPerOwner: 15},
			wantServer: config.Server{ReadHeaderTimeout: dur(time.Second), ReadTimeout: dur(2 * time.Second), IdleTimeout: dur(3 * time.Second),
				MaxConcurrentPerKey: 4, MaxWebSocketsPerKey: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, tt.yaml)
			got, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.wantLimits, got.Limits); diff != "" {
				t.Errorf("Limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantServer, got.Server); diff != "" {
				t.Errorf("Server (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"limits: {max_reply_bytes: -1}\n", "server: {max_websockets_per_key: -2}\n"} {
		dir, path := writeConfig(t, bad)
		if _, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir})); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("Load(%q) error = %v; want a negative-value error", bad, err)
		}
	}
}
