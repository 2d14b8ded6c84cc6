package emf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs/obstest"
)

// readBack sums the observations of EMF lines as the suite counts them,
// checking that each line is what CloudWatch accepts.
func readBack(t *testing.T, out string) obstest.Totals {
	totals := obstest.Totals{}
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		var meta metadata
		b, _ := json.Marshal(m["_aws"])
		if err := json.Unmarshal(b, &meta); err != nil || len(meta.CloudWatchMetrics) != 1 || meta.Timestamp == 0 {
			t.Fatalf("line %q: bad _aws metadata", line)
		}
		d := meta.CloudWatchMetrics[0]
		if d.Namespace != Namespace || len(d.Metrics) != 1 || len(d.Dimensions) != 1 {
			t.Fatalf("line %q: bad directive %+v", line, d)
		}
		name := d.Metrics[0].Name
		var labels []string
		for _, dim := range d.Dimensions[0] {
			v, ok := m[dim].(string)
			if !ok {
				t.Fatalf("line %q: dimension %s has no value", line, dim)
			}
			labels = append(labels, dim+"="+v)
		}
		slices.Sort(labels)
		v, ok := m[name].(float64)
		if !ok {
			t.Fatalf("line %q: no value for %s", line, name)
		}
		key := func(n string) string { return fmt.Sprintf("%s{%s}", n, strings.Join(labels, ",")) }
		if d.Metrics[0].Unit == "Seconds" {
			totals[key(name+"_count")]++
			totals[key(name+"_sum")] += v
			continue
		}
		totals[key(name)] += v
	}
	return totals
}

func TestSink(t *testing.T) {
	obstest.RunSink(t, func(t *testing.T) (obs.Sink, func() obstest.Totals) {
		var buf bytes.Buffer
		s := New(&buf)
		return s, func() obstest.Totals { return readBack(t, buf.String()) }
	})
}

func TestLine(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf)
	s.now = func() time.Time { return time.UnixMilli(1764000000123) }
	s.Add(obs.MetricToolCalls, 1, obs.Label{Name: "tool", Value: "read_file"}, obs.Label{Name: "outcome", Value: "ok"})
	s.Add("unknown_metric", 1)
	want := `{"_aws":{"Timestamp":1764000000123,"CloudWatchMetrics":[{"Namespace":"lambdaclaw","Dimensions":[["tool","outcome"]],` +
		`"Metrics":[{"Name":"lambdaclaw_tool_calls_total","Unit":"Count"}]}]},"lambdaclaw_tool_calls_total":1,"outcome":"ok","tool":"read_file"}` + "\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("line (-want +got):\n%s", diff)
	}
}
