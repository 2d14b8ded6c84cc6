// Package prometheus records lambdaclaw's metrics (obs.MetricDefs) in
// memory and serves them in Prometheus's text exposition format (0.0.4),
// with the Go runtime's and the process's basic metrics, for the local
// server's GET /metrics. It writes the format itself: the official client
// cost some 3 ms of every start and megabytes of binary for two metric
// kinds; its parser (expfmt, in the tests) judges the output.
package prometheus

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// MaxSeries bounds the label sets kept over all metrics: a label value
// that would make another (say, a tool name the model made up) is dropped.
const MaxSeries = 10_000

// buckets are the histograms' upper bounds, in seconds.
var buckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// Sink is an obs.Sink of the metrics of obs.MetricDefs.
type Sink struct {
	started time.Time
	mu      sync.Mutex
	metrics map[string]*metric
	series  int
}

// metric is one metric of obs.MetricDefs and its series, by label values.
type metric struct {
	def    obs.MetricDef
	series map[string]*series
}

// series is a counter's value, or a histogram's counts (per bucket, not
// cumulative), sum and count.
type series struct {
	values []string // in the order of def.Labels
	value  float64
	counts []uint64
	sum    float64
	count  uint64
}

var _ obs.Sink = (*Sink)(nil)

// New returns a sink of the metrics of obs.MetricDefs.
func New() *Sink {
	s := &Sink{started: time.Now(), metrics: map[string]*metric{}}
	for _, d := range obs.MetricDefs {
		// Label names sorted, as Prometheus's clients write them.
		d.Labels = slices.Sorted(slices.Values(d.Labels))
		s.metrics[d.Name] = &metric{def: d, series: map[string]*series{}}
	}
	return s
}

// find returns the series of name with labels, made if need be; nil when
// name is not a metric of the sink, the labels are not exactly its labels,
// or MaxSeries are kept already.
func (s *Sink) find(name string, labels []obs.Label) *series {
	m, ok := s.metrics[name]
	if !ok || len(labels) != len(m.def.Labels) {
		return nil
	}
	values := make([]string, len(labels))
	for i, n := range m.def.Labels {
		j := slices.IndexFunc(labels, func(l obs.Label) bool { return l.Name == n })
		if j < 0 {
			return nil
		}
		values[i] = labels[j].Value
	}
	key := strings.Join(values, "\xff")
	if se, ok := m.series[key]; ok {
		return se
	}
	if s.series >= MaxSeries {
		return nil
	}
	se := &series{values: values}
	if m.def.Distribution {
		se.counts = make([]uint64, len(buckets))
	}
	m.series[key] = se
	s.series++
	return se
}

// Add implements obs.Sink; a metric it does not define is ignored.
func (s *Sink) Add(name string, v float64, labels ...obs.Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.find(name, labels); se != nil && se.counts == nil && v >= 0 {
		se.value += v
	}
}

// Observe implements obs.Sink; a metric it does not define is ignored.
func (s *Sink) Observe(name string, v float64, labels ...obs.Label) {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.find(name, labels)
	if se == nil || se.counts == nil || math.IsNaN(v) {
		return
	}
	if i, _ := slices.BinarySearch(buckets, v); i < len(buckets) {
		se.counts[i]++
	}
	se.sum += v
	se.count++
}

// Handler serves the metrics in the text format.
func (s *Sink) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		s.write(&b)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(b.Bytes())
	})
}

// write writes every metric, sorted by name, its series by label values.
func (s *Sink) write(b *bytes.Buffer) {
	s.mu.Lock()
	names := make([]string, 0, len(s.metrics))
	for n := range s.metrics {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		m := s.metrics[n]
		kind := "counter"
		if m.def.Distribution {
			kind = "histogram"
		}
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", n, escapeHelp(m.def.Help), n, kind)
		keys := make([]string, 0, len(m.series))
		for k := range m.series {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			se := m.series[k]
			if !m.def.Distribution {
				fmt.Fprintf(b, "%s%s %s\n", n, labelSet(m.def.Labels, se.values, "", ""), number(se.value))
				continue
			}
			var cum uint64
			for i, le := range buckets {
				cum += se.counts[i]
				fmt.Fprintf(b, "%s_bucket%s %d\n", n, labelSet(m.def.Labels, se.values, "le", number(le)), cum)
			}
			fmt.Fprintf(b, "%s_bucket%s %d\n", n, labelSet(m.def.Labels, se.values, "le", "+Inf"), se.count)
			fmt.Fprintf(b, "%s_sum%s %s\n", n, labelSet(m.def.Labels, se.values, "", ""), number(se.sum))
			fmt.Fprintf(b, "%s_count%s %d\n", n, labelSet(m.def.Labels, se.values, "", ""), se.count)
		}
	}
	s.mu.Unlock()
	s.writeProcess(b)
}

// writeProcess writes the Go runtime's and the process's basic metrics,
// under the names the official client gives them.
func (s *Sink) writeProcess(b *bytes.Buffer) {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	metrics.Read(samples)
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, number(v))
	}
	gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and still in use.", float64(uint64Value(samples[1])))
	gauge("go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(uint64Value(samples[2])))
	fmt.Fprintf(b, "# HELP go_gc_cycles_total Number of completed GC cycles.\n# TYPE go_gc_cycles_total counter\ngo_gc_cycles_total %d\n", uint64Value(samples[0]))
	gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", float64(s.started.UnixNano())/1e9)
	if rss, cpu, ok := procSelf(); ok {
		gauge("process_resident_memory_bytes", "Resident memory size in bytes.", rss)
		fmt.Fprintf(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %s\n", number(cpu))
	}
}

func uint64Value(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// procSelf reads the process's resident memory (bytes) and CPU time
// (seconds) from Linux's /proc; ok is false elsewhere.
func procSelf() (rss, cpu float64, ok bool) {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, 0, false
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(statm))
	// The fields after the command name, which is in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	g := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 || len(g) < 13 {
		return 0, 0, false
	}
	pages, err1 := strconv.ParseFloat(f[1], 64)
	utime, err2 := strconv.ParseFloat(g[11], 64)
	stime, err3 := strconv.ParseFloat(g[12], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, false
	}
	// USER_HZ is 100 on Linux.
	return pages * float64(os.Getpagesize()), (utime + stime) / 100, true
}

// labelSet writes {name="value",…} of names and values, with extra (le)
// last when set; nothing for no labels.
func labelSet(names, values []string, extra, extraValue string) string {
	if len(names) == 0 && extra == "" {
		return ""
	}
	var w strings.Builder
	w.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(&w, "%s=\"%s\"", n, escapeValue(values[i]))
	}
	if extra != "" {
		if len(names) > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(&w, "%s=\"%s\"", extra, extraValue)
	}
	w.WriteByte('}')
	return w.String()
}

// escapeValue escapes a label value: backslash, double quote, line feed.
var escapeValue = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace

// escapeHelp escapes a help text: backslash, line feed.
var escapeHelp = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace

// number writes v as the format takes it.
func number(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
