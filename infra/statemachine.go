package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	sfn "github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctionstasks"
	"github.com/aws/jsii-runtime-go"
)

// The state machine's contract with the step function (functions/step).
// The state is the RunState JSON: small (ids, step name, iteration, call
// ids, …), never history, so it stays far below Step Functions' 256 KB.
// Its field "step" names the next step (begin, compact, think, approve,
// wait, act, finish, done) and "calls" lists the tool call ids to run.
//
// Every task invokes the step function with an "action":
//
//	{"action":"step","state":<RunState>}                       → the next RunState
//	{"action":"park","state":<RunState>,"task_token":"<token>"} → (stores the token; the
//	        run resumes when a channel calls SendTaskSuccess with the next RunState)
//	{"action":"call","call_id":"<id>","state":<RunState>}      → (result ignored)
//	{"action":"expire","state":<RunState>}                     → the next RunState (the
//	        approval timed out: resolved as expired, the user told, the lane passed on)
//	{"action":"fail","state":<RunState with error_info>}       → (result ignored)
//	{"action":"release","state":<RunState with error_info and fail_error_info>} → (result ignored)
//
// The "Step", "Call tool", "Approval expired", "Fail" and "Release lane"
// tasks name the function's ARN as their Resource (the direct Lambda form:
// the event is exactly the payload above and the task's result is exactly
// what the handler returns); "Await approval" uses
// arn:aws:states:::lambda:invoke.waitForTaskToken, whose Parameters wrap
// the payload as {"FunctionName":…, "Payload":{…}}.
//
// Retryable failures: the Lambda service errors, and "Transient", the error
// type the handler reports for failures worth retrying (aws-lambda-go names
// an error by its Go type, so a type named Transient, or a
// messages.InvokeResponse_Error with Type "Transient").
const (
	stateStep     = "Step"
	stateNext     = "Next step?"
	stateApproval = "Await approval"
	stateExpired  = "Approval expired"
	stateTools    = "Tools"
	stateCallTool = "Call tool"
	stateFail     = "Fail"
	stateRelease  = "Release lane"
	stateDone     = "Done"
	stateFailed   = "Failure not recorded"

	toolConcurrency = 8
)

// retryErrors are retried with exponential backoff on every task.
var retryErrors = []string{
	"Lambda.ServiceException",
	"Lambda.AWSLambdaException",
	"Lambda.SdkClientException",
	"Lambda.TooManyRequestsException",
	"Transient",
}

