package main

import (
	"strings"
	"testing"
)

// alarmMetric is one metric an alarm reads.
type alarmMetric struct {
	namespace, name, stat string
	period                float64
	dims                  map[string]string
}

// alarmMetrics returns the metrics of an alarm's properties: its one
// metric, or each metric of its math expression.
func alarmMetrics(p map[string]any) []alarmMetric {
	dims := func(v any) map[string]string {
		out := map[string]string{}
		for _, d := range list(v) {
			if d, ok := d.(map[string]any); ok {
				out[render(d["Name"])] = render(d["Value"])
			}
		}
		return out
	}
	if name, ok := p["MetricName"].(string); ok {
		st, _ := p["Statistic"].(string)
		period, _ := p["Period"].(float64)
		return []alarmMetric{{namespace: render(p["Namespace"]), name: name, stat: st, period: period, dims: dims(p["Dimensions"])}}
	}
	var out []alarmMetric
	for _, q := range list(p["Metrics"]) {
		q, _ := q.(map[string]any)
		ms, ok := q["MetricStat"].(map[string]any)
		if !ok {
			continue
		}
		met := ms["Metric"].(map[string]any)
		st, _ := ms["Stat"].(string)
		period, _ := ms["Period"].(float64)
		out = append(out, alarmMetric{namespace: render(met["Namespace"]), name: render(met["MetricName"]), stat: st, period: period, dims: dims(met["Dimensions"])})
	}
	return out
}

// tableID returns the logical id of the DynamoDB table.
func tableID(s *synthesized) string {
	for id := range s.resources("AWS::DynamoDB::Table") {
		return id
	}
	return ""
}

// TestTableThrottledAlarm: one alarm adds the table's read and write
// throttle events.
func TestTableThrottledAlarm(t *testing.T) {
	s := stack(t, variantDefault)
	var found bool
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		p := props(a)
		if !strings.HasPrefix(id, "TableThrottledAlarm") {
			continue
		}
		found = true
		var expr string
		for _, q := range list(p["Metrics"]) {
			q := q.(map[string]any)
			if e, ok := q["Expression"].(string); ok {
				expr = e
				if q["ReturnData"] == false {
					t.Errorf("%s: the expression's value is not returned", id)
				}
			}
		}
		if expr != "reads + writes" || len(alarmMetrics(p)) != 2 {
			t.Errorf("%s: expression %q of %v, want the sum of reads and writes throttled", id, expr, alarmMetrics(p))
		}
	}
	if !found {
		t.Error("no TableThrottledAlarm")
	}
}

// TestSandboxTaskFailedAlarm: with sandbox=fargate, an EventBridge rule
// matches the cluster's tasks that failed to start or whose essential
// container exited with an error, and an alarm counts its matches; the
// default has neither.
func TestSandboxTaskFailedAlarm(t *testing.T) {
	if n := len(stack(t, variantDefault).resources("AWS::Events::Rule")); n != 0 {
		t.Errorf("default: %d EventBridge rules, want none", n)
	}
	s := stack(t, variantSandbox)
	rules := s.resources("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("%d EventBridge rules, want the sandbox failures' one", len(rules))
	}
	var ruleID string
	for id, r := range rules {
		ruleID = id
		p := props(r)
		if _, ok := p["Targets"]; ok {
			t.Errorf("%s: targets %v, want none (the alarm counts its matches)", id, p["Targets"])
		}
		pattern := p["EventPattern"].(map[string]any)
		detail := pattern["detail"].(map[string]any)
		var cluster string
		for cid := range s.resources("AWS::ECS::Cluster") {
			cluster = "${" + cid + ".Arn}"
		}
		got := render(map[string]any{"source": pattern["source"], "detail-type": pattern["detail-type"],
			"lastStatus": detail["lastStatus"], "$or": detail["$or"]})
		want := `{"$or":[{"stopCode":["TaskFailedToStart"]},{"containers":{"exitCode":[{"anything-but":0}]},"stopCode":["EssentialContainerExited"]}],` +
			`"detail-type":["ECS Task State Change"],"lastStatus":["STOPPED"],"source":["aws.ecs"]}`
		if got != want {
			t.Errorf("%s: pattern %s, want %s", id, got, want)
		}
		if c := list(detail["clusterArn"]); len(c) != 1 || render(c[0]) != cluster {
			t.Errorf("%s: cluster %v, want %s", id, detail["clusterArn"], cluster)
		}
	}
	var alarmed bool
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		for _, met := range alarmMetrics(props(a)) {
			if met.name != "TriggeredRules" {
				continue
			}
			alarmed = true
			if met.namespace != "AWS/Events" || met.dims["RuleName"] != "${"+ruleID+"}" || met.stat != "Sum" {
				t.Errorf("%s: %+v, want the sum of %s's TriggeredRules", id, met, ruleID)
			}
		}
	}
	if !alarmed {
		t.Error("no alarm on the sandbox failures' rule")
	}
}
