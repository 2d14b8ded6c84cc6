//go:build unix

package osroot

import (
	"io/fs"
	"syscall"
)

// inode is fi's inode number, 0 where the system gives none.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
