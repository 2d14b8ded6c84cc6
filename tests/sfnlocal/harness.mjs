// harness.mjs runs the synthesized state machine locally for the Go test
// beside it (sfnlocal_test.go), as AWS Step Functions would run it:
//
//   - it validates the definition with asl-validator;
//   - it executes runs with aws-local-stepfunctions, every Lambda Task
//     state overridden by one process of the real step handler (the step
//     command: the event JSON on stdin, the result JSON on stdout; on
//     failure a non-zero exit with {"errorType","errorMessage"} on stdout,
//     which becomes the error whose name Retry and Catch match, as the
//     Lambda service reports a function error; a process that dies without
//     that is reported as Lambda reports it, Runtime.ExitError);
//   - it serves the part of the Step Functions API the step function and
//     the channels call (the JSON 1.0 protocol: POST / with X-Amz-Target
//     AWSStepFunctions.<Operation>): StartExecution starts another
//     execution of the same definition, SendTaskSuccess and
//     SendTaskFailure complete the .waitForTaskToken task holding the
//     token, DescribeExecution tells an execution's status;
//   - it answers the test on /control/ (plain JSON over HTTP):
//       GET /control/validate                       asl-validator's verdict
//       GET /control/executions                     every execution, in start order
//       GET /control/executions/NAME?until=done|parked|held|idle[&timeout_ms=N]
//           waits until the execution NAME (started or not yet) has ended, or
//           is parked on a task token (or ended), or has a task held (see
//           hold), or has ended with none of its tasks still running, and
//           returns its record;
//       POST /control/hold?state=STATE              holds the next invocation of the
//           Task state STATE (of any execution) before the step command runs,
//           until
//       POST /control/release?state=STATE           lets it run.
//     A .waitForTaskToken task's token is spent when the task's
//     TimeoutSeconds have passed or its execution has ended:
//     SendTaskSuccess then says TaskTimedOut.
//
// Usage: node harness.mjs --definition FILE --step BIN --arn STATE_MACHINE_ARN
// It listens on 127.0.0.1 (a free port), prints {"port":N} on one line of
// stdout, and exits when its stdin closes. The step processes inherit its
// environment, plus STEPFUNCTIONS_ENDPOINT pointing back at this server.

import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import aslValidator from 'asl-validator';
import { StateMachine } from 'aws-local-stepfunctions';

// aws-local-stepfunctions calls Promise.withResolvers (Node 22+) when a
// Task state runs; Node 20 lacks it.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

const { values: args } = parseArgs({
  options: {
    definition: { type: 'string' },
    step: { type: 'string' },
    arn: { type: 'string' },
  },
});
for (const k of ['definition', 'step', 'arn']) {
  if (!args[k]) {
    console.error(`harness: --${k} is required`);
    process.exit(2);
  }
}

const definition = JSON.parse(readFileSync(args.definition, 'utf8'));
const validation = (() => {
  const { isValid, errors } = aslValidator(definition);
  return { isValid, errors: (errors || []).map((e) => `${e.path ?? ''} ${e.message}`.trim()) };
})();
// The library validates the definition again, with its own asl-validator.
const machine = new StateMachine(definition);

const LAMBDA_ARN = /^arn:aws:lambda:[^:]+:\d{12}:function:[^:]+$/;
const INVOKE = 'arn:aws:states:::lambda:invoke';
const INVOKE_WAIT = 'arn:aws:states:::lambda:invoke.waitForTaskToken';

// The Task states by name, nested ones (Map item processors) included.
function taskStates(def, out = {}) {
  for (const [name, st] of Object.entries(def.States)) {
    if (st.Type === 'Task') out[name] = st;
    for (const sub of [st.ItemProcessor, st.Iterator, ...(st.Branches || [])]) {
      if (sub) taskStates(sub, out);
    }
  }
  return out;
}
const tasks = taskStates(definition);

let seq = 0; // orders everything the harness records
const executions = new Map(); // name → record
const order = []; // names in start order
const waiters = new Set(); // functions re-checked on every change
const pending = new Map(); // task token → {exec, resolve, reject}
const spentTokens = new Set(); // tokens whose task has completed
const holds = new Set(); // Task states whose next invocation is to be held
const held = new Map(); // Task state → function letting its held invocation run

function changed() {
  for (const w of [...waiters]) w();
}

function newToken() {
  // Opaque, long and unguessable, like the real ones.
  return 'AQB' + randomBytes(48).toString('base64url');
}

