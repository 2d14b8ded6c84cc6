//go:build linux

package bwrap

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init is the helper program's InitCommand. Started by bwrap with "--box"
// first, it is the sandbox's pid 1 (box), which runs itself again without
// it as the command's first process: that sets the limits its flags name
// on itself, then execs the command after "--", which inherits them. It
// returns only on failure.
func Init(args []string, stderr io.Writer) error {
	if len(args) > 0 && args[0] == boxFlag {
		return box(args[1:], stderr)
	}
	fs := flag.NewFlagSet(InitCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	memory := fs.Int64("memory", 0, "data (heap and private writable mappings) of each process, bytes")
	pids := fs.Int("pids", 0, "processes")
	fileSize := fs.Int64("file-size", 0, "largest file written, bytes")
	cpuSeconds := fs.Int("cpu-seconds", 0, "CPU time of each process, seconds")
	cpus := fs.Int("cpus", 0, "CPUs to run on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmd := fs.Args()
	if len(cmd) == 0 {
		return errors.New("sandbox-init: no command after --")
	}
	limits := []struct {
		res int
		v   uint64
	}{
		{unix.RLIMIT_DATA, uint64(*memory)},
		{unix.RLIMIT_NPROC, uint64(*pids)},
		{unix.RLIMIT_FSIZE, uint64(*fileSize)},
		{unix.RLIMIT_CPU, uint64(*cpuSeconds)},
		{unix.RLIMIT_CORE, 0},
		{unix.RLIMIT_NOFILE, 1024},
	}
	for _, l := range limits {
		if l.v == 0 && l.res != unix.RLIMIT_CORE {
			return fmt.Errorf("sandbox-init: a limit is missing (resource %d)", l.res)
		}
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("sandbox-init: setrlimit %d: %w", l.res, err)
		}
	}
	if *cpus > 0 {
		if err := pinCPUs(*cpus); err != nil {
			return err
		}
	}
	// The command is run by path: PATH is the sandbox's.
	err := syscall.Exec(cmd[0], cmd, os.Environ())
	return fmt.Errorf("sandbox-init: exec %s: %w", cmd[0], err)
}

// boxFlag makes Init the sandbox's pid 1.
const boxFlag = "--box"

// pinCPUs keeps the process on the first n CPUs it may use.
func pinCPUs(n int) error {
	want, err := firstCPUs(n)
	if err == nil {
		err = unix.SchedSetaffinity(0, &want)
	}
	if err != nil {
		return fmt.Errorf("sandbox-init: CPU affinity: %w", err)
	}
	return nil
}
