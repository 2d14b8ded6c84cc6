//go:build !unix

package osroot

import "io/fs"

// inode is 0 where the system gives no inode numbers: a Version is then
// the size and modification time.
func inode(fs.FileInfo) uint64 { return 0 }
