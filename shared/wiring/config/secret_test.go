package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestSecretFile(t *testing.T) {
	tests := []struct {
		name    string
		ref     string // the api_key reference
		file    string // the file secrets/k.key holds; "": none
		mode    os.FileMode
		want    string
		wantErr string
	}{
		{"relative to home", "{file: secrets/k.key}", "sk-from-file\n", 0o600, "sk-from-file", ""},
		{"owner read-only", "{file: secrets/k.key}", "  sk-from-file  ", 0o400, "sk-from-file", ""},
		{"readable by others", "{file: secrets/k.key}", "sk-from-file", 0o644, "", "may be read by other users (mode 0644): chmod 600"},
		{"readable by the group", "{file: secrets/k.key}", "sk-from-file", 0o640, "", "may be read by other users"},
		{"missing", "{file: secrets/none.key}", "", 0, "", "no such file or directory"},
		{"empty", "{file: secrets/k.key}", "\n", 0o600, "", "is empty"},
		{"directory", "{file: secrets}", "x", 0o600, "", "is not a regular file"},
		{"env and file", "{env: K, file: secrets/k.key}", "x", 0o600, "", "needs env: VARIABLE_NAME or file: PATH (one of them)"},
		{"neither", "{}", "x", 0o600, "", "needs env: VARIABLE_NAME or file: PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, "providers:\n  - name: a\n    api_key: "+tt.ref+"\n")
			if tt.file != "" {
				if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "secrets", "k.key"), []byte(tt.file), tt.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(dir, "secrets", "k.key"), tt.mode); err != nil {
					t.Fatal(err)
				}
			}
			c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one with %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "sk-from-file") {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Providers[0].APIKey.Value(); got != tt.want {
				t.Errorf("key = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriteSecretFile(t *testing.T) {
	home := t.TempDir()
	for _, v := range []string{"sk-first", "sk-second"} {
		if err := config.WriteSecretFile(home, "secrets/p.key", v); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(filepath.Join(home, "secrets", "p.key"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.Stat(filepath.Join(home, "secrets"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]os.FileMode{0o600, 0o700}, []os.FileMode{st.Mode().Perm(), dst.Mode().Perm()}); diff != "" {
		t.Errorf("modes of the file and its directory (-want +got):\n%s", diff)
	}
	_, path := writeConfig(t, "providers:\n  - name: a\n    api_key: {file: secrets/p.key}\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Providers[0].APIKey.Value(); got != "sk-second" {
		t.Errorf("key = %q, want the last written", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "secrets")); len(entries) != 1 {
		t.Errorf("secrets/ holds %d files, want 1 (no temporary file left)", len(entries))
	}
}
