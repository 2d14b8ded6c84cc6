package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// countingEmbedder embeds a text as {len(text), first byte} and records
// the batches it was asked for.
type countingEmbedder struct {
	mu     sync.Mutex
	model  string
	calls  [][]string
	err    error
	short  bool // return one vector too few
	sleepy time.Duration
}

func (e *countingEmbedder) Model() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.model
}

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, slices.Clone(texts))
	err, short := e.err, e.short
	e.mu.Unlock()
	time.Sleep(e.sleepy)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), float32(t[0])}
	}
	if short {
		out = out[1:]
	}
	return out, nil
}

func (e *countingEmbedder) batches() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

func TestCache(t *testing.T) {
	type step struct {
		advance time.Duration // clock change before the call
		model   string        // model change before the call, if set
		texts   []string
		want    [][]string // the wrapped embedder's batches after the call
	}
	tests := []struct {
		name  string
		size  int
		ttl   time.Duration
		steps []step
	}{
		{
			name: "hits are not embedded again; a batch asks once per distinct text",
			steps: []step{
				{texts: []string{"a", "bb"}, want: [][]string{{"a", "bb"}}},
				{texts: []string{"bb", "a"}, want: [][]string{{"a", "bb"}}},
				{texts: []string{"a", "ccc", "ccc", "bb"}, want: [][]string{{"a", "bb"}, {"ccc"}}},
			},
		},
		{
			name: "the model is part of the key",
			steps: []step{
				{texts: []string{"a"}, want: [][]string{{"a"}}},
				{model: "other", texts: []string{"a"}, want: [][]string{{"a"}, {"a"}}},
				{model: "m", texts: []string{"a"}, want: [][]string{{"a"}, {"a"}}},
			},
		},
		{
			name: "entries expire",
			ttl:  time.Hour,
			steps: []step{
				{texts: []string{"a"}, want: [][]string{{"a"}}},
				{advance: 59 * time.Minute, texts: []string{"a"}, want: [][]string{{"a"}}},
				{advance: time.Minute, texts: []string{"a"}, want: [][]string{{"a"}, {"a"}}},
			},
		},
		{
			name: "the least recently used is evicted",
			size: 2,
			steps: []step{
				{texts: []string{"a", "bb"}, want: [][]string{{"a", "bb"}}},
				{texts: []string{"a"}, want: [][]string{{"a", "bb"}}},
				{texts: []string{"ccc"}, want: [][]string{{"a", "bb"}, {"ccc"}}},
				{texts: []string{"a", "ccc"}, want: [][]string{{"a", "bb"}, {"ccc"}}},
				{texts: []string{"bb"}, want: [][]string{{"a", "bb"}, {"ccc"}, {"bb"}}},
			},
		},
		{
			name: "default TTL is a day",
			steps: []step{
				{texts: []string{"a"}, want: [][]string{{"a"}}},
				{advance: 23 * time.Hour, texts: []string{"a"}, want: [][]string{{"a"}}},
				{advance: time.Hour, texts: []string{"a"}, want: [][]string{{"a"}, {"a"}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			inner := &countingEmbedder{model: "m"}
			c := newCache(inner, tc.size, tc.ttl, func() time.Time { return now })
			for i, s := range tc.steps {
				now = now.Add(s.advance)
				if s.model != "" {
					inner.mu.Lock()
					inner.model = s.model
					inner.mu.Unlock()
				}
				got, err := c.Embed(t.Context(), s.texts)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				var want [][]float32
				for _, t := range s.texts {
					want = append(want, []float32{float32(len(t)), float32(t[0])})
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("step %d: vectors (-want +got):\n%s", i, diff)
				}
				if diff := cmp.Diff(s.want, inner.batches()); diff != "" {
					t.Errorf("step %d: batches (-want +got):\n%s", i, diff)
				}
			}
			if tc.size > 0 && c.len() > tc.size {
				t.Errorf("cache holds %d vectors, size %d", c.len(), tc.size)
			}
		})
	}
}

func TestCacheReturnsCopies(t *testing.T) {
	c := Cached(&countingEmbedder{model: "m"}, 0, 0)
	v, _ := c.Embed(t.Context(), []string{"a", "a"})
	v[0][0], v[1][1] = 99, 99
	again, _ := c.Embed(t.Context(), []string{"a"})
	if diff := cmp.Diff([][]float32{{1, 'a'}}, again); diff != "" {
		t.Errorf("a caller's change reached the cache (-want +got):\n%s", diff)
	}
}

func TestCacheErrors(t *testing.T) {
	boom := errors.New("boom")
	inner := &countingEmbedder{model: "m", err: boom}
	c := Cached(inner, 0, 0)
	if _, err := c.Embed(t.Context(), []string{"a"}); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	inner.err = nil
	if _, err := c.Embed(t.Context(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if n := len(inner.batches()); n != 2 {
		t.Errorf("a failure was cached: %d calls, want 2", n)
	}
	inner.short = true
	if _, err := c.Embed(t.Context(), []string{"x", "y"}); err == nil {
		t.Error("a short answer was accepted")
	}
	if Cached(nil, 0, 0) != nil {
		t.Error("Cached(nil) is not nil")
	}
	if got := c.Model(); got != "m" {
		t.Errorf("Model() = %q", got)
	}
}

func TestCacheConcurrent(t *testing.T) {
	inner := &countingEmbedder{model: "m", sleepy: time.Millisecond}
	c := Cached(inner, 16, time.Hour)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				texts := []string{fmt.Sprint("t", i%20), fmt.Sprint("t", (i+g)%20)}
				v, err := c.Embed(t.Context(), texts)
				if err != nil || len(v) != 2 || v[0][0] != float32(len(texts[0])) {
					t.Errorf("Embed(%q) = %v, %v", texts, v, err)
				}
			}
		})
	}
	wg.Wait()
}
