// console.mjs drives the web console in a real headless Chromium
// (playwright-core, pointed at the system's chromium) against a running
// `lambdaclaw serve` and the fake model of tests/console_test.go:
//
//   LAMBDACLAW_ADDR=http://127.0.0.1:PORT LAMBDACLAW_KEY=lc_… \
//   CHROMIUM=/usr/bin/chromium SCREENSHOT=/tmp/x.png node console.mjs
//
// It signs in, chats (a streamed reply, a memory stored by the agent, a
// write approved inline), looks at the file in the agent view, searches
// and forgets the memory, reads the sessions and metrics, creates a key,
// signs in with it, revokes it, and prints what it saw as one JSON object
// on stdout; the Go test compares it. Every wait is for something the
// page shows (Playwright's auto-waiting locators), never for time.

import { chromium } from 'playwright-core';

console.log = console.error;

const addr = need('LAMBDACLAW_ADDR');
const key = need('LAMBDACLAW_KEY');

function need(name) {
	const v = process.env[name];
	if (!v) {
		console.error(`console.mjs: ${name} is not set`);
		process.exit(2);
	}
	return v;
}

const seen = {};
const browser = await chromium.launch({
	executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
	// The tests may run as root, where Chromium's sandbox cannot start.
	args: ['--no-sandbox'],
});
try {
	const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
	page.setDefaultTimeout(20_000);
	page.on('dialog', (d) => d.accept());
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

	// The agent stores a memory (no approval for that).
	await say(page, 'remember my tea');
	await page.locator('.msg.assistant', { hasText: 'Remembered.' }).waitFor();

	// A write waits for an approval, answered inline.
	await say(page, 'please write notes');
	const approval = page.locator('#chat-log .approval');
	await approval.waitFor();
	seen.approval = await approval.locator('strong').textContent();
	await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
	await approval.getByRole('button', { name: 'Approve' }).click();
	await page.locator('.msg.assistant', { hasText: 'Notes written.' }).waitFor();

	// The agent view shows the file.
	await nav(page, 'agents');
	await page.locator('#agent-files li', { hasText: 'notes.txt' }).click();
	await page.locator('#file-title', { hasText: 'notes.txt' }).waitFor();
	seen.file = await page.locator('#file-view').textContent();
	await page.locator('#agent-bootstrap li').first().waitFor();
	seen.bootstrap = await page.locator('#agent-bootstrap li').allTextContents();

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

	// Sessions and their history.
	await nav(page, 'sessions');
	await page.locator('#sessions-table tbody tr').first().click();
	await page.locator('#session-log .msg.user', { hasText: 'hello console' }).waitFor();
	seen.history = await page.locator('#session-log .msg.user').allTextContents();

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

	// Live metrics: the turns so far.
	await nav(page, 'metrics');
	// The counters are updated as the events are handled; the view reads
	// them every 5 s until the three turns show.
	const turns = page.locator('.card[data-metric="Turns"] .value', { hasText: /^3$/ });
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
	await page.click('#signout');
	await signIn(page, secret);
	seen.newKeyKeysTab = await page.locator('#nav-keys').isVisible();
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
	seen.pageErrors = pageErrors;
} finally {
	await browser.close();
}
process.stdout.write(JSON.stringify(seen) + '\n');

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
