package memory

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name   string
		scores []float64
		want   []float64
	}{
		{"empty", nil, nil},
		{"one result is the best", []float64{0.2}, []float64{1}},
		{"equal scores all become 1", []float64{3, 3, 3}, []float64{1, 1, 1}},
		{"min-max", []float64{1, 2, 3}, []float64{0, 0.5, 1}},
		{"negative BM25 or cosine", []float64{-1, 0, 1}, []float64{0, 0.5, 1}},
		{"order kept", []float64{10, 2, 6}, []float64{1, 0, 0.5}},
		{"NaN is worst", []float64{1, math.NaN(), 3}, []float64{0, 0, 1}},
		{"tiny spread is a tie", []float64{1, 1 + 1e-15}, []float64{1, 1}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, normalize(tc.scores), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestDecay(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		age, halfLife time.Duration
		want          float64
	}{
		{0, 30 * day, 1},
		{30 * day, 30 * day, 0.5},
		{60 * day, 30 * day, 0.25},
		{15 * day, 30 * day, math.Sqrt(0.5)},
		{-day, 30 * day, 1},
		{365 * day, 0, 1},
		{365 * day, -1, 1},
	}
	for _, tc := range tests {
		if got := decay(tc.age, tc.halfLife); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("decay(%v, %v) = %v, want %v", tc.age, tc.halfLife, got, tc.want)
		}
	}
}

// m builds a match of entry key, chunk seq and score.
func m(key string, seq int, score float64, vec ...float32) Match {
	return Match{
		Entry: Entry{Agent: "a", Key: key, Text: "text of " + key},
		Chunk: Chunk{Seq: seq, Text: key + " chunk", Vector: vec},
		Score: score,
	}
}

func TestFuse(t *testing.T) {
	hit := func(key string, score, kw, vec float64) Hit {
		return Hit{Entry: Entry{Agent: "a", Key: key, Text: "text of " + key}, Snippet: key + " chunk", Score: score, KeywordScore: kw, VectorScore: vec}
	}
	tests := []struct {
		name    string
		kw, vec []Match
		wk, wv  float64
		want    []Hit
	}{
		{
			name: "both lists, normalised and weighted",
			kw:   []Match{m("x", 0, 10), m("y", 0, 5), m("z", 0, 0)},
			vec:  []Match{m("y", 0, 0.9), m("x", 0, 0.5)},
			wk:   0.3, wv: 0.7,
			want: []Hit{hit("x", 0.3, 1, 0), hit("y", 0.15+0.7, 0.5, 1), hit("z", 0, 0, 0)},
		},
		{
			name: "keyword only",
			kw:   []Match{m("x", 0, 2)},
			wk:   1,
			want: []Hit{hit("x", 1, 1, 0)},
		},
		{
			name: "vector only",
			vec:  []Match{m("x", 0, 0.8), m("y", 0, 0.4)},
			wv:   1,
			want: []Hit{hit("x", 1, 0, 1), hit("y", 0, 0, 0)},
		},
		{
			name: "one hit per entry: its best chunk",
			kw:   []Match{m("x", 0, 4), m("x", 1, 3), m("y", 0, 2)},
			vec:  []Match{m("x", 1, 0.9), m("x", 0, 0.1)},
			wk:   0.5, wv: 0.5,
			want: []Hit{
				{Entry: Entry{Agent: "a", Key: "x", Text: "text of x"}, Snippet: "x chunk", Score: 0.5*0.5 + 0.5, KeywordScore: 0.5, VectorScore: 1},
				hit("y", 0, 0, 0),
			},
		},
		{
			name: "ties go to the first chunk",
			kw:   []Match{m("x", 2, 1), m("x", 1, 1)},
			wk:   1,
			want: []Hit{hit("x", 1, 1, 0)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Hit
			for _, c := range fuse(tc.kw, tc.vec, tc.wk, tc.wv) {
				got = append(got, c.Hit)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("fuse (-want +got):\n%s", diff)
			}
		})
	}
	// The chosen chunk keeps its vector, for MMR.
	c := fuse([]Match{m("x", 0, 1)}, []Match{m("x", 0, 1, 1, 0)}, 0.5, 0.5)
	if len(c) != 1 || c[0].seq != 0 || !cmp.Equal(c[0].vector, []float32{1, 0}) {
		t.Errorf("candidate = %+v, want the vector of chunk 0", c)
	}
}

func TestSortCandidates(t *testing.T) {
	at := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	c := []candidate{
		{Hit: Hit{Entry: Entry{Key: "old", UpdatedAt: at(1)}, Score: 0.5}},
		{Hit: Hit{Entry: Entry{Key: "b", UpdatedAt: at(2)}, Score: 0.5}},
		{Hit: Hit{Entry: Entry{Key: "a", UpdatedAt: at(2)}, Score: 0.5}},
		{Hit: Hit{Entry: Entry{Key: "best", UpdatedAt: at(1)}, Score: 0.9}},
	}
	sortCandidates(c)
	var got []string
	for _, x := range c {
		got = append(got, x.Entry.Key)
	}
	if diff := cmp.Diff([]string{"best", "a", "b", "old"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestDiversify(t *testing.T) {
	cand := func(key string, score float64, snippet string, vec ...float32) candidate {
		return candidate{Hit: Hit{Entry: Entry{Key: key}, Snippet: snippet, Score: score}, vector: vec}
	}
	tests := []struct {
		name   string
		c      []candidate
		lambda float64
		limit  int
		want   []string
	}{
		{
			name:   "a near duplicate yields to a different memory (vectors)",
			c:      []candidate{cand("a", 1, "", 1, 0), cand("a2", 0.95, "", 0.99, 0.1), cand("b", 0.6, "", 0, 1)},
			lambda: 0.5, limit: 3,
			want: []string{"a", "b", "a2"},
		},
		{
			name:   "relevance wins with lambda near 1",
			c:      []candidate{cand("a", 1, "", 1, 0), cand("a2", 0.95, "", 0.99, 0.1), cand("b", 0.6, "", 0, 1)},
			lambda: 0.99, limit: 3,
			want: []string{"a", "a2", "b"},
		},
		{
			name:   "words when there are no vectors",
			c:      []candidate{cand("a", 1, "the red car is fast"), cand("a2", 0.9, "the red car is quick"), cand("b", 0.7, "lunch with anna")},
			lambda: 0.5, limit: 2,
			want: []string{"a", "b"},
		},
		{
			name:   "limit larger than the candidates",
			c:      []candidate{cand("a", 1, "x"), cand("b", 0.5, "y")},
			lambda: 0.7, limit: 10,
			want: []string{"a", "b"},
		},
		{name: "none", lambda: 0.7, limit: 10},
	}
	for _, tc := range tests {
		var got []string
		for _, x := range diversify(tc.c, tc.lambda, tc.limit) {
			got = append(got, x.Entry.Key)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestJaccard(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{"red car", "red car", 1},
		{"Red, car!", "red car", 1},
		{"red car", "blue bike", 0},
		{"red car fast", "red car slow", 0.5},
		{"", "", 0},
		{"東京 タワー", "東京 駅", 1.0 / 3},
	}
	for _, tc := range tests {
		if got := jaccard(wordSet(tc.a), wordSet(tc.b)); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("jaccard(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
