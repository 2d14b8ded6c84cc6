// console.mjs drives the web console in a real headless Chromium
// (playwright-core, pointed at the system's chromium) against a running
// `lambdaclaw serve` and the fake model of tests/console_test.go:
//
//   LAMBDACLAW_ADDR=http://127.0.0.1:PORT LAMBDACLAW_KEY=lc_… \
//   CHROMIUM=/usr/bin/chromium SCREENSHOTS=/tmp/dir node console.mjs
//
// It looks at the signed-out page, signs in, chats (a streamed reply, a
// markdown reply full of attempts at injecting HTML, a memory stored by
// the agent, a write approved inline), looks at, edits and closes a file
// in the agent view, searches and forgets the memory, lists and searches
// the sessions, makes a job with the form, reads the metrics, creates a
// key and copies it, signs in with it (read-only files, no jobs),
// revokes it, then screenshots every view at 1280 and 390 px wide
// (light, and the chat dark), measuring horizontal overflow, and prints
// what it saw as one JSON object on stdout; the Go test compares it.
// Every wait is for something the page shows (Playwright's auto-waiting
// locators), never for time.

import { chromium } from 'playwright-core';

console.log = console.error;

const addr = need('LAMBDACLAW_ADDR');
const key = need('LAMBDACLAW_KEY');
const shots = need('SCREENSHOTS');

function need(name) {
	const v = process.env[name];
	if (!v) {
		console.error(`console.mjs: ${name} is not set`);
		process.exit(2);
	}
	return v;
}

