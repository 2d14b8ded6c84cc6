//go:build linux

package bwrap

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// parentName is the cgroup under which a server as root makes one pids
// cgroup per command, named <server pid>-<n>.
const parentName = "lambdaclaw-sandbox"

// cgroup is the parent pids cgroup of the commands.
type cgroup struct {
	dir string
}

// findCgroup makes the parent pids cgroup, under the unified hierarchy
// (cgroup v2) when it has the pids controller, else under the pids
// hierarchy of cgroup v1; nil when neither can be made.
func findCgroup() *cgroup {
	const root = "/sys/fs/cgroup"
	if ctrl, err := os.ReadFile(filepath.Join(root, "cgroup.controllers")); err == nil && hasWord(ctrl, "pids") {
		dir := filepath.Join(root, parentName)
		if err := os.Mkdir(dir, 0o755); err == nil || os.IsExist(err) {
			sub, _ := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
			if hasWord(sub, "pids") || os.WriteFile(filepath.Join(root, "cgroup.subtree_control"), []byte("+pids"), 0) == nil {
				if os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0) == nil {
					return &cgroup{dir: dir}
				}
			}
		}
	}
	v1 := filepath.Join(root, "pids")
	if _, err := os.Stat(filepath.Join(v1, "pids.max")); err == nil || fileExists(filepath.Join(v1, "cgroup.procs")) {
		dir := filepath.Join(v1, parentName)
		if err := os.Mkdir(dir, 0o755); err == nil || os.IsExist(err) {
			return &cgroup{dir: dir}
		}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// execCgroup is the pids cgroup of one command.
type execCgroup struct {
	dir   string
	procs string
}

// make creates the cgroup name with at most max processes.
func (c *cgroup) make(name string, max int) (*execCgroup, error) {
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("pids cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(max)), 0); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("pids cgroup: %w", err)
	}
	return &execCgroup{dir: dir, procs: filepath.Join(dir, "cgroup.procs")}, nil
}

// hitMax says whether a fork was refused for the limit.
func (e *execCgroup) hitMax() bool {
	b, err := os.ReadFile(filepath.Join(e.dir, "pids.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "max "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}

// remove kills what is left in the cgroup and removes it; a cgroup whose
// processes are still exiting is left to removeOrphans.
func (e *execCgroup) remove() {
	killAll(e.dir)
	os.Remove(e.dir)
}

func killAll(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, f := range bytes.Fields(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil && pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// removeOrphans removes the command cgroups of servers that are gone, and
// this server's that are empty.
func (c *cgroup) removeOrphans() {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(c.dir, e.Name())
		owner, _, _ := strings.Cut(e.Name(), "-")
		if owner != self {
			if pid, err := strconv.Atoi(owner); err == nil && syscall.Kill(pid, 0) == nil {
				continue // another live server's
			}
			killAll(dir)
		}
		os.Remove(dir) // fails while it has processes
	}
}