// loop defines the Standard state machine that drives one run:
//
//	Step ─► Next step? ── done ─► Done
//	  ▲          ├─ wait ─► Await approval (.waitForTaskToken) ─► Next step?
//	  │          │               └─ timed out ─► Approval expired ─► Next step?
//	  │          ├─ act ──► Tools (Map over $.calls: Call tool) ─┐
//	  └──────────┴─ else ─────────────────────────────────────────┘
//
// Await approval times out after Config.ApprovalTimeout (7 days by
// default): Approval expired resolves the approval as expired, tells the
// user, finishes the run and passes the session's lane on. Every task
// retries transient errors and catches the rest into Fail, which records
// the failure, tells the user, passes the lane on and ends the execution
// as succeeded. If Fail fails too (a crash while telling the user, or the
// store out for minutes), Release lane saves the run as failed without
// telling anyone and passes the lane on, retrying for about half an hour;
// only then does the execution fail (Failure not recorded), and the lane
// is freed when its lease ends.
func (s *builder) loop() {
	stepFn := s.fns["step"]
	retry := &sfn.RetryProps{
		Errors:      jsii.Strings(retryErrors...),
		Interval:    awscdk.Duration_Seconds(jsii.Number(2)),
		MaxAttempts: jsii.Number(6),
		BackoffRate: jsii.Number(2),
	}
	catchAll := &sfn.CatchProps{
		Errors:     jsii.Strings("States.ALL"),
		ResultPath: jsii.String("$.error_info"),
	}
	invoke := func(name string, payload map[string]interface{}) awsstepfunctionstasks.LambdaInvoke {
		props := &awsstepfunctionstasks.LambdaInvokeProps{
			StateName:                jsii.String(name),
			LambdaFunction:           stepFn,
			PayloadResponseOnly:      jsii.Bool(true),
			RetryOnServiceExceptions: jsii.Bool(false),
		}
		if payload != nil {
			props.Payload = sfn.TaskInput_FromObject(&payload)
		}
		return awsstepfunctionstasks.NewLambdaInvoke(s.stack, jsii.String("State "+name), props)
	}
	action := func(name, action string) awsstepfunctionstasks.LambdaInvoke {
		return invoke(name, map[string]interface{}{
			"action": action,
			"state":  sfn.JsonPath_EntirePayload(),
		})
	}

	done := sfn.NewSucceed(s.stack, jsii.String("State "+stateDone), &sfn.SucceedProps{StateName: jsii.String(stateDone)})
	failed := sfn.NewFail(s.stack, jsii.String("State "+stateFailed), &sfn.FailProps{
		StateName: jsii.String(stateFailed),
		Error:     jsii.String("FailStepFailed"),
		Cause:     jsii.String("neither the Fail step nor the Release lane step could record the failure"),
	})

	release := action(stateRelease, "release")
	release.AddRetry(&sfn.RetryProps{
		Errors:         jsii.Strings("States.ALL"),
		Interval:       awscdk.Duration_Seconds(jsii.Number(5)),
		MaxAttempts:    jsii.Number(10),
		BackoffRate:    jsii.Number(2),
		MaxDelay:       awscdk.Duration_Minutes(jsii.Number(5)),
		JitterStrategy: sfn.JitterType_FULL,
	})
	release.AddCatch(failed, &sfn.CatchProps{Errors: jsii.Strings("States.ALL"), ResultPath: jsii.String("$.release_error_info")})
	release.Next(done)

	fail := action(stateFail, "fail")
	fail.AddRetry(retry)
	fail.AddCatch(release, &sfn.CatchProps{Errors: jsii.Strings("States.ALL"), ResultPath: jsii.String("$.fail_error_info")})
	fail.Next(done)

	step := action(stateStep, "step")
	step.AddRetry(retry)
	step.AddCatch(fail, catchAll)

	expired := action(stateExpired, "expire")
	expired.AddRetry(retry)
	expired.AddCatch(fail, catchAll)

	approval := awsstepfunctionstasks.NewLambdaInvoke(s.stack, jsii.String("State "+stateApproval), &awsstepfunctionstasks.LambdaInvokeProps{
		StateName:          jsii.String(stateApproval),
		LambdaFunction:     stepFn,
		IntegrationPattern: sfn.IntegrationPattern_WAIT_FOR_TASK_TOKEN,
		Payload: sfn.TaskInput_FromObject(&map[string]interface{}{
			"action":     "park",
			"state":      sfn.JsonPath_EntirePayload(),
			"task_token": sfn.JsonPath_TaskToken(),
		}),
		TaskTimeout:              sfn.Timeout_Duration(awscdk.Duration_Seconds(jsii.Number(s.cfg.ApprovalTimeout.Seconds()))),
		RetryOnServiceExceptions: jsii.Bool(false),
	})
	approval.AddRetry(retry)
	approval.AddCatch(expired, &sfn.CatchProps{
		Errors:     jsii.Strings("States.Timeout"),
		ResultPath: jsii.String("$.error_info"),
	})
	approval.AddCatch(fail, catchAll)

	callTool := invoke(stateCallTool, nil)
	callTool.AddRetry(retry)
	tools := sfn.NewMap(s.stack, jsii.String("State "+stateTools), &sfn.MapProps{
		StateName: jsii.String(stateTools),
		ItemsPath: jsii.String("$.calls"),
		ItemSelector: &map[string]interface{}{
			"action":  "call",
			"call_id": sfn.JsonPath_StringAt(jsii.String("$$.Map.Item.Value")),
			"state":   sfn.JsonPath_EntirePayload(),
		},
		MaxConcurrency: jsii.Number(toolConcurrency),
		ResultPath:     sfn.JsonPath_DISCARD(),
	})
	tools.ItemProcessor(callTool, nil)
	tools.AddCatch(fail, catchAll)
	tools.Next(step)

	next := sfn.NewChoice(s.stack, jsii.String("State "+stateNext), &sfn.ChoiceProps{StateName: jsii.String(stateNext)})
	next.When(sfn.Condition_StringEquals(jsii.String("$.step"), jsii.String("done")), done, nil)
	next.When(sfn.Condition_StringEquals(jsii.String("$.step"), jsii.String("wait")), approval, nil)
	next.When(sfn.Condition_StringEquals(jsii.String("$.step"), jsii.String("act")), tools, nil)
	next.Otherwise(step)
	step.Next(next)
	approval.Next(next)
	expired.Next(next)

	logs := awslogs.NewLogGroup(s.stack, jsii.String("LoopLogs"), &awslogs.LogGroupProps{
		// The vendedlogs prefix keeps CloudWatch Logs' resource policy
		// small however many state machines log (AWS's advice).
		LogGroupName:  jsii.String("/aws/vendedlogs/states/" + stateMachineName(s.stack)),
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	sm := sfn.NewStateMachine(s.stack, jsii.String("Loop"), &sfn.StateMachineProps{
		StateMachineName: jsii.String(stateMachineName(s.stack)),
		StateMachineType: sfn.StateMachineType_STANDARD,
		DefinitionBody:   sfn.DefinitionBody_FromChainable(step),
		Comment:          jsii.String("lambdaclaw agent loop: one Lambda task per step of a run"),
		TracingEnabled:   jsii.Bool(s.cfg.Tracing),
		Logs: &sfn.LogOptions{
			Destination:          logs,
			Level:                sfn.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
	})
	s.stateMachine = sm
}
