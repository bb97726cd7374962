// Shared by the page tests: the site served from 127.0.0.1, Debian's Chromium (playwright-core,
// never a downloaded browser), pages that record stray requests and errors, and the CLI's answer
// for the request a page shows.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { site, root } from './helpers.mjs';

const CHROMIUM = process.env.MEMFIT_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
export const SHOTS = join(root, 'artifacts', 'screenshots');
export const skip = !existsSync(CHROMIUM);
export const scratch = mkdtempSync(join(tmpdir(), 'memfit-page-'));
export const gib = (bytes) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;

/// The headline's peak: the device total, or, when the framework's version is unknown, the
/// core's range of it (judged by the high end).
export function headlinePeak(result, unit = gib) {
  const r = result.ranges?.device_total_bytes;
  return r && r.low !== r.high ? `${unit(r.low)}–${unit(r.high)}` : unit(result.device_total_bytes);
}

/// {baseUrl, browser}, filled before the tests of the importing file run.
export const env = {};

/// Serves the site and starts the browser around the importing file's tests.
export function useBrowser() {
  before(async () => {
    if (skip) return;
    mkdirSync(SHOTS, { recursive: true });
    env.server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', site],
      { stdio: ['ignore', 'pipe', 'ignore'] });
    env.baseUrl = await new Promise((resolve, reject) => {
      env.server.stdout.on('data', (d) => {
        const m = /port (\d+)/.exec(String(d));
        if (m) resolve(`http://127.0.0.1:${m[1]}`);
      });
      env.server.on('exit', () => reject(new Error('http.server exited')));
    });
    env.browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  });
  after(async () => {
    await env.browser?.close();
    env.server?.kill();
  });
}

/// A page whose every request is recorded; `allow(url)` says which ones are expected.
export async function open(url, { width = 1280, height = 900, colorScheme, allow = (u) => u.startsWith(env.baseUrl) || u.startsWith('file:') } = {}) {
  const page = await env.browser.newPage({ viewport: { width, height }, colorScheme });
  page.unexpected = [];
  page.errors = [];
  page.on('request', (r) => { if (!allow(r.url())) page.unexpected.push(r.url()); });
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('dialog', (d) => { page.errors.push(`dialog: ${d.message()}`); d.dismiss(); });
  await page.goto(url);
  return page;
}

/// Waits until the estimate and the search for the current inputs are both rendered.
export async function settled(page, scope = 'body') {
  await page.waitForSelector(`${scope} .calc[data-settled="1"]`, { timeout: 20000 });
}

/// What the CLI answers for a request (the page's own request, read from the page).
export function cli(command, request) {
  const file = join(scratch, `${command}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, typeof request === 'string' ? request : JSON.stringify(request));
  const out = spawnSync(process.execPath, [join(root, 'cli', 'memfit.js'), command, file], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stdout + out.stderr);
  return JSON.parse(out.stdout);
}

/// The search request behind the page's estimate request: no layout, no searched training fields.
export function searchRequest(request) {
  return { ...request, parallel: undefined, training: { ...request.training, micro_batch: undefined, grad_accum: undefined,
    activation_checkpointing: undefined, offload: undefined }, search: { top: 5, launch: false } };
}

/// The page's headline numbers equal the CLI's estimate of the request the page shows.
export async function assertMatchesCli(page, scope = '') {
  const request = JSON.parse(await page.textContent(`${scope} #request-json`));
  const result = cli('estimate', request);
  assert.equal(await page.textContent(`${scope} #peak`), headlinePeak(result));
  assert.equal(await page.textContent(`${scope} #verdict`), result.fit.verdict === 'oom' ? 'OOM' : result.fit.verdict);
  assert.match(await page.textContent(`${scope} #max-mb`), new RegExp(`^${result.fit.max_micro_batch}\\b`));
  const rows = await page.$$eval(`${scope} #breakdown tr`, (trs) => trs.map((tr) => [tr.cells[0]?.textContent ?? tr.querySelector('th').textContent, tr.querySelector('td').textContent]));
  const expected = Object.entries(result.breakdown).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1])
    .map(([k, v]) => [k.replace(/_bytes$/, '').replace(/_/g, ' '), `${(v / 2 ** 30).toFixed(2)} GiB`]);
  assert.deepEqual(rows.slice(0, -1), expected);
  return { request, result };
}

const axeSource = () => readFileSync(join(root, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/// axe-core's violations of every impact on the page as it is now, as "rule: targets" lines.
export async function axeViolations(page) {
  if (!(await page.evaluate(() => Boolean(globalThis.axe)))) await page.addScriptTag({ content: axeSource() });
  return page.evaluate(async () => {
    const r = await globalThis.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => `${v.impact} ${v.id}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
}
