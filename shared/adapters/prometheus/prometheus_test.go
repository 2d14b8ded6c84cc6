package prometheus

import (
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs/obstest"
)

// scrape reads what the handler serves with Prometheus's own parser of
// the text format, which refuses what Prometheus would.
func scrape(t *testing.T, s *Sink) map[string]*dto.MetricFamily {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(w.Body.String()))
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the metrics: %v\n%s", err, w.Body)
	}
	return families
}

func TestSink(t *testing.T) {
	obstest.RunSink(t, func(t *testing.T) (obs.Sink, func() obstest.Totals) {
		s := New()
		return s, func() obstest.Totals {
			out := obstest.Totals{}
			for name, f := range scrape(t, s) {
				if !strings.HasPrefix(name, "lambdaclaw_") {
					continue
				}
				for _, m := range f.GetMetric() {
					var labels []string
					for _, l := range m.GetLabel() {
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
					key := func(name string) string { return fmt.Sprintf("%s{%s}", name, strings.Join(labels, ",")) }
					if h := m.GetHistogram(); h != nil {
						out[key(name+"_count")] = float64(h.GetSampleCount())
						out[key(name+"_sum")] = h.GetSampleSum()
						continue
					}
					out[key(name)] = m.GetCounter().GetValue()
				}
			}
			return out
		}
	})
}

// The handler serves histograms with cumulative buckets, label values
// escaped, and the runtime's and the process's metrics; what is not a
// metric of the sink, or has other labels, is ignored.
func TestHandler(t *testing.T) {
	s := New()
	s.Add(obs.MetricTurns, 1, obs.Label{Name: "outcome", Value: "ok"})
	s.Add(obs.MetricToolCalls, 1, obs.Label{Name: "outcome", Value: "ok"}, obs.Label{Name: "tool", Value: "say \"hi\"\\\nnow"})
	s.Observe(obs.MetricTurnSeconds, 0.2)
	s.Observe(obs.MetricTurnSeconds, 0.25)
	s.Observe(obs.MetricTurnSeconds, 500)
	s.Add("unknown_metric", 1)
	s.Add(obs.MetricTurns, 1)                                                                            // a label missing
	s.Add(obs.MetricTurns, 1, obs.Label{Name: "outcome", Value: "ok"}, obs.Label{Name: "x", Value: "y"}) // one too many
	s.Add(obs.MetricTurns, -1, obs.Label{Name: "outcome", Value: "ok"})                                  // counters do not go down
	f := scrape(t, s)

	if got := f[obs.MetricTurns].GetMetric(); len(got) != 1 || got[0].GetCounter().GetValue() != 1 {
		t.Errorf("%s = %v, want one series at 1", obs.MetricTurns, got)
	}
	if got := f[obs.MetricToolCalls].GetMetric(); len(got) != 1 || got[0].GetLabel()[1].GetValue() != "say \"hi\"\\\nnow" {
		t.Errorf("%s = %v, want the tool's name as it was", obs.MetricToolCalls, got)
	}
	h := f[obs.MetricTurnSeconds].GetMetric()[0].GetHistogram()
	cumulative := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		cumulative[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	want := map[float64]uint64{.005: 0, .01: 0, .025: 0, .05: 0, .1: 0, .25: 2, .5: 2, 1: 2, 2.5: 2, 5: 2, 10: 2, 30: 2, 60: 2, 120: 2, math.Inf(1): 3}
	if diff := cmp.Diff(want, cumulative); diff != "" || h.GetSampleCount() != 3 || h.GetSampleSum() != 500.45 {
		t.Errorf("histogram: count %d, sum %v, buckets (-want +got):\n%s", h.GetSampleCount(), h.GetSampleSum(), diff)
	}
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_cycles_total", "process_start_time_seconds", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if _, ok := f[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	if _, ok := f["unknown_metric"]; ok {
		t.Error("a metric the sink does not define is served")
	}
}

// The series kept are bounded: a label value past MaxSeries is dropped.
func TestMaxSeries(t *testing.T) {
	s := New()
	for i := range MaxSeries + 10 {
		s.Add(obs.MetricToolCalls, 1, obs.Label{Name: "tool", Value: fmt.Sprint("t", i)}, obs.Label{Name: "outcome", Value: "ok"})
	}
	s.Add(obs.MetricTurns, 1, obs.Label{Name: "outcome", Value: "ok"})
	f := scrape(t, s)
	if n := len(f[obs.MetricToolCalls].GetMetric()); n != MaxSeries {
		t.Errorf("%d tool series, want %d", n, MaxSeries)
	}
	if _, ok := f[obs.MetricTurns]; ok && len(f[obs.MetricTurns].GetMetric()) != 0 {
		t.Errorf("a new series past the bound was kept")
	}
}
