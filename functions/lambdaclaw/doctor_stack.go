package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// The checks of `lambdaclaw doctor --stack NAME`: the stack's status and
// outputs, its table, its CloudWatch alarms, its Bedrock model and the
// account's Lambda concurrency. CloudFormation names the alarms it creates
// without a name "<stack>-<logical id>-<suffix>", so the stack's alarms
// are those named with the prefix "<stack>-".

const (
	// envCloudWatchEndpoint overrides the CloudWatch endpoint, for tests.
	envCloudWatchEndpoint = "CLOUDWATCH_ENDPOINT"
	// envBedrockEndpoint overrides Bedrock Runtime's, as in the functions.
	envBedrockEndpoint = "BEDROCK_ENDPOINT"
)

// minConcurrency is the account's unreserved Lambda concurrency below
// which the stack is throttled at its default rate: at api_rate 5 a
// second a stateful turn holds two functions (the one that took the
// message and the step function) for some 4 seconds, 40 executions at
// once. New accounts start at 10.
const minConcurrency = 50

// concurrencyQuota is the Service Quotas code of Lambda's "Concurrent
// executions".
const concurrencyQuota = "L-B99A9384"

// maxAlarmPages bounds the DescribeAlarms pages read (100 alarms each).
const maxAlarmPages = 20

// alarmsAPI is the CloudWatch call the alarm check makes.
type alarmsAPI interface {
	DescribeAlarms(ctx context.Context, prefix, next string) (*awsapi.Alarms, error)
}

// functionsAPI is the Lambda calls the concurrency and model checks make.
type functionsAPI interface {
	GetAccountSettings(ctx context.Context) (*awsapi.AccountLimit, error)
	GetFunctionEnvironment(ctx context.Context, function string) (map[string]string, error)
}

// tableAPI is the DynamoDB call the table check makes.
type tableAPI interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput) (*dynamodb.DescribeTableOutput, error)
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
	fs = append(fs, checkTable(tctx, d, dynamodb.NewFromConfig(d.aws, getenv(envDynamoDBEndpoint))))
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cw, err := awsapi.NewCloudWatch(d.aws, getenv(envCloudWatchEndpoint))
	if err != nil {
		return append(fs, finding{Verdict: fail, Check: "alarms", Detail: err.Error(), Fix: "unset " + envCloudWatchEndpoint})
	}
	fs = append(fs, checkAlarms(actx, d, cw))
	fn, err := d.lambda()
	if err != nil {
		return append(fs, finding{Verdict: fail, Check: "model", Detail: err.Error(), Fix: "unset " + envLambdaEndpoint})
	}
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fs = append(fs, checkStackModel(mctx, d, fn, timeout))
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return append(fs, checkConcurrency(cctx, d, fn))
}

// checkStackModel makes a one-token call, as you, to the Bedrock model
// the stack's functions use: BEDROCK_MODEL (and BEDROCK_REGION, else the
// stack's Region) in the environment of its step function.
func checkStackModel(ctx context.Context, d *deployment, api functionsAPI, timeout time.Duration) finding {
	name := d.name + "-step"
	env, err := api.GetFunctionEnvironment(ctx, name)
	if awsapi.HasCode(err, "ResourceNotFoundException") {
		return finding{Verdict: fail, Check: "model", Detail: fmt.Sprintf("the stack has no function %s in %s", name, d.aws.Region), Fix: "make deploy"}
	}
	if err != nil {
		return finding{Verdict: fail, Check: "model", Detail: fmt.Sprintf("function %s: %v", name, err), Fix: "check that your credentials may lambda:GetFunctionConfiguration it"}
	}
	model := env["BEDROCK_MODEL"]
	if model == "" {
		return finding{Verdict: info, Check: "model", Detail: "the functions use no Bedrock model (" + name + " has no BEDROCK_MODEL)"}
	}
	p := config.Provider{Name: "bedrock", Type: config.ProviderBedrock, Model: model, Region: cmp.Or(env["BEDROCK_REGION"], d.aws.Region),
		BaseURL: getenv(envBedrockEndpoint)}
	f := checkBedrock(ctx, p, timeout, "the stack's model (make deploy CDK_FLAGS='-c model=ID')")
	f.Check = "model"
	return f
}

