package osroot

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore/filestoretest"
)

func TestConformance(t *testing.T) {
	filestoretest.Run(t, func(t *testing.T) filestore.FS { return New(t.TempDir()) })
}
