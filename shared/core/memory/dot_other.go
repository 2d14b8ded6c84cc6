//go:build !amd64 || purego

package memory

// dotAccel has no assembly to offer on this platform: Dot runs in Go.
func dotAccel(a, b []float32) (float32, int) { return 0, 0 }
