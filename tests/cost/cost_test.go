// Package cost measures what one turn uses on AWS, through the code the
// Lambda functions run: their handlers built by shared/wiring/cloud
// against DynamoDB Local (through the grants of each function,
// cloudtest.Table.Policed), the fake LLM, a fake Lambda Invoke API that
// runs the step function's asynchronous invocations, and a fake Step
// Functions that plays the state machine for the runs handed to it. It
// counts, per turn: Lambda invocations, state machine executions,
// DynamoDB requests with their read units as DynamoDB reports them
// (ReturnConsumedCapacity=TOTAL, added to every read on the way) and
// their write units by AWS's item-size rules (meter), the bytes of the
// write requests and the write units of each kind of write, API Gateway
// requests and WebSocket messages, model calls, the bytes of log lines
// the functions write (what CloudWatch Logs ingests, the metrics' EMF
// lines among them) and the X-Ray traces Lambda's active tracing would
// record (infra's tracing=active; the default stack records none); then
// it prices them with tests/cost/README.md's assumed prices and asserts upper
// bounds, so a regression fails. It also counts the distinct custom
// metrics the EMF lines make, a monthly cost rather than one per turn.
//
//	bash tests/dynamodb-local.sh run go test ./tests/cost -run Cost -v
package cost

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/emf"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/prompt"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// Prices assumed (tests/cost/README.md: us-east-1 list prices).
const (
	pricePerGBs         = 0.0000133334
	pricePerInvocation  = 0.20 / 1e6
	pricePerTransition  = 0.025 / 1000
	pricePerWRU         = 0.625 / 1e6
	pricePerRRU         = 0.125 / 1e6
	pricePerRESTRequest = 3.50 / 1e6
	pricePerWSMessage   = 1.00 / 1e6
	pricePerS3Read      = 0.0004 / 1000 // GET, HEAD
	pricePerS3Write     = 0.005 / 1000  // PUT, POST, LIST
	pricePerLogGB       = 0.50          // CloudWatch Logs ingestion
	pricePerTrace       = 5.00 / 1e6    // X-Ray traces recorded
	pricePerConnMinute  = 0.25 / 1e6    // API Gateway WebSocket
	pricePerMetricMonth = 0.30          // CloudWatch custom metrics, the first 10,000
)

// wsMinutesPerTurn is the assumed time a WebSocket connection stays open
// per turn: a client connects, sends a message, reads the answer and
// leaves the connection idle a while.
const wsMinutesPerTurn = 1.0

// platformLog is what Lambda writes to a function's log group itself
// per invocation (its START, END and REPORT lines), besides what the
// function writes; xrayLog is the line active tracing adds
// (tracing=active).
const (
	platformLog = "START RequestId: 3604209a-e9a3-11e6-939a-754dd98c7be3 Version: $LATEST\n" +
		"END RequestId: 3604209a-e9a3-11e6-939a-754dd98c7be3\n" +
		"REPORT RequestId: 3604209a-e9a3-11e6-939a-754dd98c7be3\tDuration: 4213.52 ms\tBilled Duration: 4214 ms\tMemory Size: 256 MB\tMax Memory Used: 61 MB\t\n"
	xrayLog = "XRAY TraceId: 1-5759e988-bd862e3fe1be46a994272793\tSegmentId: 53995c3f42cd8ad8\tSampled: true\t\n"
)

// traceHeader is the X-Ray trace of the invocation the functions run in
// (_X_AMZN_TRACE_ID, which Lambda sets for each invocation).
const traceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

// Assumptions of the Lambda compute: the model's latency, the time of
// everything else in an invocation, and the functions' memory (infra).
const (
	modelSeconds = 4.0
	otherSeconds = 0.2
	gbAPI        = 0.25 // infra's run_memory, 256 MB by default
	gbWS         = 0.25
	gbTelegram   = 0.25
	gbStep       = 0.25 // run_memory
	gbScheduler  = 0.25
)

// pricePerSchedulerInvocation is EventBridge Scheduler's price of a
// firing, past the free 14 million a month.
const pricePerSchedulerInvocation = 1.00 / 1e6

// reads are the DynamoDB operations whose capacity is read capacity.
var reads = map[string]bool{"GetItem": true, "Query": true, "Scan": true, "BatchGetItem": true, "TransactGetItems": true}

// meter counts the DynamoDB requests that pass its proxies.
//
// Read units are those DynamoDB Local reports (ReturnConsumedCapacity).
// Write units are computed by AWS's documented rules, as DynamoDB Local
// misreports transactions (4 units for one 100-byte put, 4 for four):
// a write of an item costs one unit per KB of the larger of the item
// before and after it (read from the table around the request, past the
// meter), at least one; in a transaction, twice that.
type meter struct {
	mu         sync.Mutex
	requests   map[string]int
	rru, wru   float64
	writeBytes int
	// writes are the write requests by what they write.
	writes map[string]*write
	// raw is DynamoDB Local's endpoint and table the table's name, for
	// the item sizes.
	raw, table string
}

// write is what the write requests of one kind used: the operation and
// the items it writes (their kinds, table.go's pk/sk prefixes).
type write struct {
	requests, bytes int
	wru             float64
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests, m.rru, m.wru, m.writeBytes, m.writes = map[string]int{}, 0, 0, 0, map[string]*write{}
}

// opKey carries a request's operation and targets from the proxy's
// handler to its ModifyResponse.
type opKey struct{}

