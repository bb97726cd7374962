// Page benchmark in Debian's Chromium (prints numbers, asserts nothing): time from navigation to
// the first result, per update (the estimate shown, then the search, charts and launch configs
// settled), and the sizes of what the page ships, raw and gzip.
// Usage: node tools/bench/page_bench.mjs [runs]
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = fileURLToPath(new URL('../../', import.meta.url));
const site = process.env.MEMFIT_SITE || join(root, 'build-wasm', 'site');  // another site: a baseline to compare
const runs = Number(process.argv[2] || 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const stats = (xs) => `median ${median(xs).toFixed(1)} ms, min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)} (n=${xs.length})`;

const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', site], { stdio: ['ignore', 'pipe', 'ignore'] });
const base = await new Promise((resolve) => server.stdout.on('data', (d) => {
  const m = /port (\d+)/.exec(String(d));
  if (m) resolve(`http://127.0.0.1:${m[1]}`);
}));
const browser = await chromium.launch({ executablePath: process.env.MEMFIT_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });

const first = [], moduleReady = [], searched = [], update = [], settled = [];
for (let i = 0; i < runs; i += 1) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/index.html`);
  await page.waitForSelector('body[data-ready="1"]');
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  first.push(Number(d.firstResultMs));
  moduleReady.push(Number(d.moduleMs));
  searched.push(Number(d.searchMs));
  for (const seq of ['2048', '4096', '1024', '8192', '3072']) {
    const ms = await page.evaluate((value) => new Promise((resolve) => {
      const input = document.querySelector('#seq_len');
      const calc = document.querySelector('.calc');
      const t0 = performance.now();
      input.value = value;
      input.dispatchEvent(new Event('input'));
      const shown = performance.now() - t0;
      const observer = new MutationObserver(() => {
        if (calc.dataset.settled) {
          observer.disconnect();
          resolve([shown, performance.now() - t0]);
        }
      });
      observer.observe(calc, { attributes: true });
    }), seq);
    update.push(ms[0]);
    settled.push(ms[1]);
  }
  await context.close();
}
await browser.close();
server.kill();

console.log('page (Llama-3.1-8B, 8 x H100, served from 127.0.0.1)');
console.log(`  module ready after navigation     ${stats(moduleReady)}`);
console.log(`  first result after navigation     ${stats(first)}`);
console.log(`  first search (every method)       ${stats(searched)}`);
console.log(`  update: estimate shown            ${stats(update)}`);
console.log(`  update: search + charts settled   ${stats(settled)}`);
for (const file of ['index.html', 'memfit-element.js', 'memfit_web.wasm', 'memfit_web.js']) {
  const bytes = readFileSync(join(site, file));
  console.log(`  ${file.padEnd(20)} ${(bytes.length / 1024).toFixed(0).padStart(6)} KiB raw ${(gzipSync(bytes, { level: 9 }).length / 1024).toFixed(0).padStart(6)} KiB gzip`);
}
