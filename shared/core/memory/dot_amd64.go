//go:build amd64 && !purego

package memory

import "golang.org/x/sys/cpu"

// hasAVX2FMA reports whether the processor (and operating system) support
// the instructions dotAVX2 uses.
var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 returns the dot product of the n floats at a and b; n is a
// positive multiple of 32.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// dotAccel computes the dot product of the longest prefix of a and b the
// assembly handles, and returns it with the prefix's length.
func dotAccel(a, b []float32) (float32, int) {
	n := len(a) &^ 31
	if !hasAVX2FMA || n == 0 {
		return 0, 0
	}
	return dotAVX2(&a[0], &b[0], n), n
}
