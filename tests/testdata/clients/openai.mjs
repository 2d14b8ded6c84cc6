// Scenarios of the official openai SDK (see run.mjs). Every prompt starts
// with the scenario's tag, so the test finds the model calls it caused.
import OpenAI from 'openai';

const client = (env) =>
	new OpenAI({ baseURL: env.url, apiKey: env.key, fetch: env.fetch, maxRetries: 0, timeout: env.timeout });

// chat is a plain chat completion.
export async function chat(env) {
	const r = await client(env).chat.completions.create({
		model: env.model,
		messages: [{ role: 'user', content: `${env.tag} hello` }],
	});
	const c = r.choices[0];
	return { object: r.object, content: c.message.content, finish_reason: c.finish_reason, usage: r.usage };
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

// models lists the models and reads one.
export async function models(env) {
	const c = client(env);
	const ids = [];
	for await (const m of c.models.list()) ids.push(m.id);
	const one = await c.models.retrieve(env.model);
	return { ids, one: { id: one.id, object: one.object, owned_by: one.owned_by, created: one.created } };
}
