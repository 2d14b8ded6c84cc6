// Package cost measures what one turn uses on AWS, through the code the
// Lambda functions run: their handlers built by shared/wiring/cloud
// against DynamoDB Local (through the grants of each function,
// cloudtest.Table.Policed), the fake LLM, a fake Lambda Invoke API that
// runs the step function's asynchronous invocations, and a fake Step
// Functions that plays the state machine for the runs handed to it. It
// counts, per turn: Lambda invocations, state machine executions,
// DynamoDB requests with the capacity units DynamoDB reports
// (ReturnConsumedCapacity=TOTAL, added to every request on the way), the
// bytes of the write requests, API Gateway requests and WebSocket
// messages, and model calls; then it prices them with the README's
// assumed prices and asserts upper bounds, so a regression fails.
//
//	bash tests/dynamodb-local.sh run go test ./tests/cost -run Cost -v
package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// Prices assumed (README "What it costs": us-east-1 list prices).
const (
	pricePerGBs         = 0.0000133334
	pricePerInvocation  = 0.20 / 1e6
	pricePerTransition  = 0.025 / 1000
	pricePerWRU         = 0.625 / 1e6
	pricePerRRU         = 0.125 / 1e6
	pricePerRESTRequest = 3.50 / 1e6
	pricePerWSMessage   = 1.00 / 1e6
)

// Assumptions of the Lambda compute: the model's latency, the time of
// everything else in an invocation, and the functions' memory (infra).
const (
	modelSeconds = 4.0
	otherSeconds = 0.2
	gbAPI        = 0.5
	gbWS         = 0.25
	gbStep       = 0.5
)