const seen = { shots: [], overflow: {} };
// VIEWS are the console's views.
const VIEWS = ['chat', 'sessions', 'approvals', 'jobs', 'agents', 'keys', 'metrics'];
const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	// The tests may run as root, where Chromium's sandbox cannot start.
	args: ['--no-sandbox'],
});
try {
	const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
	await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: addr });
	const page = await context.newPage();
	page.setDefaultTimeout(20_000);
	page.on('dialog', (d) => d.accept());
	// Whatever a reply manages to run would set one of these.
	await page.addInitScript(() => { window.__pwned = []; });
	const pageErrors = [];
	page.on('pageerror', (e) => pageErrors.push(String(e)));
	// What the page sends and receives over WebSockets, and every URL it
	// loads (the key must be in none).
	const wsURLs = [];
	const frames = [];
	const urls = [];
	page.on('request', (r) => urls.push(r.url()));
	page.on('websocket', (ws) => {
		wsURLs.push(ws.url());
		ws.on('framereceived', (f) => frames.push(JSON.parse(f.payload)));
	});

	await page.goto(addr + '/');
	// Signed out: only the sign-in form shows, and nothing says a key was
	// refused.
	await page.locator('#signin-form').waitFor();
	seen.signedOut = {
		nav: await page.locator('#nav').isVisible(),
		views: await page.locator('.view:visible').count(),
		signout: await page.locator('#signout').isVisible(),
		error: await page.locator('#signin-error').textContent(),
	};
	await shoot(page, 'signin-1280');
	await page.setViewportSize({ width: 390, height: 844 });
	await shoot(page, 'signin-390');
	await page.setViewportSize({ width: 1280, height: 900 });
	seen.favicon = await page.evaluate(async () => {
		const r = await fetch('/favicon.ico');
		const link = document.querySelector('link[rel=icon]');
		const r2 = await fetch(link.href);
		return [r.status + ' ' + r.headers.get('content-type'), r2.status + ' ' + r2.headers.get('content-type')];
	});
	// A wrong key is refused.
	await page.fill('#signin-key', 'lc_wrong');
	await page.click('#signin-form button');
	seen.wrongKey = await page.locator('#signin-error').filter({ hasText: /./ }).textContent();

	await signIn(page, key);
	seen.keysTab = await page.locator('#nav-keys').isVisible();
	seen.stored = await page.evaluate(() => sessionStorage.getItem('lambdaclaw.key') !== null && localStorage.length === 0);

	// Chat: a streamed reply.
	await say(page, 'hello console');
	await page.locator('.msg.assistant', { hasText: 'echo: hello console' }).waitFor();
	seen.deltas = frames.filter((f) => f.type === 'delta').length;
	seen.reply = await page.locator('.msg.assistant').last().textContent();

	// Shift+Enter is a new line; Enter sends.
	await page.fill('#chat-input', 'line one');
	await page.press('#chat-input', 'Shift+Enter');
	seen.shiftEnter = await page.inputValue('#chat-input');
	await page.fill('#chat-input', '');

	// A markdown reply, full of attempts at running or injecting
	// something: rendered as elements, nothing run.
	await say(page, 'show markdown');
	const md = page.locator('.msg.assistant.md', { hasText: 'Markdown title' });
	await md.waitFor();
	seen.markdown = await inspectReply(md);
	// The user's own words are text too, and so is their echo.
	await say(page, need('XSS_MESSAGE'));
	await page.locator('.msg.assistant', { hasText: 'echo: <img src=x' }).waitFor();

	// The agent stores a memory (no approval for that).
	await say(page, 'remember my tea');
	await page.locator('.msg.assistant', { hasText: 'Remembered.' }).waitFor();

	// A write waits for an approval, answered inline.
	await say(page, 'please write notes');
	const approval = page.locator('#chat-log .approval');
	await approval.waitFor();
	seen.approval = await approval.locator('strong').textContent();
	await shoot(page, 'approval-1280');
	await approval.getByRole('button', { name: 'Approve' }).click();
	await page.locator('.msg.assistant', { hasText: 'Notes written.' }).waitFor();

	// The agent view shows the file.
	await nav(page, 'agents');
	await page.locator('#agent-files li', { hasText: 'notes.txt' }).click();
	await page.locator('#file-title', { hasText: 'notes.txt' }).waitFor();
	seen.file = await page.locator('#file-view').textContent();
	await page.locator('#agent-bootstrap li').first().waitFor();
	seen.bootstrap = await page.locator('#agent-bootstrap li').allTextContents();
	// Listed once: the bootstrap files are not among the others.
	seen.bootstrapTwice = (await page.locator('#agent-files li').allTextContents()).filter((f) => seen.bootstrap.includes(f));
	// The supervised key edits it, confirming (the dialog is accepted).
	await page.click('#file-edit');
	await page.fill('#file-text', 'edited in the console');
	await page.click('#file-save');
	await page.locator('#file-note', { hasText: 'Saved.' }).waitFor();
	seen.fileEdited = await page.locator('#file-view').textContent();
	// Esc closes the file.
	await page.keyboard.press('Escape');
	await page.locator('#file-panel').waitFor({ state: 'hidden' });

	// Memory: search, view, forget.
	await page.fill('#memory-query', 'green tea');
	await page.click('#memory-form button');
	const hit = page.locator('#memory-hits li[data-key="tea"]');
	await hit.waitFor();
	seen.memoryHit = await hit.textContent();
	await hit.getByRole('button', { name: 'View' }).click();
	await page.locator('#file-title', { hasText: 'Memory tea' }).waitFor();
	seen.memoryText = await page.locator('#file-view').textContent();
	await hit.getByRole('button', { name: 'Forget' }).click();
	// The list is searched again, without the memory.
	await hit.waitFor({ state: 'detached' });
	seen.memoryForgotten = await page.locator('#memory-method').textContent();

	// A second session, over the HTTP API.
	await page.evaluate(async ({ k, title }) => {
		const r = await fetch('/v1/chat/completions', { method: 'POST',
			headers: { authorization: 'Bearer ' + k, 'content-type': 'application/json', 'x-lambdaclaw-session-key': 'from-the-api' },
			// With a picture, which the session's history shows.
			body: JSON.stringify({ model: 'default', messages: [{ role: 'user', content: [{ type: 'text', text: title },
				{ type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' } }] }] }) });
		if (!r.ok) throw new Error('chat completions: ' + r.status);
	}, { k: key, title: need('XSS_TITLE') });

	// Sessions: titled, with channel, time and preview; their history.
	await nav(page, 'sessions');
	const items = page.locator('#sessions-list li');
	await items.nth(1).waitFor();
	seen.sessions = await items.evaluateAll((lis) => lis.map((li) => ({
		title: li.querySelector('.title').textContent,
		channel: li.querySelector('.chip') ? li.querySelector('.chip').textContent : '',
		preview: li.querySelector('.preview').textContent,
		hasTime: /\d/.test(li.querySelector('.meta').textContent),
	})));
	await items.filter({ hasText: 'hello console' }).click();
	await page.locator('#session-log .msg.user', { hasText: 'hello console' }).waitFor();
	seen.history = await page.locator('#session-log .msg.user').allTextContents();
	seen.historyMarkdown = await inspectReply(page.locator('#session-log .msg.assistant.md', { hasText: 'Markdown title' }));
	// The picture sent over the API shows in its session's history.
	await items.filter({ hasText: need('XSS_TITLE').slice(0, 20) }).first().click();
	await page.waitForFunction(() => {
		const i = document.querySelector('#session-log .msg.user .media img');
		return i && i.complete && i.naturalWidth > 0;
	});
	seen.historyImage = await page.locator('#session-log .msg.user .media img').evaluate((i) => i.naturalWidth);
	// Ctrl+K searches them.
	await page.keyboard.press('Control+k');
	seen.searchFocused = await page.evaluate(() => document.activeElement.id);
	await page.keyboard.type('WRITE notes');
	await page.keyboard.press('Enter');
	await items.first().locator('.preview', { hasText: 'please write notes' }).waitFor();
	seen.searchHits = await items.locator('.title').allTextContents();
	await page.fill('#session-query', 'nothing like this anywhere');
	await page.keyboard.press('Enter');
	await page.locator('#session-detail', { hasText: 'No session matches.' }).waitFor();
	await page.fill('#session-query', '');
	await page.keyboard.press('Enter');
	await items.nth(1).waitFor();
	// An admin key also sees the channels' conversations, each with the
	// identity that owns it, read-only.
	await page.selectOption('#session-of', 'channels');
	await items.first().locator('.title', { hasText: 'hello from telegram' }).waitFor();
	seen.channelSessions = await items.evaluateAll((lis) => lis.map((li) => [
		li.querySelector('.title').textContent, li.querySelector('.chip').textContent, li.querySelector('.owner').textContent]));
	await items.first().click();
	await page.locator('#session-log .msg.user', { hasText: 'hello from telegram' }).waitFor();
	seen.channelSession = await page.locator('#session-detail p.muted').textContent();
	await page.selectOption('#session-of', '');
	await items.nth(1).waitFor();

	// Approvals: none pending any more.
	await nav(page, 'approvals');
	await page.locator('#approvals-list', { hasText: 'Nothing waits for an answer.' }).waitFor();

	// Jobs: the key's job (made with lambdaclaw cron add --owner), paused.
	await nav(page, 'jobs');
	const job = page.locator('#jobs-table tbody tr', { hasText: 'hourly' });
	await job.waitFor(); // the table is filled once the jobs are read
	seen.job = (await job.locator('td').allTextContents()).slice(0, 3);
	// The jobs come 50 at a time; More shows the rest.
	const rows = page.locator('#jobs-table tbody tr');
	seen.jobRows = [await rows.count()];
	await page.click('#jobs-more');
	await page.locator('#jobs-table tbody tr', { hasText: 'later-49' }).waitFor();
	seen.jobRows.push(await rows.count());
	seen.moreAfter = await page.locator('#jobs-more').isVisible();
	await job.getByRole('button', { name: 'Pause' }).click();
	await job.locator('td', { hasText: 'paused' }).waitFor();
	await job.getByRole('button', { name: 'Runs' }).click();
	seen.jobRuns = await page.locator('#job-runs p').textContent();
	// The form: a bad schedule is refused and says why; a good one is made.
	await page.click('#job-new summary');
	await page.fill('#job-name', 'from-form');
	await page.selectOption('#job-kind', 'cron');
	await page.fill('#job-when', 'not a cron');
	await page.fill('#job-message', 'made in the browser');
	await page.click('#job-form button[type=submit]');
	seen.jobFormError = await page.locator('#job-error').filter({ hasText: /./ }).textContent();
	await page.fill('#job-when', '0 9 * * 1-5');
	await page.fill('#job-tz', 'Europe/Berlin');
	await page.click('#job-form button[type=submit]');
	await page.locator('#job-error').filter({ hasText: /^$/ }).waitFor({ state: 'attached' });
	await page.click('#jobs-more');
	const formJob = page.locator('#jobs-table tbody tr', { hasText: 'from-form' });
	await formJob.waitFor();
	seen.formJob = (await formJob.locator('td').allTextContents()).slice(0, 3);

	// Live metrics: the turns so far.
	await nav(page, 'metrics');
	// The counters are updated as the events are handled; the view reads
	// them every 5 s until the six turns show (five chats and one over
	// the HTTP API).
	const turns = page.locator('.card[data-metric="Turns"] .value', { hasText: /^6$/ });
	await turns.waitFor();
	seen.turns = Number(await turns.textContent());
	seen.tokensIn = Number(await page.locator('.card[data-metric="Tokens in"] .value').textContent()) > 0;

	// Keys: create one, sign in with it, revoke it.
	await nav(page, 'keys');
	await page.fill('#key-name', 'browser-made');
	await page.selectOption('#key-autonomy', 'read_only');
	await page.click('#key-form button');
	const secret = (await page.locator('#key-secret').filter({ hasText: 'lc_' }).textContent()).match(/lc_\w+/)[0];
	const row = page.locator('#keys-table tbody tr', { hasText: 'browser-made' });
	await row.waitFor();
	seen.newKeyRow = (await row.locator('td').allTextContents()).slice(1, 6);
	await page.click('#key-copy');
	await page.locator('#key-copied', { hasText: 'Copied.' }).waitFor();
	seen.copied = (await page.evaluate(() => navigator.clipboard.readText())) === secret;
	await shootAll(page, 'admin');
	await page.click('#signout');
	await signIn(page, secret);
	seen.newKeyKeysTab = await page.locator('#nav-keys').isVisible();
	// The read_only key sees the files read-only, and may not write.
	await nav(page, 'agents');
	await page.locator('#agent-files li', { hasText: 'notes.txt' }).click();
	await page.locator('#file-title', { hasText: 'notes.txt' }).waitFor();
	seen.readOnlyFile = [await page.locator('#file-edit').isVisible(), await page.locator('#file-note').textContent()];
	seen.readOnlyWrite = await page.evaluate(async (k) => {
		const r = await fetch('/v1/lambdaclaw/agents/default/files/notes.txt', { method: 'PUT',
			headers: { authorization: 'Bearer ' + k, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'no', approved: true }) });
		return r.status + ' ' + (await r.json()).error.code;
	}, secret);
	// It has no jobs: the empty state names the command as code.
	await nav(page, 'jobs');
	const empty = page.locator('#job-runs p', { hasText: 'No scheduled jobs' });
	await empty.waitFor();
	seen.jobsEmpty = [await empty.textContent(), await empty.locator('code').textContent()];
	seen.newKeyMetricsTab = await page.locator('#nav-metrics').isVisible();
	seen.newKeyMetrics = await page.evaluate(async (k) => {
		const r = await fetch('/metrics', { headers: { authorization: 'Bearer ' + k } });
		return r.status + ' ' + (await r.json()).error.code;
	}, secret);
	await page.click('#signout');
	await signIn(page, key);
	await nav(page, 'keys');
	await row.getByRole('button', { name: 'Revoke' }).click();
	await row.locator('td', { hasText: 'revoked' }).waitFor();
	seen.revoked = (await row.locator('td').nth(5).textContent()).startsWith('revoked');
	await page.click('#signout');
	await page.fill('#signin-key', secret);
	await page.click('#signin-form button');
	seen.revokedSignIn = await page.locator('#signin-error').filter({ hasText: /./ }).textContent();

	seen.keyInURL = urls.concat(wsURLs).some((u) => u.includes(key) || u.includes(secret));
	seen.wsURLs = [...new Set(wsURLs.map((u) => new URL(u).pathname))];
	seen.pwned = await page.evaluate(() => window.__pwned);
	seen.pageErrors = pageErrors;
} finally {
	await browser.close();
}
process.stdout.write(JSON.stringify(seen) + '\n');

// inspectReply says what a rendered markdown reply holds, and whether
// anything was injected or run.
async function inspectReply(loc) {
	return loc.evaluate((m) => ({
		heading: m.querySelector('h2') ? m.querySelector('h2').textContent : '',
		items: Array.from(m.querySelectorAll('li'), (li) => li.textContent),
		strong: Array.from(m.querySelectorAll('strong'), (e) => e.textContent),
		em: Array.from(m.querySelectorAll('em'), (e) => e.textContent),
		code: Array.from(m.querySelectorAll(':not(pre) > code'), (e) => e.textContent),
		pre: Array.from(m.querySelectorAll('pre'), (e) => e.textContent),
		links: Array.from(m.querySelectorAll('a'), (a) => a.getAttribute('href') + ' ' + a.rel),
		injected: m.querySelectorAll('script, img, iframe, [onerror], [onclick]').length,
		pwned: window.__pwned,
	}));
}

// shootAll screenshots every view at desktop and phone width (and the
// chat in dark mode), and measures, for each, the horizontal overflow of
// the page and how tall the header is.

async function shootAll(page, who) {
	for (const [width, height] of [[1280, 900], [390, 844]]) {
		await page.setViewportSize({ width, height });
		for (const view of VIEWS) {
			await nav(page, view);
			// Each view with something open in it.
			if (view === 'sessions') {
				await page.locator('#sessions-list li').first().click();
				await page.locator('#session-log .msg').first().waitFor();
			} else if (view === 'agents') {
				await page.locator('#agent-bootstrap li', { hasText: 'AGENTS.md' }).click();
				await page.locator('#file-title', { hasText: 'AGENTS.md' }).waitFor();
				if (width === 390) {
					seen.phoneFileTop = await page.locator('#file-panel').evaluate((e) => Math.round(e.getBoundingClientRect().top));
				}
			} else if (view === 'jobs') {
				await page.locator('#jobs-table tbody tr').first().waitFor();
			} else if (view === 'keys') {
				await page.locator('#keys-table tbody tr').first().waitFor();
			} else if (view === 'metrics') {
				await page.locator('.card').first().waitFor();
			} else if (view === 'chat') {
				await page.locator('#chat-log .msg').first().waitFor();
			}
			await shoot(page, `${view}-${width}`);
			if (view === 'agents') await page.click('#file-close');
		}
	}
	await page.emulateMedia({ colorScheme: 'dark' });
	await nav(page, 'chat');
	await page.locator('#chat-log .msg').first().waitFor();
	seen.darkBackground = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
	await shoot(page, 'chat-390-dark');
	await page.setViewportSize({ width: 1280, height: 900 });
	await shoot(page, 'chat-1280-dark');
	await page.emulateMedia({ colorScheme: 'light' });
}

async function shoot(page, name) {
	await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
	seen.shots.push(name);
	const m = await page.evaluate(() => ({
		over: document.scrollingElement.scrollWidth - innerWidth,
		header: Math.round(document.querySelector('header').getBoundingClientRect().height),
	}));
	seen.overflow[name] = m.over;
	if (name.endsWith('-390')) seen.phoneHeader = Math.max(seen.phoneHeader || 0, m.header);
}

async function signIn(page, k) {
	await page.fill('#signin-key', k);
	await page.click('#signin-form button');
	await page.locator('#nav').waitFor();
	await page.locator('#view-chat').waitFor();
}

async function nav(page, view) {
	await page.click(`nav button[data-view="${view}"]`);
	await page.locator(`#view-${view}`).waitFor();
}

async function say(page, text) {
	await page.fill('#chat-input', text);
	await page.press('#chat-input', 'Enter');
}
