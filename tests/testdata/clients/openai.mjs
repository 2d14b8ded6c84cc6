// Scenarios of the official openai SDK (see run.mjs). Every prompt starts
// with the scenario's tag, so the test finds the model calls it caused.
import OpenAI from 'openai';

const client = (env) =>
	new OpenAI({ baseURL: env.url, apiKey: env.key, fetch: env.fetch, maxRetries: 0, timeout: env.timeout });

// weatherSchema is the JSON schema of the get_weather tool's arguments.
const weatherSchema = {
	type: 'object',
	properties: { city: { type: 'string', description: 'The name of the city' } },
	required: ['city'],
	additionalProperties: false,
};

const weather = ({ city }) => `sunny and 21°C in ${city}`;

// chat is a plain chat completion.
export async function chat(env) {
	const r = await client(env).chat.completions.create({
		model: env.model,
		messages: [{ role: 'user', content: `${env.tag} hello` }],
	});
	const c = r.choices[0];
	return { object: r.object, content: c.message.content, finish_reason: c.finish_reason, usage: r.usage };
}

// pngDataURL is a one-pixel PNG image (clients_test.go has the same).
const pngDataURL =
	'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

// image asks about a picture sent as a data: URL (issue 28).
export async function image(env) {
	const r = await client(env).chat.completions.create({
		model: env.model,
		messages: [
			{
				role: 'user',
				content: [
					{ type: 'text', text: `${env.tag} what is in this picture?` },
					{ type: 'image_url', image_url: { url: pngDataURL, detail: 'low' } },
				],
			},
		],
	});
	return { content: r.choices[0].message.content };
}

// stream is a streamed chat completion with usage.
export async function stream(env) {
	const s = await client(env).chat.completions.create({
		model: env.model,
		messages: [{ role: 'user', content: `${env.tag} stream this answer in several pieces` }],
		stream: true,
		stream_options: { include_usage: true },
	});
	let content = '';
	let deltas = 0;
	let finish_reason = null;
	let usage = null;
	for await (const chunk of s) {
		const c = chunk.choices[0];
		if (c?.delta?.content) {
			content += c.delta.content;
			deltas++;
		}
		if (c?.finish_reason) finish_reason = c.finish_reason;
		if (chunk.usage) usage = chunk.usage;
	}
	return { content, deltas, finish_reason, usage };
}

// params sends every sampling and output parameter, a developer message,
// JSON mode, and metadata with store.
export async function params(env) {
	const r = await client(env).chat.completions.create({
		model: env.model,
		messages: [
			{ role: 'developer', content: `${env.tag} Answer in JSON.` },
			{ role: 'user', content: `${env.tag} hello` },
		],
		temperature: 0.3,
		top_p: 0.8,
		max_completion_tokens: 200,
		stop: ['STOP'],
		seed: 42,
		presence_penalty: 0.5,
		frequency_penalty: 0.25,
		reasoning_effort: 'low',
		user: 'user-1234',
		// OpenAI takes metadata only with store.
		metadata: { suite: 'clients' },
		store: true,
		response_format: { type: 'json_object' },
	});
	const c = r.choices[0];
	return { content: c.message.content, parsed: JSON.parse(c.message.content), finish_reason: c.finish_reason };
}

// length asks for at most 3 tokens of a longer answer.
export async function length(env) {
	const r = await client(env).chat.completions.create({
		model: env.model,
		messages: [{ role: 'user', content: `${env.tag} say something long` }],
		max_tokens: 3,
	});
	const c = r.choices[0];
	return { content: c.message.content, finish_reason: c.finish_reason, usage: r.usage };
}

// runTools lets the SDK run a local function the model calls.
export async function runTools(env) {
	return toolRun(env, false);
}

// runToolsStream is runTools with streamed completions.
export async function runToolsStream(env) {
	return toolRun(env, true);
}

// runToolsSession is runTools in a session (stateful): the server parks
// the turn at the client's tool call and resumes it with the tool message,
// while the SDK sends the whole conversation again, as it always does.
export async function runToolsSession(env) {
	return toolRun(env, false, { headers: { 'X-Lambdaclaw-Session-Key': 'clients-runToolsSession' } });
}

async function toolRun(env, stream, options) {
	const calls = [];
	const runner = client(env).chat.completions.runTools({
		model: env.model,
		stream,
		messages: [{ role: 'user', content: `${env.tag} What is the weather? get_weather {"city": "Paris"}` }],
		tools: [
			{
				type: 'function',
				function: {
					name: 'get_weather',
					description: 'The current weather of a city',
					parameters: weatherSchema,
					parse: JSON.parse,
					function: (args) => {
						calls.push(args);
						return weather(args);
					},
				},
			},
		],
	}, options);
	const content = await runner.finalContent();
	return { content, calls, roles: runner.messages.map((m) => m.role) };
}

