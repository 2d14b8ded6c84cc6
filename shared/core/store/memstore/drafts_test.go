package memstore_test

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestDrafts(t *testing.T) {
	storetest.RunDrafts(t, func(*testing.T) store.Drafts { return memstore.New() })
}
