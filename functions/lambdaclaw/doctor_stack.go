package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The checks of `lambdaclaw doctor --stack NAME`: the stack's status and
// outputs, its table, and its CloudWatch alarms. CloudFormation names the
// alarms it creates without a name "<stack>-<logical id>-<suffix>", so the
// stack's alarms are those named with the prefix "<stack>-".

// envCloudWatchEndpoint overrides the CloudWatch endpoint, for tests.
const envCloudWatchEndpoint = "CLOUDWATCH_ENDPOINT"

// maxAlarmPages bounds the DescribeAlarms pages read (100 alarms each).
const maxAlarmPages = 20

// alarmsAPI is the CloudWatch call the alarm check makes.
type alarmsAPI interface {
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// tableAPI is the DynamoDB call the table check makes.
type tableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// stackDoctor checks the stack st names, each AWS call bounded by timeout.
func stackDoctor(ctx context.Context, st *stackFlags, timeout time.Duration) []finding {
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d, err := st.open(octx)
	if err != nil {
		return []finding{{Verdict: fail, Check: "stack", Detail: err.Error(),
			Fix: "check the stack's name and Region (--region, AWS_REGION) and your AWS credentials (aws sts get-caller-identity)"}}
	}
	fs := []finding{stackStatus(d), stackOutputs(d)}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fs = append(fs, checkTable(tctx, d, dynamodb.NewFromConfig(d.aws, func(o *dynamodb.Options) {
		if ep := getenv(envDynamoDBEndpoint); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})))
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fs = append(fs, checkAlarms(actx, d, cloudwatch.NewFromConfig(d.aws, func(o *cloudwatch.Options) {
		if ep := getenv(envCloudWatchEndpoint); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})))
	return fs
}

// stackStatus checks that the stack's last operation completed.
func stackStatus(d *deployment) finding {
	f := finding{Check: "stack", Detail: fmt.Sprintf("%s is %s", d.where(), d.status)}
	switch {
	case strings.HasSuffix(d.status, "_IN_PROGRESS"):
		f.Verdict, f.Fix = fail, "wait for the operation to end (aws cloudformation describe-stack-events --stack-name "+d.name+")"
	case strings.Contains(d.status, "ROLLBACK") || strings.HasSuffix(d.status, "_FAILED"):
		f.Verdict, f.Fix = fail, "read why in the stack's events (aws cloudformation describe-stack-events --stack-name "+d.name+"), fix it and run make deploy again"
	default:
		f.Verdict = pass
	}
	return f
}

// stackOutputs checks that the outputs the commands read are there.
func stackOutputs(d *deployment) finding {
	keys := []string{outTable, outAgents, outWorkspaceBucket}
	if d.telegram() {
		keys = append(keys, outBotToken, outWebhookSecret)
	}
	if err := d.need(keys...); err != nil {
		return finding{Verdict: fail, Check: "outputs", Detail: err.Error(), Fix: "make deploy"}
	}
	return finding{Verdict: pass, Check: "outputs", Detail: strings.Join(keys, ", ") + " present"}
}

// checkTable checks that the stack's table exists and is active.
func checkTable(ctx context.Context, d *deployment, api tableAPI) finding {
	f := finding{Check: "table"}
	name := d.outputs[outTable]
	if name == "" {
		f.Verdict, f.Detail, f.Fix = fail, "the stack has no output "+outTable, "make deploy"
		return f
	}
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if _, ok := errors.AsType[*ddbtypes.ResourceNotFoundException](err); ok {
		f.Verdict, f.Detail = fail, fmt.Sprintf("table %s (output %s) does not exist in %s", name, outTable, d.aws.Region)
		f.Fix = "it was deleted: restore it from a backup under that name, or make deploy to create the stack's resources again"
		return f
	}
	if err != nil {
		f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("table %s: %v", name, err), "check that your credentials may dynamodb:DescribeTable it"
		return f
	}
	status := out.Table.TableStatus
	if status != ddbtypes.TableStatusActive && status != ddbtypes.TableStatusUpdating {
		f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("table %s is %s", name, status), "wait, or read its state in the DynamoDB console"
		return f
	}
	f.Verdict, f.Detail = pass, fmt.Sprintf("table %s is %s", name, status)
	return f
}

// checkAlarms reports the stack's alarms in the ALARM state.
func checkAlarms(ctx context.Context, d *deployment, api alarmsAPI) finding {
	f := finding{Check: "alarms"}
	in := &cloudwatch.DescribeAlarmsInput{
		AlarmNamePrefix: aws.String(d.name + "-"),
		AlarmTypes:      []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm, cwtypes.AlarmTypeCompositeAlarm},
	}
	total := 0
	var firing, advice []string
	for range maxAlarmPages {
		out, err := api.DescribeAlarms(ctx, in)
		if err != nil {
			f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("CloudWatch alarms: %v", err), "check that your credentials may cloudwatch:DescribeAlarms"
			return f
		}
		describe := func(name, reason *string, at *time.Time) string {
			s := aws.ToString(name)
			if at != nil {
				s += " since " + at.UTC().Format(time.RFC3339)
			}
			if r := aws.ToString(reason); r != "" {
				s += " (" + firstLine(r) + ")"
			}
			return s
		}
		// The stack's alarm descriptions say what happened and what to
		// do (infra/alarms.go): they are the fix, with this stack's name
		// in the commands they name.
		advise := func(description *string) {
			desc := strings.ReplaceAll(aws.ToString(description), "<stack name>", d.name)
			if d := strings.TrimPrefix(desc, "lambdaclaw: "); d != "" && !slices.Contains(advice, d) {
				advice = append(advice, d)
			}
		}
		for _, a := range out.MetricAlarms {
			total++
			if a.StateValue == cwtypes.StateValueAlarm {
				firing = append(firing, describe(a.AlarmName, a.StateReason, a.StateUpdatedTimestamp))
				advise(a.AlarmDescription)
			}
		}
		for _, a := range out.CompositeAlarms {
			total++
			if a.StateValue == cwtypes.StateValueAlarm {
				firing = append(firing, describe(a.AlarmName, a.StateReason, a.StateUpdatedTimestamp))
				advise(a.AlarmDescription)
			}
		}
		if in.NextToken = out.NextToken; in.NextToken == nil {
			break
		}
	}
	switch {
	case total == 0:
		f.Verdict, f.Detail = info, "the stack has no alarms named "+d.name+"-… (deployed with alarms off?)"
	case len(firing) > 0:
		f.Verdict = fail
		f.Detail = fmt.Sprintf("%d of %d alarms in ALARM: %s", len(firing), total, strings.Join(firing, "; "))
		f.Fix = "read the failing functions' logs (CloudWatch Logs, /aws/lambda/" + d.name + "-…) and the failed Step Functions executions"
		if len(advice) > 0 {
			f.Fix = strings.Join(advice, "; ")
		}
	default:
		f.Verdict, f.Detail = pass, fmt.Sprintf("none of the stack's %d alarms is in ALARM", total)
	}
	return f
}
