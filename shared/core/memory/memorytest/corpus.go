package memorytest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Corpus makes the memories and queries of the engines' search
// benchmarks, so that they measure alike: short texts of function words,
// which most memories contain, and content words drawn with a Zipf
// distribution, as in natural text. The same seeds make the same texts.
type Corpus struct {
	// Rand is the corpus's source, for benchmarks that draw more (ages,
	// categories) in a repeatable order.
	Rand *rand.Rand
	zipf *rand.Zipf
}

// NewCorpus returns a corpus seeded with seed1 and seed2.
func NewCorpus(seed1, seed2 uint64) *Corpus {
	rng := rand.New(rand.NewPCG(seed1, seed2))
	return &Corpus{Rand: rng, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(contentWords)-1))}
}

// Text is a short memory: 8 to 24 words, four in ten of them function
// words.
func (c *Corpus) Text() string {
	n := 8 + c.Rand.IntN(17)
	ws := make([]string, n)
	for i := range ws {
		if c.Rand.IntN(10) < 4 {
			ws[i] = functionWords[c.Rand.IntN(len(functionWords))]
		} else {
			ws[i] = contentWords[c.zipf.Uint64()]
		}
	}
	return strings.Join(ws, " ") + "."
}

// Query is two to four content words, and one query in two also has a
// function word ("what about the deadline").
func (c *Corpus) Query() string {
	var ws []string
	if c.Rand.IntN(2) == 0 {
		ws = append(ws, functionWords[c.Rand.IntN(len(functionWords))])
	}
	for range 2 + c.Rand.IntN(3) {
		ws = append(ws, contentWords[c.zipf.Uint64()])
	}
	return strings.Join(ws, " ")
}

// BenchEmbedder embeds a text as a pseudo-random vector of Dims
// dimensions seeded by the text's hash (BenchVector): deterministic, free,
// and as hard for a vector scan as real vectors.
type BenchEmbedder struct{ Dims int }

// Model names the fake model.
func (e BenchEmbedder) Model() string { return fmt.Sprintf("bench-random-%d", e.Dims) }

// Embed returns one vector per text.
func (e BenchEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = BenchVector(t, e.Dims)
	}
	return out, nil
}

// BenchVector is the vector BenchEmbedder gives text, unnormalised.
func BenchVector(text string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// Words of the corpus.
var (
	functionWords = strings.Fields(`the a an and or but of to in on at for with about from by as is was
		are were be been has have had do did will would can could should this that these those it its
		he she they we you i my our your their his her not no yes what when where who how`)
	contentWords = strings.Fields(`user prefers coffee tea morning evening meeting project deadline
		budget report client server database deploy release bug fix feature design review team manager
		sister brother mother father friend birthday party dinner lunch breakfast restaurant recipe
		garden flowers tomatoes dog cat walk park running gym yoga swim bike train flight hotel trip
		holiday beach mountain hiking ski winter summer spring autumn rain snow sunny weather phone
		laptop keyboard monitor printer password account email calendar reminder appointment doctor
		dentist medicine allergy peanuts gluten vegetarian vegan pizza pasta sushi curry salad soup
		bread cheese wine beer water juice chocolate cake cookies music guitar piano concert movie
		book novel author library school university course exam homework teacher student language
		spanish french german japanese chinese english lesson practice invoice payment bank loan rent
		house apartment kitchen bedroom office desk chair window door car bicycle bus station airport
		ticket passport visa embassy insurance tax salary raise promotion interview resume contract
		lawyer court deadline launch marketing sales customer support ticket outage incident postmortem
		kubernetes docker terraform python golang rust javascript typescript react frontend backend
		api latency throughput cache queue lambda opensearch sqlite postgres redis backup restore
		migration schema index query search memory agent model prompt token embedding vector
		quarterly roadmap okr sprint standup retro demo prototype mockup wireframe figma slides
		spreadsheet numbers forecast revenue growth churn pricing plan subscription trial refund
		shipping delivery package warehouse inventory supplier order invoice receipt discount coupon
		wedding anniversary graduation vacation camping fishing sailing boat lake river island city
		village country capital museum gallery theatre opera festival market bakery cafe bar club
		football basketball tennis golf chess poker marathon triathlon climbing surfing skating
		monday tuesday wednesday thursday friday saturday sunday january february march april may june
		july august september october november december tomorrow yesterday weekend tonight noon`)
)

// ReportLatencies reports the median and the 99th percentile of lat, in
// milliseconds, as the benchmark's metrics p50_ms and p99_ms. It sorts
// lat.
func ReportLatencies(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}

// HeapMB is the heap in use after a collection, in MB.
func HeapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / 1e6
}
