// The page's first result in CPU time, which the host's load moves less than wall time (prints
// numbers, asserts nothing): Chromium's trace of each navigation, summed up to the frame that
// draws the first estimate: the main thread's task time, the wasm functions V8 compiled on their
// first call (their count, their code bytes in the site's memfit_web.wasm, which the load does
// not move, and their CPU), the scripts run. Sites alternate run by run, like page_bench.mjs.
// Usage: node tools/bench/page_cpu.mjs [runs]; MEMFIT_SITE=<dir>[,<dir>…] (default build-wasm/site).
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { serve, launchChromium } from './page_serve.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const sites = (process.env.MEMFIT_SITE || join(root, 'build-wasm', 'site')).split(',');
const runs = Number(process.argv[2] || 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/// Each function's body size in a wasm file, by function index (imported functions count first).
function functionBytes(path) {
  const b = readFileSync(path);
  let p = 8;
  const leb = () => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = b[p++];
      value += (byte & 0x7f) * 2 ** shift;
      if (!(byte & 0x80)) return value;
    }
  };
  const skipName = () => { const length = leb(); p += length; };
  const skipLimits = () => { const flags = leb(); leb(); if (flags & 1) leb(); };
  let imported = 0;
  const sizes = [];
  while (p < b.length) {
    const id = b[p++];
    const end = leb() + p;
    if (id === 2) {  // imports: only functions take function indices
      for (let n = leb(); n > 0; n -= 1) {
        skipName();
        skipName();
        const kind = b[p++];
        if (kind === 0) { leb(); imported += 1; } else if (kind === 1) { p += 1; skipLimits(); } else if (kind === 2) skipLimits();
        else if (kind === 3) p += 2; else if (kind === 4) { p += 1; leb(); }
      }
    } else if (id === 10) {  // code: each body's size
      for (let n = leb(); n > 0; n -= 1) { const size = leb(); sizes.push(size); p += size; }
    }
    p = end;
  }
  return (index) => sizes[index - imported] ?? 0;
}

/// One traced navigation: {first, mainCpu, lazyCompiled, lazyKiB, lazyCpu, scriptsCpu} in ms
/// (a count for lazyCompiled, KiB of wasm code for lazyKiB).
async function traced(browser, base, bytesOf) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await browser.startTracing(page, { categories: ['toplevel', 'v8.wasm', 'devtools.timeline', 'blink.user_timing'] });
  await page.goto(`${base}/index.html`);
  await page.waitForSelector('body[data-first-result-ms]', { timeout: 30000 });
  const trace = JSON.parse(String(await browser.stopTracing()));
  const first = Number(await page.evaluate(() => document.body.dataset.firstResultMs));
  await context.close();
  const events = trace.traceEvents;
  const nav = events.find((e) => e.name === 'navigationStart' && e.args?.data?.documentLoaderURL?.startsWith(base));
  const mainThread = events.find((e) => e.name === 'thread_name' && e.pid === nav.pid && e.args.name === 'CrRendererMain');
  const until = nav.ts + first * 1000;
  const onMain = events.filter((e) => e.pid === nav.pid && e.tid === mainThread.tid && e.ph === 'X' && e.ts >= nav.ts && e.ts <= until);
  const cpu = (name) => onMain.filter((e) => e.name === name).reduce((sum, e) => sum + (e.tdur ?? 0), 0) / 1000;
  const lazy = onMain.filter((e) => e.name === 'wasm.CompileLazy');
  return { first, mainCpu: cpu('ThreadControllerImpl::RunTask'), lazyCompiled: lazy.length,
    lazyKiB: lazy.reduce((sum, e) => sum + bytesOf(e.args?.func_index), 0) / 1024,
    lazyCpu: cpu('wasm.CompileLazy'), scriptsCpu: cpu('EvaluateScript') };
}

const served = await Promise.all(sites.map(serve));
const sizes = sites.map((dir) => functionBytes(join(dir, 'memfit_web.wasm')));
const browser = await launchChromium();
const load = [loadavg()[0]];
const results = sites.map(() => []);
for (let i = 0; i < runs; i += 1) {
  for (let s = 0; s < sites.length; s += 1) results[s].push(await traced(browser, served[s].base, sizes[s]));
}
load.push(loadavg()[0]);
await browser.close();
for (const { server } of served) server.kill();
console.log(`page's first result, traced (Llama-3.1-8B, 8 x H100); load average ${load.map((l) => l.toFixed(1)).join(' -> ')}; medians (min-max) of ${runs}`);
sites.forEach((dir, s) => {
  console.log(`${dir}:`);
  for (const key of Object.keys(results[s][0])) {
    const xs = results[s].map((r) => r[key]);
    console.log(`  ${key.padEnd(14)} ${median(xs).toFixed(1).padStart(8)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`);
  }
});
