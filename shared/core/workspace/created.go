package workspace

import (
	"fmt"
	"os"
	"time"
)

// Created returns when the workspace of agent name under home was
// created: its directory's birth time where the file system records one
// (Linux, macOS), else the directory's last modification.
func Created(home, name string) (time.Time, error) {
	dir := Dir(home, name)
	fi, err := os.Stat(dir)
	if err != nil {
		return time.Time{}, fmt.Errorf("workspace: %w", err)
	}
	if t, ok := birthTime(dir, fi); ok {
		return t, nil
	}
	return fi.ModTime(), nil
}
