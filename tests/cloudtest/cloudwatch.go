package cloudtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// CloudWatch is a fake of the CloudWatch API for what `lambdaclaw doctor
// --stack` calls: DescribeAlarms, in the Smithy RPC v2 CBOR protocol the
// SDK speaks (POST /service/GraniteServiceVersion20100801/operation/NAME,
// CBOR bodies, the Smithy-Protocol header), filtered by AlarmNamePrefix
// and StateValue as CloudWatch does, one page. It checks that each request
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

const cloudWatchPath = "/service/GraniteServiceVersion20100801/operation/"

func (f *CloudWatch) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v cbor.Map) {
		w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
		w.Header().Set("Content-Type", "application/cbor")
		w.WriteHeader(status)
		w.Write(cbor.Encode(v))
	}
	fail := func(status int, code, msg string) {
		reply(status, cbor.Map{"__type": cbor.String(code), "message": cbor.String(msg)})
	}
	m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || m[2] != "monitoring" {
		fail(http.StatusForbidden, "IncompleteSignature", "Authorization header requires a SigV4 signature for monitoring")
		return
	}
	op, ok := strings.CutPrefix(r.URL.Path, cloudWatchPath)
	if r.Method != http.MethodPost || !ok || r.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" {
		fail(http.StatusBadRequest, "InvalidParameterValue", "want a Smithy RPC v2 CBOR request")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var tree map[string]any
	if err == nil {
		tree, err = awsmodel.FromCBOR(body)
	}
	if err := refused(f.t, f.model, op, tree, err); err != nil {
		fail(http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	if op != "DescribeAlarms" {
		fail(http.StatusBadRequest, "UnknownOperationException", "the fake answers DescribeAlarms only, not "+op)
		return
	}
	prefix, _ := tree["AlarmNamePrefix"].(string)
	state, _ := tree["StateValue"].(string)
	f.mu.Lock()
	var out cbor.List
	for _, a := range f.alarms {
		if strings.HasPrefix(a.Name, prefix) && (state == "" || a.State == state) {
			out = append(out, cbor.Map{
				"AlarmName":             cbor.String(a.Name),
				"AlarmArn":              cbor.String("arn:aws:cloudwatch:us-east-1:123456789012:alarm:" + a.Name),
				"AlarmDescription":      cbor.String(a.Description),
				"StateValue":            cbor.String(a.State),
				"StateReason":           cbor.String(a.Reason),
				"StateUpdatedTimestamp": &cbor.Tag{ID: 1, Value: cbor.Float64(float64(a.Since.UnixMilli()) / 1000)},
			})
		}
	}
	f.mu.Unlock()
	reply(http.StatusOK, cbor.Map{"MetricAlarms": out, "CompositeAlarms": cbor.List{}})
}