// invoke runs the step command once with payload, as one Lambda invocation.
function invoke(exec, stateName, payload) {
  const entry = {
    seq: ++seq,
    state: stateName,
    action: payload?.action,
    step: payload?.state?.step,
    call_id: payload?.call_id,
  };
  if (payload?.state?.error_info) entry.error_info = payload.state.error_info;
  exec.tasks.push(entry);
  changed();
  if (holds.delete(stateName)) {
    entry.held = true;
    const { promise, resolve } = Promise.withResolvers();
    held.set(stateName, resolve);
    changed();
    return promise.then(() => {
      entry.held = false;
      return spawnStep(exec, stateName, payload, entry);
    });
  }
  return spawnStep(exec, stateName, payload, entry);
}

// spawnStep runs the step command for the task entry.
function spawnStep(exec, stateName, payload, entry) {
  const requestId = randomUUID();
  return new Promise((resolve, reject) => {
    const child = spawn(args.step, [], {
      env: { ...process.env, STEPFUNCTIONS_ENDPOINT: endpoint, AWS_LAMBDA_REQUEST_ID: requestId },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => {
      for (const line of b.toString().split('\n')) {
        if (line) process.stderr.write(`step ${exec.name.slice(0, 8)} ${stateName}: ${line}\n`);
      }
    });
    child.on('error', (err) => {
      entry.error = 'Runtime.ExitError';
      reject(lambdaError('Runtime.ExitError', `RequestId: ${requestId} Error: ${err.message}`));
    });
    child.stdin.on('error', () => {}); // a process that dies early closes its stdin
    child.stdin.end(JSON.stringify(payload));
    child.on('close', (code, signal) => {
      const text = Buffer.concat(out).toString();
      entry.done_seq = ++seq;
      if (code === 0) {
        try {
          resolve(text.trim() === '' ? null : JSON.parse(text));
        } catch (err) {
          entry.error = 'Lambda.InvalidResponse';
          reject(lambdaError('Lambda.InvalidResponse', `the step command printed no JSON: ${err.message}`));
        }
        changed();
        return;
      }
      let reported = null;
      try {
        reported = JSON.parse(text);
      } catch {}
      let err;
      if (reported && typeof reported.errorType === 'string') {
        err = lambdaError(reported.errorType, reported.errorMessage ?? '');
      } else {
        const why = signal ? `signal: ${signal.toLowerCase().replace(/^sig/, '')}` : `exit status ${code}`;
        err = lambdaError('Runtime.ExitError', `RequestId: ${requestId} Error: Runtime exited with error: ${why}`);
      }
      entry.error = err.name;
      changed();
      reject(err);
    });
  });
}

// lambdaError is a function error as Step Functions reports it: the error
// name is the errorType, the cause the JSON of the error response.
function lambdaError(errorType, errorMessage) {
  const err = new Error(JSON.stringify({ errorType, errorMessage }));
  err.name = errorType;
  return err;
}

// handlers returns the local functions of one execution's Task states.
function handlers(exec) {
  const out = {};
  for (const [name, st] of Object.entries(tasks)) {
    if (LAMBDA_ARN.test(st.Resource)) {
      // The direct form: the event is the input, the result the output.
      out[name] = (input) => invoke(exec, name, input);
    } else if (st.Resource === INVOKE) {
      out[name] = async (input) => {
        const payload = await invoke(exec, name, input.Payload);
        return { ExecutedVersion: '$LATEST', Payload: payload, StatusCode: 200 };
      };
    } else if (st.Resource === INVOKE_WAIT) {
      out[name] = (input) => park(exec, name, input.Payload);
    } else {
      throw new Error(`harness: Task state ${name} has a resource it cannot run: ${st.Resource}`);
    }
  }
  return out;
}

// park runs a .waitForTaskToken task: the function is invoked with the
// token in its payload, and the task completes when SendTaskSuccess or
// SendTaskFailure names the token, not when the function returns.
async function park(exec, stateName, payload) {
  const token = exec.context.Task.Token;
  const { promise, resolve, reject } = Promise.withResolvers();
  // The library starts the task's timer just after calling this.
  const timeout = tasks[stateName].TimeoutSeconds;
  const deadline = timeout ? Date.now() + timeout * 1000 : Infinity;
  // Registered before the invocation: the function may itself answer.
  pending.set(token, { exec, resolve, reject, deadline });
  try {
    await invoke(exec, stateName, payload);
  } catch (err) {
    pending.delete(token);
    throw err;
  }
  exec.parked = token;
  changed();
  try {
    return await promise;
  } finally {
    pending.delete(token);
    spentTokens.add(token);
    exec.parked = null;
    // Every task gets a token of its own: the next park of this execution
    // reads a new one from the Context Object.
    exec.context.Task.Token = newToken();
    changed();
  }
}

function startExecution(name, input) {
  const exec = {
    name,
    arn: `${args.arn.replace(':stateMachine:', ':execution:')}:${name}`,
    input,
    status: 'RUNNING',
    start_seq: ++seq,
    startDate: Date.now() / 1000,
    tasks: [],
    events: [],
    resumes: [],
    parked: null,
    context: { Task: { Token: newToken() } },
  };
  executions.set(name, exec);
  order.push(name);
  const run = machine.run(JSON.parse(input), {
    overrides: { taskResourceLocalHandlers: handlers(exec) },
    context: { ...exec.context, Execution: { Id: exec.arn, Name: name } },
  });
  const logged = (async () => {
    for await (const ev of run.eventLogs) {
      const e = { type: ev.type };
      if (ev.state) e.state = ev.state.name;
      if (ev.parentState) e.parent = ev.parentState.name;
      if (ev.index !== undefined) e.index = ev.index;
      if (ev.Error !== undefined) e.error = ev.Error;
      exec.events.push(e);
    }
  })();
  // Ended once the result is in and the event log, which the library
  // closes when the execution ends, is read to its end.
  Promise.allSettled([run.result, logged]).then(([result]) => {
    if (result.status === 'fulfilled') {
      exec.status = 'SUCCEEDED';
      exec.output = result.value;
    } else {
      exec.status = 'FAILED';
      exec.error = result.reason?.name;
      exec.cause = result.reason?.message;
    }
    exec.end_seq = ++seq;
    exec.stopDate = Date.now() / 1000;
    // A task still waiting for its token (it timed out) is gone with the
    // execution.
    for (const [token, p] of pending) {
      if (p.exec === exec) {
        pending.delete(token);
        spentTokens.add(token);
      }
    }
    exec.parked = null;
    changed();
  });
  changed();
  return exec;
}

class ApiError extends Error {
  constructor(type, message) {
    super(message);
    this.type = type;
  }
}

// The Step Functions API, as much of it as lambdaclaw calls.
const api = {
  StartExecution(req) {
    if (req.stateMachineArn !== args.arn) {
      throw new ApiError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${req.stateMachineArn}'`);
    }
    const name = req.name || randomUUID();
    if (!/^[A-Za-z0-9_-]{1,80}$/.test(name)) throw new ApiError('InvalidName', `Invalid Name: '${name}'`);
    const input = req.input ?? '{}';
    try {
      JSON.parse(input);
    } catch {
      throw new ApiError('InvalidExecutionInput', 'Invalid State Machine Execution Input');
    }
    const old = executions.get(name);
    if (old) {
      // Standard workflows: idempotent for the same name and input while
      // the execution runs; otherwise the name is taken.
      if (old.status === 'RUNNING' && old.input === input) {
        return { executionArn: old.arn, startDate: old.startDate };
      }
      throw new ApiError('ExecutionAlreadyExists', `Execution Already Exists: '${old.arn}'`);
    }
    const exec = startExecution(name, input);
    return { executionArn: exec.arn, startDate: exec.startDate };
  },
  SendTaskSuccess(req) {
    const p = livePending(req.taskToken);
    if (!p) throw tokenError(req.taskToken);
    let output;
    try {
      output = JSON.parse(req.output);
    } catch {
      throw new ApiError('InvalidOutput', 'Invalid Output');
    }
    p.exec.resumes.push({ seq: ++seq, token: req.taskToken, step: output?.step });
    pending.delete(req.taskToken);
    p.resolve(output);
    return {};
  },
  SendTaskFailure(req) {
    const p = livePending(req.taskToken);
    if (!p) throw tokenError(req.taskToken);
    p.exec.resumes.push({ seq: ++seq, token: req.taskToken, error: req.error ?? '' });
    pending.delete(req.taskToken);
    const err = new Error(req.cause ?? '');
    err.name = req.error ?? '';
    p.reject(err);
    return {};
  },
  DescribeExecution(req) {
    const exec = [...executions.values()].find((e) => e.arn === req.executionArn);
    if (!exec) throw new ApiError('ExecutionDoesNotExist', `Execution Does Not Exist: '${req.executionArn}'`);
    const out = {
      executionArn: exec.arn,
      stateMachineArn: args.arn,
      name: exec.name,
      status: exec.status,
      startDate: exec.startDate,
      input: exec.input,
    };
    if (exec.stopDate) out.stopDate = exec.stopDate;
    if (exec.status === 'SUCCEEDED') out.output = JSON.stringify(exec.output);
    if (exec.status === 'FAILED') Object.assign(out, { error: exec.error, cause: exec.cause });
    return out;
  },
};

// livePending returns the task waiting for token, spending the token of a
// task past its timeout.
function livePending(token) {
  const p = pending.get(token);
  if (p && Date.now() >= p.deadline) {
    pending.delete(token);
    spentTokens.add(token);
    return undefined;
  }
  return p;
}

function tokenError(token) {
  if (spentTokens.has(token)) {
    return new ApiError('TaskTimedOut', 'Task Timed Out: Provided task does not exist anymore');
  }
  return new ApiError('InvalidToken', 'Invalid token');
}

function record(exec) {
  const { context, ...rest } = exec;
  return rest;
}

function send(res, status, body, headers = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function control(req, res, url) {
  if (url.pathname === '/control/validate') return send(res, 200, validation);
  if (url.pathname === '/control/hold' || url.pathname === '/control/release') {
    const state = url.searchParams.get('state') || '';
    if (!tasks[state]) return send(res, 404, { message: `no Task state ${state}` });
    if (url.pathname === '/control/hold') {
      holds.add(state);
      return send(res, 200, {});
    }
    const release = held.get(state);
    if (!release) return send(res, 409, { message: `no invocation of ${state} is held` });
    held.delete(state);
    release();
    return send(res, 200, {});
  }
  if (url.pathname === '/control/executions') {
    return send(res, 200, order.map((n) => ({ name: n, status: executions.get(n).status, start_seq: executions.get(n).start_seq })));
  }
  const m = url.pathname.match(/^\/control\/executions\/([^/]+)$/);
  if (!m) return send(res, 404, { message: 'no such control endpoint' });
  const name = decodeURIComponent(m[1]);
  const until = url.searchParams.get('until') || 'done';
  const timeout = Number(url.searchParams.get('timeout_ms') || 30000);
  const ready = () => {
    const e = executions.get(name);
    if (!e) return false;
    return (
      e.status !== 'RUNNING' ||
      (until === 'parked' && e.parked !== null) ||
      (until === 'held' && e.tasks.some((k) => k.held))
    ) && (until !== 'idle' || e.tasks.every((k) => k.done_seq !== undefined || k.error));
  };
  if (!ready()) {
    await new Promise((resolve) => {
      const check = () => {
        if (ready()) done();
      };
      const timer = setTimeout(() => done(), timeout);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
    });
  }
  const e = executions.get(name);
  if (!ready()) {
    return send(res, 408, { message: `execution ${name} not ${until} within ${timeout} ms`, execution: e ? record(e) : null });
  }
  return send(res, 200, record(e));
}

const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    try {
      if (url.pathname.startsWith('/control/')) return await control(req, res, url);
      const target = req.headers['x-amz-target'] || '';
      const op = target.startsWith('AWSStepFunctions.') ? target.slice('AWSStepFunctions.'.length) : '';
      const headers = { 'Content-Type': 'application/x-amz-json-1.0', 'x-amzn-RequestId': randomUUID() };
      if (req.method !== 'POST' || !api[op]) {
        return send(res, 400, { __type: 'UnknownOperationException', message: `unknown operation ${target}` }, headers);
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      } catch {
        return send(res, 400, { __type: 'SerializationException', message: 'body is not JSON' }, headers);
      }
      try {
        return send(res, 200, api[op](body), headers);
      } catch (err) {
        if (err instanceof ApiError) return send(res, 400, { __type: err.type, message: err.message }, headers);
        throw err;
      }
    } catch (err) {
      send(res, 500, { __type: 'InternalServerError', message: String(err?.stack || err) });
    }
  });
});

let endpoint = '';
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  endpoint = `http://127.0.0.1:${port}`;
  process.stdout.write(JSON.stringify({ port }) + '\n');
});

// The test ends the harness by closing its stdin.
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
