package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestFirstRun(t *testing.T) {
	models := modelsServer(t, 0) + "/v1"
	keyless := modelsServerKey(t, 0, "") + "/v1"
	refused := nettest.RefusedURL(t) + "/v1"
	tests := []struct {
		name   string
		input  string
		secret string // what is typed at the hidden prompt
		// want is config.yaml without its comment lines; "" when none is written.
		want string
		// wantOut are pieces of the dialogue's output.
		wantOut []string
	}{
		{"compatible server with a key", "4\n" + models + "\nmodel-a\n", testProviderKey,
			"providers:\n    - name: custom\n      base_url: " + models + "\n      model: model-a\n      api_key: {file: secrets/custom.key}\n",
			[]string{"readable only by you", "ok    provider custom  127.0.0.1:", "key accepted, model model-a listed"}},
		// An empty key of a compatible server is none: no api_key, and
		// the check passes when the server answers without one.
		{"compatible server without a key", "4\n" + keyless + "\nmodel-a\n", "",
			"providers:\n    - name: custom\n      base_url: " + keyless + "\n      model: model-a\n",
			[]string{"empty: the server takes none", "no API key is sent to the server", "ok    provider custom  127.0.0.1:", "(no key configured), model model-a listed"}},
		{"OpenAI, key left in the environment", "1\n\n\n", "",
			"providers:\n    - name: openai\n      base_url: https://api.openai.com/v1\n      model: gpt-4o-mini\n      api_key: {env: OPENAI_API_KEY}\n",
			[]string{"the key is read from $OPENAI_API_KEY", "FAIL  provider openai  its api_key names OPENAI_API_KEY, which is not set"}},
		{"Ollama, after a wrong choice", "7\nollama\n3\n" + refused + "\n\n", "",
			"providers:\n    - name: ollama\n      base_url: " + refused + "\n      model: llama3.2\n",
			[]string{"Type a number from 1 to 5.\nChoose [1]: Type a number", "FAIL  provider ollama  cannot reach", "connection refused"}},
		{"ended at the model", "2\n", "", "", []string{"Model [openai/gpt-4o-mini]: \nSetup skipped"}},
		{"ended at once", "", "", "", []string{"Choose [1]: \nSetup skipped"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("OPENAI_API_KEY", "")
			saved := readSecret
			t.Cleanup(func() { readSecret = saved })
			readSecret = func() (string, error) { return tt.secret, nil }
			getenv := func(k string) string { return map[string]string{"LAMBDACLAW_HOME": home}[k] }
			reload := func() (*config.Config, error) { return config.Load("", getenv) }
			cfg, err := reload()
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			got, err := firstRun(context.Background(), cfg, strings.NewReader(tt.input), &out, reload)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output has no %q:\n%s", w, out.String())
				}
			}
			if strings.Contains(out.String(), testProviderKey) {
				t.Errorf("the key was echoed:\n%s", out.String())
			}
			body, err := os.ReadFile(filepath.Join(home, "config.yaml"))
			if tt.want == "" {
				if err == nil || got != cfg {
					t.Errorf("a skipped setup wrote config.yaml or changed the configuration:\n%s", body)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for l := range strings.Lines(string(body)) {
				if !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
			if diff := cmp.Diff(tt.want, strings.Join(lines, "")); diff != "" {
				t.Errorf("config.yaml (-want +got):\n%s", diff)
			}
			if strings.Contains(string(body), testProviderKey) {
				t.Errorf("config.yaml holds the key:\n%s", body)
			}
			if st, _ := os.Stat(filepath.Join(home, "config.yaml")); st.Mode().Perm() != 0o600 {
				t.Errorf("config.yaml mode %v, want 0600", st.Mode().Perm())
			}
			if len(got.Providers) != 1 || got.Providers[0].APIKey.Value() != tt.secret {
				t.Errorf("reloaded providers = %+v, want one with the key typed", got.Providers)
			}
		})
	}
}

func TestNeedsSetup(t *testing.T) {
	saved := stdinIsTerminal
	t.Cleanup(func() { stdinIsTerminal = saved })
	home := t.TempDir()
	existing := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(existing, []byte("log_level: info\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		terminal bool
		cfg      config.Config
		want     bool
	}{
		{"a person, nothing configured", true, config.Config{Path: filepath.Join(home, "none.yaml")}, true},
		{"not a terminal", false, config.Config{Path: filepath.Join(home, "none.yaml")}, false},
		{"a config file without providers", true, config.Config{Path: existing}, false},
		{"a provider from the environment", true, config.Config{Path: filepath.Join(home, "none.yaml"), Providers: []config.Provider{{Name: "openai"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdinIsTerminal = func() bool { return tt.terminal }
			if got := needsSetup(&tt.cfg); got != tt.want {
				t.Errorf("needsSetup = %v, want %v", got, tt.want)
			}
		})
	}
}

// A failing read of the hidden key stops the setup without writing.
func TestFirstRunKeyReadFails(t *testing.T) {
	home := t.TempDir()
	saved := readSecret
	t.Cleanup(func() { readSecret = saved })
	readSecret = func() (string, error) { return "", io.ErrUnexpectedEOF }
	cfg := &config.Config{Home: home, Path: filepath.Join(home, "config.yaml")}
	if _, err := firstRun(context.Background(), cfg, strings.NewReader("1\n\n\n"), io.Discard, nil); err == nil {
		t.Fatal("firstRun succeeded")
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("the home holds %v, want nothing written", entries)
	}
}
