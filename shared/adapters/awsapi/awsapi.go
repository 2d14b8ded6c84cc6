// Package awsapi is a lean client of the AWS APIs lambdaclaw calls for a
// few operations each: Step Functions, Lambda, SQS, Secrets Manager,
// EventBridge Scheduler, CloudWatch (DescribeAlarms), CloudFormation
// (DescribeStacks), Bedrock Runtime (Converse, ConverseStream,
// InvokeModel), ECS (RunTask, DescribeTasks, StopTask), S3 (the object
// operations of the file port: GetObject, HeadObject, PutObject,
// DeleteObject, DeleteObjects, ListObjectsV2), the API Gateway
// Management API (PostToConnection, DeleteConnection), and DynamoDB and
// DynamoDB Streams, whose operations and types package awsapi/dynamodb
// declares in the SDK's shapes (JSON, NewDynamoDB). The SDK's service
// clients cost some 150–400 KB of code each (Bedrock Runtime's, ECS's
// and S3's more: S3's was 1 MiB of a Lambda bootstrap; and a schema
// table built at init), for one to six operations; this package speaks
// the same wire formats with one client: awsJson 1.0 and 1.1 (a POST of
// JSON naming the operation in X-Amz-Target), restJson1 (Lambda,
// Scheduler, Bedrock Runtime, API Gateway Management), restXml (S3), the
// event-stream framing of a streamed answer (EventStream) and the query
// protocol (CloudFormation), signed with Signature Version 4 by the SDK's
// own signer, with the credentials and Region of an aws.Config.
//
// A request is retried as the SDK's standard retryer does: up to three
// attempts (aws.Config.RetryMaxAttempts when set), on throttling (429 and
// the SDK's throttling codes), on 500, 502, 503 and 504, on the SDK's
// retryable codes and on a failed connection, after the SDK's exponential
// backoff with jitter. A response body larger than MaxBody (or a
// client's own bound) is a *TooLargeError; S3's GetObject is streamed,
// for its caller to bound. A service's error is an *Error that keeps its
// code (Code, HasCode).
package awsapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// MaxBody bounds a response's body. Lambda's synchronous invocations
// answer the largest (6 MB).
const MaxBody = 7 << 20

// protocol is a wire format of AWS's APIs.
type protocol int

const (
	awsJSON protocol = iota
	restJSON
	restXML
	query
)

// Service describes an AWS API: how it is reached, signed and spoken.
type Service struct {
	// Name names it in errors (the SDK's service id).
	Name string
	// Prefix is its endpoint prefix: https://<Prefix>.<region>.amazonaws.com.
	Prefix string
	// Signing is its SigV4 signing name.
	Signing  string
	protocol protocol
	// target is the X-Amz-Target prefix and jsonVersion the content
	// type's version of the awsJson protocols; version is the query
	// protocol's API version.
	target, jsonVersion, version string
	// queryCompatible services (SQS) also say their errors as the query
	// protocol did, in the x-amzn-query-error header.
	queryCompatible bool
	// crc32 services (DynamoDB) send the CRC32 of an answer's body in
	// X-Amz-Crc32, checked when there.
	crc32 bool
	// s3 is signed as S3 wants: the path as sent (not escaped again),
	// the payload's hash in X-Amz-Content-Sha256.
	s3 bool
}

// The services of this package, as their botocore models describe them.
var (
	stepFunctions    = Service{Name: "SFN", Prefix: "states", Signing: "states", protocol: awsJSON, target: "AWSStepFunctions", jsonVersion: "1.0"}
	lambdaService    = Service{Name: "Lambda", Prefix: "lambda", Signing: "lambda", protocol: restJSON}
	sqsService       = Service{Name: "SQS", Prefix: "sqs", Signing: "sqs", protocol: awsJSON, target: "AmazonSQS", jsonVersion: "1.0", queryCompatible: true}
	secretsService   = Service{Name: "Secrets Manager", Prefix: "secretsmanager", Signing: "secretsmanager", protocol: awsJSON, target: "secretsmanager", jsonVersion: "1.1"}
	cloudWatch       = Service{Name: "CloudWatch", Prefix: "monitoring", Signing: "monitoring", protocol: awsJSON, target: "GraniteServiceVersion20100801", jsonVersion: "1.0"}
	schedulerService = Service{Name: "Scheduler", Prefix: "scheduler", Signing: "scheduler", protocol: restJSON}
	cloudFormation   = Service{Name: "CloudFormation", Prefix: "cloudformation", Signing: "cloudformation", protocol: query, version: "2010-05-15"}
)

// Client calls one service in one Region.
type Client struct {
	svc      Service
	region   string
	endpoint *url.URL
	creds    aws.CredentialsProvider
	http     aws.HTTPClient
	signer   *v4.Signer
	attempts int
	// backoff is the wait before attempt n+1 after err.
	backoff func(attempt int, err error) (time.Duration, error)
	now     func() time.Time
	maxBody int64
}