// toolChoice offers two tools the prompt names, with tool_choice none,
// with parallel_tool_calls false, and with neither.
export async function toolChoice(env) {
	const c = client(env);
	const fn = (name) => ({ type: 'function', function: { name, description: `The ${name} tool`, parameters: weatherSchema } });
	const ask = async (extra) => {
		const r = await c.chat.completions.create({
			model: env.model,
			messages: [{ role: 'user', content: `${env.tag} get_weather {"city": "Paris"} and get_forecast {"city": "Oslo"}` }],
			tools: [fn('get_weather'), fn('get_forecast')],
			...extra,
		});
		const ch = r.choices[0];
		return {
			finish_reason: ch.finish_reason,
			content: ch.message.content,
			calls: (ch.message.tool_calls ?? []).map((tc) => ({ name: tc.function.name, arguments: JSON.parse(tc.function.arguments) })),
		};
	};
	return {
		none: await ask({ tool_choice: 'none' }),
		single: await ask({ parallel_tool_calls: false }),
		parallel: await ask({}),
	};
}

// rejected sends what the gateway must refuse with a 400 before calling
// the model: n = 2, and a client tool named like a built-in one.
export async function rejected(env) {
	const c = client(env);
	const status = async (body) => {
		try {
			await c.chat.completions.create({ model: env.model, messages: [{ role: 'user', content: `${env.tag} hello` }], ...body });
			return { status: 200 };
		} catch (err) {
			return { status: err.status ?? null, message: err.error?.message ?? String(err) };
		}
	};
	return {
		n: await status({ n: 2 }),
		clash: await status({
			tools: [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: {} } } }],
		}),
	};
}

// responses is a plain Responses API call with instructions, then the
// stored response read back.
export async function responses(env) {
	const c = client(env);
	const r = await c.responses.create({ model: env.model, input: `${env.tag} hello`, instructions: `${env.tag} Be brief.` });
	const stored = await c.responses.retrieve(r.id);
	return {
		id: r.id,
		object: r.object,
		status: r.status,
		output_text: r.output_text,
		usage: r.usage,
		stored: { id: stored.id, status: stored.status, output_text: stored.output_text },
	};
}

// responsesStream is a streamed Responses API call.
export async function responsesStream(env) {
	const s = await client(env).responses.create({ model: env.model, input: `${env.tag} stream this answer`, stream: true });
	const types = [];
	let text = '';
	let completed = null;
	for await (const ev of s) {
		types.push(ev.type);
		if (ev.type === 'response.output_text.delta') text += ev.delta;
		if (ev.type === 'response.completed') completed = ev.response;
	}
	return { types, text, status: completed?.status ?? null, usage: completed?.usage ?? null };
}

// responsesTools calls a client function through the Responses API and
// answers it in a second request that continues the first by
// previous_response_id.
export async function responsesTools(env) {
	const c = client(env);
	const tools = [
		{ type: 'function', name: 'get_weather', description: 'The current weather of a city', parameters: weatherSchema, strict: true },
	];
	const first = await c.responses.create({
		model: env.model,
		input: `${env.tag} What is the weather? get_weather {"city": "Paris"}`,
		tools,
	});
	const call = first.output.find((o) => o.type === 'function_call');
	if (!call) throw new Error(`no function_call in the output: ${JSON.stringify(first.output)}`);
	const args = JSON.parse(call.arguments);
	const second = await c.responses.create({
		model: env.model,
		previous_response_id: first.id,
		input: [{ type: 'function_call_output', call_id: call.call_id, output: weather(args) }],
		tools,
	});
	return { call: { name: call.name, arguments: args }, status: first.status, output_text: second.output_text };
}

// embeddings asks for vectors as floats, as base64 and with fewer
// dimensions; the SDK asks for base64 when no format is given and decodes
// it.
export async function embeddings(env) {
	const c = client(env);
	const input = [`${env.tag} first text`, 'second text'];
	const floats = await c.embeddings.create({ model: env.embeddingModel, input, encoding_format: 'float' });
	const decoded = await c.embeddings.create({ model: env.embeddingModel, input });
	const b64 = await c.embeddings.create({ model: env.embeddingModel, input: input[0], encoding_format: 'base64' });
	const short = await c.embeddings.create({ model: env.embeddingModel, input: input[0], dimensions: 8, encoding_format: 'float' });
	const raw = Buffer.from(b64.data[0].embedding, 'base64');
	const fromBase64 = Array.from(new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4));
	return {
		object: floats.object,
		model: floats.model,
		usage: floats.usage,
		indexes: floats.data.map((d) => d.index),
		floats: floats.data.map((d) => d.embedding),
		decoded: decoded.data.map((d) => d.embedding),
		fromBase64,
		shortLength: short.data[0].embedding.length,
	};
}

// models lists the models and reads one.
export async function models(env) {
	const c = client(env);
	const ids = [];
	for await (const m of c.models.list()) ids.push(m.id);
	const one = await c.models.retrieve(env.model);
	return { ids, one: { id: one.id, object: one.object, owned_by: one.owned_by, created: one.created } };
}
