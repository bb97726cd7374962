// Where the page's first result goes (prints numbers, asserts nothing): Chromium's trace of each
// navigation, from navigationStart to the frame that draws the first estimate: the main thread's
// busy time and its own time per kind of work (parsing the HTML, compiling JS, running scripts,
// the core's wasm included, the wasm's lazy compilation, style, layout, paint), the CPU of the
// wasm compile on other threads, and the page's marks (wasm compiled, instantiated, module ready,
// the first update's estimate and render). Medians over the runs.
// Usage: node tools/bench/page_trace.mjs [runs]; MEMFIT_SITE=<dir> (default build-wasm/site);
// TRACE_CPU=1: each kind's own thread time (CPU) instead of its wall time, which a loaded host
// stretches by the time the thread waits for a core; TRACE_OTHER=1: the unbucketed events by name.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import { serve, launchChromium } from './page_serve.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const site = process.env.MEMFIT_SITE || join(root, 'build-wasm', 'site');
const runs = Number(process.argv[2] || 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Main-thread trace events and the bucket each one's own (exclusive) time falls in.
const BUCKETS = {
  ParseHTML: 'parse HTML', EvaluateScript: 'run scripts', 'v8.compile': 'compile JS', 'v8.parseOnBackground': 'compile JS',
  UpdateLayoutTree: 'style', Layout: 'layout', 'PrePaint': 'paint', Paint: 'paint', 'Layerize': 'paint', UpdateLayer: 'paint',
  'wasm.CompileLazy': 'wasm lazy compile', FunctionCall: 'run scripts', TimerFire: 'run scripts', FireAnimationFrame: 'run scripts',
  'v8.callFunction': 'run scripts', RunMicrotasks: 'run scripts', 'V8.GC_SCAVENGER': 'GC', MajorGC: 'GC', MinorGC: 'GC',
  'ParseAuthorStyleSheet': 'style', 'v8.run': 'run scripts', 'HitTest': 'layout',
};

async function traced(browser, base) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await browser.startTracing(page, { categories: ['toplevel', 'v8', 'v8.wasm', 'devtools.timeline', 'blink.user_timing', 'disabled-by-default-devtools.timeline'] });
  await page.goto(`${base}/index.html`);
  await page.waitForSelector('body[data-first-result-ms]', { timeout: 30000 });
  const trace = JSON.parse(String(await browser.stopTracing()));
  const marks = await page.evaluate(() => ({
    first: Number(document.body.dataset.firstResultMs), module: Number(document.body.dataset.moduleMs),
    update: Number(document.body.dataset.updateMs),
    user: performance.getEntriesByType('mark').map((m) => [m.name, m.startTime]),
  }));
  await context.close();
  const events = trace.traceEvents;
  const nav = events.find((e) => e.name === 'navigationStart' && e.args?.data?.documentLoaderURL?.startsWith(base));
  const main = events.find((e) => e.name === 'thread_name' && e.pid === nav.pid && e.args.name === 'CrRendererMain');
  const until = nav.ts + marks.first * 1000;
  const onMain = events.filter((e) => e.pid === nav.pid && e.tid === main.tid && e.ph === 'X' && e.ts >= nav.ts && e.ts <= until && e.dur);
  // Exclusive time: each event's duration less that of the events nested directly in it.
  onMain.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const stack = [];
  const self = new Map();
  const length = (e) => (process.env.TRACE_CPU ? e.tdur ?? e.dur : e.dur);
  for (const e of onMain) {
    while (stack.length && stack.at(-1).ts + stack.at(-1).dur <= e.ts) stack.pop();
    const parent = stack.at(-1);
    if (parent) self.set(parent, (self.get(parent) ?? length(parent)) - length(e));
    self.set(e, self.get(e) ?? length(e));
    stack.push(e);
  }
  const buckets = {};
  for (const e of onMain) {
    const bucket = BUCKETS[e.name] ?? (e.name.startsWith('wasm') ? 'wasm other' : process.env.TRACE_OTHER ? `other ${e.name}` : 'other');
    buckets[bucket] = (buckets[bucket] ?? 0) + self.get(e) / 1000;
  }
  // Busy time: the union of the main thread's tasks, up to the first result's frame (with
  // TRACE_CPU, their thread time, a task cut by the frame counted pro rata).
  let busy = 0;
  let end = nav.ts;
  for (const e of onMain.filter((x) => x.name === 'ThreadControllerImpl::RunTask')) {
    const from = Math.max(e.ts, end);
    const to = Math.min(e.ts + e.dur, until);
    if (to > from) busy += process.env.TRACE_CPU ? (e.tdur ?? e.dur) * (to - from) / e.dur : to - from;
    end = Math.max(end, to);
  }
  // The module's compile and tier-up on other threads: the CPU of their wasm events.
  const wasmOff = events.filter((e) => e.pid === nav.pid && e.tid !== main.tid && e.ph === 'X' && e.cat?.includes('wasm') && e.ts >= nav.ts && e.ts <= until);
  const offCpu = wasmOff.reduce((s, e) => s + (e.tdur ?? e.dur), 0) / 1000;
  const result = { first: marks.first, module: marks.module, 'first estimate + render': marks.update, 'main thread busy': busy / 1000, 'wasm off-main CPU': offCpu, ...buckets };
  for (const [name, at] of marks.user) result[`mark ${name}`] ??= at;
  return result;
}

const { server, base } = await serve(site);
const browser = await launchChromium();
const load = [loadavg()[0]];
const results = [];
for (let i = 0; i < runs; i += 1) results.push(await traced(browser, base));
load.push(loadavg()[0]);
await browser.close();
server.kill();
console.log(`${site}: first result traced (Llama-3.1-8B, 8 x H100); load average ${load.map((l) => l.toFixed(1)).join(' -> ')}; medians (min-max) of ${runs}, ms`);
const keys = [...new Set(results.flatMap(Object.keys))];
for (const key of keys) {
  const xs = results.map((r) => r[key] ?? 0);
  console.log(`  ${key.padEnd(26)} ${median(xs).toFixed(1).padStart(8)} (${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)})`);
}
