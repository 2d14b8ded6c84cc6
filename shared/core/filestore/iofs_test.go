package filestore_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

func TestIOFS(t *testing.T) {
	ctx := context.Background()
	f := osroot.New(t.TempDir())
	for _, n := range []string{"skills/a/SKILL.md", "skills/b/SKILL.md", "top.md"} {
		if _, err := f.WriteFile(ctx, n, []byte("content of "+n), filestore.Any); err != nil {
			t.Fatal(err)
		}
	}
	if err := fstest.TestFS(filestore.IOFS(ctx, f, 1<<10), "skills/a/SKILL.md", "skills/b/SKILL.md", "top.md"); err != nil {
		t.Fatal(err)
	}
}
