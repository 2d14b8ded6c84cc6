// Scenarios of LangChain JS with @langchain/openai's ChatOpenAI (see
// run.mjs).
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';

const chatModel = (env, fields = {}) =>
	new ChatOpenAI({
		model: env.model,
		apiKey: env.key,
		configuration: { baseURL: env.url, fetch: env.fetch },
		maxRetries: 0,
		timeout: env.timeout,
		...fields,
	});

const getWeather = tool(async ({ city }) => `sunny and 21°C in ${city}`, {
	name: 'get_weather',
	description: 'The current weather of a city',
	schema: z.object({ city: z.string().describe('The name of the city') }),
});

const Person = z
	.object({
		name: z.string().describe("The person's name"),
		age: z.number().describe('Age in years'),
	})
	.describe('A person');

// invoke is a plain call.
export async function invoke(env) {
	const m = await chatModel(env).invoke([new HumanMessage(`${env.tag} hello`)]);
	return { content: m.content, finish_reason: m.response_metadata?.finish_reason ?? null, usage: m.usage_metadata ?? null };
}

// stream is a streamed call.
export async function stream(env) {
	let content = '';
	let chunks = 0;
	for await (const chunk of await chatModel(env).stream(`${env.tag} stream this answer in several pieces`)) {
		content += chunk.content;
		chunks++;
	}
	return { content, chunks };
}

// params sets the sampling parameters ChatOpenAI knows.
export async function params(env) {
	const m = await chatModel(env, {
		temperature: 0.2,
		topP: 0.9,
		maxTokens: 64,
		presencePenalty: 0.1,
		frequencyPenalty: 0.2,
	}).invoke(`${env.tag} hello`, { stop: ['STOP'], seed: 7 });
	return { content: m.content };
}

// bindTools gets a tool call from the model, runs the tool and sends the
// result back.
export async function bindTools(env) {
	const m = chatModel(env).bindTools([getWeather]);
	const question = new HumanMessage(`${env.tag} What is the weather? get_weather {"city": "Paris"}`);
	const ai = await m.invoke([question]);
	if (!ai.tool_calls?.length) throw new Error(`no tool calls; content: ${JSON.stringify(ai.content)}`);
	const result = await getWeather.invoke(ai.tool_calls[0]);
	const final = await m.invoke([question, ai, result]);
	return { tool_calls: ai.tool_calls.map(({ name, args }) => ({ name, args })), content: final.content };
}

// structured uses withStructuredOutput with its default method, which for
// this model is a json_schema response_format.
export async function structured(env) {
	return parsed(chatModel(env).withStructuredOutput(Person, { name: 'person' }), env);
}

// structuredTools uses withStructuredOutput by function calling: the
// schema becomes a tool the model is made to call.
export async function structuredTools(env) {
	return parsed(chatModel(env).withStructuredOutput(Person, { name: 'person', method: 'functionCalling' }), env);
}

// parsed invokes a structured-output model; it fails when the model gave
// nothing to parse (with function calling, LangChain returns undefined
// when the model called no tool).
async function parsed(model, env) {
	const out = await model.invoke(`${env.tag} Tell me about Ada Lovelace.`);
	if (out === undefined) throw new Error('withStructuredOutput returned undefined: the model answered no structured output');
	return out;
}
