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
//	{"action":"fail","state":<RunState with error_info>}       → (result ignored)
//
// The "Step", "Call tool" and "Fail" tasks name the function's ARN as their
// Resource (the direct Lambda form: the event is exactly the payload above
// and the task's result is exactly what the handler returns); "Await
// approval" uses arn:aws:states:::lambda:invoke.waitForTaskToken, whose
// Parameters wrap the payload as {"FunctionName":…, "Payload":{…}}.
//
// Retryable failures: the Lambda service errors, and "Transient", the error
// type the handler reports for failures worth retrying (aws-lambda-go names
// an error by its Go type, so a type named Transient, or a
// messages.InvokeResponse_Error with Type "Transient").
const (
	stateStep     = "Step"
	stateNext     = "Next step?"
	stateApproval = "Await approval"
	stateTools    = "Tools"
	stateCallTool = "Call tool"
	stateFail     = "Fail"
	stateDone     = "Done"
	stateFailed   = "Failure not recorded"

	approvalTimeoutDays = 7
	toolConcurrency     = 8
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
//	  ▲          ├─ wait ─► Await approval (.waitForTaskToken, 7 days) ─► Next step?
//	  │          ├─ act ──► Tools (Map over $.calls: Call tool) ─┐
//	  └──────────┴─ else ─────────────────────────────────────────┘
//
// Every task retries transient errors and catches the rest into Fail,
// which records the failure, tells the user, releases the session's lane
// and ends the execution as succeeded.
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
		t := awsstepfunctionstasks.NewLambdaInvoke(s.stack, jsii.String("State "+name), props)
		t.AddRetry(retry)
		return t
	}

	done := sfn.NewSucceed(s.stack, jsii.String("State "+stateDone), &sfn.SucceedProps{StateName: jsii.String(stateDone)})
	failed := sfn.NewFail(s.stack, jsii.String("State "+stateFailed), &sfn.FailProps{
		StateName: jsii.String(stateFailed),
		Error:     jsii.String("FailStepFailed"),
		Cause:     jsii.String("the Fail step could not record the failure"),
	})

	fail := invoke(stateFail, map[string]interface{}{
		"action": "fail",
		"state":  sfn.JsonPath_EntirePayload(),
	})
	fail.AddCatch(failed, &sfn.CatchProps{Errors: jsii.Strings("States.ALL"), ResultPath: jsii.String("$.fail_error_info")})
	fail.Next(done)

	step := invoke(stateStep, map[string]interface{}{
		"action": "step",
		"state":  sfn.JsonPath_EntirePayload(),
	})
	step.AddCatch(fail, catchAll)

	approval := awsstepfunctionstasks.NewLambdaInvoke(s.stack, jsii.String("State "+stateApproval), &awsstepfunctionstasks.LambdaInvokeProps{
		StateName:          jsii.String(stateApproval),
		LambdaFunction:     stepFn,
		IntegrationPattern: sfn.IntegrationPattern_WAIT_FOR_TASK_TOKEN,
		Payload: sfn.TaskInput_FromObject(&map[string]interface{}{
			"action":     "park",
			"state":      sfn.JsonPath_EntirePayload(),
			"task_token": sfn.JsonPath_TaskToken(),
		}),
		TaskTimeout:              sfn.Timeout_Duration(awscdk.Duration_Days(jsii.Number(approvalTimeoutDays))),
		RetryOnServiceExceptions: jsii.Bool(false),
	})
	approval.AddRetry(retry)
	approval.AddCatch(fail, catchAll)

	callTool := invoke(stateCallTool, nil)
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
		TracingEnabled:   jsii.Bool(true),
		Logs: &sfn.LogOptions{
			Destination:          logs,
			Level:                sfn.LogLevel_ERROR,
			IncludeExecutionData: jsii.Bool(false),
		},
	})
	s.stateMachine = sm
}