// reads are the DynamoDB operations whose capacity is read capacity.
var reads = map[string]bool{"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true}

// meter counts the DynamoDB requests that pass its proxies.
type meter struct {
	mu         sync.Mutex
	requests   map[string]int
	rru, wru   float64
	writeBytes int
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests, m.rru, m.wru, m.writeBytes = map[string]int{}, 0, 0, 0
}

// proxy returns an endpoint in front of upstream that asks DynamoDB for
// the consumed capacity of every request and counts it.
func (m *meter) proxy(t *testing.T, upstream string) string {
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		op := resp.Request.Header.Get("X-Lambdaclaw-Op")
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		var out struct {
			ConsumedCapacity json.RawMessage
		}
		json.Unmarshal(b, &out)
		units := capacity(out.ConsumedCapacity)
		m.mu.Lock()
		if reads[op] {
			m.rru += units
		} else {
			m.wru += units
		}
		m.mu.Unlock()
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
		var body map[string]any
		if json.Unmarshal(b, &body) == nil && op != "DescribeTable" {
			body["ReturnConsumedCapacity"] = "TOTAL"
			b, _ = json.Marshal(body)
		}
		m.mu.Lock()
		m.requests[op]++
		if !reads[op] && op != "DescribeTable" {
			m.writeBytes += len(b)
		}
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		r.Header.Set("X-Lambdaclaw-Op", op)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// capacity sums the capacity units of a ConsumedCapacity, one object or a
// list (batches and transactions).
func capacity(raw json.RawMessage) float64 {
	type cc struct{ CapacityUnits float64 }
	var one cc
	if json.Unmarshal(raw, &one) == nil {
		return one.CapacityUnits
	}
	var many []cc
	json.Unmarshal(raw, &many)
	sum := 0.0
	for _, c := range many {
		sum += c.CapacityUnits
	}
	return sum
}

// usage is what one turn used.
type usage struct {
	name string
	// invocations of each function; gbs the GB-seconds assumed.
	invocations map[string]int
	gbs         float64
	executions  int
	transitions int
	requests    map[string]int
	rru, wru    float64
	writeBytes  int
	rest        int // API Gateway REST requests
	wsMessages  int // WebSocket messages, in and out
	modelCalls  int
}

func (u usage) dynamoRequests() int {
	n := 0
	for op, c := range u.requests {
		if op != "DescribeTable" {
			n += c
		}
	}
	return n
}

func (u usage) lambdaInvocations() int {
	n := 0
	for _, c := range u.invocations {
		n += c
	}
	return n
}

// cost is the infrastructure's price of 1,000 such turns, in dollars.
func (u usage) cost() map[string]float64 {
	return map[string]float64{
		"API Gateway":     1000 * (float64(u.rest)*pricePerRESTRequest + float64(u.wsMessages)*pricePerWSMessage),
		"Lambda compute":  1000 * u.gbs * pricePerGBs,
		"Lambda requests": 1000 * float64(u.lambdaInvocations()) * pricePerInvocation,
		"Step Functions":  1000 * float64(u.transitions) * pricePerTransition,
		"DynamoDB":        1000 * (u.wru*pricePerWRU + u.rru*pricePerRRU),
	}
}

func (u usage) total() float64 {
	sum := 0.0
	for _, v := range u.cost() {
		sum += v
	}
	return sum
}

// harness is the deployment's functions, built as in Lambda.
type harness struct {
	env *cloudtest.Env
	m   *meter
	api http.Handler
	ws  *apigw.WebSocket

	mu    sync.Mutex
	tasks int // step invocations by the state machine
	runs  int // asynchronous invocations of the step function
}

func newHarness(t *testing.T) *harness {
	env := cloudtest.Setup(t)
	h := &harness{env: env, m: &meter{}}
	h.m.reset()
	t.Setenv("RUN_FUNCTION", cloudtest.RunFunction)
	build := func(function string) *cloud.Root {
		t.Setenv("DYNAMODB_ENDPOINT", h.m.proxy(t, env.Policed(t, function)))
		r, err := cloud.New(t.Context())
		if err != nil {
			t.Fatalf("cloud.New as %s: %v", function, err)
		}
		return r
	}
	step := build("step")
	env.Lambda.Play(func(ctx context.Context, ev sfn.Event) (any, error) {
		h.mu.Lock()
		h.runs++
		h.mu.Unlock()
		return step.Driver.Handle(ctx, ev)
	}, nil)
	env.SFN.Play(func(ctx context.Context, ev sfn.Event) (any, error) {
		h.mu.Lock()
		h.tasks++
		h.mu.Unlock()
		return step.Driver.Handle(ctx, ev)
	})
	var err error
	if h.api, err = build("api").API(); err != nil {
		t.Fatal(err)
	}
	if h.ws, err = build("ws").WebSocket(); err != nil {
		t.Fatal(err)
	}
	return h
}

// measure runs one turn and returns what it used; front says which
// function took the request.
func (h *harness) measure(t *testing.T, name, front string, turn func()) usage {
	t.Helper()
	h.m.reset()
	h.mu.Lock()
	h.tasks, h.runs = 0, 0
	h.mu.Unlock()
	calls0 := len(h.env.LLM.Requests())
	started0 := len(h.env.SFN.Started())
	frames0 := len(h.env.APIGW.Frames(conn))
	turn()
	h.env.Lambda.Wait()
	for _, x := range h.env.SFN.Started()[started0:] {
		h.env.SFN.Wait(x, 30*time.Second)
	}
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	u := usage{
		name: name, invocations: map[string]int{front: 1}, requests: h.m.requests,
		rru: h.m.rru, wru: h.m.wru, writeBytes: h.m.writeBytes,
		executions: len(h.env.SFN.Started()) - started0,
		modelCalls: len(h.env.LLM.Requests()) - calls0,
	}
	if h.runs+h.tasks > 0 {
		u.invocations["step"] = h.runs + h.tasks
	}
	busy := modelSeconds*float64(u.modelCalls) + otherSeconds
	switch front {
	case "api":
		u.rest = 1
		u.gbs = gbAPI * otherSeconds
		if u.invocations["step"] == 0 {
			u.gbs = gbAPI * busy // the run is the request's
		} else {
			u.gbs = gbAPI*busy + gbStep*busy // the request waits for the run
		}
	case "ws":
		u.wsMessages = 1 + len(h.env.APIGW.Frames(conn)) - frames0
		u.gbs = gbWS*otherSeconds + gbStep*busy
	}
	if u.executions > 0 {
		// A Step task and the Choice after it, per task, and the end.
		u.transitions = 2*h.tasks + 1
	}
	return u
}

// conn is the WebSocket connection of the events/ws samples.
const conn = "Yw8hJdCKoAMCL1A="

// reply is a model answer of about 300 tokens, streamed at about 100
// tokens a second.
func reply() fakellm.Reply {
	return fakellm.Reply{Content: strings.Repeat("word ", 240), ChunkSize: 16, ChunkEvery: 40 * time.Millisecond}
}

func (h *harness) post(t *testing.T, body string, session string) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+cloudtest.SampleKey)
	r.Header.Set("Content-Type", "application/json")
	if session != "" {
		r.Header.Set(gateway.SessionHeader, session)
	}
	w := httptest.NewRecorder()
	h.api.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("POST /v1/chat/completions: %d %s", w.Code, w.Body)
	}
}

