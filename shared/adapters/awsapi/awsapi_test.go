package awsapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	keyID  = "AKIDEXAMPLE"
	secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	token  = "session-token"
)

func testConfig(region string) aws.Config {
	return aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider(keyID, secret, token)}
}

// newTest returns a client of svc on srv that retries without waiting,
// recording the backoff's attempts in waits.
func newTest(t *testing.T, svc Service, url string, waits *[]int) *Client {
	t.Helper()
	c, err := newClient(testConfig("eu-west-1"), svc, url)
	if err != nil {
		t.Fatal(err)
	}
	c.backoff = func(attempt int, _ error) (time.Duration, error) {
		if waits != nil {
			*waits = append(*waits, attempt)
		}
		return 0, nil
	}
	return c
}

var authHeader = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$`)

// verify recomputes the SigV4 signature of r, independently of the SDK's
// signer, and returns what is wrong with it ("" when nothing).
func verify(r *http.Request, body []byte, wantService, wantRegion string) string {
	m := authHeader.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		return "no SigV4 Authorization header: " + r.Header.Get("Authorization")
	}
	id, date, region, service, signed, sig := m[1], m[2], m[3], m[4], strings.Split(m[5], ";"), m[6]
	if id != keyID || region != wantRegion || service != wantService {
		return fmt.Sprintf("scope %s/%s/%s, want %s/%s/%s", id, region, service, keyID, wantRegion, wantService)
	}
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-date") || !slices.Contains(signed, "x-amz-security-token") {
		return "signed headers " + m[5] + " lack host, x-amz-date or x-amz-security-token"
	}
	if r.Header.Get("X-Amz-Security-Token") != token {
		return "no session token"
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if !strings.HasPrefix(amzDate, date) {
		return "X-Amz-Date " + amzDate + " is not of " + date
	}
	var headers strings.Builder
	for _, h := range signed {
		v := r.Header.Get(h)
		if h == "host" {
			v = r.Host
		}
		fmt.Fprintf(&headers, "%s:%s\n", h, strings.Join(strings.Fields(v), " "))
	}
	sum := sha256.Sum256(body)
	// Services other than S3 sign the path escaped once more; S3 signs
	// the hash of the payload it is sent in X-Amz-Content-Sha256.
	path := escapePath(r.URL.EscapedPath())
	if service == "s3" {
		path = r.URL.EscapedPath()
		if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(sum[:]) || !slices.Contains(signed, "x-amz-content-sha256") {
			return "X-Amz-Content-Sha256 " + got + " is not the payload's hash, or not signed"
		}
	}
	canonical := strings.Join([]string{r.Method, path, canonicalQuery(r.URL.Query()),
		headers.String(), m[5], hex.EncodeToString(sum[:])}, "\n")
	reqSum := sha256.Sum256([]byte(canonical))
	scope := date + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(reqSum[:])
	key := []byte("AWS4" + secret)
	for _, part := range []string{date, region, service, "aws4_request"} {
		key = hmacSum(key, part)
	}
	if want := hex.EncodeToString(hmacSum(key, toSign)); sig != want {
		return "signature " + sig + ", recomputed " + want + " over\n" + canonical
	}
	return ""
}

func hmacSum(key []byte, s string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return h.Sum(nil)
}

// canonicalQuery is the query of SigV4's canonical request: sorted,
// every byte but the unreserved ones escaped (a space as %20).
func canonicalQuery(q url.Values) string {
	var pairs []string
	for k, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, escape(k, false)+"="+escape(v, false))
		}
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

func escapePath(p string) string { return escape(p, true) }

func escape(p string, path bool) string {
	var b strings.Builder
	for i := range len(p) {
		if ch := p[i]; ch == '/' && path || strings.IndexByte("-_.~", ch) >= 0 || 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// TestSigned checks each protocol's request against a signature
// recomputed by the server: awsJson, restJson1 with an ARN in the path
// (escaped twice in the canonical request), a GET without body, and the
// query protocol.
func TestSigned(t *testing.T) {
	type seen struct{ method, path, query, target, contentType, body, problem string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		service := map[string]string{"AWSStepFunctions.StartExecution": "states"}[r.Header.Get("X-Amz-Target")]
		switch {
		case strings.HasPrefix(r.URL.Path, "/20"):
			service = "lambda"
		case strings.HasPrefix(r.URL.Path, "/schedules/"):
			service = "scheduler"
		case r.Header.Get("X-Amz-Target") == "":
			service = "cloudformation"
		}
		mu.Lock()
		query := r.URL.Query()
		if len(query["clientToken"]) == 1 && len(query.Get("clientToken")) == 36 {
			query.Set("clientToken", "<a UUID>")
		}
		got = append(got, seen{r.Method, r.URL.EscapedPath(), query.Encode(), r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"), string(body), verify(r, body, service, "eu-west-1")})
		mu.Unlock()
		switch service {
		case "scheduler":
		case "states":
			fmt.Fprint(w, `{"executionArn":"arn:aws:states:eu-west-1:123456789012:execution:m:run-1","startDate":1.7e9}`)
		case "lambda":
			fmt.Fprint(w, `{"AccountLimit":{"ConcurrentExecutions":1000,"UnreservedConcurrentExecutions":900},"Environment":{"Variables":{"A":"b"}}}`)
		default:
			fmt.Fprint(w, `<DescribeStacksResponse><DescribeStacksResult><Stacks><member><StackName>s</StackName><StackStatus>UPDATE_COMPLETE</StackStatus>`+
				`<Outputs><member><OutputKey>TableName</OutputKey><OutputValue>t</OutputValue></member></Outputs></member></Stacks></DescribeStacksResult></DescribeStacksResponse>`)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	cfg := testConfig("eu-west-1")
	sf, err := NewStepFunctions(cfg, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	arn, err := sf.StartExecution(ctx, "arn:aws:states:eu-west-1:123456789012:stateMachine:m", "run-1", `{"step":"think"}`)
	if err != nil || arn != "arn:aws:states:eu-west-1:123456789012:execution:m:run-1" {
		t.Errorf("StartExecution: %q, %v", arn, err)
	}
	fn, err := NewLambda(cfg, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn.InvokeAsync(ctx, "arn:aws:lambda:eu-west-1:123456789012:function:step", []byte(`{"a":1}`)); err != nil {
		t.Error(err)
	}
	if env, err := fn.GetFunctionEnvironment(ctx, "stack-step"); err != nil || env["A"] != "b" {
		t.Errorf("GetFunctionEnvironment: %v, %v", env, err)
	}
	cf, err := NewCloudFormation(cfg, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	stacks, err := cf.DescribeStacks(ctx, "Lambdaclaw")
	if err != nil || len(stacks) != 1 || stacks[0].StackStatus != "UPDATE_COMPLETE" || stacks[0].Outputs[0].OutputValue != "t" {
		t.Errorf("DescribeStacks: %+v, %v", stacks, err)
	}
	sch, err := NewScheduler(cfg, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.DeleteSchedule(ctx, "lambdaclaw group", "job_1"); err != nil {
		t.Error(err)
	}
	want := []seen{
		{"POST", "/", "", "AWSStepFunctions.StartExecution", "application/x-amz-json-1.0",
			`{"input":"{\"step\":\"think\"}","name":"run-1","stateMachineArn":"arn:aws:states:eu-west-1:123456789012:stateMachine:m"}`, ""},
		{"POST", "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aeu-west-1%3A123456789012%3Afunction%3Astep/invocations", "", "", "application/octet-stream", `{"a":1}`, ""},
		{"GET", "/2015-03-31/functions/stack-step/configuration", "", "", "", "", ""},
		{"POST", "/", "", "", "application/x-www-form-urlencoded; charset=utf-8", "Action=DescribeStacks&StackName=Lambdaclaw&Version=2010-05-15", ""},
		{"DELETE", "/schedules/job_1", "clientToken=%3Ca+UUID%3E&groupName=lambdaclaw+group", "", "", "", ""},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// TestSignatureRefusedWhenWrong checks the server's check itself: a
// request signed with another secret fails it.
func TestSignatureRefusedWhenWrong(t *testing.T) {
	var problem string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		problem = verify(r, body, "states", "eu-west-1")
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	cfg := testConfig("eu-west-1")
	cfg.Credentials = credentials.NewStaticCredentialsProvider(keyID, "another secret", token)
	sf, err := NewStepFunctions(cfg, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := sf.SendTaskSuccess(context.Background(), "tok", "{}"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(problem, "signature ") {
		t.Errorf("a wrong secret's signature passed the check: %q", problem)
	}
}

// TestErrors maps each protocol's error answers to an *Error keeping
// the service's code.
func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		svc    Service
		status int
		header map[string]string
		body   string
		want   Error
	}{
		{"awsJson __type with a namespace", stepFunctions, 400, nil,
			`{"__type":"com.amazonaws.swf.service.v2.model#ExecutionAlreadyExists","message":"Execution Already Exists: 'arn:x'"}`,
			Error{Service: "SFN", Operation: "Op", Status: 400, Code: "ExecutionAlreadyExists", Message: "Execution Already Exists: 'arn:x'"}},
		{"awsJson header first", secretsService, 400, map[string]string{"X-Amzn-Errortype": "ResourceNotFoundException:http://internal.amazon.com/coral/com.amazonaws.secretsmanager/", "X-Amzn-Requestid": "req-7"},
			`{"__type":"Other","Message":"Secrets Manager can't find the specified secret."}`,
			Error{Service: "Secrets Manager", Operation: "Op", Status: 400, Code: "ResourceNotFoundException", Message: "Secrets Manager can't find the specified secret.", RequestID: "req-7"}},
		{"restJson1", lambdaService, 404, map[string]string{"X-Amzn-Errortype": "ResourceNotFoundException"},
			`{"Type":"User","message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:x"}`,
			Error{Service: "Lambda", Operation: "Op", Status: 404, Code: "ResourceNotFoundException", Message: "Function not found: arn:aws:lambda:us-east-1:123456789012:function:x"}},
		{"query", cloudFormation, 400, nil,
			`<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type><Code>ValidationError</Code>` +
				`<Message>Stack with id X does not exist</Message></Error><RequestId>req-9</RequestId></ErrorResponse>`,
			Error{Service: "CloudFormation", Operation: "Op", Status: 400, Code: "ValidationError", Message: "Stack with id X does not exist", RequestID: "req-9"}},
		{"query compatible", sqsService, 400, map[string]string{"X-Amzn-Query-Error": "AWS.SimpleQueueService.NonExistentQueue;Sender"},
			`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`,
			Error{Service: "SQS", Operation: "Op", Status: 400, Code: "AWS.SimpleQueueService.NonExistentQueue", Message: "The specified queue does not exist."}},
		{"restXml", s3Service, 404, map[string]string{"X-Amz-Request-Id": "req-3"},
			`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>a.md</Key></Error>`,
			Error{Service: "S3", Operation: "Op", Status: 404, Code: "NoSuchKey", Message: "The specified key does not exist.", RequestID: "req-3"}},
		{"restXml without a body", s3Service, 404, nil, ``,
			Error{Service: "S3", Operation: "Op", Status: 404, Code: "NotFound"}},
		{"no code: the status", stepFunctions, 403, nil, `<html>Forbidden</html>`,
			Error{Service: "SFN", Operation: "Op", Status: 403, Code: "Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			c := newTest(t, tc.svc, srv.URL, nil)
			_, err := c.do(context.Background(), request{op: "Op", method: http.MethodPost, path: "/"})
			got, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("error %v, want an *Error", err)
			}
			if diff := cmp.Diff(tc.want, *got, cmpopts.IgnoreFields(Error{}, "Header", "Body")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if string(got.Body) != tc.body {
				t.Errorf("error's Body %q, want the answer's %q", got.Body, tc.body)
			}
			if got.Header.Get("Content-Length") == "" || Status(err) != tc.status {
				t.Errorf("error without the answer's header (%v) or status (%d)", got.Header, Status(err))
			}
			if !HasCode(fmt.Errorf("wrapped: %w", err), tc.want.Code) || Code(err) != tc.want.Code {
				t.Errorf("Code(%v) = %q, want %q", err, Code(err), tc.want.Code)
			}
		})
	}
	if Code(errors.New("not AWS's")) != "" || HasCode(nil, "") {
		t.Error("an error of no service has a code")
	}
}

// TestRetry retries throttling, 5xx and broken connections as the SDK's
// standard retryer does, up to three attempts, and nothing else.
func TestRetry(t *testing.T) {
	throttled := func(w http.ResponseWriter) {
		w.WriteHeader(400)
		fmt.Fprint(w, `{"__type":"ThrottlingException","message":"Rate exceeded"}`)
	}
	for _, tc := range []struct {
		name    string
		answers []func(w http.ResponseWriter)
		// calls is how many requests were made; code the error's, "" for
		// none; waits the attempts after which the backoff was asked.
		calls int
		code  string
		waits []int
	}{
		{"429 then ok", []func(http.ResponseWriter){status(429), ok}, 2, "", []int{1}},
		{"500, 503, then ok", []func(http.ResponseWriter){status(500), status(503), ok}, 3, "", []int{1, 2}},
		{"ThrottlingException then ok", []func(http.ResponseWriter){throttled, ok}, 2, "", []int{1}},
		{"a broken connection then ok", []func(http.ResponseWriter){hangUp, ok}, 2, "", []int{1}},
		{"503 three times", []func(http.ResponseWriter){status(503), status(503), status(503), ok}, 3, "ServiceUnavailable", []int{1, 2}},
		{"a client error is not retried", []func(http.ResponseWriter){func(w http.ResponseWriter) {
			w.WriteHeader(400)
			fmt.Fprint(w, `{"__type":"ValidationException"}`)
		}, ok}, 1, "ValidationException", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				n := len(bodies)
				problem := verify(r, body, "states", "eu-west-1")
				bodies = append(bodies, string(body)+problem)
				mu.Unlock()
				tc.answers[n](w)
			}))
			defer srv.Close()
			var waits []int
			c := newTest(t, stepFunctions, srv.URL, &waits)
			err := c.callJSON(context.Background(), "SendTaskSuccess", map[string]string{"taskToken": "t", "output": "{}"}, nil)
			if Code(err) != tc.code || (tc.code == "" && err != nil) {
				t.Errorf("error %v, want code %q", err, tc.code)
			}
			want := slices.Repeat([]string{`{"output":"{}","taskToken":"t"}`}, tc.calls)
			if diff := cmp.Diff(want, bodies); diff != "" {
				t.Errorf("requests, each signed again (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.waits, waits); diff != "" {
				t.Errorf("backoffs (-want +got):\n%s", diff)
			}
		})
	}
}

func status(code int) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { w.WriteHeader(code) }
}

func ok(w http.ResponseWriter) { fmt.Fprint(w, `{}`) }

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// TestRetryStopsWithContext: a canceled context ends the waits.
func TestRetryStopsWithContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	c := newTest(t, stepFunctions, srv.URL, nil)
	ctx, cancel := context.WithCancel(context.Background())
	c.backoff = func(int, error) (time.Duration, error) {
		cancel()
		return time.Hour, nil
	}
	err := c.callJSON(ctx, "SendTaskSuccess", map[string]string{}, nil)
	if !errors.Is(err, context.Canceled) || Code(err) != "ServiceUnavailable" {
		t.Errorf("error %v, want the 503 and the context's cancellation", err)
	}
}

// TestBodyBound refuses an answer larger than the bound, without a retry.
func TestBodyBound(t *testing.T) {
	const bound = 1024
	var calls int
	size := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		fmt.Fprintf(w, `"%s"`, strings.Repeat("x", size-2))
	}))
	defer srv.Close()
	c := newTest(t, stepFunctions, srv.URL, nil)
	c.maxBody = bound
	var out string
	size = bound
	if err := c.callJSON(context.Background(), "Op", map[string]string{}, &out); err != nil || len(out) != bound-2 {
		t.Errorf("an answer of the bound: %d bytes, %v", len(out), err)
	}
	size, calls = bound+1, 0
	err := c.callJSON(context.Background(), "Op", map[string]string{}, &out)
	big, ok := errors.AsType[*TooLargeError](err)
	if !ok || big.Limit != bound || big.Status != http.StatusOK || !strings.Contains(err.Error(), "larger than 1024 bytes") || calls != 1 {
		t.Errorf("an answer over the bound: %v after %d calls, want a *TooLargeError after 1", err, calls)
	}
}

// TestEndpoint resolves the endpoint: an override, the configuration's
// BaseEndpoint (AWS_ENDPOINT_URL), or the Region's.
func TestEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name, region, base, override, want, err string
	}{
		{"the Region's", "eu-west-1", "", "", "https://states.eu-west-1.amazonaws.com", ""},
		{"China", "cn-north-1", "", "", "https://states.cn-north-1.amazonaws.com.cn", ""},
		{"AWS_ENDPOINT_URL", "eu-west-1", "http://localhost:4566", "", "http://localhost:4566", ""},
		{"an override first", "eu-west-1", "http://localhost:4566", "http://127.0.0.1:9/sfn", "http://127.0.0.1:9/sfn", ""},
		{"no Region", "", "", "", "", "SFN: no AWS Region"},
		{"no URL", "eu-west-1", "", "localhost:9", "", `SFN: endpoint "localhost:9" is not an http(s) URL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.region)
			if tc.base != "" {
				cfg.BaseEndpoint = aws.String(tc.base)
			}
			c, err := newClient(cfg, stepFunctions, tc.override)
			got := ""
			if err == nil {
				got = c.endpoint.String()
			}
			if got != tc.want || fmt.Sprint(err) != cmpErr(tc.err) {
				t.Errorf("endpoint %q, %v; want %q, %s", got, err, tc.want, cmpErr(tc.err))
			}
		})
	}
}

