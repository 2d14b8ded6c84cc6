package prometheus

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs/obstest"
)

func TestSink(t *testing.T) {
	obstest.RunSink(t, func(t *testing.T) (obs.Sink, func() obstest.Totals) {
		s := New()
		return s, func() obstest.Totals {
			families, err := s.reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			out := obstest.Totals{}
			for _, f := range families {
				if !strings.HasPrefix(f.GetName(), "lambdaclaw_") {
					continue
				}
				for _, m := range f.GetMetric() {
					var labels []string
					for _, l := range m.GetLabel() {
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
					key := func(name string) string { return fmt.Sprintf("%s{%s}", name, strings.Join(labels, ",")) }
					if h := m.GetHistogram(); h != nil {
						out[key(f.GetName()+"_count")] = float64(h.GetSampleCount())
						out[key(f.GetName()+"_sum")] = h.GetSampleSum()
						continue
					}
					out[key(f.GetName())] = m.GetCounter().GetValue()
				}
			}
			return out
		}
	})
}

// The handler serves the text format, with the runtime's metrics too.
func TestHandler(t *testing.T) {
	s := New()
	s.Add(obs.MetricTurns, 1, obs.Label{Name: "outcome", Value: "ok"})
	s.Observe(obs.MetricTurnSeconds, 0.2)
	s.Add("unknown_metric", 1)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	for _, want := range []string{`lambdaclaw_turns_total{outcome="ok"} 1`, "# TYPE lambdaclaw_turn_seconds histogram", `lambdaclaw_turn_seconds_bucket{le="0.25"} 1`, "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics do not contain %q:\n%.2000s", want, body)
		}
	}
}
