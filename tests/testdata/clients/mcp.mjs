// Scenarios of the official MCP TypeScript SDK (see run.mjs) against the
// gateway's MCP server at /mcp, with the StreamableHTTPClientTransport.
// tests/mcp_server_test.go runs them against a fake model that echoes,
// and writes the file a message "write NAME" names.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const endpoint = (env) => new URL(env.url.replace(/\/v1$/, '') + '/mcp');

// connect returns a connected client; with key null no Authorization is
// sent. elicit, when given, answers elicitations.
async function connect(env, key, elicit) {
	const client = new Client(
		{ name: 'lambdaclaw-tests', version: '1.0.0' },
		elicit ? { capabilities: { elicitation: {} } } : {},
	);
	if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
	const headers = key === null ? {} : { Authorization: `Bearer ${key}` };
	const transport = new StreamableHTTPClientTransport(endpoint(env), {
		requestInit: { headers },
		fetch: env.fetch,
		reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1 },
	});
	await client.connect(transport, { timeout: env.timeout });
	return client;
}

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('');

// unauthorized connects without a key, and with a bad one.
export async function unauthorized(env) {
	const errors = [];
	for (const key of [null, 'lc_not_a_key']) {
		try {
			const c = await connect(env, key);
			await c.close();
			errors.push(null);
		} catch (err) {
			errors.push(String(err?.message ?? err));
		}
	}
	return { errors };
}

// listTools lists the server's tools.
export async function listTools(env) {
	const c = await connect(env, env.key);
	try {
		const { tools } = await c.listTools(undefined, { timeout: env.timeout });
		return { tools: tools.map((t) => ({ name: t.name, required: t.inputSchema.required ?? [] })).sort((a, b) => a.name.localeCompare(b.name)) };
	} finally {
		await c.close();
	}
}

// chat sends a message and follows the reply's progress.
export async function chat(env) {
	const c = await connect(env, env.key);
	try {
		const progress = [];
		const r = await c.callTool(
			{ name: 'chat', arguments: { agent: env.model, message: 'hello from TypeScript', session_key: 'ts' } },
			undefined,
			{ timeout: env.timeout, onprogress: (p) => progress.push(p.message) },
		);
		return { text: text(r), isError: r.isError ?? false, progress };
	} finally {
		await c.close();
	}
}

// agentsList lists the agents the key may use.
export async function agentsList(env) {
	const c = await connect(env, env.key);
	try {
		const r = await c.callTool({ name: 'agents_list', arguments: {} }, undefined, { timeout: env.timeout });
		return { structured: r.structuredContent, isError: r.isError ?? false };
	} finally {
		await c.close();
	}
}

// elicit asks the agent to write a file and allows it when asked.
export async function elicit(env) {
	const asked = [];
	const c = await connect(env, env.key, async (req) => {
		asked.push(req.params.message);
		return { action: 'accept', content: { decision: 'yes' } };
	});
	try {
		const r = await c.callTool(
			{ name: 'chat', arguments: { agent: env.model, message: 'write ts-elicit.txt', session_key: 'ts-elicit' } },
			undefined,
			{ timeout: env.timeout },
		);
		return { text: text(r), isError: r.isError ?? false, asked };
	} finally {
		await c.close();
	}
}
