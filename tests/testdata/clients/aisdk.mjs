// Scenarios of the Vercel AI SDK (ai with @ai-sdk/openai; see run.mjs).
// openai(model) is the SDK's default, the Responses API; openai.chat(model)
// is Chat Completions.
import { generateText, streamText, tool, isStepCount } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';

const provider = (env) => createOpenAI({ baseURL: env.url, apiKey: env.key, fetch: env.fetch });
const common = (env) => ({ maxRetries: 0, abortSignal: AbortSignal.timeout(env.timeout) });

const tools = {
	get_weather: tool({
		description: 'The current weather of a city',
		inputSchema: z.object({ city: z.string().describe('The name of the city') }),
		execute: async ({ city }) => `sunny and 21°C in ${city}`,
	}),
};

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

// withTool lets the SDK run get_weather when the model calls it and go on
// to the answer (up to 3 steps).
async function withTool(env, model) {
	const r = await generateText({
		...common(env),
		model,
		tools,
		stopWhen: isStepCount(3),
		prompt: `${env.tag} What is the weather? get_weather {"city": "Paris"}`,
	});
	return {
		text: r.text,
		steps: r.steps.length,
		toolCalls: r.steps.flatMap((s) => s.toolCalls.map((c) => ({ name: c.toolName, input: c.input }))),
		toolResults: r.steps.flatMap((s) => s.toolResults.map((c) => c.output)),
	};
}

export const chatText = (env) => text(env, provider(env).chat(env.model));
export const chatStream = (env) => stream(env, provider(env).chat(env.model));
export const chatTools = (env) => withTool(env, provider(env).chat(env.model));
export const responsesText = (env) => text(env, provider(env)(env.model));
export const responsesStream = (env) => stream(env, provider(env)(env.model));
export const responsesTools = (env) => withTool(env, provider(env)(env.model));

// chatParams sets the call settings the SDK maps onto Chat Completions.
export async function chatParams(env) {
	const r = await generateText({
		...common(env),
		model: provider(env).chat(env.model),
		prompt: `${env.tag} hello`,
		temperature: 0.3,
		topP: 0.9,
		maxOutputTokens: 50,
		stopSequences: ['STOP'],
		seed: 3,
		presencePenalty: 0.1,
		frequencyPenalty: 0.2,
	});
	return { text: r.text, finishReason: r.finishReason };
}
