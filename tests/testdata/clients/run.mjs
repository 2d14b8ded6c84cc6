// run.mjs runs client scenarios against a lambdaclaw gateway:
//
//   node run.mjs openai/chat langchain/bindTools aisdk/chatTools …
//
// A scenario "lib/name" is the function name exported by lib.mjs. It gets
// the environment below and a fetch that records every request the client
// library sends, and returns what the client saw. For each scenario, in
// order, one JSON line goes to stdout:
//
//   {"scenario": "openai/chat", "ok": true, "result": …, "sent": […]}
//   {"scenario": "openai/chat", "ok": false, "error": "…", "sent": […]}
//
// where sent lists {method, path, body, status} of the requests made. The exit
// status is 1 when a scenario failed. Environment: LAMBDACLAW_URL (the
// gateway's base URL, ending in /v1), LAMBDACLAW_KEY (an API key),
// LAMBDACLAW_MODEL (the agent to talk to), LAMBDACLAW_EMBEDDING_MODEL.

// Libraries that log must not mix their lines with the results.
console.log = console.error;
console.info = console.error;

const env = {
	url: need('LAMBDACLAW_URL'),
	key: need('LAMBDACLAW_KEY'),
	model: need('LAMBDACLAW_MODEL'),
	embeddingModel: process.env.LAMBDACLAW_EMBEDDING_MODEL ?? '',
	// timeout bounds every request, so that a hung gateway fails a
	// scenario instead of the test run.
	timeout: 30_000,
};

function need(name) {
	const v = process.env[name];
	if (!v) {
		console.error(`run.mjs: ${name} is not set`);
		process.exit(2);
	}
	return v;
}

// recordingFetch is fetch that appends {method, path, body, status} to
// sent.
function recordingFetch(sent) {
	return async (input, init = {}) => {
		const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
		const entry = { method: init.method ?? input.method ?? 'GET', path: new URL(url).pathname, body: null };
		let body = init.body;
		if (body instanceof Uint8Array) body = new TextDecoder().decode(body);
		if (typeof body === 'string') {
			try {
				entry.body = JSON.parse(body);
			} catch {
				entry.body = body;
			}
		}
		sent.push(entry);
		const res = await fetch(input, init);
		entry.status = res.status;
		return res;
	};
}

const modules = {};
let failed = false;
for (const id of process.argv.slice(2)) {
	const [lib, name] = id.split('/');
	const sent = [];
	let out;
	try {
		modules[lib] ??= await import(`./${lib}.mjs`);
		const scenario = modules[lib][name];
		if (typeof scenario !== 'function') throw new Error(`no scenario ${name} in ${lib}.mjs`);
		const result = await scenario({ ...env, tag: `[${id}]`, fetch: recordingFetch(sent) });
		out = { scenario: id, ok: true, result: result ?? null, sent };
	} catch (err) {
		failed = true;
		out = { scenario: id, ok: false, error: describe(err), sent };
	}
	process.stdout.write(JSON.stringify(out) + '\n');
}
process.exitCode = failed ? 1 : 0;

// describe renders an error with what the libraries attach to it: the
// HTTP status and body of an API error, the cause.
function describe(err) {
	if (!(err instanceof Error)) return String(err);
	// The message and the innermost frames: the rest is the libraries'.
	const frames = (err.stack ?? '').split('\n').filter((l) => l.trimStart().startsWith('at ')).slice(0, 3);
	let s = [`${err.name}: ${err.message}`, ...frames].join('\n');
	for (const k of ['status', 'statusCode', 'responseBody', 'error', 'url']) {
		if (err[k] !== undefined) s += `\n${k}: ${typeof err[k] === 'string' ? err[k] : JSON.stringify(err[k])}`;
	}
	if (err.cause) s += `\ncause: ${describe(err.cause)}`;
	return s;
}
