package cloudtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// RunFunction is the name of the step function the inline driver invokes
// (RUN_FUNCTION), as the stack names it.
const RunFunction = "Lambdaclaw-step"

// maxEventPayload is Lambda's limit of an asynchronous invocation's
// payload (256 KB).
const maxEventPayload = 256 * 1024

// maxSyncPayload is Lambda's limit of a synchronous invocation's payload
// (6 MB).
const maxSyncPayload = 6 * 1024 * 1024

// Lambda is a fake of the Lambda Invoke API (REST JSON: POST
// /2015-03-31/functions/<name>/invocations) for asynchronous invocations
// (X-Amz-Invocation-Type: Event) of RunFunction: 202 with no body, or the
// errors Lambda answers (ResourceNotFoundException 404 for another
// function, InvalidRequestContentException 400 for a payload that is no
// JSON, RequestTooLargeException 413 over 256 KB,
// InvalidParameterValueException 400 for another invocation type). Like
// Lambda, it runs a queued event with the handler Play set, and runs it
// again after an error, twice at most (the attempts of one delivery),
// then sends it to the on-failure destination OnFailure set.
// It also runs synchronous invocations (RequestResponse, the default) of
// the functions Serve names: 200 with the handler's JSON result, or with
// X-Amz-Function-Error: Unhandled and {"errorMessage","errorType"} when
// it fails. For `lambdaclaw doctor --stack` it answers GetAccountSettings
// (SetAccount's limits, Lambda's default 1,000 until then) and
// GetFunctionConfiguration (the environment Configure gives a function;
// ResourceNotFoundException for another). A request the service's model
// refuses (awsmodel) is answered ValidationException, and fails the test.
type Lambda struct {
	URL string

	t     testing.TB
	model *awsmodel.Model
	ctx   context.Context
	wg    sync.WaitGroup
	mu    sync.Mutex
	run   StepHandler
	// beforeRetry runs before an attempt that retries one that failed.
	beforeRetry func()
	deliveries  []*Delivery
	cancels     map[*Delivery]context.CancelFunc
	functions   map[string]func(context.Context, json.RawMessage) (any, error)
	account     AccountLimit
	envs        map[string]map[string]string
	// onFailure receives the events whose attempts all failed.
	onFailure *SQS
}

// AccountLimit is the account's concurrency as GetAccountSettings
// reports it: its limit, and what reserved concurrency leaves of it.
type AccountLimit struct {
	ConcurrentExecutions, UnreservedConcurrentExecutions int
}

// SetAccount sets what GetAccountSettings answers.
func (f *Lambda) SetAccount(l AccountLimit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.account = l
}

// Configure makes GetFunctionConfiguration of the function name answer
// with env as its environment variables.
func (f *Lambda) Configure(name string, env map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.envs[name] = env
}

// OnFailure makes q the on-failure destination of the asynchronous
// invocations, as the stack configures RunFailures: an event whose
// attempts all failed is sent there as Lambda's invocation record.
func (f *Lambda) OnFailure(q *SQS) {
	f.mu.Lock()
	f.onFailure = q
	f.mu.Unlock()
}

// failed sends the invocation record of d, whose attempts all failed with
// the last error msg, to the on-failure destination.
func (f *Lambda) failed(d *Delivery, msg string) {
	f.mu.Lock()
	q, attempts := f.onFailure, len(d.Errors)
	f.mu.Unlock()
	if q == nil {
		return
	}
	record, err := json.Marshal(map[string]any{
		"version": "1.0", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"requestContext": map[string]any{"requestId": "fake-request", "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:" + RunFunction + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": attempts},
		"requestPayload":  d.Payload,
		"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
		"responsePayload": map[string]string{"errorMessage": msg, "errorType": "wrapError"},
	})
	if err != nil {
		f.t.Error(err)
		return
	}
	q.Send(string(record))
}

// Serve makes the fake answer synchronous invocations of the function
// name (a name or an ARN, as the caller names it) with handler.
func (f *Lambda) Serve(name string, handler func(context.Context, json.RawMessage) (any, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.functions[name] = handler
}

// Delivery is one event Lambda queued, with its attempts.
type Delivery struct {
	Payload json.RawMessage
	// Errors are the attempts' errors, "" for one that succeeded.
	Errors []string
	done   chan struct{}
}

// Wait waits until the delivery has run its attempts.
func (d *Delivery) Wait() { <-d.done }

// NewLambda starts the fake; it stops, and waits for the invocations it
// runs, when the test ends.
func NewLambda(t testing.TB) *Lambda {
	ctx, cancel := context.WithCancel(context.Background())
	f := &Lambda{t: t, model: awsmodel.Load(t, "lambda"), ctx: ctx, cancels: map[*Delivery]context.CancelFunc{}, functions: map[string]func(context.Context, json.RawMessage) (any, error){},
		account: AccountLimit{1000, 1000}, envs: map[string]map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = srv.URL
	t.Cleanup(func() {
		cancel()
		f.wg.Wait()
		srv.Close()
	})
	return f
}

// Play makes the fake run the events queued from now on with run, as
// Lambda invokes the function; beforeRetry, when not nil, runs before each
// retry of a failed attempt (Lambda waits a minute and more: a test
// advances its clock there).
func (f *Lambda) Play(run StepHandler, beforeRetry func()) {
	f.mu.Lock()
	f.run, f.beforeRetry = run, beforeRetry
	f.mu.Unlock()
}

// Deliveries returns the events queued so far, in order.
func (f *Lambda) Deliveries() []*Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Delivery(nil), f.deliveries...)
}

// Deliver queues payload once more, as Lambda's at-least-once delivery
// may, and returns the delivery.
func (f *Lambda) Deliver(payload json.RawMessage) *Delivery {
	d := &Delivery{Payload: payload, done: make(chan struct{})}
	f.mu.Lock()
	f.deliveries = append(f.deliveries, d)
	run, retry := f.run, f.beforeRetry
	f.mu.Unlock()
	if run == nil {
		close(d.done)
		return d
	}
	f.wg.Go(func() { f.attempts(d, run, retry) })
	return d
}

// Kill ends the attempts running now as Lambda ends an invocation that
// times out or crashes: their context is canceled, and the delivery is
// retried.
func (f *Lambda) Kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, cancel := range f.cancels {
		cancel()
	}
}

