package tests

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMakeRelease runs `make release` into a temporary directory: four
// static binaries for linux and darwin on amd64 and arm64, whose
// SHA256SUMS match, and whose version is the one given. Cross-building
// four binaries takes minutes on a cold build cache, more than make
// test's budget leaves: CI runs it after make test (.ci/run), and so does
// LAMBDACLAW_TEST_RELEASE=1.
func TestMakeRelease(t *testing.T) {
	if os.Getenv("LAMBDACLAW_TEST_RELEASE") == "" {
		t.Skip("set LAMBDACLAW_TEST_RELEASE=1 to cross-build the release (.ci/run does, after make test)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "release", "DIST="+dist, "VERSION=v9.9.9-test", "COMMIT=0123abcd", "BUILD_DATE=2026-01-02T03:04:05Z")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	dir := filepath.Join(dist, "release")

	type binary struct{ OS, Arch string }
	var got []binary
	for _, p := range []binary{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}} {
		path := filepath.Join(dir, "lambdaclaw-"+p.OS+"-"+p.Arch)
		switch p.OS {
		case "linux":
			f, err := elf.Open(path)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
			// A static binary asks for no dynamic loader.
			if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
				t.Errorf("%s is dynamically linked", path)
			}
			f.Close()
			got = append(got, binary{"linux", arch})
		case "darwin":
			f, err := macho.Open(path)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			got = append(got, binary{"darwin", map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]})
			f.Close()
		}
	}
	if diff := cmp.Diff([]binary{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}, got); diff != "" {
		t.Errorf("binaries (-want +got):\n%s", diff)
	}

	sums, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	var names []string
	lines := bufio.NewScanner(sums)
	for lines.Scan() {
		sum, name, ok := strings.Cut(lines.Text(), "  ")
		b, err := os.ReadFile(filepath.Join(dir, name))
		if !ok || err != nil {
			t.Errorf("SHA256SUMS line %q: %v", lines.Text(), err)
			continue
		}
		if h := sha256.Sum256(b); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: the sum of %s is wrong", name)
		}
		names = append(names, name)
	}
	if diff := cmp.Diff([]string{"lambdaclaw-darwin-amd64", "lambdaclaw-darwin-arm64", "lambdaclaw-linux-amd64", "lambdaclaw-linux-arm64"}, names); diff != "" {
		t.Errorf("SHA256SUMS names (-want +got):\n%s", diff)
	}

	if runtime.GOOS == "linux" && (runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64") {
		out, err := exec.Command(filepath.Join(dir, "lambdaclaw-linux-"+runtime.GOARCH), "version").Output()
		if err != nil {
			t.Fatal(err)
		}
		want := "lambdaclaw v9.9.9-test\ncommit  0123abcd\nbuilt   2026-01-02T03:04:05Z\ngo      " + runtime.Version() + " linux/" + runtime.GOARCH + "\n"
		if diff := cmp.Diff(want, string(out)); diff != "" {
			t.Errorf("version (-want +got):\n%s", diff)
		}
	}
}