func cmpErr(s string) string {
	if s == "" {
		return "<nil>"
	}
	return s
}

// TestTraceOn carries a Lambda invocation's trace on, as the SDK does,
// and nothing outside Lambda.
func TestTraceOn(t *testing.T) {
	for _, tc := range []struct {
		name, function, trace, want string
	}{
		{"in Lambda", "Lambdaclaw-api", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
			"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"},
		{"escaped", "Lambdaclaw-api", "Root=1 é", "Root=1%20%C3%A9"},
		{"not in Lambda", "", "Root=1-5759e988-bd862e3fe1be46a994272793", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.function != "" {
				t.Setenv("AWS_LAMBDA_FUNCTION_NAME", tc.function)
			}
			t.Setenv("_X_AMZN_TRACE_ID", tc.trace)
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Get("X-Amzn-Trace-Id")
				body, _ := io.ReadAll(r.Body)
				if p := verify(r, body, "lambda", "eu-west-1"); p != "" {
					t.Error(p)
				}
				w.WriteHeader(http.StatusAccepted)
			}))
			defer srv.Close()
			fn, err := NewLambda(testConfig("eu-west-1"), srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if err := fn.InvokeAsync(context.Background(), "step", []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("X-Amzn-Trace-Id %q, want %q", got, tc.want)
			}
		})
	}
}

