package awsapi

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// StepFunctions is the Step Functions API (awsJson 1.0).
type StepFunctions struct{ c *Client }

// NewStepFunctions returns a Step Functions client of cfg; endpoint,
// when not empty, overrides the Region's.
func NewStepFunctions(cfg aws.Config, endpoint string) (*StepFunctions, error) {
	c, err := newClient(cfg, stepFunctions, endpoint)
	return &StepFunctions{c}, err
}

// StartExecution starts an execution of machine named name with input
// and returns its ARN. A name used already is ExecutionAlreadyExists.
func (s *StepFunctions) StartExecution(ctx context.Context, machine, name, input string) (string, error) {
	var out struct {
		ExecutionArn string `json:"executionArn"`
	}
	err := s.c.callJSON(ctx, "StartExecution", map[string]string{"stateMachineArn": machine, "name": name, "input": input}, &out)
	return out.ExecutionArn, err
}

// DescribeExecution returns the status of an execution (RUNNING,
// SUCCEEDED, …); an unknown one is ExecutionDoesNotExist.
func (s *StepFunctions) DescribeExecution(ctx context.Context, arn string) (string, error) {
	var out struct {
		Status string `json:"status"`
	}
	err := s.c.callJSON(ctx, "DescribeExecution", map[string]string{"executionArn": arn}, &out)
	return out.Status, err
}

// SendTaskSuccess sends a waiting task on with output; a task that
// waits no more is TaskTimedOut or InvalidToken.
func (s *StepFunctions) SendTaskSuccess(ctx context.Context, token, output string) error {
	return s.c.callJSON(ctx, "SendTaskSuccess", map[string]string{"taskToken": token, "output": output}, nil)
}

// Lambda is the Lambda API (restJson1).
type Lambda struct{ c *Client }

// NewLambda returns a Lambda client of cfg; endpoint, when not empty,
// overrides the Region's.
func NewLambda(cfg aws.Config, endpoint string) (*Lambda, error) {
	c, err := newClient(cfg, lambdaService, endpoint)
	return &Lambda{c}, err
}

// Invocation is the answer of a synchronous invocation.
type Invocation struct {
	// FunctionError is "Unhandled" (or "Handled") when the function
	// failed; Payload is then its error object.
	FunctionError string
	Payload       []byte
}

// Invoke invokes function synchronously with payload and returns its
// answer.
func (l *Lambda) Invoke(ctx context.Context, function string, payload []byte) (*Invocation, error) {
	res, err := l.invoke(ctx, function, "RequestResponse", payload)
	if err != nil {
		return nil, err
	}
	return &Invocation{FunctionError: res.header.Get("X-Amz-Function-Error"), Payload: res.body}, nil
}

// InvokeAsync queues an asynchronous invocation of function with
// payload (the invocation type Event).
func (l *Lambda) InvokeAsync(ctx context.Context, function string, payload []byte) error {
	_, err := l.invoke(ctx, function, "Event", payload)
	return err
}

func (l *Lambda) invoke(ctx context.Context, function, typ string, payload []byte) (*response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Amz-Invocation-Type", typ)
	return l.c.do(ctx, request{op: "Invoke", method: http.MethodPost, path: "/2015-03-31/functions/" + escapeLabel(function) + "/invocations", header: h, body: payload})
}

// AccountLimit is the account's concurrency in the Region.
type AccountLimit struct {
	ConcurrentExecutions           int32
	UnreservedConcurrentExecutions int32
}

// GetAccountSettings returns the account's concurrency limits.
func (l *Lambda) GetAccountSettings(ctx context.Context) (*AccountLimit, error) {
	res, err := l.c.do(ctx, request{op: "GetAccountSettings", method: http.MethodGet, path: "/2016-08-19/account-settings"})
	if err != nil {
		return nil, err
	}
	var out struct{ AccountLimit *AccountLimit }
	if err := l.c.decode("GetAccountSettings", res.body, &out); err != nil {
		return nil, err
	}
	if out.AccountLimit == nil {
		return nil, fmt.Errorf("%s GetAccountSettings: no AccountLimit in the answer", l.c.svc.Name)
	}
	return out.AccountLimit, nil
}

