package workspace

import (
	"io/fs"
	"syscall"
	"time"
)

// birthTime reads fi's birth time, which macOS records.
func birthTime(_ string, fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Birthtimespec.Unix()), true
}