// newClient returns a client of svc with cfg's credentials, Region,
// HTTP client and retry attempts. endpoint, when not empty, overrides
// the service's endpoint (tests); else cfg.BaseEndpoint (AWS_ENDPOINT_URL)
// does; else it is the Region's.
func newClient(cfg aws.Config, svc Service, endpoint string) (*Client, error) {
	raw := endpoint
	if raw == "" {
		raw = aws.ToString(cfg.BaseEndpoint)
	}
	if raw == "" {
		if cfg.Region == "" {
			return nil, fmt.Errorf("%s: no AWS Region", svc.Name)
		}
		raw = "https://" + svc.Prefix + "." + cfg.Region + ".amazonaws.com"
		if strings.HasPrefix(cfg.Region, "cn-") {
			raw += ".cn"
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%s: endpoint %q is not an http(s) URL", svc.Name, raw)
	}
	c := &Client{svc: svc, region: cfg.Region, endpoint: u, creds: cfg.Credentials, http: cfg.HTTPClient,
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = svc.s3 }), attempts: cfg.RetryMaxAttempts, now: time.Now, maxBody: MaxBody,
		backoff: retry.NewExponentialJitterBackoff(retry.DefaultMaxBackoff).BackoffDelay}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	if c.attempts <= 0 {
		c.attempts = retry.DefaultMaxAttempts
	}
	return c, nil
}

// request is one call of an operation.
type request struct {
	op, method string
	// path is the escaped path below the endpoint's, with its query.
	path string
	// host, when not empty, replaces the endpoint's host (an S3
	// bucket's virtual host).
	host   string
	header http.Header
	body   []byte
	// stream leaves a successful answer's body unread, in
	// response.stream, for the caller to read and close.
	stream bool
}

// response is a successful call's answer.
type response struct {
	status int
	header http.Header
	body   []byte
	stream io.ReadCloser
}

// do sends r, signed, and retries it as the SDK's standard retryer does.
func (c *Client) do(ctx context.Context, r request) (*response, error) {
	for attempt := 1; ; attempt++ {
		res, err := c.send(ctx, r)
		if err == nil {
			return res, nil
		}
		if attempt >= c.attempts || ctx.Err() != nil || !retryable(err) {
			return nil, err
		}
		wait, berr := c.backoff(attempt, err)
		if berr != nil {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (gave up retrying: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// send makes one attempt of r: a status of 300 or more is an *Error.
func (c *Client) send(ctx context.Context, r request) (*response, error) {
	if c.creds == nil {
		return nil, fmt.Errorf("%s %s: no AWS credentials", c.svc.Name, r.op)
	}
	endpoint := *c.endpoint
	if r.host != "" {
		endpoint.Host = r.host
	}
	req, err := http.NewRequestWithContext(ctx, r.method, strings.TrimSuffix(endpoint.String(), "/")+r.path, bytes.NewReader(r.body))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.svc.Name, r.op, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	traceOn(req.Header)
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s %s: AWS credentials: %w", c.svc.Name, r.op, err)
	}
	sum := sha256.Sum256(r.body)
	hash := hex.EncodeToString(sum[:])
	if c.svc.s3 {
		req.Header.Set("X-Amz-Content-Sha256", hash)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hash, c.svc.Signing, c.region, c.now().UTC()); err != nil {
		return nil, fmt.Errorf("%s %s: sign: %w", c.svc.Name, r.op, err)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, &connError{err: fmt.Errorf("%s %s: %w", c.svc.Name, r.op, err)}
	}
	if r.stream && res.StatusCode < 300 {
		return &response{status: res.StatusCode, header: res.Header, stream: res.Body}, nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, c.maxBody+1))
	if err != nil {
		return nil, &connError{fmt.Errorf("%s %s: read the response: %w", c.svc.Name, r.op, err), res.StatusCode}
	}
	if int64(len(body)) > c.maxBody {
		return nil, &TooLargeError{Service: c.svc.Name, Operation: r.op, Status: res.StatusCode, Limit: c.maxBody}
	}
	if c.svc.crc32 {
		if err := checkCRC32(c.svc, r.op, res.StatusCode, res.Header.Get("X-Amz-Crc32"), body); err != nil {
			return nil, err
		}
	}
	if res.StatusCode >= 300 {
		return nil, c.svc.decodeError(r.op, res.StatusCode, res.Header, body)
	}
	return &response{status: res.StatusCode, header: res.Header, body: body}, nil
}

// traceOn carries a Lambda invocation's X-Ray trace on to the request
// (X-Amzn-Trace-Id, from _X_AMZN_TRACE_ID), as the SDK does: the
// invocations and executions it starts join the caller's trace, and
// Lambda's recursion detection sees them.
func traceOn(h http.Header) {
	_, inLambda := os.LookupEnv("AWS_LAMBDA_FUNCTION_NAME")
	id, ok := os.LookupEnv("_X_AMZN_TRACE_ID")
	if !inLambda || !ok || h.Get("X-Amzn-Trace-Id") != "" {
		return
	}
	h.Set("X-Amzn-Trace-Id", percentEncode(id, "-=;:+&[]{}\"',"))
}

// connError is a request that got no complete answer: a failed
// connection, retried as the SDK retries it. status is that of an
// answer whose body was cut off.
type connError struct {
	err    error
	status int
}

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// retryable reports whether the SDK's standard retryer retries err.
func retryable(err error) bool {
	if _, ok := errors.AsType[*connError](err); ok {
		return true
	}
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return false
	}
	_, status := retry.DefaultRetryableHTTPStatusCodes[e.Status]
	_, throttle := retry.DefaultThrottleErrorCodes[e.Code]
	_, transient := retry.DefaultRetryableErrorCodes[e.Code]
	return status || throttle || transient || e.Status == http.StatusTooManyRequests
}
