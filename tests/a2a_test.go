package tests

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// a2aCall posts a JSON-RPC request to the gateway's A2A endpoint path
// with key, and returns the response's result or error.
func a2aCall(t *testing.T, g *gateway, key, path, method string, params any) (result json.RawMessage, rpcErr *struct {
	Code    int
	Message string
}) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, g.addr+path, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		ID     int
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(b, &out); err != nil || out.ID != 7 {
		t.Fatalf("%s: %d %s: not a JSON-RPC response to id 7 (%v)", method, resp.StatusCode, b, err)
	}
	return out.Result, out.Error
}

// a2aStream posts a streaming JSON-RPC request and returns the results of
// its events, as they came, once the stream ends.
func a2aStream(t *testing.T, g *gateway, key, path, method string, params any) []json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 8, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.addr+path, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: Content-Type %q: %s", method, ct, b)
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			ID     int
			Result json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.ID != 8 || ev.Result == nil {
			t.Fatalf("%s: event %s (%v)", method, data, err)
		}
		out = append(out, ev.Result)
	}
	return out
}

// rawTask is what the tests read of a task of version 1.0.
type rawTask struct {
	ID, ContextID string
	Status        struct {
		State   string
		Message *struct{ Parts []struct{ Text string } }
	}
	Artifacts []struct{ Parts []struct{ Text string } }
}

