package skill

import (
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeEnv is a machine with the given binaries and environment variables.
func fakeEnv(goos string, bins []string, env map[string]string) Env {
	return Env{
		LookPath: func(file string) (string, error) {
			for _, b := range bins {
				if b == file {
					return "/usr/bin/" + file, nil
				}
			}
			return "", exec.ErrNotFound
		},
		Getenv: func(k string) string { return env[k] },
		GOOS:   goos,
	}
}

func noBins(string) (string, error) { return "", exec.ErrNotFound }
func noEnv(string) string           { return "" }

func TestCheck(t *testing.T) {
	env := fakeEnv("linux", []string{"git", "curl"}, map[string]string{"TOKEN": "t", "EMPTY": ""})
	tests := []struct {
		name string
		req  Requirements
		want string
	}{
		{"nothing required", Requirements{}, ""},
		{"all met", Requirements{Bins: []string{"git", "curl"}, AnyBins: []string{"jj", "git"}, Env: []string{"TOKEN"}, OS: []string{"darwin", "linux"}}, ""},
		{"missing bin", Requirements{Bins: []string{"git", "gh", "jq"}}, "needs gh, jq on PATH"},
		{"no alternative bin", Requirements{AnyBins: []string{"docker", "podman"}}, "needs one of docker, podman on PATH"},
		{"missing env", Requirements{Env: []string{"TOKEN", "API_KEY"}}, "needs the environment variable API_KEY set"},
		{"empty env", Requirements{Env: []string{"EMPTY", "API_KEY"}}, "needs the environment variables EMPTY, API_KEY set"},
		{"wrong OS", Requirements{OS: []string{"darwin", "windows"}}, "works only on darwin, windows, not linux"},
		{"everything wrong", Requirements{Bins: []string{"gh"}, Env: []string{"X"}, OS: []string{"darwin"}},
			"works only on darwin, not linux; needs gh on PATH; needs the environment variable X set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := env.Check(tt.req); got != tt.want {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckRealEnv(t *testing.T) {
	// The zero Env is the real machine; "go" runs this test.
	if got := (Env{}).Check(Requirements{Bins: []string{"go"}}); got != "" {
		t.Errorf("Check(go on PATH) = %q", got)
	}
	if got := (Env{}).Check(Requirements{Bins: []string{"no-such-binary-lambdaclaw"}}); got == "" {
		t.Error("Check found a binary that does not exist")
	}
}

func TestFilter(t *testing.T) {
	skills := []Skill{
		{Name: "a"},
		{Name: "b", Requires: Requirements{Bins: []string{"gh"}}},
		{Name: "c", Requires: Requirements{OS: []string{"windows"}}},
		{Name: "d", Requires: Requirements{Bins: []string{"gh"}, OS: []string{"darwin"}}},
	}
	eligible, ineligible := Filter(skills, fakeEnv("darwin", []string{"gh"}, nil))
	if diff := cmp.Diff([]Skill{skills[0], skills[1], skills[3]}, eligible); diff != "" {
		t.Errorf("eligible (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Ineligible{{skills[2], "works only on windows, not darwin"}}, ineligible); diff != "" {
		t.Errorf("ineligible (-want +got):\n%s", diff)
	}
}
