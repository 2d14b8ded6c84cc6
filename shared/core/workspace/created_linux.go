package workspace

import (
	"io/fs"
	"time"

	"golang.org/x/sys/unix"
)

// birthTime asks statx for path's birth time, which not every file
// system records.
func birthTime(path string, _ fs.FileInfo) (time.Time, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return time.Time{}, false
	}
	return time.Unix(st.Btime.Sec, int64(st.Btime.Nsec)), true
}
