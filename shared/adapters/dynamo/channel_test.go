package dynamo

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestChannelStore(t *testing.T) {
	storetest.RunChannel(t, func(t *testing.T) func(string) store.Channel { return newStore(t).Channel })
}

func TestCommitOutbox(t *testing.T) {
	endpoint(t)
	storetest.RunCommitOutbox(t, func(t *testing.T) (store.Store, func(string) store.Channel) {
		s := newStore(t)
		return s, s.Channel
	})
}
