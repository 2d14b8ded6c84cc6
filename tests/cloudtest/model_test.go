package cloudtest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recorder is a test whose errors are recorded, not reported.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func signed(service string) string {
	return "AWS4-HMAC-SHA256 Credential=local/20250101/us-east-1/" + service + "/aws4_request, SignedHeaders=host, Signature=0"
}

// TestFakesRefuseWhatAWSRefuses sends each fake a request its service's
// model refuses: the fake answers 400 naming the member and the rule,
// and fails the test with them.
func TestFakesRefuseWhatAWSRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		start   func(testing.TB) string // the fake's URL
		method  string
		path    string
		header  map[string]string
		body    string
		service string
		rule    string
	}{
		{"Scheduler", func(t testing.TB) string { return NewScheduler(t, nil).URL }, "POST", "/schedules/job-1", nil,
			`{"FlexibleTimeWindow":{"Mode":"OFF"},"ScheduleExpression":"rate(5 minutes)","ScheduleExpressionTimezone":"",` +
				`"Target":{"Arn":"` + SchedulerTargetARN + `","RoleArn":"` + SchedulerRoleARN + `"}}`,
			"scheduler", "CreateSchedule: ScheduleExpressionTimezone: length 0 < min 1"},
		{"ECS", func(t testing.TB) string { return NewECS(t).URL }, "POST", "/",
			map[string]string{"X-Amz-Target": "AmazonEC2ContainerServiceV20141113.RunTask", "Content-Type": "application/x-amz-json-1.1", "Authorization": signed("ecs")},
			`{"cluster":"` + ECSCluster + `","launchType":"FARGATE","count":1}`, "ecs", "RunTask: taskDefinition: required"},
		{"Step Functions", func(t testing.TB) string { return NewSFN(t).URL }, "POST", "/",
			map[string]string{"X-Amz-Target": "AWSStepFunctions.StartExecution", "Content-Type": "application/x-amz-json-1.0"},
			`{"stateMachineArn":"` + StateMachineARN + `","name":"` + strings.Repeat("n", 81) + `","input":"{}"}`,
			"stepfunctions", "StartExecution: name: length 81 > max 80"},
		{"Secrets Manager", func(t testing.TB) string { return NewSecrets(t, nil).URL }, "POST", "/",
			map[string]string{"X-Amz-Target": "secretsmanager.GetSecretValue", "Content-Type": "application/x-amz-json-1.1"},
			`{"SecretId":""}`, "secretsmanager", "GetSecretValue: SecretId: length 0 < min 1"},
		{"API Gateway Management", func(t testing.TB) string { return NewManagement(t).URL }, "POST", "/@connections/conn-1", nil,
			`"` + strings.Repeat("x", 128*1024-1) + `"`, "apigatewaymanagementapi", "PostToConnection: Data: length 131073 > max 131072"},
		{"CloudFormation", func(t testing.TB) string { return NewCloudFormation(t).URL }, "POST", "/",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": signed("cloudformation")},
			"Action=DescribeStacks&Version=2010-05-15&StackName=Lambdaclaw&NextToken=", "cloudformation", "DescribeStacks: NextToken: length 0 < min 1"},
		{"CloudWatch", func(t testing.TB) string { return NewCloudWatch(t).URL }, "POST", "/",
			map[string]string{"X-Amz-Target": "GraniteServiceVersion20100801.DescribeAlarms", "Content-Type": "application/x-amz-json-1.0", "Authorization": signed("monitoring")},
			`{"AlarmNamePrefix":"Lambdaclaw","MaxRecords":0}`, "cloudwatch", "DescribeAlarms: MaxRecords: value 0 < min 1"},
		{"S3", func(t testing.TB) string { u, _ := S3(t); return u }, "POST", "/" + S3Bucket + "?delete",
			map[string]string{"Content-Type": "application/xml", "Authorization": signed("s3")},
			`<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><VersionId>v1</VersionId></Object></Delete>`,
			"s3", "DeleteObjects: Delete.Objects[0].Key: required"},
		{"Lambda", func(t testing.TB) string { return NewLambda(t).URL }, "POST", "/2015-03-31/functions/" + RunFunction + "/invocations",
			map[string]string{"X-Amz-Invocation-Type": "Later"}, `{}`,
			"lambda", `Invoke: InvocationType: "Later" is not one of ["Event" "RequestResponse" "DryRun"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			req, err := http.NewRequest(tc.method, tc.start(rec)+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			op, rest, _ := strings.Cut(tc.rule, ": ")
			member, _, _ := strings.Cut(rest, ": ")
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), op+": "+member+": ") {
				t.Errorf("answer %d %q, want 400 naming %s: %s", resp.StatusCode, body, op, member)
			}
			want := []string{"AWS would refuse this request to " + tc.service + ": " + tc.rule}
			if diff := cmp.Diff(want, rec.Errors()); diff != "" {
				t.Errorf("the test's errors (-want +got):\n%s", diff)
			}
		})
	}
}
