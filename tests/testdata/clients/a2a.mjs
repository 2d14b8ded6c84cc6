// Scenarios of the official A2A JavaScript SDK (@a2a-js/sdk, see run.mjs)
// against the gateway's A2A server: the agent's card, then message/send,
// message/stream and an input-required round trip, each in the SDK's
// version 1.0 (SendMessage, SendStreamingMessage) and with its version
// 0.3 transport (message/send, message/stream) from its compatibility
// layer. tests/a2a_test.go runs them against a fake model that echoes in
// pieces, and writes the file a message "write NAME" names (a tool that
// asks for approval).
import {
	Client,
	ClientFactory,
	ClientFactoryOptions,
	DefaultAgentCardResolver,
	JsonRpcTransportFactory,
} from '@a2a-js/sdk/client';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';

// base is the default agent's A2A URL, under which its card is.
const base = (env) => env.url.replace(/\/v1$/, '') + '/a2a/' + env.model + '/';

// authed is env.fetch with the key on every request: the cards, like the
// rest of the API, are the key's.
const authed = (env) => (input, init = {}) => {
	const headers = new Headers(init.headers ?? {});
	headers.set('Authorization', `Bearer ${env.key}`);
	return env.fetch(input, { ...init, headers });
};

// connect returns a client of the agent: of version 1.0, or with the
// SDK's version 0.3 transport at the card's interface of that version.
async function connect(env, version) {
	const fetchImpl = authed(env);
	const resolver = new DefaultAgentCardResolver({ fetchImpl });
	if (version === '1.0') {
		const factory = new ClientFactory(
			ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
				cardResolver: resolver,
				transports: [new JsonRpcTransportFactory({ fetchImpl })],
			}),
		);
		return factory.createFromUrl(base(env));
	}
	const card = await resolver.resolve(base(env));
	const legacy = card.supportedInterfaces.find((i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion === '0.3');
	if (!legacy) throw new Error('the card names no JSONRPC interface of version 0.3');
	return new Client(new LegacyJsonRpcTransport({ endpoint: legacy.url, fetchImpl }), card);
}

const message = (text, extra = {}) => ({
	message: {
		messageId: crypto.randomUUID(),
		role: 1, // Role.ROLE_USER
		parts: [{ content: { $case: 'text', value: text } }],
		contextId: '',
		taskId: '',
		metadata: undefined,
		extensions: [],
		referenceTaskIds: [],
		...extra,
	},
	configuration: undefined,
	metadata: undefined,
	tenant: '',
});

const partsText = (parts) => (parts ?? []).map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');

// summary is what a test compares of a task.
function summary(task) {
	return {
		id: task.id,
		contextId: task.contextId,
		state: task.status?.state,
		status: partsText(task.status?.message?.parts),
		answer: (task.artifacts ?? []).map((a) => partsText(a.parts)).join(''),
	};
}

// send sends a message and reads the task back.
async function send(env, version) {
	const c = await connect(env, version);
	const card = await c.getAgentCard();
	const task = await c.sendMessage(message(`hello over A2A ${version}`));
	const got = await c.getTask({ id: task.id, tenant: '' });
	return { card: { name: card.name, streaming: card.capabilities?.streaming }, task: summary(task), got: summary(got) };
}

// stream sends a message and lists the events of its stream.
async function stream(env, version) {
	const c = await connect(env, version);
	const events = [];
	for await (const ev of c.sendMessageStream(message(`streamed over A2A ${version}`))) {
		const p = ev.payload;
		switch (p?.$case) {
			case 'task':
				events.push({ kind: 'task', state: p.value.status?.state });
				break;
			case 'statusUpdate':
				events.push({ kind: 'status', state: p.value.status?.state });
				break;
			case 'artifactUpdate':
				events.push({ kind: 'artifact', text: partsText(p.value.artifact?.parts), append: p.value.append, lastChunk: p.value.lastChunk });
				break;
			default:
				events.push({ kind: p?.$case ?? 'none' });
		}
	}
	return { events };
}

// inputRequired asks for a tool that needs approval, then approves it
// with the next message of the task.
async function inputRequired(env, version) {
	const c = await connect(env, version);
	const name = `a2a-${version}.txt`;
	const asked = await c.sendMessage(message(`write ${name}`));
	const answered = await c.sendMessage(message('yes', { taskId: asked.id, contextId: asked.contextId }));
	return { asked: summary(asked), answered: summary(answered) };
}

export const sendV1 = (env) => send(env, '1.0');
export const sendV03 = (env) => send(env, '0.3');
export const streamV1 = (env) => stream(env, '1.0');
export const streamV03 = (env) => stream(env, '0.3');
export const inputRequiredV1 = (env) => inputRequired(env, '1.0');
export const inputRequiredV03 = (env) => inputRequired(env, '0.3');
