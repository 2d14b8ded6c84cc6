package cloudtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// CloudWatch is a fake of the CloudWatch API for what `lambdaclaw doctor
// --stack` calls: DescribeAlarms, in the awsJson 1.0 protocol
// (awsapi.CloudWatch; CloudWatch speaks it besides the SDK's Smithy RPC
// v2 CBOR and the query protocol), filtered by AlarmNamePrefix and
// StateValue as CloudWatch does, one page. It checks that each request
// is signed for the monitoring service. A request the service's model
// refuses (awsmodel) is answered ValidationError, and fails the test.
type CloudWatch struct {
	// URL is the endpoint, as CLOUDWATCH_ENDPOINT holds it.
	URL string

	t      testing.TB
	model  *awsmodel.Model
	mu     sync.Mutex
	alarms []Alarm
}

// Alarm is a metric alarm the fake describes.
type Alarm struct {
	Name, Description string
	// State is OK, ALARM or INSUFFICIENT_DATA.
	State, Reason string
	Since         time.Time
}

// NewCloudWatch starts the fake; it stops when the test ends.
func NewCloudWatch(t testing.TB) *CloudWatch {
	f := &CloudWatch{t: t, model: awsmodel.Load(t, "cloudwatch")}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Put adds alarms.
func (f *CloudWatch) Put(alarms ...Alarm) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.alarms = append(f.alarms, alarms...)
}

func (f *CloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	a := awsJSON{w: w, contentType: "application/x-amz-json-1.0"}
	m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || m[2] != "monitoring" {
		a.fail(http.StatusForbidden, "IncompleteSignature", "Authorization header requires a SigV4 signature for monitoring")
		return
	}
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		a.fail(http.StatusBadRequest, "InvalidParameterValue", "want an awsJson 1.0 request")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var op string
	var tree map[string]any
	if err == nil {
		op, tree, err = f.model.FromAWSJSON(r.Header.Get("X-Amz-Target"), body)
	}
	if err := refused(f.t, f.model, op, tree, err); err != nil {
		a.fail(http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	if op != "DescribeAlarms" {
		a.fail(http.StatusBadRequest, "UnknownOperationException", "the fake answers DescribeAlarms only, not "+op)
		return
	}
	prefix, _ := tree["AlarmNamePrefix"].(string)
	state, _ := tree["StateValue"].(string)
	f.mu.Lock()
	out := []map[string]any{}
	for _, al := range f.alarms {
		if strings.HasPrefix(al.Name, prefix) && (state == "" || al.State == state) {
			out = append(out, map[string]any{
				"AlarmName":             al.Name,
				"AlarmArn":              "arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + al.Name,
				"AlarmDescription":      al.Description,
				"StateValue":            al.State,
				"StateReason":           al.Reason,
				"StateUpdatedTimestamp": float64(al.Since.UnixMilli()) / 1000,
			})
		}
	}
	f.mu.Unlock()
	a.ok(map[string]any{"MetricAlarms": out, "CompositeAlarms": []any{}})
}
