// Package prometheus records lambdaclaw's metrics (obs.MetricDefs) with
// the Prometheus client and serves them in its text format, for the local
// server's GET /metrics.
package prometheus

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// Sink is an obs.Sink over a registry of its own, which also holds the Go
// runtime's and the process's metrics.
type Sink struct {
	reg      *prometheus.Registry
	counters map[string]*prometheus.CounterVec
	hists    map[string]*prometheus.HistogramVec
}

var _ obs.Sink = (*Sink)(nil)

// New registers the metrics of obs.MetricDefs.
func New() *Sink {
	s := &Sink{reg: prometheus.NewRegistry(), counters: map[string]*prometheus.CounterVec{}, hists: map[string]*prometheus.HistogramVec{}}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, d := range obs.MetricDefs {
		if d.Distribution {
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help,
				Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}}, d.Labels)
			s.reg.MustRegister(h)
			s.hists[d.Name] = h
			continue
		}
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
		s.reg.MustRegister(c)
		s.counters[d.Name] = c
	}
	return s
}

func values(labels []obs.Label) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		out[i] = l.Value
	}
	return out
}

// Add implements obs.Sink; a metric it does not define is ignored.
func (s *Sink) Add(name string, v float64, labels ...obs.Label) {
	if c, ok := s.counters[name]; ok {
		if m, err := c.GetMetricWithLabelValues(values(labels)...); err == nil {
			m.Add(v)
		}
	}
}

// Observe implements obs.Sink; a metric it does not define is ignored.
func (s *Sink) Observe(name string, v float64, labels ...obs.Label) {
	if h, ok := s.hists[name]; ok {
		if m, err := h.GetMetricWithLabelValues(values(labels)...); err == nil {
			m.Observe(v)
		}
	}
}

// Handler serves the metrics in Prometheus's text format.
func (s *Sink) Handler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
}
