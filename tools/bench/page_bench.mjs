// Page benchmark in Debian's Chromium (prints numbers, asserts nothing): time from navigation to
// the first result, per update (the estimate shown, then the search, charts and launch configs
// settled), and the sizes of what the page ships, raw and gzip. Each run also navigates to a
// baseline, alternating with the page: the same document with a trivial module (8 bytes) in
// place of memfit's, decoded, inflated and instantiated the same way, that marks its "first
// result" as soon as that module is ready: what loading a page this size costs on this host now.
// Usage: node tools/bench/page_bench.mjs [runs]; MEMFIT_SITE=<dir>[,<dir>…] benchmarks other
// assembled sites, each run navigating to the baseline and then to every site in turn (an A/B
// comparison under the same load).
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = fileURLToPath(new URL('../../', import.meta.url));
const sites = (process.env.MEMFIT_SITE || join(root, 'build-wasm', 'site')).split(',');
const site = sites[0];  // the baseline document is built from the first site's page
const runs = Number(process.argv[2] || 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const stats = (xs) => `median ${median(xs).toFixed(1)} ms, min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)} (n=${xs.length})`;

/// The baseline document: the page's styles and markup, its module replaced by an empty one.
function baselineSite() {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-baseline-'));
  const html = readFileSync(join(site, 'index.html'), 'utf8');
  // Every script out (the page's module and code), the trivial one at the end of the body.
  const markup = html.replace(/<script[\s\S]*?<\/script>\n?/g, '');
  const head = markup.slice(0, markup.lastIndexOf('</body>'));
  const trivial = gzipSync(Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])).toString('base64');
  const boot = `<script type="application/octet-stream" id="memfit-wasm">${trivial}</script>
<script>
(async () => {
  const text = atob(document.getElementById('memfit-wasm').textContent);
  const packed = Uint8Array.from(text, (c) => c.charCodeAt(0));
  const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream('gzip'));
  await WebAssembly.instantiate(await new Response(stream).arrayBuffer());
  const at = performance.now().toFixed(1);
  Object.assign(document.body.dataset, { moduleMs: at, firstResultMs: at, searchMs: '0', ready: '1' });
})();
</script>
</body></html>`;
  writeFileSync(join(dir, 'index.html'), head + boot);
  return dir;
}
const baseline = baselineSite();

const serve = (dir) => new Promise((resolve) => {
  const server = spawn('python3', ['-u', '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', dir], { stdio: ['ignore', 'pipe', 'ignore'] });
  server.stdout.on('data', (d) => {
    const m = /port (\d+)/.exec(String(d));
    if (m) resolve({ server, base: `http://127.0.0.1:${m[1]}` });
  });
});
const served = await Promise.all(sites.map(serve));
const servedBaseline = await serve(baseline);
const load = [loadavg()[0]];
const baselineFirst = [];
async function runBaseline() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${servedBaseline.base}/index.html`);
  await page.waitForSelector('body[data-ready="1"]');
  baselineFirst.push(Number(await page.evaluate(() => document.body.dataset.firstResultMs)));
  await context.close();
}
const browser = await chromium.launch({ executablePath: process.env.MEMFIT_CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });

const measures = sites.map(() => ({ first: [], moduleReady: [], searched: [], update: [], settled: [] }));
/// One navigation to a site: its first result, then five updates of the sequence length.
async function runSite(base, m) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/index.html`);
  await page.waitForSelector('body[data-ready="1"]');
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  m.first.push(Number(d.firstResultMs));
  m.moduleReady.push(Number(d.moduleMs));
  m.searched.push(Number(d.searchMs));
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
    m.update.push(ms[0]);
    m.settled.push(ms[1]);
  }
  await context.close();
}
for (let i = 0; i < runs; i += 1) {
  await runBaseline();
  for (let s = 0; s < sites.length; s += 1) await runSite(served[s].base, measures[s]);
}
load.push(loadavg()[0]);
await browser.close();
for (const { server } of [...served, servedBaseline]) server.kill();
rmSync(baseline, { recursive: true });

console.log(`page (Llama-3.1-8B, 8 x H100, served from 127.0.0.1); load average ${load.map((l) => l.toFixed(1)).join(' -> ')}`);
console.log(`  baseline: trivial module ready     ${stats(baselineFirst)}`);
sites.forEach((dir, s) => {
  const m = measures[s];
  if (sites.length > 1) console.log(`${dir}:`);
  console.log(`  module ready after navigation     ${stats(m.moduleReady)}`);
  console.log(`  first result after navigation     ${stats(m.first)}`);
  console.log(`  first search (every method)       ${stats(m.searched)}`);
  console.log(`  update: estimate shown            ${stats(m.update)}`);
  console.log(`  update: search + charts settled   ${stats(m.settled)}`);
  for (const file of ['index.html', 'memfit-element.js', 'memfit_web.wasm', 'memfit_web.js']) {
    const bytes = readFileSync(join(dir, file));
    console.log(`  ${file.padEnd(20)} ${(bytes.length / 1024).toFixed(0).padStart(6)} KiB raw ${(gzipSync(bytes, { level: 9 }).length / 1024).toFixed(0).padStart(6)} KiB gzip`);
  }
});