// GetFunctionEnvironment returns the environment variables of
// function's configuration (GetFunctionConfiguration); an unknown
// function is ResourceNotFoundException.
func (l *Lambda) GetFunctionEnvironment(ctx context.Context, function string) (map[string]string, error) {
	const op = "GetFunctionConfiguration"
	res, err := l.c.do(ctx, request{op: op, method: http.MethodGet, path: "/2015-03-31/functions/" + escapeLabel(function) + "/configuration"})
	if err != nil {
		return nil, err
	}
	var out struct {
		Environment struct{ Variables map[string]string }
	}
	err = l.c.decode(op, res.body, &out)
	return out.Environment.Variables, err
}

// SQS is the SQS API (awsJson 1.0).
type SQS struct{ c *Client }

// NewSQS returns an SQS client of cfg; endpoint, when not empty,
// overrides the Region's.
func NewSQS(cfg aws.Config, endpoint string) (*SQS, error) {
	c, err := newClient(cfg, sqsService, endpoint)
	return &SQS{c}, err
}

// Message is a message received.
type Message struct {
	MessageID     string `json:"MessageId"`
	ReceiptHandle string
	Body          string
}

// Receive receives up to max (1–10) messages of the queue, hidden from
// other receivers for hide seconds; it does not wait for messages.
func (q *SQS) Receive(ctx context.Context, queue string, max, hide int) ([]Message, error) {
	var out struct{ Messages []Message }
	err := q.c.callJSON(ctx, "ReceiveMessage", map[string]any{"QueueUrl": queue, "MaxNumberOfMessages": max, "VisibilityTimeout": hide}, &out)
	return out.Messages, err
}

// Entry is a message of a batch: its receipt handle, and the id that
// names it in the answer.
type Entry struct {
	ID, ReceiptHandle string
}

// BatchError is an entry of a batch that failed.
type BatchError struct {
	ID      string `json:"Id"`
	Code    string
	Message string
}

// DeleteBatch deletes up to ten messages and returns the entries that
// failed.
func (q *SQS) DeleteBatch(ctx context.Context, queue string, entries []Entry) ([]BatchError, error) {
	in := make([]map[string]any, len(entries))
	for i, e := range entries {
		in[i] = map[string]any{"Id": e.ID, "ReceiptHandle": e.ReceiptHandle}
	}
	return q.batch(ctx, "DeleteMessageBatch", queue, in)
}

// ShowBatch makes up to ten messages visible again at once
// (ChangeMessageVisibilityBatch to 0) and returns the entries that
// failed.
func (q *SQS) ShowBatch(ctx context.Context, queue string, entries []Entry) ([]BatchError, error) {
	in := make([]map[string]any, len(entries))
	for i, e := range entries {
		in[i] = map[string]any{"Id": e.ID, "ReceiptHandle": e.ReceiptHandle, "VisibilityTimeout": 0}
	}
	return q.batch(ctx, "ChangeMessageVisibilityBatch", queue, in)
}

func (q *SQS) batch(ctx context.Context, op, queue string, entries []map[string]any) ([]BatchError, error) {
	var out struct{ Failed []BatchError }
	err := q.c.callJSON(ctx, op, map[string]any{"QueueUrl": queue, "Entries": entries}, &out)
	return out.Failed, err
}

// SecretsManager is the Secrets Manager API (awsJson 1.1).
type SecretsManager struct{ c *Client }

// NewSecretsManager returns a Secrets Manager client of cfg; endpoint,
// when not empty, overrides the Region's.
func NewSecretsManager(cfg aws.Config, endpoint string) (*SecretsManager, error) {
	c, err := newClient(cfg, secretsService, endpoint)
	return &SecretsManager{c}, err
}

// SecretString returns the current string value of the secret id (an
// ARN or a name).
func (s *SecretsManager) SecretString(ctx context.Context, id string) (string, error) {
	var out struct{ SecretString string }
	err := s.c.callJSON(ctx, "GetSecretValue", map[string]string{"SecretId": id}, &out)
	return out.SecretString, err
}