func (h *harness) message(t *testing.T, id, text string) {
	t.Helper()
	var ev events.APIGatewayWebsocketProxyRequest
	cloudtest.LoadEvent(t, "ws/message.json", &ev)
	b, _ := json.Marshal(map[string]string{"type": "message", "id": id, "agent": "default", "user": "alice", "text": text})
	ev.Body = string(b)
	resp, err := h.ws.Handle(t.Context(), ev)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ws message: %d, %v", resp.StatusCode, err)
	}
}

// TestCost measures the turns and prints the table README's "What it
// costs" cites.
func TestCost(t *testing.T) {
	h := newHarness(t)
	var ev events.APIGatewayWebsocketProxyRequest
	cloudtest.LoadEvent(t, "ws/connect.json", &ev)
	if resp, err := h.ws.Handle(t.Context(), ev); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("$connect: %d, %v", resp.StatusCode, err)
	}
	// A first exchange, so that every turn measured has history to read.
	h.env.LLM.Enqueue(fakellm.Reply{Content: "Hello."})
	h.message(t, "warm", "hello")
	h.env.Lambda.Wait()

	tool := fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "load_skill", Arguments: `{"name":"web-research"}`}}}
	var turns []usage
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateless (API)", "api", func() {
		h.post(t, `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "")
	}))
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateful (WebSocket)", "ws", func() { h.message(t, "m1", "hi") }))
	h.env.LLM.Enqueue(tool, reply())
	turns = append(turns, h.measure(t, "stateful, one tool call (WebSocket)", "ws", func() { h.message(t, "m2", "load a skill") }))
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateful (API, session key)", "api", func() {
		h.post(t, `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "cost-session")
	}))

	var b strings.Builder
	fmt.Fprintf(&b, "\n| turn | Lambda invocations | state machine executions / transitions | DynamoDB requests | read / write units | bytes written | API Gateway requests / WebSocket messages | model calls |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, u := range turns {
		fmt.Fprintf(&b, "| %s | %d %s | %d / %d | %d %s | %.1f / %.1f | %d | %d / %d | %d |\n", u.name, u.lambdaInvocations(), ops(u.invocations),
			u.executions, u.transitions, u.dynamoRequests(), ops(u.requests), u.rru, u.wru, u.writeBytes, u.rest, u.wsMessages, u.modelCalls)
	}
	fmt.Fprintf(&b, "\n| cost per 1,000 turns (%.0f s per model call, %.1f s else) | Lambda GB-s | Lambda compute | Lambda requests | Step Functions | DynamoDB | API Gateway | **total** |\n", modelSeconds, otherSeconds)
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, u := range turns {
		c := u.cost()
		fmt.Fprintf(&b, "| %s | %.2f | $%.4f | $%.4f | $%.4f | $%.4f | $%.4f | **$%.4f** |\n", u.name, u.gbs,
			c["Lambda compute"], c["Lambda requests"], c["Step Functions"], c["DynamoDB"], c["API Gateway"], u.total())
	}
	t.Log(b.String())

	// Upper bounds, a little above what was measured: a regression
	// fails. No turn runs on the state machine.
	bounds := map[string]struct {
		executions, dynamo int
		wru, rru           float64
		total              float64
	}{
		"stateless (API)":                     {0, 2, 0, 1, 0.033},
		"stateful (WebSocket)":                {0, 28, 62, 14, 0.105},
		"stateful, one tool call (WebSocket)": {0, 42, 80, 25, 0.145},
		// The request polls the run while it streams: its reads depend
		// on the time the model takes.
		"stateful (API, session key)": {0, 110, 75, 65, 0.115},
	}
	for _, u := range turns {
		b := bounds[u.name]
		if u.executions != b.executions || u.transitions != 0 {
			t.Errorf("%s: %d executions, %d transitions; want none", u.name, u.executions, u.transitions)
		}
		if u.dynamoRequests() > b.dynamo || u.wru > b.wru || u.rru > b.rru {
			t.Errorf("%s: %d DynamoDB requests, %.1f WRU, %.1f RRU; want at most %d, %.0f, %.0f", u.name, u.dynamoRequests(), u.wru, u.rru, b.dynamo, b.wru, b.rru)
		}
		if u.total() > b.total {
			t.Errorf("%s: $%.4f per 1,000 turns, want at most $%.3f", u.name, u.total(), b.total)
		}
	}
}

// ops renders the requests by operation.
func ops(m map[string]int) string {
	var parts []string
	for op, n := range m {
		if op != "DescribeTable" {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	slices.Sort(parts)
	return "(" + strings.Join(parts, ", ") + ")"
}
