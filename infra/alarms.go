package main

import (
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/jsii-runtime-go"
)

// alarms (alarms=on, the default) adds what an operator watches: alarms on
// the loop's failed executions, each function's errors, the throttles of
// the functions that serve requests, and the depth of every dead-letter
// queue, all notifying one SNS topic (with an email subscription when
// alarm_email is set). The default deployment has 9 alarms, within
// CloudWatch's 10 free alarm metrics; the topic costs nothing idle.
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
	alarm("LoopFailedAlarm", "runs of the agent loop failed (Step Functions executions failed, timed out or aborted)",
		s.stateMachine.MetricFailed(sum))
	names := make([]string, 0, len(s.fns))
	for n := range s.fns {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fn, id := s.fns[n], strings.ToUpper(n[:1])+n[1:]
		alarm(id+"ErrorsAlarm", "the "+n+" function failed", fn.MetricErrors(sum))
		if n == "api" || n == "step" {
			alarm(id+"ThrottlesAlarm", "the "+n+" function was throttled", fn.MetricThrottles(sum))
		}
	}
	for _, q := range s.deadLetters {
		alarm(q.id+"DepthAlarm", "messages wait in the dead-letter queue "+q.id,
			q.queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: period, Statistic: jsii.String("Maximum")}))
	}
	awscdk.NewCfnOutput(s.stack, jsii.String("AlarmTopicArn"), &awscdk.CfnOutputProps{
		Value:       topic.TopicArn(),
		Description: jsii.String("the SNS topic the alarms notify (subscribe to it, or deploy with -c alarm_email=...)"),
	})
}
