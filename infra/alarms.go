package main

import (
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/emf"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// alarms (alarms=on, the default) adds what an operator watches, all
// notifying one SNS topic (with an email subscription when alarm_email is
// set); each alarm's description says what to do. The alarms:
//
//   - LoopFailed: executions of the state machine failed (a run whose
//     failure could not even be recorded);
//   - RunsFailed: runs that ended in an error their user was told of (see
//     below why not the step function's Errors);
//   - the Errors of every other function, and the Throttles of the two
//     that run the loop (api, step);
//   - Api5XX: the REST API answered 5XX (an integration failed, or API
//     Gateway did);
//   - TableThrottled: DynamoDB throttled reads or writes of the table;
//   - the depth of every dead-letter queue;
//   - SandboxTaskFailed (sandbox=fargate): a sandbox task failed to start
//     or its runner exited with an error.
//
// The step function's Errors metric is no alarm: the function fails on
// purpose to be retried. A task's failure worth retrying is returned as
// the error type "Transient" (shared/adapters/sfn), which the state
// machine's Retry catches (retryErrors, up to 6 attempts), and an inline
// run that fails is invoked again by Lambda, then handed to the state
// machine; both count in Errors though nothing is lost. A failure that
// is not retried, or outlasts its retries, ends in the Fail state, which
// finishes the run as failed and tells the user: that is the turn the
// metrics record with outcome error, lambdaclaw_errors_total{kind=turn}
// (obs.MetricErrors, written as CloudWatch embedded metrics by every
// function), which RunsFailed watches; what even Fail cannot record fails
// the execution (LoopFailed), and an inline run Lambda gives up on lands
// in RunFailures (its depth alarm).
//
// The default deployment has 13 alarm metrics (TableThrottled is the sum
// of two): CloudWatch's free tier has 10, each further one costs $0.10 a
// month. The topic costs nothing idle.
func (s *builder) alarms() {
	if !s.cfg.Alarms {
		return
	}
	topic := awssns.NewTopic(s.stack, jsii.String("Alarms"), &awssns.TopicProps{DisplayName: jsii.String("lambdaclaw alarms")})
	if s.cfg.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.cfg.AlarmEmail), nil))
	}
	action := awscloudwatchactions.NewSnsAction(topic)
	period := awscdk.Duration_Minutes(jsii.Number(5))
	alarm := func(id, description string, metric awscloudwatch.IMetric) {
		a := awscloudwatch.NewAlarm(s.stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String("lambdaclaw: " + description),
			Metric:             metric,
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
	}
	sum := &awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Sum")}
	logs := "the function's log group in CloudWatch Logs"
	alarm("LoopFailedAlarm", "runs of the agent loop failed (Step Functions executions failed, timed out or aborted): "+
		"not even the failure could be recorded. Read the failed execution's history in the Step Functions console; "+
		"the session's lane is freed when its lease ends",
		s.stateMachine.MetricFailed(sum))
	alarm("RunsFailedAlarm", "runs ended in an error their user was told of (a model provider that kept failing, "+
		"or a step that failed after its retries; a conversation too long for the model counts too, its user told to start "+
		"a new one). Search the logs of the api and step functions for \"run failed\" "+
		"with the run id the user was shown; transient errors retried on purpose are not counted",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace:     jsii.String(emf.Namespace),
			MetricName:    jsii.String(obs.MetricErrors),
			DimensionsMap: &map[string]*string{"kind": jsii.String("turn")},
			Period:        period,
			Statistic:     jsii.String("Sum"),
		}))
	names := make([]string, 0, len(s.fns))
	for n := range s.fns {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fn, id := s.fns[n], strings.ToUpper(n[:1])+n[1:]
		if n != "step" { // RunsFailed, above, says why
			alarm(id+"ErrorsAlarm", "the "+n+" function failed (an error or a timeout). Read "+logs, fn.MetricErrors(sum))
		}
		if n == "api" || n == "step" {
			alarm(id+"ThrottlesAlarm", "the "+n+" function was throttled: the account's Lambda concurrency ran out. "+
				"Ask for a higher concurrency quota (Service Quotas), or lower -c api_rate", fn.MetricThrottles(sum))
		}
	}
	alarm("Api5XXAlarm", "the REST API answered with 5XX errors (the api function failed or timed out, or API Gateway did). "+
		"Read the api function's log group; a 504 is a request that outlasted its integration's timeout",
		s.restApi.MetricServerError(sum))
	alarm("TableThrottledAlarm", "DynamoDB throttled reads or writes of the table (on-demand tables throttle past "+
		"their table or account limits, or a hot partition key). See the table's Monitor tab; raise its "+
		"on-demand maximum throughput if one is set, or the account's table quota",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String("reads + writes"),
			Label:      jsii.String("throttle events"),
			Period:     period,
			UsingMetrics: &map[string]awscloudwatch.IMetric{
				"reads":  s.table_.Metric(jsii.String("ReadThrottleEvents"), sum),
				"writes": s.table_.Metric(jsii.String("WriteThrottleEvents"), sum),
			},
		}))
	for _, q := range s.deadLetters {
		alarm(q.id+"DepthAlarm", "messages wait in the dead-letter queue "+q.id+". "+deadLetterAdvice(q.id),
			q.queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Maximum")}))
	}
	if s.sandboxCluster != nil {
		alarm("SandboxTaskFailedAlarm", "a sandbox task (the exec tool on Fargate) failed to start or its runner exited with an error. "+
			"Read the stopped task's reason in the ECS console (this stack's SandboxCluster) and the SandboxLogs log group; "+
			"an image pull and Fargate capacity (RESOURCE:*) are the usual causes of a task that failed to start",
			awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace:     jsii.String("AWS/Events"),
				MetricName:    jsii.String("TriggeredRules"),
				DimensionsMap: &map[string]*string{"RuleName": s.sandboxFailures().RuleName()},
				Period:        period,
				Statistic:     jsii.String("Sum"),
			}))
	}
	awscdk.NewCfnOutput(s.stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Value:       topic.TopicArn(),
		Description: jsii.String("the SNS topic the alarms notify (subscribe to it, or deploy with -c alarm_email=...)"),
	})
}