// checkConcurrency warns when the account's unreserved Lambda concurrency
// in the stack's Region is below minConcurrency.
func checkConcurrency(ctx context.Context, d *deployment, api functionsAPI) finding {
	f := finding{Check: "lambda concurrency"}
	l, err := api.GetAccountSettings(ctx)
	if err != nil {
		f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("Lambda account settings: %v", err), "check that your credentials may lambda:GetAccountSettings"
		return f
	}
	limit, unreserved := l.ConcurrentExecutions, l.UnreservedConcurrentExecutions
	f.Detail = fmt.Sprintf("the account may run %d executions at once in %s, %d of them unreserved", limit, d.aws.Region, unreserved)
	switch {
	case limit < minConcurrency:
		f.Verdict = warn
		f.Detail += fmt.Sprintf("; the stack may need %d at its default api_rate, and is throttled past the limit", minConcurrency)
		f.Fix = fmt.Sprintf("request more: aws service-quotas request-service-quota-increase --service-code lambda --quota-code %s --desired-value 1000 --region %s", concurrencyQuota, d.aws.Region)
	case unreserved < minConcurrency:
		f.Verdict = warn
		f.Detail += fmt.Sprintf("; the stack's functions share the unreserved executions and may need %d at its default api_rate", minConcurrency)
		f.Fix = fmt.Sprintf("lower other functions' reserved concurrency, or request more (quota %s, Lambda's Concurrent executions, in Service Quotas)", concurrencyQuota)
	default:
		f.Verdict = pass
	}
	return f
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
	if awsapi.HasCode(err, "ResourceNotFoundException") {
		f.Verdict, f.Detail = fail, fmt.Sprintf("table %s (output %s) does not exist in %s", name, outTable, d.aws.Region)
		f.Fix = "it was deleted: restore it from a backup under that name, or make deploy to create the stack's resources again"
		return f
	}
	if err != nil {
		f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("table %s: %v", name, err), "check that your credentials may dynamodb:DescribeTable it"
		return f
	}
	status := out.Table.TableStatus
	if status != dynamodb.TableStatusActive && status != dynamodb.TableStatusUpdating {
		f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("table %s is %s", name, status), "wait, or read its state in the DynamoDB console"
		return f
	}
	f.Verdict, f.Detail = pass, fmt.Sprintf("table %s is %s", name, status)
	return f
}

// checkAlarms reports the stack's alarms in the ALARM state.
func checkAlarms(ctx context.Context, d *deployment, api alarmsAPI) finding {
	f := finding{Check: "alarms"}
	next, total := "", 0
	var firing, advice []string
	for range maxAlarmPages {
		out, err := api.DescribeAlarms(ctx, d.name+"-", next)
		if err != nil {
			f.Verdict, f.Detail, f.Fix = fail, fmt.Sprintf("CloudWatch alarms: %v", err), "check that your credentials may cloudwatch:DescribeAlarms"
			return f
		}
		describe := func(a awsapi.Alarm) string {
			s := a.AlarmName
			if !a.StateUpdatedTimestamp.IsZero() {
				s += " since " + a.StateUpdatedTimestamp.UTC().Format(time.RFC3339)
			}
			if a.StateReason != "" {
				s += " (" + firstLine(a.StateReason) + ")"
			}
			return s
		}
		// The stack's alarm descriptions say what happened and what to
		// do (infra/alarms.go): they are the fix, with this stack's name
		// in the commands they name.
		advise := func(description string) {
			desc := strings.ReplaceAll(description, "<stack name>", d.name)
			if d := strings.TrimPrefix(desc, "lambdaclaw: "); d != "" && !slices.Contains(advice, d) {
				advice = append(advice, d)
			}
		}
		for _, a := range slices.Concat(out.MetricAlarms, out.CompositeAlarms) {
			total++
			if a.StateValue == "ALARM" {
				firing = append(firing, describe(a))
				advise(a.AlarmDescription)
			}
		}
		if next = out.NextToken; next == "" {
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