type opInfo struct {
	op, kind string
	targets  []target
	// factor is 2 in a transaction, else 1.
	factor float64
}

// target is one item a write request writes: its key, and its size
// before the request (bytes, by DynamoDB's item size rules) and whether
// it was in the index gsi1 then.
type target struct {
	key     map[string]any
	before  int
	indexed bool
}

// proxy returns an endpoint in front of upstream that asks DynamoDB for
// the consumed capacity of every request and counts it. The response
// reaches the SDK byte for byte, with the checksum header DynamoDB sends.
func (m *meter) proxy(t *testing.T, upstream string) string {
	up, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(up)
	rp.ModifyResponse = func(resp *http.Response) error {
		info, _ := resp.Request.Context().Value(opKey{}).(opInfo)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		if resp.Header.Get("X-Amz-Crc32") == "" {
			// DynamoDB signs every response with the CRC32 of its body;
			// DynamoDB Local leaves it off its errors (a failed
			// condition), and the SDK, checking for it, logs a warning.
			resp.Header.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
		}
		if reads[info.op] {
			var out struct {
				ConsumedCapacity json.RawMessage
			}
			json.Unmarshal(b, &out)
			units := capacity(out.ConsumedCapacity)
			m.mu.Lock()
			m.rru += units
			m.mu.Unlock()
			return nil
		}
		units := 0.0
		for _, tg := range info.targets {
			after, indexed := m.size(tg.key)
			kb := float64(max(1, (max(tg.before, after)+1023)/1024))
			units += info.factor * kb
			if indexed || tg.indexed {
				// The index gsi1 (projecting ALL) is written too.
				units += kb
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.wru += units
		if w := m.writes[info.kind]; w != nil {
			w.wru += units
		}
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
		if reads[op] && json.Unmarshal(b, &body) == nil {
			body["ReturnConsumedCapacity"] = "TOTAL"
			b, _ = json.Marshal(body)
		} else {
			json.Unmarshal(b, &body)
		}
		info := opInfo{op: op, factor: 1}
		if op == "TransactWriteItems" {
			info.factor = 2
		}
		writes := !reads[op] && op != "DescribeTable"
		var kinds []string
		if writes {
			var keys []map[string]any
			kinds, keys = itemKinds(op, body)
			for _, k := range keys {
				size, indexed := m.size(k)
				info.targets = append(info.targets, target{key: k, before: size, indexed: indexed})
			}
			info.kind = op + " " + strings.Join(kinds, " + ")
		}
		m.mu.Lock()
		m.requests[op]++
		if writes {
			m.writeBytes += len(b)
			wr := m.writes[info.kind]
			if wr == nil {
				wr = &write{}
				m.writes[info.kind] = wr
			}
			wr.requests++
			wr.bytes += len(b)
		}
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), opKey{}, info)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// size reads the item with key from DynamoDB Local, past the meter, and
// returns its size by DynamoDB's rules, 0 when there is none, and
// whether it is in the index gsi1.
func (m *meter) size(key map[string]any) (int, bool) {
	in, _ := json.Marshal(map[string]any{"TableName": m.table, "Key": key, "ConsistentRead": true})
	req, err := http.NewRequest(http.MethodPost, m.raw, bytes.NewReader(in))
	if err != nil {
		return 0, false
	}
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=cost/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var out struct{ Item map[string]any }
	if json.NewDecoder(resp.Body).Decode(&out) != nil || out.Item == nil {
		return 0, false
	}
	n := 0
	for name, v := range out.Item {
		n += len(name) + attrSize(v)
	}
	_, indexed := out.Item["gsi1pk"]
	return n, indexed
}

// attrSize is the size of an attribute value in DynamoDB's JSON, by the
// rules of "Item sizes and formats" in the DynamoDB developer guide.
func attrSize(v any) int {
	av, _ := v.(map[string]any)
	for typ, x := range av {
		switch typ {
		case "S":
			s, _ := x.(string)
			return len(s)
		case "N":
			s, _ := x.(string)
			return (len(strings.TrimLeft(s, "-0"))+1)/2 + 1
		case "B":
			s, _ := x.(string)
			return base64.StdEncoding.DecodedLen(len(s))
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			l, _ := x.([]any)
			n := 0
			for _, e := range l {
				n += attrSize(map[string]any{typ[:1]: e})
			}
			return n
		case "L":
			l, _ := x.([]any)
			n := 3
			for _, e := range l {
				n += 1 + attrSize(e)
			}
			return n
		case "M":
			mm, _ := x.(map[string]any)
			n := 3
			for k, e := range mm {
				n += 1 + len(k) + attrSize(e)
			}
			return n
		}
	}
	return 0
}

// itemKinds names the items a write request writes by their key's
// prefixes (SESSION/MSG, RUN/RUN, …), sorted, and returns their keys.
func itemKinds(op string, body map[string]any) ([]string, []map[string]any) {
	get := func(v any, path ...string) any {
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	var kinds []string
	var keys []map[string]any
	add := func(verb string, v any) {
		item, _ := v.(map[string]any)
		prefix := func(attr string) string {
			s, _ := get(item, attr, "S").(string)
			p, _, _ := strings.Cut(s, "#")
			return p
		}
		kinds = append(kinds, strings.TrimSpace(verb+" "+prefix("pk")+"/"+prefix("sk")))
		if verb != "check" {
			keys = append(keys, map[string]any{"pk": item["pk"], "sk": item["sk"]})
		}
	}
	switch op {
	case "PutItem":
		add("", body["Item"])
	case "UpdateItem", "DeleteItem":
		add("", body["Key"])
	case "TransactWriteItems":
		items, _ := body["TransactItems"].([]any)
		for _, it := range items {
			switch {
			case get(it, "Put") != nil:
				add("put", get(it, "Put", "Item"))
			case get(it, "Update") != nil:
				add("update", get(it, "Update", "Key"))
			case get(it, "Delete") != nil:
				add("delete", get(it, "Delete", "Key"))
			case get(it, "ConditionCheck") != nil:
				add("check", get(it, "ConditionCheck", "Key"))
			}
		}
	case "BatchWriteItem":
		tables, _ := body["RequestItems"].(map[string]any)
		for _, reqs := range tables {
			list, _ := reqs.([]any)
			for _, r := range list {
				if p := get(r, "PutRequest", "Item"); p != nil {
					add("put", p)
				} else {
					add("delete", get(r, "DeleteRequest", "Key"))
				}
			}
		}
	}
	slices.Sort(kinds)
	return kinds, keys
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
	writes      map[string]*write
	rest        int // API Gateway REST requests
	wsMessages  int // WebSocket messages, in and out
	modelCalls  int
	// botCalls are the requests to the Telegram Bot API (free).
	botCalls int
	// s3Reads are GET and HEAD requests to the workspace bucket, s3Writes
	// PUT, POST and LIST requests (S3 prices them alike).
	s3Reads, s3Writes int
	// schedulerInvocations are EventBridge Scheduler's firings.
	schedulerInvocations int
	// logBytes are the bytes of log lines the functions wrote (their own
	// and Lambda's, platformLog), emfBytes those of the metrics' lines
	// among them.
	logBytes, emfBytes int
	// traces are the X-Ray traces active tracing (tracing=active) would
	// record: the invocation that took the turn starts one (every
	// invocation sampled: at low traffic X-Ray's default rule records the
	// first of each second), and an invocation that does not carry its
	// caller's trace header another; segments are Lambda's two per
	// invocation (the service's and the function's). The default stack
	// records none (cost).
	traces, segments int
	// wsMinutes are the WebSocket connection-minutes of the turn.
	wsMinutes float64
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

// cost is the infrastructure's price of 1,000 such turns, in dollars,
// on the default stack, or with tracing=active when tracing: its traces
// and the XRAY line it adds to each invocation's log.
func (u usage) cost(tracing bool) map[string]float64 {
	traces, logBytes := 0, u.logBytes
	if tracing {
		traces, logBytes = u.traces, logBytes+u.lambdaInvocations()*len(xrayLog)
	}
	return map[string]float64{
		"API Gateway":     1000 * (float64(u.rest)*pricePerRESTRequest + float64(u.wsMessages)*pricePerWSMessage + u.wsMinutes*pricePerConnMinute),
		"Lambda compute":  1000 * u.gbs * pricePerGBs,
		"Lambda requests": 1000 * float64(u.lambdaInvocations()) * pricePerInvocation,
		"Step Functions":  1000 * float64(u.transitions) * pricePerTransition,
		"DynamoDB":        1000 * (u.wru*pricePerWRU + u.rru*pricePerRRU),
		"S3":              1000 * (float64(u.s3Reads)*pricePerS3Read + float64(u.s3Writes)*pricePerS3Write),
		"Scheduler":       1000 * float64(u.schedulerInvocations) * pricePerSchedulerInvocation,
		"CloudWatch Logs": 1000 * float64(logBytes) / (1 << 30) * pricePerLogGB,
		"X-Ray":           1000 * float64(traces) * pricePerTrace,
	}
}

func (u usage) total(tracing bool) float64 {
	sum := 0.0
	for _, v := range u.cost(tracing) {
		sum += v
	}
	return sum
}

// s3Meter counts the requests to the workspace bucket that pass its
// proxy.
type s3Meter struct {
	mu            sync.Mutex
	reads, writes int
}

// watch returns the endpoint of a proxy of the server at endpoint that
// hands each request to see before passing it on.
func watch(t *testing.T, endpoint string, see func(*http.Request)) string {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		see(r)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// proxy returns the endpoint of a proxy of the S3 server at endpoint that
// counts the requests.
func (m *s3Meter) proxy(t *testing.T, endpoint string) string {
	return watch(t, endpoint, func(r *http.Request) {
		m.mu.Lock()
		switch r.Method {
		case http.MethodGet:
			if r.URL.Query().Has("list-type") || r.URL.Query().Has("prefix") {
				m.writes++ // a listing is priced as a PUT
			} else {
				m.reads++
			}
		case http.MethodHead:
			m.reads++
		case http.MethodPut, http.MethodPost:
			m.writes++
		}
		m.mu.Unlock()
	})
}

func (m *s3Meter) reset() {
	m.mu.Lock()
	m.reads, m.writes = 0, 0
	m.mu.Unlock()
}

// traceMeter counts the Lambda Invoke requests that pass its proxy
// without an X-Ray trace header (X-Amzn-Trace-Id): Lambda's active
// tracing continues a caller's trace, and starts one for those.
type traceMeter struct {
	mu       sync.Mutex
	untraced int
}

func (m *traceMeter) proxy(t *testing.T, endpoint string) string {
	return watch(t, endpoint, func(r *http.Request) {
		if r.Header.Get("X-Amzn-Trace-Id") == "" {
			m.mu.Lock()
			m.untraced++
			m.mu.Unlock()
		}
	})
}

// logMeter holds what the functions write to standard error, which
// Lambda sends to their log groups (slog's JSON lines, the metrics' EMF
// lines): a file per function.
type logMeter struct {
	files map[string]*os.File
	// at are the files' sizes when the turn began.
	at map[string]int64
	// metrics are the distinct custom metrics the EMF lines made, over
	// all turns: namespace, name and dimensions with their values.
	metrics map[string]bool
}

// capture builds the function named function with its standard error
// going to a file of its own.
func (l *logMeter) capture(t *testing.T, function string, build func() *cloud.Root) *cloud.Root {
	t.Helper()
	f, err := os.Create(t.TempDir() + "/" + function + ".log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	stderr := os.Stderr
	os.Stderr = f
	defer func() { os.Stderr = stderr }()
	l.files[function] = f
	return build()
}

func (l *logMeter) mark(t *testing.T) {
	for name, f := range l.files {
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		l.at[name] = fi.Size()
	}
}

// since returns the bytes written since mark and those of EMF lines among
// them, and adds the metrics of those to l.metrics.
func (l *logMeter) since(t *testing.T) (total, emf int) {
	t.Helper()
	for name, f := range l.files {
		b, err := io.ReadAll(io.NewSectionReader(f, l.at[name], 1<<30))
		if err != nil {
			t.Fatal(err)
		}
		total += len(b)
		for line := range bytes.Lines(b) {
			var ev struct {
				AWS *struct {
					CloudWatchMetrics []struct {
						Namespace  string
						Dimensions [][]string
						Metrics    []struct{ Name string }
					}
				} `json:"_aws"`
			}
			if json.Unmarshal(line, &ev) != nil || ev.AWS == nil {
				continue
			}
			emf += len(line)
			var values map[string]any
			json.Unmarshal(line, &values)
			for _, d := range ev.AWS.CloudWatchMetrics {
				for _, dims := range d.Dimensions {
					for _, m := range d.Metrics {
						key := d.Namespace + " " + m.Name
						for _, dim := range slices.Sorted(slices.Values(dims)) {
							key += fmt.Sprintf(" %s=%v", dim, values[dim])
						}
						l.metrics[key] = true
					}
				}
			}
		}
	}
	return total, emf
}

// harness is the deployment's functions, built as in Lambda.
type harness struct {
	env  *cloudtest.Env
	m    *meter
	s3   *s3Meter
	logs *logMeter
	xray *traceMeter
	// roots are the functions by name.
	roots map[string]*cloud.Root
	// step and wsRoot are the step and ws functions' roots; their
	// workspaces read the time with clock added (expired).
	step, wsRoot *cloud.Root
	clock        atomic.Int64
	api          http.Handler
	ws           func(context.Context, events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error)
	// tg is the telegram function's channel, bot the fake Bot API.
	tg  *telegram.Channel
	bot *faketelegram.Server
	// scheduler is the scheduler function, which EventBridge Scheduler
	// invokes with a job's firing.
	scheduler *cloud.Root

	mu    sync.Mutex
	tasks int // step invocations by the state machine
	runs  int // asynchronous invocations of the step function
}

func newHarness(t *testing.T) *harness {
	env := cloudtest.Setup(t)
	h := &harness{env: env, m: &meter{raw: os.Getenv("DYNAMODB_ENDPOINT"), table: env.TableName}, s3: &s3Meter{},
		logs: &logMeter{files: map[string]*os.File{}, at: map[string]int64{}, metrics: map[string]bool{}}, xray: &traceMeter{}, roots: map[string]*cloud.Root{}}
	h.m.reset()
	t.Setenv("S3_ENDPOINT", h.s3.proxy(t, os.Getenv("S3_ENDPOINT")))
	t.Setenv("LAMBDA_ENDPOINT", h.xray.proxy(t, env.Lambda.URL))
	// The stack sets no LOG_LEVEL: the functions log at info.
	t.Setenv("LOG_LEVEL", "")
	// In Lambda: the SDK sends the invocation's trace on (its recursion
	// detection), as it does on AWS.
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "lambdaclaw")
	t.Setenv("_X_AMZN_TRACE_ID", traceHeader)
	t.Setenv("RUN_FUNCTION", cloudtest.RunFunction)
	// A Telegram bot, its token in Secrets Manager, as deployed with
	// telegram=on: the step function replies through it.
	h.bot = faketelegram.New()
	t.Cleanup(h.bot.Close)
	sm := cloudtest.NewSecrets(t, map[string]string{botTokenARN: faketelegram.Token})
	for k, v := range map[string]string{
		"TELEGRAM_BOT_TOKEN_SECRET_ARN": botTokenARN, "SECRETSMANAGER_ENDPOINT": sm.URL, "TELEGRAM_API_BASE": h.bot.URL,
		"TELEGRAM_ALLOWED_USERS": strconv.Itoa(chatID), "TELEGRAM_BOT_TOKEN": "", "TELEGRAM_ACCESS_CODES": "", "TELEGRAM_AGENT": "",
	} {
		t.Setenv(k, v)
	}
	build := func(function string) *cloud.Root {
		t.Setenv("DYNAMODB_ENDPOINT", h.m.proxy(t, env.Policed(t, function)))
		r := h.logs.capture(t, function, func() *cloud.Root {
			r, err := cloudtest.NewRoot(t.Context(), function)
			if err != nil {
				t.Fatalf("the root of %s: %v", function, err)
			}
			return r
		})
		h.roots[function] = r
		return r
	}
	step := build("step")
	pace(t, step)
	h.step = step
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
	if h.api, err = turns.API(build("api")); err != nil {
		t.Fatal(err)
	}
	h.wsRoot = build("ws")
	h.scheduler = build("scheduler")
	tgRoot := build("telegram")
	h.tg = tgRoot.Telegram
	// The functions' clock stands at noon and moves only when the harness
	// moves it (expired): what a turn reads of the workspaces does not
	// depend on how long the test takes, nor on its time of day (a new
	// day's prompt has new daily memory files).
	noon := time.Now().UTC().Truncate(24 * time.Hour).Add(12 * time.Hour)
	clock := func() time.Time { return noon.Add(time.Duration(h.clock.Load())) }
	for _, r := range []*cloud.Root{step, h.wsRoot, tgRoot} {
		r.Agents.SetClock(clock)
		if b, ok := r.Loop.Prompter.(*prompt.Builder); ok {
			b.Now = clock
			if b.Skills != nil {
				b.Skills.Now = clock
			}
		}
	}
	if h.ws, err = h.wsRoot.WebSocket(); err != nil {
		t.Fatal(err)
	}
	return h
}

// measure runs one turn and returns what it used; front says which
// function took the request.
func (h *harness) measure(t *testing.T, name, front string, turn func()) usage {
	t.Helper()
	h.m.reset()
	h.s3.reset()
	h.flush(t)
	h.logs.mark(t)
	h.xray.mu.Lock()
	h.xray.untraced = 0
	h.xray.mu.Unlock()
	h.mu.Lock()
	h.tasks, h.runs = 0, 0
	h.mu.Unlock()
	calls0 := len(h.env.LLM.Requests())
	started0 := len(h.env.SFN.Started())
	frames0 := len(h.env.APIGW.Frames(conn))
	bot0 := h.botCalls()
	turn()
	h.env.Lambda.Wait()
	for _, x := range h.env.SFN.Started()[started0:] {
		h.env.SFN.Wait(x, 30*time.Second)
	}
	h.flush(t)
	logBytes, emfBytes := h.logs.since(t)
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	u := usage{
		name: name, invocations: map[string]int{front: 1}, requests: maps.Clone(h.m.requests),
		rru: h.m.rru, wru: h.m.wru, writeBytes: h.m.writeBytes, writes: maps.Clone(h.m.writes),
		executions: len(h.env.SFN.Started()) - started0,
		modelCalls: len(h.env.LLM.Requests()) - calls0,
	}
	h.s3.mu.Lock()
	u.s3Reads, u.s3Writes = h.s3.reads, h.s3.writes
	h.s3.mu.Unlock()
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
		u.wsMinutes = wsMinutesPerTurn
		u.gbs = gbWS*otherSeconds + gbStep*busy
	case "telegram":
		u.rest = 1 // the webhook
		u.gbs = gbTelegram*otherSeconds + gbStep*busy
	case "scheduler":
		u.schedulerInvocations = 1
		u.wsMessages = len(h.env.APIGW.Frames(conn)) - frames0 // check_in frames
		u.gbs = gbScheduler*otherSeconds + gbStep*busy
	}
	u.botCalls = h.botCalls() - bot0
	u.logBytes = logBytes + u.lambdaInvocations()*len(platformLog)
	u.emfBytes = emfBytes
	h.xray.mu.Lock()
	u.traces = 1 + h.xray.untraced
	h.xray.mu.Unlock()
	u.segments = 2 * u.lambdaInvocations()
	if u.executions > 0 {
		// A Step task and the Choice after it, per task, and the end.
		u.transitions = 2*h.tasks + 1
	}
	return u
}

// flush waits until the functions' events are written (obs.Emitter
// writes them off the request path).
func (h *harness) flush(t *testing.T) {
	t.Helper()
	for name, r := range h.roots {
		e, ok := r.Loop.Events.(*obs.Emitter)
		if !ok {
			t.Fatalf("the %s function's events go to %T, not an *obs.Emitter", name, r.Loop.Events)
		}
		if err := e.Flush(t.Context()); err != nil {
			t.Fatalf("the %s function's events: %v", name, err)
		}
	}
}

// toolNames are the tools of the step function's default agent.
func (h *harness) toolNames(t *testing.T) []string {
	t.Helper()
	a, ok := h.step.Agents.Current()["default"]
	if !ok {
		t.Fatal("the step function has no default agent")
	}
	var names []string
	for _, d := range a.Registry().Definitions() {
		names = append(names, d.Name)
	}
	return names
}

func (h *harness) tools(t *testing.T) int { return len(h.toolNames(t)) }

// metricBound returns how many distinct custom metrics the functions can
// make: each of obs.MetricDefs once per combination of its labels'
// values (the tool label's are the default agent's tools). A metric seen
// outside them fails t: the bound would be wrong.
func (h *harness) metricBound(t *testing.T) int {
	t.Helper()
	values := map[string][]string{
		"outcome":   {"ok", "error"},
		"direction": {"in", "out"},
		"kind":      {"turn", "llm", "tool"},
		"tool":      h.toolNames(t),
	}
	possible := map[string]bool{}
	for _, d := range obs.MetricDefs {
		keys := []string{emf.Namespace + " " + d.Name}
		for _, l := range slices.Sorted(slices.Values(d.Labels)) {
			if values[l] == nil {
				t.Fatalf("metric %s: no values known for its label %s", d.Name, l)
			}
			var next []string
			for _, k := range keys {
				for _, v := range values[l] {
					next = append(next, k+" "+l+"="+v)
				}
			}
			keys = next
		}
		for _, k := range keys {
			possible[k] = true
		}
	}
	for m := range h.logs.metrics {
		if !possible[m] {
			t.Errorf("custom metric %q is not among those counted", m)
		}
	}
	return len(possible)
}

// noTimers keeps no timers: the jobs measured are fired by hand, as
// their schedules would.
type noTimers struct{}

func (noTimers) Check(schedule.Job) error                      { return nil }
func (noTimers) Set(context.Context, schedule.Job, bool) error { return nil }
func (noTimers) Remove(context.Context, string) error          { return nil }

// job creates j, firing every minute, on a clock two minutes back: its
// first firing is due now.
func (h *harness) job(t *testing.T, j schedule.Job) schedule.Job {
	t.Helper()
	j.Schedule = schedule.Schedule{Every: schedule.Duration(time.Minute)}
	created, err := h.step.Store.Schedule(noTimers{}, func() time.Time { return time.Now().Add(-2 * time.Minute) }).Create(t.Context(), j)
	if err != nil {
		t.Fatalf("create job: %v", err)
	}
	return created
}

// fire hands the scheduler function j's first firing, as its schedule
// does, and checks the outcome.
func (h *harness) fire(t *testing.T, j schedule.Job, want string) {
	t.Helper()
	got, err := h.scheduler.Jobs().Fire(t.Context(), schedule.Firing{JobID: j.ID, At: j.Next})
	if err != nil || got.Outcome != want {
		t.Fatalf("fire %s: %+v, %v; want %s", j.ID, got, err, want)
	}
}

// botCalls counts the requests to the fake Bot API.
func (h *harness) botCalls() int {
	n := 0
	for _, m := range []string{"sendMessage", "sendMessageDraft", "editMessageText", "sendChatAction", "getMe", "deleteMessage"} {
		n += h.bot.Calls(m)
	}
	return n
}

// update hands the telegram function's channel a message of the allowed
// user, as the function does once the webhook's secret header is checked
// (functions/telegram), and flushes its outbox as the function does.
func (h *harness) update(t *testing.T, id int, text string) {
	t.Helper()
	var u telegram.Update
	b, _ := json.Marshal(map[string]any{"update_id": id, "message": map[string]any{"message_id": id, "date": time.Now().Unix(), "text": text,
		"from": map[string]any{"id": chatID, "is_bot": false, "first_name": "Ada"}, "chat": map[string]any{"id": chatID, "type": "private"}}})
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	if err := h.tg.Handle(t.Context(), u); err != nil {
		t.Fatalf("telegram update %d: %v", id, err)
	}
	if n, err := h.tg.Flush(t.Context(), 0); err != nil || n > 0 {
		t.Fatalf("telegram flush: %d pending, %v", n, err)
	}
}

// The Telegram bot of the harness.
const (
	botTokenARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:TelegramBotToken-AbCdEf"
	chatID      = 111111111
)

// expired runs turn as the first after a quiet minute: the functions
// look at the agents' workspaces in the bucket again (cloud.Recheck).
func (h *harness) expired(turn func()) func() {
	return func() {
		h.clock.Add(int64(cloud.Recheck + time.Second))
		for _, r := range []*cloud.Root{h.step, h.wsRoot} {
			if a, ok := r.Agents.Current()["default"]; ok {
				r.Loop.Prompter.(*prompt.Builder).Stale(a)
			}
		}
		turn()
	}
}

// conn is the WebSocket connection of the events/ws samples.
const conn = "Yw8hJdCKoAMCL1A="

// reply is a model answer of about 300 tokens in 75 pieces, which the
// step function's repliers take as streamed at about 100 tokens a second
// (paced).
func reply() fakellm.Reply {
	return fakellm.Reply{Content: strings.Repeat("word ", 240), ChunkSize: 16}
}

// pieceEvery is the time between two streamed pieces of a reply: 16 bytes
// (about 4 tokens) at 100 tokens a second.
const pieceEvery = 40 * time.Millisecond

// paced passes a run's streamed pieces to r as if they came pieceEvery
// apart, on the clock r holds text back by: what reaches WebSocket
// clients and the drafts then depends on the text alone, not on how
// busy the machine is.
type paced struct {
	r     agent.Replier
	clock *agent.ManualClock
}

func (p paced) Delta(st agent.RunState, text string) {
	p.clock.Advance(pieceEvery)
	p.r.Delta(st, text)
}

func (p paced) FlushDeltas(st agent.RunState) {
	if f, ok := p.r.(interface{ FlushDeltas(agent.RunState) }); ok {
		f.FlushDeltas(st)
	}
}

func (p paced) Approval(st agent.RunState, a store.Approval) { p.r.Approval(st, a) }
func (p paced) Finish(st agent.RunState, res agent.Result)   { p.r.Finish(st, res) }

// pace gives the step function's repliers that hold streamed text back
// (cloud.New's: drafts of API runs, WebSocket posts) a manual clock that
// the pieces of a reply move on.
func pace(t *testing.T, step *cloud.Root) {
	t.Helper()
	router, ok := step.Loop.Replier.(agent.Router)
	if !ok || router[gateway.Channel] == nil || router[wsproto.Channel] == nil {
		t.Fatalf("the step function's repliers are %T %v; the harness paces its router's http and ws repliers", step.Loop.Replier, step.Loop.Replier)
	}
	clock := agent.NewManualClock(time.Unix(0, 0))
	router[gateway.Channel] = agent.Tee{step.Hub, paced{&agent.DraftWriter{Store: step.Store, Every: cloud.BatchInterval, Clock: clock}, clock}}
	router[wsproto.Channel] = paced{agent.BatchDeltas(apigw.Replier{Conns: step.Conns}, cloud.BatchInterval, clock), clock}
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
	resp, err := h.ws(t.Context(), ev)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("ws message: %d, %v", resp.StatusCode, err)
	}
}

// TestCost measures the turns and prints the tables tests/cost/README.md
// cites.
func TestCost(t *testing.T) {
	h := newHarness(t)
	var ev events.APIGatewayWebsocketProxyRequest
	cloudtest.LoadEvent(t, "ws/connect.json", &ev)
	if resp, err := h.ws(t.Context(), ev); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("$connect: %d, %v", resp.StatusCode, err)
	}
	// A first exchange, so that every turn measured has history to read.
	h.env.LLM.Enqueue(fakellm.Reply{Content: "Hello."})
	h.message(t, "warm", "hello")
	h.env.Lambda.Wait()
	h.env.LLM.Enqueue(fakellm.Reply{Content: "Hello."})
	h.update(t, 700000001, "hello")
	h.env.Lambda.Wait()

	tool := fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "load_skill", Arguments: `{"name":"web-research"}`}}}
	var turns []usage
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateless (API)", "api", func() {
		h.post(t, `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "")
	}))
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateful (WebSocket)", "ws", func() { h.message(t, "m1", "hi") }))
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateful (WebSocket), after a quiet minute", "ws", h.expired(func() { h.message(t, "m1b", "hi again") })))
	h.env.LLM.Enqueue(tool, reply())
	turns = append(turns, h.measure(t, "stateful, one tool call (WebSocket)", "ws", func() { h.message(t, "m2", "load a skill") }))
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateful (API, session key)", "api", func() {
		h.post(t, `{"model":"default","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "cost-session")
	}))

	// Telegram: the turn measured, then Telegram delivering that update
	// again (de-duplicated).
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "stateful (Telegram)", "telegram", func() { h.update(t, 700000002, "hi") }))
	turns = append(turns, h.measure(t, "Telegram delivers the update again", "telegram", func() { h.update(t, 700000002, "hi") }))

	// Check-ins: a job's firing as EventBridge Scheduler delivers it, its
	// answer sent to the Telegram chat; the same firing delivered again
	// (de-duplicated); an idle heartbeat's (no HEARTBEAT.md: skipped
	// without calling the model).
	job := h.job(t, schedule.Job{Owner: "tg:" + strconv.Itoa(chatID), Agent: "default", Message: "Anything new?",
		Deliver: schedule.Target{Kind: schedule.DeliverTelegram, To: strconv.Itoa(chatID)}})
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "check-in (a job's firing, to Telegram)", "scheduler", func() { h.fire(t, job, "started") }))
	turns = append(turns, h.measure(t, "the firing delivered again", "scheduler", func() { h.fire(t, job, "duplicate") }))
	// A check-in to the WebSocket user of the connection above: its
	// connections read from the index, the check_in frame posted.
	wsJob := h.job(t, schedule.Job{Owner: "key:" + h.env.Key.ID, Agent: "default", Message: "Anything new?",
		Deliver: schedule.Target{Kind: schedule.DeliverWS, To: "alice"}})
	h.env.LLM.Enqueue(reply())
	turns = append(turns, h.measure(t, "check-in (a job's firing, to WebSocket)", "scheduler", func() { h.fire(t, wsJob, "started") }))
	beat := h.job(t, schedule.Job{ID: schedule.HeartbeatID("default"), Owner: schedule.HeartbeatOwner, Agent: "default", Heartbeat: &schedule.Heartbeat{}})
	turns = append(turns, h.measure(t, "idle heartbeat (skipped)", "scheduler", func() { h.fire(t, beat, "started") }))

	var b strings.Builder
	fmt.Fprintf(&b, "\n| turn | Lambda invocations | state machine executions / transitions | DynamoDB requests | read / write units | bytes written | S3 GET+HEAD / PUT+LIST | API Gateway requests / WebSocket messages / connection-minutes | model calls | Bot API calls | log bytes (EMF) | X-Ray traces / segments (tracing=active) |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, u := range turns {
		fmt.Fprintf(&b, "| %s | %d %s | %d / %d | %d %s | %.1f / %.1f | %d | %d / %d | %d / %d / %g | %d | %d | %d (%d) | %d / %d |\n", u.name, u.lambdaInvocations(), ops(u.invocations),
			u.executions, u.transitions, u.dynamoRequests(), ops(u.requests), u.rru, u.wru, u.writeBytes, u.s3Reads, u.s3Writes, u.rest, u.wsMessages, u.wsMinutes,
			u.modelCalls, u.botCalls, u.logBytes, u.emfBytes, u.traces, u.segments)
	}
	fmt.Fprintf(&b, "\n| cost per 1,000 turns (%.0f s per model call, %.1f s else) | Lambda GB-s | Lambda compute | Lambda requests | Step Functions | DynamoDB | S3 | API Gateway | EventBridge Scheduler | CloudWatch Logs | **total** | with tracing=active (X-Ray, its log line) |\n", modelSeconds, otherSeconds)
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, u := range turns {
		c, traced := u.cost(false), u.cost(true)
		fmt.Fprintf(&b, "| %s | %.2f | $%.4f | $%.4f | $%.4f | $%.4f | $%.4f | $%.4f | $%.4f | $%.4f | **$%.4f** | $%.4f ($%.4f, $%.4f) |\n", u.name, u.gbs,
			c["Lambda compute"], c["Lambda requests"], c["Step Functions"], c["DynamoDB"], c["S3"], c["API Gateway"], c["Scheduler"], c["CloudWatch Logs"], u.total(false),
			u.total(true), traced["X-Ray"], traced["CloudWatch Logs"]-c["CloudWatch Logs"])
	}
	possible := h.metricBound(t)
	fmt.Fprintf(&b, "\nCustom metrics: %d distinct seen over these turns, at most %d (the default agent's %d tools); $%.2f a month for every one emitted in every hour of the month ($%.2f a metric-month).\n",
		len(h.logs.metrics), possible, h.tools(t), float64(possible)*pricePerMetricMonth, pricePerMetricMonth)
	fmt.Fprintf(&b, "\n| turn | write request: items written (table.go's pk/sk) | requests | bytes | write units |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- |\n")
	for _, u := range turns {
		kinds := slices.Collect(maps.Keys(u.writes))
		slices.SortFunc(kinds, func(a, b string) int {
			return cmp.Or(cmp.Compare(u.writes[b].wru, u.writes[a].wru), strings.Compare(a, b))
		})
		for _, k := range kinds {
			w := u.writes[k]
			fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f |\n", u.name, k, w.requests, w.bytes, w.wru)
		}
	}
	t.Log(b.String())

	// Upper bounds, a little above what was measured: a regression
	// fails. No turn runs on the state machine.
	bounds := map[string]struct {
		executions, dynamo, s3 int
		wru, rru               float64
		// logs are the bytes of log lines.
		logs  int
		total float64
	}{
		// The api function's first turn: its prompt is read from the
		// bucket.
		"stateless (API)":      {0, 2, 20, 0, 1, 3100, 0.038},
		"stateful (WebSocket)": {0, 24, 0, 38, 13, 3100, 0.060},
		// The prompt's files are looked at again (9 HEADs), the agents
		// (by the ws and step functions) and skills (global and the
		// agent's) listed (4 LISTs).
		"stateful (WebSocket), after a quiet minute": {0, 24, 14, 38, 13, 3100, 0.084},
		// load_skill trusts the catalog's listing; the prompt is built
		// again after the tool ran (9 HEADs, the agent's skills listed).
		"stateful, one tool call (WebSocket)": {0, 38, 11, 59, 24, 4700, 0.098},
		// The request polls the run while it streams: its reads depend
		// on the time the model takes.
		"stateful (API, session key)": {0, 110, 0, 53, 65, 3300, 0.074},
		// The outbox item of the reply (with the text, in gsi1) is
		// written by the commit that ends the run, claimed and marked
		// sent; the update is marked seen. The
		// telegram function's listing of the agents is the once a minute
		// one (the harness's clock moved on a minute above).
		"stateful (Telegram)":                {0, 26, 2, 54, 10, 3300, 0.062},
		"Telegram delivers the update again": {0, 3, 0, 0, 2, 500, 0.007},
		// The firing's claim and record, the turn, memory's record of
		// it, and the reply's outbox item.
		"check-in (a job's firing, to Telegram)": {0, 35, 0, 60, 16, 3500, 0.059},
		// Refused at the claim: the run is done.
		"the firing delivered again": {0, 4, 0, 0, 4, 700, 0.005},
		// As to Telegram, with a Query of the user's connections and a
		// post instead of the outbox item.
		"check-in (a job's firing, to WebSocket)": {0, 32, 0, 48, 16, 3500, 0.055},
		// HEARTBEAT.md is looked for (a HEAD) after the agents are listed.
		"idle heartbeat (skipped)": {0, 10, 3, 6, 6, 700, 0.014},
	}
	// Every metric and label value emitted every hour of a month: the
	// monthly figure of tests/cost/README.md.
	if possible > 32 {
		t.Errorf("%d custom metrics possible, want at most 32 ($9.60 a month)", possible)
	}
	for _, u := range turns {
		b := bounds[u.name]
		if u.executions != b.executions || u.transitions != 0 {
			t.Errorf("%s: %d executions, %d transitions; want none", u.name, u.executions, u.transitions)
		}
		if u.dynamoRequests() > b.dynamo || u.wru > b.wru || u.rru > b.rru {
			t.Errorf("%s: %d DynamoDB requests, %.1f WRU, %.1f RRU; want at most %d, %.0f, %.0f", u.name, u.dynamoRequests(), u.wru, u.rru, b.dynamo, b.wru, b.rru)
		}
		if u.s3Reads+u.s3Writes > b.s3 {
			t.Errorf("%s: %d S3 requests, want at most %d", u.name, u.s3Reads+u.s3Writes, b.s3)
		}
		if u.logBytes > b.logs {
			t.Errorf("%s: %d bytes of logs, want at most %d", u.name, u.logBytes, b.logs)
		}
		// With tracing=active, the step function's invocation carries its
		// caller's trace on: one trace a turn.
		if u.traces != 1 {
			t.Errorf("%s: %d X-Ray traces with tracing=active, want 1", u.name, u.traces)
		}
		if u.total(false) > b.total {
			t.Errorf("%s: $%.4f per 1,000 turns, want at most $%.3f", u.name, u.total(false), b.total)
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