// TestDynamoDBRetries: DynamoDB's throttling is retried, as is an answer
// whose body is not the CRC32 it came with; a right CRC32 is taken.
func TestDynamoDBRetries(t *testing.T) {
	good := `{"Item":{"pk":{"S":"a"}}}`
	sum := strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(good))), 10)
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.Header.Get("X-Amz-Target") != "DynamoDB_20120810.GetItem" || r.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
			t.Errorf("target %q, content type %q", r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"))
		}
		switch calls {
		case 1:
			w.WriteHeader(400)
			fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"slow down"}`)
		case 2:
			w.Header().Set("X-Amz-Crc32", sum)
			fmt.Fprint(w, `{"Item":{"pk":{"S":"b"}}}`) // damaged on its way
		default:
			w.Header().Set("X-Amz-Crc32", sum)
			fmt.Fprint(w, good)
		}
	}))
	defer srv.Close()
	var waits []int
	d := &JSON{newTest(t, dynamoDB, srv.URL, &waits)}
	var out json.RawMessage
	if err := d.Call(t.Context(), "GetItem", map[string]string{"TableName": "t"}, &out); err != nil {
		t.Fatal(err)
	}
	if string(out) != good || calls != 3 || !slices.Equal(waits, []int{1, 2}) {
		t.Errorf("answer %s after %d calls, waits %v; want %s after 3, waits [1 2]", out, calls, waits, good)
	}
}