// PutSecretString stores value as the secret id's new current version.
func (s *SecretsManager) PutSecretString(ctx context.Context, id, value string) error {
	return s.c.callJSON(ctx, "PutSecretValue", map[string]string{"SecretId": id, "SecretString": value}, nil)
}

// SecretSet reports whether the secret id has a current value, and when
// it last changed, without reading the value (DescribeSecret).
func (s *SecretsManager) SecretSet(ctx context.Context, id string) (bool, time.Time, error) {
	var out struct {
		VersionIdsToStages map[string][]string
		LastChangedDate    float64
	}
	if err := s.c.callJSON(ctx, "DescribeSecret", map[string]string{"SecretId": id}, &out); err != nil {
		return false, time.Time{}, err
	}
	for _, stages := range out.VersionIdsToStages {
		if slices.Contains(stages, "AWSCURRENT") {
			sec, frac := math.Modf(out.LastChangedDate)
			return true, time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
		}
	}
	return false, time.Time{}, nil
}

// CloudWatch is the CloudWatch API, in awsJson 1.0 (which it speaks
// besides the SDK's CBOR and the query protocol).
type CloudWatch struct{ c *Client }

// NewCloudWatch returns a CloudWatch client of cfg; endpoint, when not
// empty, overrides the Region's.
func NewCloudWatch(cfg aws.Config, endpoint string) (*CloudWatch, error) {
	c, err := newClient(cfg, cloudWatch, endpoint)
	return &CloudWatch{c}, err
}

// Alarm is a metric or composite alarm.
type Alarm struct {
	AlarmName, AlarmDescription string
	// StateValue is OK, ALARM or INSUFFICIENT_DATA.
	StateValue, StateReason string
	StateUpdatedTimestamp   Time
}

// Alarms is a page of DescribeAlarms.
type Alarms struct {
	MetricAlarms, CompositeAlarms []Alarm
	// NextToken asks for the next page; "" on the last.
	NextToken string
}

// DescribeAlarms returns the page next (after the first, "") of the
// metric and composite alarms whose names start with prefix.
func (w *CloudWatch) DescribeAlarms(ctx context.Context, prefix, next string) (*Alarms, error) {
	in := map[string]any{"AlarmNamePrefix": prefix, "AlarmTypes": []string{"MetricAlarm", "CompositeAlarm"}}
	if next != "" {
		in["NextToken"] = next
	}
	var out Alarms
	err := w.c.callJSON(ctx, "DescribeAlarms", in, &out)
	return &out, err
}

// Time is a timestamp of the awsJson protocols: seconds since the epoch,
// with a fraction.
type Time struct{ time.Time }

// UnmarshalJSON reads seconds since the epoch.
func (t *Time) UnmarshalJSON(b []byte) error {
	var f *float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("a timestamp: %w", err)
	}
	if f != nil {
		sec, frac := math.Modf(*f)
		t.Time = time.Unix(int64(sec), int64(math.Round(frac*1e3))*int64(time.Millisecond))
	}
	return nil
}

// CloudFormation is the CloudFormation API (query protocol).
type CloudFormation struct{ c *Client }

// NewCloudFormation returns a CloudFormation client of cfg; endpoint,
// when not empty, overrides the Region's.
func NewCloudFormation(cfg aws.Config, endpoint string) (*CloudFormation, error) {
	c, err := newClient(cfg, cloudFormation, endpoint)
	return &CloudFormation{c}, err
}

// Stack is a stack described.
type Stack struct {
	StackName, StackStatus string
	Outputs                []struct{ OutputKey, OutputValue string } `xml:"Outputs>member"`
}

// DescribeStacks describes the stack name (a name or a stack id); an
// unknown stack is a ValidationError that says it "does not exist".
func (f *CloudFormation) DescribeStacks(ctx context.Context, name string) ([]Stack, error) {
	var out struct {
		XMLName xml.Name `xml:"DescribeStacksResponse"`
		Stacks  []Stack  `xml:"DescribeStacksResult>Stacks>member"`
	}
	err := f.c.callQuery(ctx, "DescribeStacks", url.Values{"StackName": {name}}, &out)
	return out.Stacks, err
}
