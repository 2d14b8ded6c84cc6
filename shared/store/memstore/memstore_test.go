package memstore

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/store"
	"github.com/lambdaclaw/lambdaclaw/shared/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return New() })
}
