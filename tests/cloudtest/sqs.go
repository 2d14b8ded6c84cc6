package cloudtest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// RunFailuresURL is the URL of the inline runs' dead-letter queue, as the
// stack's output RunFailuresUrl holds it.
const RunFailuresURL = "https://sqs.us-east-1.amazonaws.com/123456789012/Lambdaclaw-RunFailures"

// SQS is a fake of one SQS queue (awsJson1_0), RunFailuresURL, for what
// an operator's tool calls: ReceiveMessage (up to 10 visible messages,
// hidden for their VisibilityTimeout, each with a new receipt handle and
// the system attributes asked for), DeleteMessageBatch and
// ChangeMessageVisibilityBatch (by the latest receipt handle; a stale
// one fails its entry with ReceiptHandleIsInvalid). Another queue is
// QueueDoesNotExist. A request the service's model refuses (awsmodel) is
// answered ValidationException, and fails the test.
type SQS struct {
	URL string

	t     testing.TB
	model *awsmodel.Model
	mu    sync.Mutex
	msgs  []*message
	n     int
}

type message struct {
	id, body, handle string
	sent             time.Time
	visibleAt        time.Time
	receives         int
}

// NewSQS starts the fake; it stops when the test ends.
func NewSQS(t testing.TB) *SQS {
	f := &SQS{t: t, model: awsmodel.Load(t, "sqs")}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Send queues body, as Lambda's on-failure destination does.
func (f *SQS) Send(body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.msgs = append(f.msgs, &message{id: fmt.Sprintf("msg-%d", f.n), body: body, sent: time.Now()})
}

// Bodies returns the bodies of the messages in the queue, visible or not.
func (f *SQS) Bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.msgs {
		out = append(out, m.body)
	}
	return out
}

func (f *SQS) serve(w http.ResponseWriter, r *http.Request) {
	reply := awsJSON{w, "application/x-amz-json-1.0"}
	body, _ := io.ReadAll(r.Body)
	op, in, err := f.model.FromAWSJSON(r.Header.Get("X-Amz-Target"), body)
	if err := refused(f.t, f.model, op, in, err); err != nil {
		reply.fail(http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	var req struct {
		QueueUrl                    string
		MaxNumberOfMessages         int
		VisibilityTimeout           int
		MessageSystemAttributeNames []string
		Entries                     []struct {
			Id, ReceiptHandle string
			VisibilityTimeout int
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		reply.fail(http.StatusBadRequest, "InvalidParameterValue", err.Error())
		return
	}
	if req.QueueUrl != RunFailuresURL {
		reply.fail(http.StatusBadRequest, "QueueDoesNotExist", "The specified queue does not exist.")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	switch op {
	case "ReceiveMessage":
		out := []map[string]any{}
		for _, m := range f.msgs {
			if len(out) == max(req.MaxNumberOfMessages, 1) {
				break
			}
			if m.visibleAt.After(now) {
				continue
			}
			f.n++
			m.receives++
			m.handle = fmt.Sprintf("handle-%d", f.n)
			m.visibleAt = now.Add(time.Duration(req.VisibilityTimeout) * time.Second)
			sum := md5.Sum([]byte(m.body))
			msg := map[string]any{"MessageId": m.id, "ReceiptHandle": m.handle, "MD5OfBody": hex.EncodeToString(sum[:]), "Body": m.body}
			attrs := map[string]string{}
			for _, a := range req.MessageSystemAttributeNames {
				switch a {
				case "All", "ApproximateReceiveCount":
					attrs["ApproximateReceiveCount"] = strconv.Itoa(m.receives)
				}
				if a == "All" || a == "SentTimestamp" {
					attrs["SentTimestamp"] = strconv.FormatInt(m.sent.UnixMilli(), 10)
				}
			}
			if len(attrs) > 0 {
				msg["Attributes"] = attrs
			}
			out = append(out, msg)
		}
		reply.ok(map[string]any{"Messages": out})
	case "DeleteMessageBatch", "ChangeMessageVisibilityBatch":
		ok, failed := []map[string]any{}, []map[string]any{}
		for _, e := range req.Entries {
			i := f.byHandle(e.ReceiptHandle)
			if i < 0 {
				failed = append(failed, map[string]any{"Id": e.Id, "SenderFault": true, "Code": "ReceiptHandleIsInvalid", "Message": "The receipt handle is not valid."})
				continue
			}
			if op == "DeleteMessageBatch" {
				f.msgs = append(f.msgs[:i], f.msgs[i+1:]...)
			} else {
				f.msgs[i].visibleAt = now.Add(time.Duration(e.VisibilityTimeout) * time.Second)
			}
			ok = append(ok, map[string]any{"Id": e.Id})
		}
		reply.ok(map[string]any{"Successful": ok, "Failed": failed})
	default:
		f.t.Errorf("the fake SQS does not serve %s", op)
		reply.fail(http.StatusBadRequest, "UnsupportedOperation", "the fake does not serve "+op)
	}
}

// byHandle returns the index of the message received last with handle,
// or -1.
func (f *SQS) byHandle(handle string) int {
	for i, m := range f.msgs {
		if m.handle == handle {
			return i
		}
	}
	return -1
}
