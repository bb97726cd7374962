// The page in Debian's Chromium (playwright-core, never a downloaded browser): served over
// 127.0.0.1 and as the single offline file from file:// with the network blocked. The numbers
// must equal the CLI's; errors show next to the field; pasted text never becomes HTML.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { site, root, loadSingle, envelope } from './helpers.mjs';

const CHROMIUM = process.env.MEMFIT_CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOTS = join(root, 'artifacts', 'screenshots');

let server, baseUrl, context, M;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  M = await loadSingle();
  server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', site],
    { stdio: ['ignore', 'pipe', 'ignore'] });
  baseUrl = await new Promise((resolve, reject) => {
    server.stdout.on('data', (d) => {
      const m = /port (\d+)/.exec(String(d));
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    });
    server.on('exit', () => reject(new Error('http.server exited')));
  });
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'memfit-chromium-')), {
    executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
});

after(async () => {
  await context?.close();
  server?.kill();
});

async function ready(page) {
  await page.waitForSelector('body[data-ready="1"]', { timeout: 15000 });
}

test('served page shows the exact parameter count of the chosen preset', { skip: !existsSync(CHROMIUM) }, async () => {
  const page = await context.newPage();
  const external = [];
  page.on('request', (r) => { if (!r.url().startsWith(baseUrl)) external.push(r.url()); });
  await page.goto(`${baseUrl}/index.html`);
  await ready(page);
  await page.selectOption('#preset', 'Qwen/Qwen3-8B');
  const cli = envelope(M.inspect(JSON.stringify({ model: { preset: 'Qwen/Qwen3-8B' } }))).result;
  assert.equal(await page.textContent('#total-params'), cli.total_params.toLocaleString('en-US'));
  assert.match(page.url(), /#model=Qwen%2FQwen3-8B$/);
  await page.screenshot({ path: join(SHOTS, 'page-1280.png'), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(SHOTS, 'page-390.png'), fullPage: true });
  assert.deepEqual(external, []);
  await page.close();
});

test('a share link restores the model', { skip: !existsSync(CHROMIUM) }, async () => {
  const page = await context.newPage();
  await page.goto(`${baseUrl}/index.html#model=${encodeURIComponent('deepseek-ai/DeepSeek-V3')}`);
  await ready(page);
  assert.equal(await page.inputValue('#preset'), 'deepseek-ai/DeepSeek-V3');
  assert.equal(await page.textContent('#total-params'), (671026419200).toLocaleString('en-US'));
  await page.close();
});

test('pasted configs: errors next to the field, page keeps working, names are text', { skip: !existsSync(CHROMIUM) }, async () => {
  const page = await context.newPage();
  await page.goto(`${baseUrl}/index.html`);
  await ready(page);
  await page.fill('#config', '{"model_type": "llama", "hidden_size": 4096,');
  assert.match(await page.textContent('#config-error'), /^invalid_json: invalid json: /);
  let dialogs = 0;
  page.on('dialog', (d) => { dialogs += 1; d.dismiss(); });
  await page.fill('#config', JSON.stringify({ _name_or_path: '<img src=x onerror=alert(1)>', model_type: 'gpt2',
    vocab_size: 50257, n_embd: 768, n_layer: 12, n_head: 12 }));
  assert.equal(await page.textContent('#config-error'), '');
  assert.equal(await page.textContent('#total-params'), '124,439,808');
  assert.match(await page.textContent('#model-name'), /<img src=x onerror=alert\(1\)>/);
  assert.equal(await page.locator('img').count(), 0);
  assert.equal(dialogs, 0);
  await page.close();
});

test('the single offline file works from file:// with the network blocked', { skip: !existsSync(CHROMIUM) }, async () => {
  const page = await context.newPage();
  const blocked = [];
  await page.route('**/*', (route) => {
    if (route.request().url().startsWith('file://')) return route.continue();
    blocked.push(route.request().url());
    return route.abort();
  });
  await page.goto(`file://${site}memfit_offline.html#model=${encodeURIComponent('google-t5/t5-base')}`);
  await ready(page);
  assert.equal(await page.textContent('#total-params'), '222,903,552');
  assert.deepEqual(blocked, []);
  await page.screenshot({ path: join(SHOTS, 'offline-1280.png'), fullPage: true });
  await page.close();
});
