package a2a

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTaskID(t *testing.T) {
	for _, ctx := range []string{"c1", "a context/with.dots and spaces", "ünïcode"} {
		run, got, ok := parseTaskID(taskID("r1", ctx))
		if !ok || run != "r1" || got != ctx {
			t.Errorf("parseTaskID(taskID(r1, %q)) = %q, %q, %v", ctx, run, got, ok)
		}
	}
	for _, bad := range []string{"", "r1", "r1.", ".YzE", "r1.!!"} {
		if _, _, ok := parseTaskID(bad); ok {
			t.Errorf("parseTaskID(%q) ok", bad)
		}
	}
}

// TestLegacyRoundTrip writes a task as version 0.3 does and reads it back
// as the remotea2a client does.
func TestLegacyRoundTrip(t *testing.T) {
	task := Task{ID: "t1", ContextID: "c1", Status: TaskStatus{State: StateInputRequired,
		Message: &Message{MessageID: "m1", ContextID: "c1", TaskID: "t1", Role: RoleAgent, Parts: []Part{TextPart("Which?")}}},
		Artifacts: []Artifact{answer("so far")}}
	b, err := json.Marshal(legacy{}.result(StreamResponse{Task: &task}))
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	_ = json.Unmarshal(b, &wire)
	if wire["kind"] != "task" || wire["status"].(map[string]any)["state"] != "input-required" {
		t.Errorf("version 0.3 task %s", b)
	}
	got, err := LegacyResult(b)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(StreamResponse{Task: &task}, got); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	if _, err := LegacyResult([]byte(`{"kind":"status-update"}`)); err == nil {
		t.Error("a status update read as a result")
	}
}

func TestAtLeastV1(t *testing.T) {
	got := map[string]bool{}
	for _, v := range []string{"", "0.3", "0.3.0", "1.0", "1.1", "2.0", " 1.0 "} {
		got[v] = atLeastV1(v)
	}
	want := map[string]bool{"": false, "0.3": false, "0.3.0": false, "1.0": true, "1.1": true, "2.0": true, " 1.0 ": true}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
