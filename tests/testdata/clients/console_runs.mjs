// console_runs.mjs opens, in a real headless Chromium (playwright-core,
// pointed at the system's chromium), the web console's session of a run
// that delegated to other agents, and prints as JSON on stdout the tree
// of runs shown under its transcript and the transcript that opens when
// a child run is clicked:
//
//   LAMBDACLAW_ADDR=http://127.0.0.1:PORT LAMBDACLAW_KEY=lc_… \
//   SESSION_TITLE=plan CHROMIUM=/usr/bin/chromium node console_runs.mjs
//
// Every wait is for something the page shows, never for time.

import { chromium } from 'playwright-core';

const env = (name) => process.env[name] || (console.error(`console_runs.mjs: ${name} is not set`), process.exit(2));
const [addr, key, title] = [env('LAMBDACLAW_ADDR'), env('LAMBDACLAW_KEY'), env('SESSION_TITLE')];
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
	const page = await browser.newPage();
	page.setDefaultTimeout(20_000);
	const pageErrors = [];
	page.on('pageerror', (e) => pageErrors.push(String(e)));
	await page.goto(addr + '/');
	await page.fill('#signin-key', key);
	await page.click('#signin-form button');
	await page.locator('#nav').waitFor();
	await page.click('nav button[data-view="sessions"]');
	await page.locator('#sessions-list li .title', { hasText: title }).first().click();
	const nodes = page.locator('.run-tree li > [data-run]');
	await nodes.nth(2).waitFor();
	const tree = await nodes.evaluateAll((els) => els.map((e) => ({
		label: e.textContent, depth: e.closest('ul').parentElement.closest('.run-tree ul') ? 1 : 0, link: e.tagName === 'BUTTON' })));
	await nodes.nth(1).click();
	await page.locator('#session-detail .muted', { hasText: 'alpha' }).waitFor();
	const child = await page.locator('#session-log .msg').allTextContents();
	console.log(JSON.stringify({ tree, child, pageErrors }));
} finally {
	await browser.close();
}
