// Scenarios of the Vercel AI SDK (ai with @ai-sdk/openai; see run.mjs).
// openai(model) is the SDK's default, the Responses API; openai.chat(model)
// is Chat Completions.
import { generateText, streamText } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';

const provider = (env) => createOpenAI({ baseURL: env.url, apiKey: env.key, fetch: env.fetch });
const common = (env) => ({ maxRetries: 0, abortSignal: AbortSignal.timeout(env.timeout) });

async function text(env, model) {
	const r = await generateText({ ...common(env), model, prompt: `${env.tag} hello` });
	return { text: r.text, finishReason: r.finishReason, usage: r.usage };
}

// stream reads a streamText to its end; an error part fails it (streamText
// reports errors in the stream, not by throwing).
async function stream(env, model) {
	const r = streamText({ ...common(env), model, prompt: `${env.tag} stream this answer in several pieces` });
	let text = '';
	let deltas = 0;
	for await (const part of r.fullStream) {
		if (part.type === 'error') throw part.error;
		if (part.type === 'text-delta') {
			text += part.text;
			deltas++;
		}
	}
	return { text, deltas, finishReason: await r.finishReason, usage: await r.usage };
}

export const chatText = (env) => text(env, provider(env).chat(env.model));
export const chatStream = (env) => stream(env, provider(env).chat(env.model));

