package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// a2aPost posts a JSON-RPC request with key and returns the response.
func a2aPost(t *testing.T, url, key, method string, params any) *http.Response {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "r1", "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: bearer(key)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// a2aTask is what the tests read of a task.
type a2aTask struct {
	ID, ContextID string
	Status        struct {
		State   string
		Message *struct{ Parts []struct{ Text string } }
	}
	Artifacts []struct{ Parts []struct{ Text string } }
}

// a2aResult posts a request and decodes its result.
func a2aResult(t *testing.T, url, key, method string, params, result any) *struct{ Code int } {
	t.Helper()
	var out struct {
		Result json.RawMessage
		Error  *struct{ Code int }
	}
	if err := json.NewDecoder(a2aPost(t, url, key, method, params).Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out.Error == nil {
		if err := json.Unmarshal(out.Result, result); err != nil {
			t.Fatalf("%s: %s: %v", method, out.Result, err)
		}
	}
	return out.Error
}

// TestA2A drives the api function's A2A server behind a front that stands
// in for the streaming REST API: the card names the endpoint under the
// stage, a streamed message arrives as server-sent events, an approval
// is input-required and the next message with the task's id answers it
// (the run parked on the state machine), and another key does not find
// the task.
func TestA2A(t *testing.T) {
	env, h := setup(t)
	env.PlayStep(t)
	env.LLM.SetDefault(writeModel("a2a.txt"))
	base := front(t, h)
	key := cloudtest.SampleKey

	req, _ := http.NewRequest(http.MethodGet, base+"/.well-known/agent-card.json", nil)
	req.Header.Set("A2A-Version", "1.0")
	resp, err := (&http.Client{Transport: bearer(key)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var card struct {
		Name                string
		SupportedInterfaces []struct{ URL, ProtocolVersion string }
	}
	err = json.NewDecoder(resp.Body).Decode(&card)
	resp.Body.Close()
	host := strings.TrimPrefix(base, "http://")
	if err != nil || card.Name != "default" || len(card.SupportedInterfaces) == 0 || card.SupportedInterfaces[0].URL != "https://"+host+"/prod/a2a/default" {
		t.Fatalf("card %+v (%v): want the default agent's, its endpoint under the stage", card, err)
	}

	url := base + "/a2a/default"
	t.Run("stream", func(t *testing.T) {
		resp := a2aPost(t, url, key, "SendStreamingMessage", map[string]any{"message": map[string]any{
			"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "streamed on AWS"}}}})
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type %q", ct)
		}
		var kinds []string
		var pieces, whole string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Result struct {
					Task           *a2aTask
					ArtifactUpdate *struct {
						Artifact  struct{ Parts []struct{ Text string } }
						LastChunk bool
					}
					StatusUpdate *struct{ Status struct{ State string } }
				}
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			switch r := ev.Result; {
			case r.Task != nil:
				kinds = append(kinds, "task")
			case r.ArtifactUpdate != nil && r.ArtifactUpdate.LastChunk:
				kinds, whole = append(kinds, "answer"), r.ArtifactUpdate.Artifact.Parts[0].Text
			case r.ArtifactUpdate != nil:
				kinds, pieces = append(kinds, "piece"), pieces+r.ArtifactUpdate.Artifact.Parts[0].Text
			case r.StatusUpdate != nil:
				kinds = append(kinds, r.StatusUpdate.Status.State)
			}
		}
		got := strings.Join(kinds, " ")
		if !strings.HasPrefix(got, "task piece piece") || !strings.HasSuffix(got, "answer TASK_STATE_COMPLETED") ||
			pieces != "echo: streamed on AWS" || whole != pieces {
			t.Errorf("events %s, pieces %q, answer %q: want the task, the pieces, the answer, completed", got, pieces, whole)
		}
	})

	t.Run("inputRequired", func(t *testing.T) {
		var asked, answered struct{ Task a2aTask }
		if e := a2aResult(t, url, key, "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m2", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "write it"}}}}, &asked); e != nil {
			t.Fatalf("SendMessage: %+v", e)
		}
		if asked.Task.Status.State != "TASK_STATE_INPUT_REQUIRED" || asked.Task.Status.Message == nil ||
			!strings.Contains(asked.Task.Status.Message.Parts[0].Text, "write_file") {
			t.Fatalf("task %+v: want input-required with the question", asked.Task)
		}
		otherKey, _, err := apikey.Create(t.Context(), env.Store, store.APIKey{Name: "other", Autonomy: "supervised"})
		if err != nil {
			t.Fatal(err)
		}
		var none a2aTask
		if e := a2aResult(t, url, otherKey, "GetTask", map[string]any{"id": asked.Task.ID}, &none); e == nil || e.Code != -32001 {
			t.Errorf("another key's GetTask: %+v, want -32001", e)
		}
		if e := a2aResult(t, url, key, "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m3", "role": "ROLE_USER", "taskId": asked.Task.ID, "parts": []any{map[string]any{"text": "yes"}}}}, &answered); e != nil {
			t.Fatalf("answer: %+v", e)
		}
		if answered.Task.ID != asked.Task.ID || answered.Task.Status.State != "TASK_STATE_COMPLETED" ||
			len(answered.Task.Artifacts) != 1 || answered.Task.Artifacts[0].Parts[0].Text != "The tool ran." {
			t.Errorf("answered %+v: want the same task completed", answered.Task)
		}
		var got a2aTask
		if e := a2aResult(t, url, key, "GetTask", map[string]any{"id": asked.Task.ID}, &got); e != nil || got.Status.State != "TASK_STATE_COMPLETED" {
			t.Errorf("GetTask: %+v, %+v", got, e)
		}
	})
}
