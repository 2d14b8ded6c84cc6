package memory_test

import (
	"context"
	"sync"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// fakeIndex is the reference index of memorytest with failures to inject
// and its searches counted.
type fakeIndex struct {
	*memorytest.MapIndex

	mu sync.Mutex
	// Errors to return instead of searching.
	keywordErr, vectorErr error
	// Calls counts Keyword and Vector calls, and k the last k asked.
	keywordCalls, vectorCalls, lastK int
}

func newFakeIndex() *fakeIndex { return &fakeIndex{MapIndex: memorytest.NewMapIndex()} }

// called counts a search and returns the error to fail it with.
func (x *fakeIndex) called(calls *int, k int, err error) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	*calls++
	x.lastK = k
	return err
}

func (x *fakeIndex) Keyword(ctx context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	if err := x.called(&x.keywordCalls, k, x.keywordErr); err != nil {
		return nil, err
	}
	return x.MapIndex.Keyword(ctx, agent, owner, query, f, k)
}

func (x *fakeIndex) Vector(ctx context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	if err := x.called(&x.vectorCalls, k, x.vectorErr); err != nil {
		return nil, err
	}
	return x.MapIndex.Vector(ctx, agent, owner, v, f, k)
}

// TestConformanceFake runs the conformance suite against the reference
// index, which checks the suite asks only what a plain engine does.
func TestConformanceFake(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Index { return memorytest.NewMapIndex() })
}
