package schedule

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A cursor of Engine.Page is the place of the last job of a page in
// List's order: its creation time (in milliseconds, as engines keep it)
// and id, opaque to callers.

// CursorAfter returns the cursor of the page that follows j.
func CursorAfter(j Job) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(j.CreatedAt.UnixMilli(), 10) + "/" + j.ID))
}

// ParseCursor returns the place a cursor names: the jobs after the one
// created at created with id. The empty cursor is before every job (a
// zero created). Anything CursorAfter did not make is ErrCursor.
func ParseCursor(cursor string) (created time.Time, id string, err error) {
	if cursor == "" {
		return time.Time{}, "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	ms, id, ok := strings.Cut(string(b), "/")
	n, perr := strconv.ParseInt(ms, 10, 64)
	if err != nil || !ok || perr != nil || id == "" {
		return time.Time{}, "", fmt.Errorf("%w: the cursor %q is not one a page of jobs gave", ErrCursor, cursor)
	}
	return time.UnixMilli(n).UTC(), id, nil
}

// CheckLimit refuses a page size under 1.
func CheckLimit(limit int) error {
	if limit < 1 {
		return fmt.Errorf("%w: a page holds at least 1 job, not %d", ErrCursor, limit)
	}
	return nil
}

// after reports whether j comes after the place (created, id) in List's
// order.
func after(j Job, created time.Time, id string) bool {
	if c := j.CreatedAt.UnixMilli() - created.UnixMilli(); c != 0 {
		return c > 0
	}
	return j.ID > id
}

// PageOf is Engine.Page over jobs, the whole of an owner's jobs in List's
// order, for an engine that reads them all.
func PageOf(jobs []Job, cursor string, limit int) ([]Job, string, error) {
	if err := CheckLimit(limit); err != nil {
		return nil, "", err
	}
	created, id, err := ParseCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	start := len(jobs)
	for i, j := range jobs {
		if cursor == "" || after(j, created, id) {
			start = i
			break
		}
	}
	rest := jobs[start:]
	if len(rest) <= limit {
		return rest, "", nil
	}
	return rest[:limit], CursorAfter(rest[limit-1]), nil
}
