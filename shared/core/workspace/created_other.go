//go:build !linux && !darwin

package workspace

import (
	"io/fs"
	"time"
)

// birthTime knows no birth time on this system.
func birthTime(string, fs.FileInfo) (time.Time, bool) { return time.Time{}, false }
