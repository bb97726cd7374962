// The page's first result in CPU time, which the host's load moves less than wall time (prints
// numbers, asserts nothing): Chromium's trace of each navigation, summed up to the frame that
// draws the first estimate: the main thread's task time, the wasm functions V8 compiled on their
// first call (and their CPU), the scripts run. Sites alternate run by run, like page_bench.mjs.
// Usage: node tools/bench/page_cpu.mjs [runs]; MEMFIT_SITE=<dir>[,<dir>…] (default build-wasm/site).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { serve, launchChromium } from './page_serve.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const sites = (process.env.MEMFIT_SITE || join(root, 'build-wasm', 'site')).split(',');
const runs = Number(process.argv[2] || 7);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/// One traced navigation: {first, mainCpu, lazyCompiled, lazyCpu, scriptsCpu} in ms (counts for lazyCompiled).
async function traced(browser, base) {
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
  return { first, mainCpu: cpu('ThreadControllerImpl::RunTask'), lazyCompiled: onMain.filter((e) => e.name === 'wasm.CompileLazy').length,
    lazyCpu: cpu('wasm.CompileLazy'), scriptsCpu: cpu('EvaluateScript') };
}

const served = await Promise.all(sites.map(serve));
const browser = await launchChromium();
const load = [loadavg()[0]];
const results = sites.map(() => []);
for (let i = 0; i < runs; i += 1) {
  for (let s = 0; s < sites.length; s += 1) results[s].push(await traced(browser, served[s].base));
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
