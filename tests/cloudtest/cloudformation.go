package cloudtest

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// CloudFormation is a fake of the CloudFormation API for what the CLI's
// --stack calls: DescribeStacks, in the AWS query protocol the SDK speaks
// (a form-encoded POST, XML answers). An unknown stack is answered as
// CloudFormation does: 400, ValidationError "Stack with id NAME does not
// exist". It checks that each request is signed for the cloudformation
// service and records the Region it was signed for. A request the
// service's model refuses (awsmodel) is answered ValidationError, and
// fails the test.
type CloudFormation struct {
	// URL is the endpoint, as CLOUDFORMATION_ENDPOINT holds it.
	URL string

	t       testing.TB
	model   *awsmodel.Model
	mu      sync.Mutex
	stacks  map[string]Stack
	regions []string
}

// Stack is a stack the fake describes.
type Stack struct {
	// Status is its StackStatus; empty means UPDATE_COMPLETE.
	Status  string
	Outputs map[string]string
}

// NewCloudFormation starts the fake; it stops when the test ends.
func NewCloudFormation(t testing.TB) *CloudFormation {
	f := &CloudFormation{t: t, model: awsmodel.Load(t, "cloudformation"), stacks: map[string]Stack{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Put makes the fake describe the stack name as st.
func (f *CloudFormation) Put(name string, st Stack) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stacks[name] = st
}

// Regions lists the Regions the requests were signed for, in order.
func (f *CloudFormation) Regions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.regions...)
}

// credentialScope is the scope of a SigV4 Authorization header:
// Credential=<key id>/<date>/<region>/<service>/aws4_request.
var credentialScope = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=[^/]+/\d{8}/([^/]+)/([^/]+)/aws4_request,`)

const cfnNamespace = "http://cloudformation.amazonaws.com/doc/2010-05-15/"

type cfnOutput struct {
	OutputKey   string
	OutputValue string
}

type cfnStack struct {
	StackName    string
	StackId      string
	CreationTime string
	StackStatus  string
	Outputs      []cfnOutput `xml:"Outputs>member"`
}

type describeStacksResponse struct {
	XMLName   xml.Name   `xml:"DescribeStacksResponse"`
	Xmlns     string     `xml:"xmlns,attr"`
	Stacks    []cfnStack `xml:"DescribeStacksResult>Stacks>member"`
	RequestID string     `xml:"ResponseMetadata>RequestId"`
}

type cfnError struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

func (f *CloudFormation) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		b, err := xml.Marshal(v)
		if err != nil {
			f.t.Errorf("cloudformation fake: %v", err)
		}
		w.Write(append([]byte(xml.Header), b...))
	}
	fail := func(status int, code, msg string) {
		reply(status, cfnError{Xmlns: cfnNamespace, Type: "Sender", Code: code, Message: msg, RequestID: "req-1"})
	}
	m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil || m[2] != "cloudformation" {
		fail(http.StatusForbidden, "IncompleteSignature", "Authorization header requires a SigV4 signature for cloudformation")
		return
	}
	f.mu.Lock()
	f.regions = append(f.regions, m[1])
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("Version") != "2010-05-15" {
		fail(http.StatusBadRequest, "InvalidParameterValue", "want a form-encoded POST of API version 2010-05-15")
		return
	}
	op, in, err := f.model.FromQuery(r.PostForm)
	if err := refused(f.t, f.model, op, in, err); err != nil {
		fail(http.StatusBadRequest, "ValidationError", err.Error())
		return
	}
	if a := r.PostForm.Get("Action"); a != "DescribeStacks" {
		fail(http.StatusBadRequest, "InvalidAction", "The action "+a+" is not valid for this web service.")
		return
	}
	name := r.PostForm.Get("StackName")
	f.mu.Lock()
	st, ok := f.stacks[name]
	f.mu.Unlock()
	if !ok {
		fail(http.StatusBadRequest, "ValidationError", "Stack with id "+name+" does not exist")
		return
	}
	out := cfnStack{
		StackName: name, StackId: "arn:aws:cloudformation:" + m[1] + ":123456789012:stack/" + name + "/0b0b0b0b-1111-2222-3333-444444444444",
		CreationTime: "2025-01-02T03:04:05.678Z", StackStatus: st.Status,
	}
	if out.StackStatus == "" {
		out.StackStatus = "UPDATE_COMPLETE"
	}
	for k, v := range st.Outputs {
		out.Outputs = append(out.Outputs, cfnOutput{OutputKey: k, OutputValue: v})
	}
	reply(http.StatusOK, describeStacksResponse{Xmlns: cfnNamespace, Stacks: []cfnStack{out}, RequestID: "req-1"})
}