// TestA2AServer drives the A2A server with raw JSON-RPC: the card of
// each version, a message, its task read back by the key and refused to
// another key, a method not served, a request without a key.
func TestA2AServer(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		if strings.HasPrefix(r.LastUser(), "slow") && r.Messages[len(r.Messages)-1].Role == "user" {
			return fakellm.Reply{Content: "echo: " + r.LastUser(), Delay: time.Second}
		}
		return mcpModel(r)
	})
	g := startGateway(t, fake, "")
	key := g.firstKey()
	otherKey := g.createKey(t, "--name", "other")

	card := func(t *testing.T, path, version string) map[string]any {
		req, _ := http.NewRequest(http.MethodGet, g.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if version != "" {
			req.Header.Set("A2A-Version", version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d (%v)", path, resp.StatusCode, err)
		}
		return c
	}
	t.Run("cards", func(t *testing.T) {
		v1 := card(t, "/.well-known/agent-card.json", "1.0")
		if v1["name"] != "default" || v1["url"] != nil || v1["securitySchemes"] == nil {
			t.Errorf("version 1.0 card %v: want the default agent's, without version 0.3's url, with the bearer scheme", v1)
		}
		ifaces, _ := json.Marshal(v1["supportedInterfaces"])
		want := `[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"` + g.addr + `/a2a/default"},{"protocolBinding":"JSONRPC","protocolVersion":"0.3","url":"` + g.addr + `/a2a/default"}]`
		if string(ifaces) != want {
			t.Errorf("interfaces %s, want %s", ifaces, want)
		}
		legacy := card(t, "/a2a/default/.well-known/agent-card.json", "")
		if legacy["protocolVersion"] != "0.3.0" || legacy["url"] != g.addr+"/a2a/default" || legacy["preferredTransport"] != "JSONRPC" {
			t.Errorf("version 0.3 card %v: want protocolVersion, url and preferredTransport", legacy)
		}
		req, _ := http.NewRequest(http.MethodGet, g.addr+"/.well-known/agent-card.json", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("card without a key: %d, want 401", resp.StatusCode)
		}
	})

	var taskID string
	t.Run("send", func(t *testing.T) {
		res, rerr := a2aCall(t, g, key, "/a2a", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m1", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello raw"}}}})
		if rerr != nil {
			t.Fatalf("SendMessage: %+v", rerr)
		}
		var got struct {
			Task struct {
				ID, ContextID string
				Status        struct{ State string }
				Artifacts     []struct{ Parts []struct{ Text string } }
			}
		}
		if err := json.Unmarshal(res, &got); err != nil {
			t.Fatal(err)
		}
		if got.Task.Status.State != "TASK_STATE_COMPLETED" || len(got.Task.Artifacts) != 1 || got.Task.Artifacts[0].Parts[0].Text != "echo: hello raw" {
			t.Fatalf("SendMessage = %s, want the completed task with the answer", res)
		}
		taskID = got.Task.ID
		// Sent again (a client's retry), the message finds its task: the
		// model is not asked twice.
		res, rerr = a2aCall(t, g, key, "/a2a", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m1", "role": "ROLE_USER", "contextId": got.Task.ContextID, "parts": []any{map[string]any{"text": "hello raw"}}}})
		if rerr != nil || !strings.Contains(string(res), taskID) || !strings.Contains(string(res), "echo: hello raw") {
			t.Errorf("the message sent again: %s, %+v: want the same task, answered", res, rerr)
		}
		if n := len(tagged(fake.Requests(), "hello raw")); n != 1 {
			t.Errorf("the model was asked %d times, want once", n)
		}
		res, rerr = a2aCall(t, g, key, "/a2a", "tasks/get", map[string]any{"id": taskID})
		if rerr != nil || !strings.Contains(string(res), `"state":"completed"`) || !strings.Contains(string(res), `"kind":"task"`) {
			t.Errorf("tasks/get = %s, %+v: want the task, in version 0.3's terms", res, rerr)
		}
	})
	t.Run("otherKey", func(t *testing.T) {
		for _, m := range []string{"GetTask", "tasks/get", "CancelTask"} {
			_, rerr := a2aCall(t, g, otherKey, "/a2a", m, map[string]any{"id": taskID})
			if rerr == nil || rerr.Code != -32001 {
				t.Errorf("%s of another key's task: %+v, want -32001 task not found", m, rerr)
			}
		}
		// Its message naming the task is refused too, changing nothing.
		_, rerr := a2aCall(t, g, otherKey, "/a2a", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m2", "role": "ROLE_USER", "taskId": taskID, "parts": []any{map[string]any{"text": "yes"}}}})
		if rerr == nil || rerr.Code != -32001 {
			t.Errorf("another key's message to the task: %+v, want -32001", rerr)
		}
	})
	t.Run("tasks", func(t *testing.T) {
		send := func(text string, config map[string]any) rawTask {
			t.Helper()
			res, rerr := a2aCall(t, g, key, "/a2a/default", "SendMessage", map[string]any{"configuration": config, "message": map[string]any{
				"messageId": "m-" + text, "role": "ROLE_USER", "parts": []any{map[string]any{"text": text}}}})
			var got struct{ Task rawTask }
			if rerr != nil || json.Unmarshal(res, &got) != nil {
				t.Fatalf("SendMessage %q: %s %+v", text, res, rerr)
			}
			return got.Task
		}
		state := func(events []json.RawMessage) (last string, answer string) {
			for _, e := range events {
				var ev struct {
					Task           *rawTask
					StatusUpdate   *struct{ Status struct{ State string } }
					ArtifactUpdate *struct {
						Artifact  struct{ Parts []struct{ Text string } }
						LastChunk bool
					}
				}
				_ = json.Unmarshal(e, &ev)
				switch {
				case ev.Task != nil:
					last = ev.Task.Status.State
					for _, a := range ev.Task.Artifacts {
						answer = a.Parts[0].Text
					}
				case ev.StatusUpdate != nil:
					last = ev.StatusUpdate.Status.State
				case ev.ArtifactUpdate != nil && ev.ArtifactUpdate.LastChunk:
					answer = ev.ArtifactUpdate.Artifact.Parts[0].Text
				}
			}
			return last, answer
		}

		// At once, then followed to its answer (or found answered).
		slow := send("slow reply", map[string]any{"returnImmediately": true})
		if slow.Status.State != "TASK_STATE_WORKING" {
			t.Errorf("returnImmediately: %+v, want the task working", slow)
		}
		if last, answer := state(a2aStream(t, g, key, "/a2a/default", "SubscribeToTask", map[string]any{"id": slow.ID})); last != "TASK_STATE_COMPLETED" || answer != "echo: slow reply" {
			t.Errorf("SubscribeToTask ended %s with %q, want the answer", last, answer)
		}

		// A task that waits for an approval is told as it is; cancelled,
		// it is cancelled, and the conversation goes on.
		parked := send("write cancelled.txt", nil)
		if parked.Status.State != "TASK_STATE_INPUT_REQUIRED" {
			t.Fatalf("%+v, want input-required", parked)
		}
		// In version 0.3's terms: the task alone, as it is.
		events := a2aStream(t, g, key, "/a2a/default", "tasks/resubscribe", map[string]any{"id": parked.ID})
		var legacy struct {
			Kind, ID string
			Status   struct{ State string }
		}
		if len(events) != 1 || json.Unmarshal(events[0], &legacy) != nil || legacy.Kind != "task" || legacy.ID != parked.ID || legacy.Status.State != "input-required" {
			t.Errorf("tasks/resubscribe of the parked task: %s", events)
		}
		res, rerr := a2aCall(t, g, key, "/a2a/default", "CancelTask", map[string]any{"id": parked.ID})
		if rerr != nil || !strings.Contains(string(res), "TASK_STATE_CANCELED") {
			t.Fatalf("CancelTask = %s, %+v", res, rerr)
		}
		res, _ = a2aCall(t, g, key, "/a2a/default", "GetTask", map[string]any{"id": parked.ID})
		if !strings.Contains(string(res), "TASK_STATE_CANCELED") {
			t.Errorf("GetTask after CancelTask = %s", res)
		}
		_, rerr = a2aCall(t, g, key, "/a2a/default", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m-late", "role": "ROLE_USER", "taskId": parked.ID, "parts": []any{map[string]any{"text": "yes"}}}})
		if rerr == nil || rerr.Code != -32602 {
			t.Errorf("an answer to the cancelled task: %+v, want it refused", rerr)
		}
		if _, err := os.Stat(filepath.Join(g.workspace(), "cancelled.txt")); err == nil {
			t.Error("the cancelled task's call ran")
		}
		res, rerr = a2aCall(t, g, key, "/a2a/default", "SendMessage", map[string]any{"message": map[string]any{
			"messageId": "m-after", "role": "ROLE_USER", "contextId": parked.ContextID, "parts": []any{map[string]any{"text": "after"}}}})
		if rerr != nil || !strings.Contains(string(res), `"text":"echo: after"`) {
			t.Errorf("the next message of the conversation: %s, %+v", res, rerr)
		}
	})

	t.Run("refused", func(t *testing.T) {
		cases := []struct {
			method string
			params any
			code   int
		}{
			{"ListTasks", map[string]any{}, -32004},
			{"CreateTaskPushNotificationConfig", map[string]any{}, -32003},
			{"tasks/nothing", map[string]any{}, -32601},
			{"SendMessage", map[string]any{}, -32602},
			{"SendMessage", map[string]any{"message": map[string]any{"messageId": "m3", "role": "ROLE_USER", "parts": []any{map[string]any{"url": "https://example.com/x.pdf"}}}}, -32005},
			{"CancelTask", map[string]any{"id": taskID}, -32002},
			{"GetTask", map[string]any{"id": "nonsense"}, -32001},
		}
		var got, want []int
		for _, c := range cases {
			_, rerr := a2aCall(t, g, key, "/a2a/default", c.method, c.params)
			code := 0
			if rerr != nil {
				code = rerr.Code
			}
			got, want = append(got, code), append(want, c.code)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("error codes, in the order of the cases (-want +got):\n%s", d)
		}
	})
}

// TestA2AServerJavaScript drives the A2A server with the official
// JavaScript SDK (tests/testdata/clients/a2a.mjs), in its version 1.0 and
// with its version 0.3 transport: message/send, message/stream and an
// input-required round trip.
func TestA2AServerJavaScript(t *testing.T) {
	t.Parallel()
	requireClients(t)
	fake := newFake(t)
	fake.SetDefault(mcpModel)
	g := startGateway(t, fake, "")
	key := g.firstKey() // supervised: write_file asks

	ids := []string{"a2a/sendV1", "a2a/sendV03", "a2a/streamV1", "a2a/streamV03", "a2a/inputRequiredV1", "a2a/inputRequiredV03"}
	results := runClients(t, g, key, ids)
	result := func(t *testing.T, id string, v any) clientResult {
		t.Helper()
		return scenarioResult(t, results, id, v)
	}
	// methods lists the JSON-RPC methods a scenario called.
	methods := func(r clientResult) []string {
		var out []string
		for _, s := range r.Sent {
			var body struct{ Method string }
			if b, err := json.Marshal(s.Body); err == nil && json.Unmarshal(b, &body) == nil && body.Method != "" {
				out = append(out, body.Method)
			}
		}
		return out
	}
	type task struct {
		ID, ContextID, Answer, Status string
		State                         int
	}
	const completed, inputRequired = 3, 6 // TaskState of the SDK

	for _, v := range []struct{ name, send, get, stream string }{
		{"V1", "SendMessage", "GetTask", "SendStreamingMessage"},
		{"V03", "message/send", "tasks/get", "message/stream"},
	} {
		t.Run("send"+v.name, func(t *testing.T) {
			var got struct {
				Card struct {
					Name      string
					Streaming bool
				}
				Task, Got task
			}
			r := result(t, "a2a/send"+v.name, &got)
			version := map[string]string{"V1": "1.0", "V03": "0.3"}[v.name]
			if got.Card.Name != "default" || !got.Card.Streaming {
				t.Errorf("card %+v", got.Card)
			}
			if got.Task.State != completed || got.Task.Answer != "echo: hello over A2A "+version || got.Got != got.Task {
				t.Errorf("task %+v, read back %+v: want it completed with the answer", got.Task, got.Got)
			}
			if d := cmp.Diff([]string{v.send, v.get}, methods(r)); d != "" {
				t.Errorf("methods (-want +got):\n%s", d)
			}
		})
		t.Run("stream"+v.name, func(t *testing.T) {
			var got struct {
				Events []struct {
					Kind, Text        string
					State             int
					Append, LastChunk bool
				}
			}
			r := result(t, "a2a/stream"+v.name, &got)
			version := map[string]string{"V1": "1.0", "V03": "0.3"}[v.name]
			want := "echo: streamed over A2A " + version
			ev := got.Events
			if len(ev) < 4 || ev[0].Kind != "task" || ev[len(ev)-1].Kind != "status" || ev[len(ev)-1].State != completed {
				t.Fatalf("events %+v: want the task, the answer's pieces, the answer, the completed status", ev)
			}
			var pieces strings.Builder
			for i, e := range ev[1 : len(ev)-2] {
				if e.Kind != "artifact" || e.Append != (i > 0) {
					t.Errorf("event %d %+v: want a piece of the answer", i+1, e)
				}
				pieces.WriteString(e.Text)
			}
			last := ev[len(ev)-2]
			if pieces.String() != want || last.Text != want || !last.LastChunk || last.Append {
				t.Errorf("pieces %q, last chunk %+v: want the answer %q in pieces, then whole", pieces.String(), last, want)
			}
			if d := cmp.Diff([]string{v.stream}, methods(r)); d != "" {
				t.Errorf("methods (-want +got):\n%s", d)
			}
		})
		t.Run("inputRequired"+v.name, func(t *testing.T) {
			var got struct{ Asked, Answered task }
			result(t, "a2a/inputRequired"+v.name, &got)
			if got.Asked.State != inputRequired || !strings.Contains(got.Asked.Status, "write_file") {
				t.Errorf("asked %+v: want input-required with the approval's question", got.Asked)
			}
			if got.Answered.State != completed || got.Answered.Answer != "The tool ran." || got.Answered.ID != got.Asked.ID {
				t.Errorf("answered %+v: want the same task completed", got.Answered)
			}
			name := map[string]string{"V1": "a2a-1.0.txt", "V03": "a2a-0.3.txt"}[v.name]
			if data, err := os.ReadFile(filepath.Join(g.workspace(), name)); err != nil || string(data) != "written over MCP" {
				t.Errorf("%s: %q, %v: want the file the approved call wrote", name, data, err)
			}
		})
	}
}

// TestA2ARemoteAgentTool has an agent use a remote A2A agent as a tool:
// gateway A's a2a.agents names the card of gateway B's default agent,
// which A's agent then asks (helper__ask) over B's A2A server with B's
// key, and answers with what it said.
func TestA2ARemoteAgentTool(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "tool":
			return fakellm.Reply{Content: "Helper said: " + last.Content}
		case strings.HasPrefix(last.Content, "ask helper: "):
			args, _ := json.Marshal(map[string]string{"message": strings.TrimPrefix(last.Content, "ask helper: ")})
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_helper", Name: "helper__ask", Arguments: string(args)}}}
		}
		return fakellm.Reply{Content: "echo: " + r.LastUser()}
	})
	b := startGateway(t, fake, "")
	bKey := b.firstKey()
	a := newGateway(t, fake, "a2a:\n  agents:\n    helper:\n      url: "+b.addr+"/a2a/default/.well-known/agent-card.json\n      token: {env: HELPER_TOKEN}\n      read_only: true\n")
	a.env = append(a.env, "HELPER_TOKEN="+bKey)
	a.start()
	aKey := a.firstKey()

	resp, body := a.post(t, aKey, `{"model":"default","messages":[{"role":"user","content":"ask helper: how are you?"}]}`, nil)
	var got struct {
		Choices []struct{ Message struct{ Content string } }
	}
	if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK || len(got.Choices) != 1 {
		t.Fatalf("%d %s (%v)", resp.StatusCode, body, err)
	}
	if !regexp.MustCompile(`^Helper said: echo: how are you\?\n\n\[context_id: [0-9a-f]+\]$`).MatchString(got.Choices[0].Message.Content) {
		t.Errorf("answer %q: want the remote agent's answer, with its context", got.Choices[0].Message.Content)
	}
	// The tool was offered with the card's description.
	var offered string
	for _, r := range fake.Requests() {
		for _, tl := range r.ToolDefs {
			if tl.Name == "helper__ask" {
				offered = tl.Description
			}
		}
	}
	if !strings.HasPrefix(offered, "Ask the remote agent helper (A2A: \"default\"): The lambdaclaw agent default") {
		t.Errorf("helper__ask described %q: want the card's description", offered)
	}
}
