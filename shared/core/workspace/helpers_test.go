package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// The tests name workspaces by their directories; these helpers open them
// with the local adapter.

func home(dir string) filestore.FS {
	if dir == "" {
		return nil
	}
	return osroot.New(dir)
}

func create(dir, name string) (string, bool, error) {
	created, err := Create(context.Background(), home(dir), name)
	return Dir(dir, name), created, err
}

func list(dir string) ([]string, error) { return List(context.Background(), osroot.New(dir)) }

func del(dir, name string) error { return Delete(context.Background(), home(dir), name) }

// systemPrompt is SystemPrompt of dir, whose every file must be readable.
func systemPrompt(dir string, now time.Time) ([]chat.Message, error) {
	msgs, skipped, err := SystemPrompt(context.Background(), osroot.New(dir), now)
	if err == nil && len(skipped) > 0 {
		err = fmt.Errorf("files skipped: %v", skipped)
	}
	return msgs, err
}

func dailyLogs(dir string) ([]DailyLog, error) {
	return DailyLogs(context.Background(), osroot.New(dir))
}