// Wait waits until every delivery so far has run its attempts.
func (f *Lambda) Wait() {
	for _, d := range f.Deliveries() {
		d.Wait()
	}
}

func (f *Lambda) attempts(d *Delivery, run StepHandler, beforeRetry func()) {
	defer close(d.done)
	var ev sfn.Event
	if err := json.Unmarshal(d.Payload, &ev); err != nil {
		f.mu.Lock()
		d.Errors = append(d.Errors, "Runtime.Unmarshal: "+err.Error())
		f.mu.Unlock()
		return
	}
	for attempt := range 3 {
		if attempt > 0 && beforeRetry != nil {
			beforeRetry()
		}
		ctx, cancel := context.WithCancel(f.ctx)
		f.mu.Lock()
		f.cancels[d] = cancel
		f.mu.Unlock()
		_, err := run(ctx, ev)
		f.mu.Lock()
		delete(f.cancels, d)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		d.Errors = append(d.Errors, msg)
		f.mu.Unlock()
		cancel()
		if err == nil || f.ctx.Err() != nil {
			return
		}
		if attempt == 2 {
			f.failed(d, msg)
		}
	}
}

func (f *Lambda) serve(w http.ResponseWriter, r *http.Request) {
	fail := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", typ)
		w.Header().Set("X-Amzn-Requestid", "fake-request")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSyncPayload+1))
	if err != nil {
		fail(http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	op, in, err := f.model.FromREST(r, "", body)
	if err := refused(f.t, f.model, op, in, err); err != nil {
		fail(http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	switch op {
	case "GetAccountSettings":
		f.mu.Lock()
		l := f.account
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"AccountLimit": map[string]any{"TotalCodeSize": 80530636800, "CodeSizeUnzipped": 262144000, "CodeSizeZipped": 52428800,
				"ConcurrentExecutions": l.ConcurrentExecutions, "UnreservedConcurrentExecutions": l.UnreservedConcurrentExecutions},
			"AccountUsage": map[string]any{"TotalCodeSize": 0, "FunctionCount": 0},
		})
		return
	case "GetFunctionConfiguration":
		name, _ := in["FunctionName"].(string)
		f.mu.Lock()
		env, ok := f.envs[name]
		f.mu.Unlock()
		if !ok {
			fail(http.StatusNotFound, "ResourceNotFoundException", "Function not found: arn:aws:lambda:us-east-1:123456789012:function:"+name)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"FunctionName": name, "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:" + name,
			"Environment": map[string]any{"Variables": env}})
		return
	}
	if op != "Invoke" {
		f.t.Errorf("the fake Lambda does not serve %s", op)
		fail(http.StatusBadRequest, "ValidationException", "the fake does not serve "+op)
		return
	}
	name, _ := in["FunctionName"].(string)
	f.mu.Lock()
	handler := f.functions[name]
	f.mu.Unlock()
	if typ := r.Header.Get("X-Amz-Invocation-Type"); handler != nil && (typ == "" || typ == "RequestResponse") {
		f.invoke(w, r, body, handler)
		return
	}
	if name != RunFunction {
		fail(http.StatusNotFound, "ResourceNotFoundException", "Function not found: arn:aws:lambda:us-east-1:123456789012:function:"+name)
		return
	}
	if typ := r.Header.Get("X-Amz-Invocation-Type"); typ != "Event" {
		fail(http.StatusBadRequest, "InvalidParameterValueException", "the fake runs asynchronous invocations only, not "+typ)
		return
	}
	if len(body) > maxEventPayload {
		fail(http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 262144 bytes for the InvokeFunction operation")
		return
	}
	if !json.Valid(body) {
		fail(http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json")
		return
	}
	f.Deliver(json.RawMessage(body))
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	w.WriteHeader(http.StatusAccepted)
}

// invoke runs a synchronous invocation with handler.
func (f *Lambda) invoke(w http.ResponseWriter, r *http.Request, body []byte, handler func(context.Context, json.RawMessage) (any, error)) {
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case !json.Valid(body):
		w.Header().Set("X-Amzn-Errortype", "InvalidRequestContentException")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": "Could not parse request body into json"})
		return
	case len(body) > maxSyncPayload:
		w.Header().Set("X-Amzn-Errortype", "RequestTooLargeException")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": "Request must be smaller than 6291456 bytes for the InvokeFunction operation"})
		return
	}
	out, err := handler(r.Context(), body)
	if err != nil {
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		w.WriteHeader(http.StatusOK)
		json.NewEncoder(w).Encode(map[string]string{"errorMessage": err.Error(), "errorType": "errorString"})
		return
	}
	w.WriteHeader(http.StatusOK)
	json.NewEncoder(w).Encode(out)
}
