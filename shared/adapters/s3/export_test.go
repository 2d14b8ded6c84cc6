package s3

import "testing"

// SetPageSize lowers the listing and deletion page size for the test.
func SetPageSize(t *testing.T, n int) {
	prev := pageSize
	pageSize = n
	t.Cleanup(func() { pageSize = prev })
}
