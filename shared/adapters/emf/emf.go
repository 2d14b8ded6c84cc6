// Package emf records lambdaclaw's metrics (obs.MetricDefs) as CloudWatch
// embedded metric format: one JSON log line per observation, which
// CloudWatch Logs turns into metrics of the namespace, on AWS. The names
// are the ones the local server serves at GET /metrics.
package emf

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// Namespace is the CloudWatch namespace of the metrics.
const Namespace = "lambdaclaw"

// Sink is an obs.Sink writing EMF lines to W.
type Sink struct {
	mu sync.Mutex
	w  io.Writer
	// now returns the time of an observation; nil means time.Now.
	now   func() time.Time
	units map[string]string
}

var _ obs.Sink = (*Sink)(nil)

// New returns a Sink writing to w: on Lambda, standard error, where the
// logs go too (CloudWatch Logs reads EMF in any log line).
func New(w io.Writer) *Sink {
	s := &Sink{w: w, units: map[string]string{}}
	for _, d := range obs.MetricDefs {
		s.units[d.Name] = "Count"
		if d.Distribution {
			s.units[d.Name] = "Seconds"
		}
	}
	return s
}

type metric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string     `json:"Namespace"`
	Dimensions [][]string `json:"Dimensions"`
	Metrics    []metric   `json:"Metrics"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Add implements obs.Sink.
func (s *Sink) Add(name string, v float64, labels ...obs.Label) { s.write(name, v, labels) }

// Observe implements obs.Sink.
func (s *Sink) Observe(name string, v float64, labels ...obs.Label) { s.write(name, v, labels) }

func (s *Sink) write(name string, v float64, labels []obs.Label) {
	unit, ok := s.units[name]
	if !ok {
		return
	}
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	dims := make([]string, 0, len(labels))
	line := make(map[string]any, len(labels)+2)
	for _, l := range labels {
		dims = append(dims, l.Name)
		line[l.Name] = l.Value
	}
	line[name] = v
	line["_aws"] = metadata{Timestamp: now().UnixMilli(), CloudWatchMetrics: []directive{{
		Namespace: Namespace, Dimensions: [][]string{dims}, Metrics: []metric{{Name: name, Unit: unit}}}}}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(append(b, '\n'))
}