// deadLetterAdvice says what to do about the failures in a dead-letter
// queue.
func deadLetterAdvice(id string) string {
	switch id {
	case "RunFailures":
		return "Each message is a run whose inline invocation failed three times; its session's next messages wait " +
			"behind it. Run `lambdaclaw runs list --stack <stack name>` to see the runs and why, then " +
			"`lambdaclaw runs retry RUN_ID --stack <stack name>` (or --all) to run them on the state machine, or " +
			"`lambdaclaw runs abandon RUN_ID --stack <stack name>` to end them failed; the user's /reset ends one too"
	case "CheckInFailures":
		return "Each message is a check-in whose invocation failed three times (its job did not run). " +
			"Read the scheduler function's log group for the job in the message"
	case "ScheduleFailures":
		return "Each message is a check-in EventBridge Scheduler could not deliver to the scheduler function " +
			"within its retries (the function throttled or missing): the job did not run. Check the scheduler function " +
			"and the account's Lambda concurrency"
	case "IndexerFailures":
		return "Each message names table changes the indexer could not copy into OpenSearch after its retries " +
			"(memory search misses them). Read the indexer function's log group"
	}
	return "Read the message for what failed"
}

// sandboxFailures is an EventBridge rule (free, no target) matching the
// sandbox cluster's tasks that stopped in failure: failed to start (an
// image pull, Fargate capacity, the network), or stopped because an
// essential container exited with an error (the runner crashed, or ran
// out of memory). A task stopped by the step function (StopTask:
// UserInitiated) or whose runner exited cleanly does not match. The rule's
// TriggeredRules metric counts its matches, which SandboxTaskFailedAlarm
// watches.
func (s *builder) sandboxFailures() awsevents.Rule {
	return awsevents.NewRule(s.stack, jsii.String("SandboxTaskFailures"), &awsevents.RuleProps{
		Description: jsii.String("lambdaclaw: sandbox tasks that failed (counted by SandboxTaskFailedAlarm)"),
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings("aws.ecs"),
			DetailType: jsii.Strings("ECS Task State Change"),
			Detail: &map[string]interface{}{
				"clusterArn": []interface{}{s.sandboxCluster.ClusterArn()},
				"lastStatus": []interface{}{"STOPPED"},
				"$or": []interface{}{
					map[string]interface{}{"stopCode": []interface{}{"TaskFailedToStart"}},
					map[string]interface{}{
						"stopCode":   []interface{}{"EssentialContainerExited"},
						"containers": map[string]interface{}{"exitCode": []interface{}{map[string]interface{}{"anything-but": 0}}},
					},
				},
			},
		},
	})
}
