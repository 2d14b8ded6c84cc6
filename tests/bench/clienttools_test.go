package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// toolsRequest is a chat request offering the client tool get_weather,
// which the user message names, so the fake model calls it.
const toolsRequest = `{"model":%q,"messages":[{"role":"user","content":"get_weather {\"city\":\"Oslo\"}"}%s],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`

// chatCall posts a chat request and returns its decoded answer.
func chatCall(tb testing.TB, client *http.Client, url, key, session, body string) map[string]any {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Lambdaclaw-Session-Key", session)
	}
	resp, err := client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		tb.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return out
}

// roundTrip makes one client-tool round trip: the request that gets the
// tool call back, then the one that sends its result and gets the answer.
func roundTrip(tb testing.TB, client *http.Client, url, key, model, session string) time.Duration {
	begin := time.Now()
	first := chatCall(tb, client, url, key, session, fmt.Sprintf(toolsRequest, model, ""))
	msg := first["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	id := call["id"].(string)
	assistant, _ := json.Marshal(msg)
	follow := fmt.Sprintf(`,%s,{"role":"tool","tool_call_id":%q,"content":"rain"}`, assistant, id)
	second := chatCall(tb, client, url, key, session, fmt.Sprintf(toolsRequest, model, follow))
	content := second["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	if content != "tool results: rain" {
		tb.Fatalf("answer %v, want the tool result", content)
	}
	return time.Since(begin)
}

// plainTurns makes two plain turns, the same requests without tools: what
// a round trip is compared with.
func plainTurns(tb testing.TB, client *http.Client, url, key, session string) time.Duration {
	begin := time.Now()
	postTurn(tb, client, url, key, session)
	postTurn(tb, client, url, key, session)
	return time.Since(begin)
}

// BenchmarkClientTools reports what the gateway adds to a client-tool
// round trip (two requests: the call comes back, its result goes in) at
// concurrency 1, against the same two model calls made directly, and the
// time of two plain turns through the gateway for comparison: stateless
// (the client sends the history) and stateful (the run parks for the
// result and resumes).
func BenchmarkClientTools(b *testing.B) {
	f := setup(b)
	f.llm.SetDefault(fakellm.ToolUser)
	gw := "http://" + f.srv.addr + "/v1/chat/completions"
	direct := f.llm.URL + "/v1/chat/completions"
	var n atomic.Int64
	for _, mode := range []string{"stateless", "stateful"} {
		b.Run(mode, func(b *testing.B) {
			session := func() string {
				if mode == "stateless" {
					return ""
				}
				return fmt.Sprintf("tools-%d", n.Add(1))
			}
			measure(b, 50, 1, func() time.Duration { return roundTrip(b, f.client, direct, "x", "fake-model", "") })
			measure(b, 50, 1, func() time.Duration { return roundTrip(b, f.client, gw, f.srv.key, "default", session()) })
			b.ResetTimer()
			d := measure(b, b.N, 1, func() time.Duration { return roundTrip(b, f.client, direct, "x", "fake-model", "") })
			g := measure(b, b.N, 1, func() time.Duration { return roundTrip(b, f.client, gw, f.srv.key, "default", session()) })
			p := measure(b, b.N, 1, func() time.Duration { return plainTurns(b, f.client, gw, f.srv.key, session()) })
			b.ReportMetric(ms(pct(g, .5)-pct(d, .5)), "overhead_p50_ms")
			b.ReportMetric(ms(pct(g, .99)-pct(d, .99)), "overhead_p99_ms")
			b.ReportMetric(ms(pct(g, .5)), "gateway_p50_ms")
			b.ReportMetric(ms(pct(p, .5)), "plain_two_turns_p50_ms")
		})
	}
}
