package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// homeLockFile is the file of a home that `lambdaclaw serve` holds locked
// while it runs, with its process id in it.
const homeLockFile = "serve.lock"

// lockHome takes the home's serve lock (flock or LockFileEx, released by the kernel
// when the process ends, however it ends), so that a second `serve` on
// the same home stops before it touches the database: two servers would
// both resume the same runs and fire the same jobs. The returned function
// releases it.
func lockHome(home string) (unlock func(), err error) {
	path := filepath.Join(home, homeLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the data directory: %w", err)
	}
	if busy, err := tryLock(f); busy || err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("lock the data directory: %w", err)
		}
		who := "another lambdaclaw serve"
		if pid := strings.TrimSpace(string(b)); pid != "" {
			who += " (pid " + pid + ")"
		}
		return nil, fmt.Errorf("%s is using the data directory %s: stop it first, or give this one another home (LAMBDACLAW_HOME)", who, home)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
