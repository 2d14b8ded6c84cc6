// Scenarios of LangChain JS with @langchain/openai's ChatOpenAI (see
// run.mjs).
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage } from '@langchain/core/messages';

const chatModel = (env, fields = {}) =>
	new ChatOpenAI({
		model: env.model,
		apiKey: env.key,
		configuration: { baseURL: env.url, fetch: env.fetch },
		maxRetries: 0,
		timeout: env.timeout,
		...fields,
	});

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
