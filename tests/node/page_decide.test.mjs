// The page as a practitioner uses it to decide (issue 33): an honest verdict (host memory of
// every layout, no speed for a run that does not fit), one recommendation (★ first, "your
// choice" beside it, reset with the model), the summary in view while any input is edited,
// errors readable in every state, presets in a findable order and Hub loads that say when they fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { env, useBrowser, open, settled, cli, searchRequest, assertMatchesCli, axeViolations, gib, headlinePeak, skip, SHOTS } from './browser.mjs';

useBrowser();

const at = (hash) => `${env.baseUrl}/index.html#${new URLSearchParams(hash)}`;
const hostText = (bytes) => (bytes > 0 ? gib(bytes) : 'none');
const percent = (fraction) => `${(100 * fraction).toFixed(0)} %`;

/// The summary's peak: the device total against the GPU's memory, or the core's range of it when
/// the framework's version is unknown (the share then the high end's).
function sumPeak(result, unit = gib) {
  const r = result.ranges?.device_total_bytes;
  const memory = `of ${unit(result.fit.gpu_memory_bytes)} (${percent(result.fit.usage_fraction)}`;
  return r && r.low !== r.high ? `${unit(r.low)}–${unit(r.high)} ${memory} at the high end)` : `${unit(result.fit.compared_bytes)} ${memory})`;
}


/// The method table as shown: name, verdict, tokens/s and host memory per node of each row.
const tableRows = (page) => page.$$eval('#methods tbody tr', (trs) => trs.map((tr) => ({
  method: tr.querySelector('th button').textContent, verdict: tr.cells[3].textContent, tokens: tr.cells[4].textContent,
  host: tr.cells[5].textContent, star: tr.classList.contains('recommended'), choice: Boolean(tr.querySelector('.badge.choice')),
  shown: tr.classList.contains('selected') })));

/// Every method row: "Show all" when the table has more than it shows at first.
async function showAllMethods(page) {
  if (await page.isVisible('#methods-more')) await page.click('#methods-more');
}

/// The estimate request of one search candidate (the layout and training fields it chose).
function candidateRequest(request, c) {
  const { parallel: p, training: t } = c;
  return { ...request, options: { timeline: false, max_micro_batch: false },
    parallel: { dp: p.dp, tp: p.tp, pp: p.pp, vpp: p.vpp, cp: p.cp, ep: p.ep, ...(p.etp !== p.tp ? { etp: p.etp } : {}), sequence_parallel: p.sequence_parallel, sharding: p.sharding, schedule: p.schedule },
    training: { ...request.training, micro_batch: t.micro_batch, grad_accum: t.grad_accum, activation_checkpointing: t.activation_checkpointing, offload: t.offload } };
}

/// No axe violation at 1280 x 900 and 390 x 844; a full-page screenshot of each in artifacts/.
/// The page at `url` once it has listed its levers (nothing fits: checked against the CLI): its
/// request, each lever as [button text, whole line], and the first lever whose button matches.
async function openLevers(url, timeout) {
  const page = await open(url);
  await page.waitForSelector('.calc[data-levers="1"]', { timeout });
  const { request, result } = await assertMatchesCli(page);
  assert.equal(result.fit.verdict, 'oom');
  const items = await page.$$eval('#suggestions li', (lis) => lis.map((li) => [li.querySelector('button').textContent, li.textContent]));
  return { page, request, items, find: (pattern) => items.find(([b]) => pattern.test(b)) };
}

/// The core's search behind the page's `request` with `training` changed, as a lever asks it.
const leverSearch = (request, training) => cli('search', { ...searchRequest(request), training: { ...searchRequest(request).training, ...training }, search: { top: 1, launch: false } });

async function checkAxeAndShoot(page, name) {
  for (const [width, height] of [[390, 844], [1280, 900]]) {
    await page.setViewportSize({ width, height });
    assert.deepEqual(await axeViolations(page), [], `${name} at ${width}px`);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
}

test('honest verdict: host memory per node for every layout, in the headline and the summary', { skip }, async () => {
  const page = await open(at({ model: 'meta-llama/Llama-3.1-70B-Instruct' }));
  await settled(page);
  await showAllMethods(page);
  const { request, result } = await assertMatchesCli(page);
  assert.equal(await page.textContent('#sum-host'), hostText(result.host_bytes_per_node));
  assert.ok((await page.textContent('#host-mem')).startsWith(hostText(result.host_bytes_per_node)));
  assert.equal(await page.textContent('#sum-peak'), sumPeak(result));
  assert.equal(await page.textContent('#sum-mb'), String(result.fit.max_micro_batch));
  // Every row's host memory is the core's, equal to its own estimate's; offload layouts need hundreds of GiB.
  const search = cli('search', searchRequest(request));
  const rows = await tableRows(page);
  assert.equal(rows.length, search.methods.length);
  let offloaded = 0;
  for (const row of rows.filter((r, i) => i < 10 || r.host !== 'none')) {
    const m = search.methods.find((x) => x.method === row.method);
    const host = cli('estimate', candidateRequest(request, m.best || m.closest)).host_bytes_per_node;
    assert.equal(row.host, hostText(host), row.method);
    if (host > 0) offloaded += 1;
  }
  assert.ok(offloaded > 0, 'some layout offloads to host memory');
  assert.match(await page.textContent('header.top'), /Training only: inference and KV-cache memory are out of scope/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('an OOM headline and OOM rows show no speed; the summary says it does not fit; axe finds nothing', { skip }, async () => {
  const page = await open(at({ gpu: 'RTX-4090', gpus: '1', per_node: '1' }));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  assert.equal(result.fit.verdict, 'oom');
  assert.ok(result.perf.tokens_per_s > 0, 'the core still has a speed: the page must not show it');
  assert.equal(await page.textContent('#throughput'), '– (does not fit)');
  assert.equal(await page.textContent('#step-time'), '– (does not fit)');
  assert.equal(await page.textContent('#sum-step'), '– (does not fit)');
  assert.equal(await page.textContent('#sum-badge'), 'OOM');
  assert.match(await page.textContent('#sum-live'), /^OOM: \d+ % of GPU memory/);
  const rows = await tableRows(page);
  assert.ok(rows.length > 0 && rows.every((r) => r.verdict === 'OOM' && r.tokens === '–'), JSON.stringify(rows));
  await checkAxeAndShoot(page, 'oom');
  await page.close();
});

test('an unknown framework version: the range in the headline, summary and verdict, judged by the high end', { skip }, async () => {
  const page = await open(at({ framework: 'torchtune', method: 'lora', gpus: '1', per_node: '1', micro_batch: '1', ckpt: 'none' }));
  await settled(page);
  const first = cli('estimate', JSON.parse(await page.textContent('#request-json'))).ranges.device_total_bytes;
  assert.ok(first.high > first.low, "torchtune's dated behaviours move the peak");
  // A GPU between the two ends: room for the low end, not for the high end.
  await page.fill('#gpu_mem', ((first.low + first.high) / 2 / 2 ** 30).toFixed(2));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  const { low, high } = result.ranges.device_total_bytes;
  const memory = result.fit.gpu_memory_bytes;
  assert.ok(low <= memory && high > memory, `${low} ${high} ${memory}`);
  assert.equal(result.fit.judged_on, 'range_high');
  assert.equal(result.fit.verdict, 'oom');
  assert.equal(await page.textContent('#sum-badge'), 'OOM');
  assert.equal(await page.textContent('#sum-peak'), sumPeak(result));
  assert.equal(sumPeak(result), `${gib(low)}–${gib(high)} of ${gib(memory)} (${percent(result.fit.usage_fraction)} at the high end)`);
  const lowEnd = low > result.fit.tight_fraction * memory ? 'Tight' : 'Fits';
  assert.equal(await page.isVisible('#range-note'), true);
  assert.match(await page.textContent('#range-text'),
    new RegExp(`^torchtune's version is not set: ${gib(low)} to ${gib(high)} per GPU .*\\. ${lowEnd} at the low end, OOM at the high end; judged by the high end\\.$`));
  assert.match(await page.textContent('#sum-live'), /^OOM: \d+ % of GPU memory at the high end of the range/);
  // The search judges its rows by the high end too: the table says so.
  assert.equal(await page.isVisible('#methods-range'), true);
  // A lever whose layout offloads says how much host memory per node it needs.
  await page.waitForSelector('.calc[data-levers="1"]', { timeout: 30000 });
  const shown = JSON.parse(await page.textContent('#request-json'));
  const twoGpus = cli('search', { ...searchRequest(shown), cluster: { ...shown.cluster, gpus: 2, gpus_per_node: 2 }, search: { top: 1, launch: false } }).recommended;
  assert.ok(twoGpus.memory.host_bytes_per_node > 0, 'the 2-GPU lever offloads');
  const lever = await page.textContent('#suggestions li:has(button:text("Use 2 GPUs"))');
  assert.ok(lever.includes(`(${percent(twoGpus.memory.usage_fraction)}), host ${gib(twoGpus.memory.host_bytes_per_node)} per node,`), lever);
  await checkAxeAndShoot(page, 'range');
  // Naming the version ends the range: one number, no note.
  await page.click('#range-goto');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'fw_version');
  await page.keyboard.type(result.ranges.variants.at(-1).framework_version);
  await settled(page);
  const narrowed = (await assertMatchesCli(page)).result;
  assert.equal(narrowed.ranges, undefined);
  assert.equal(await page.isVisible('#range-note'), false);
  assert.equal(await page.isVisible('#methods-range'), false);
  assert.doesNotMatch(await page.textContent('#sum-peak'), /–/);
  assert.match(page.url(), /fw_version=/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('an unknown framework version: the ★ fits at the high end of its range, and every row is judged there', { skip }, async () => {
  const page = await open(at({ framework: 'torchtune', method: 'lora', gpus: '1', per_node: '1', micro_batch: '1', ckpt: 'none' }));
  await settled(page);
  const plain = cli('estimate', JSON.parse(await page.textContent('#request-json'))).ranges.device_total_bytes;
  // A GPU between the ends of the plain layout's range; micro-batch and checkpointing left to the search.
  await page.fill('#gpu_mem', ((plain.low + plain.high) / 2 / 2 ** 30).toFixed(2));
  await page.fill('#micro_batch', '');
  await page.selectOption('#ckpt', '');
  await settled(page);
  const { request, result } = await assertMatchesCli(page);
  // The ★ shown: its estimate fits at the high end of its range.
  assert.equal(await page.textContent('#methods tr.selected th button'), await page.textContent('#methods tr.recommended th button'));
  assert.equal(result.fit.verdict, 'fits');
  assert.ok(result.ranges, 'the version is unknown: a range');
  assert.ok((result.fit.compared_bytes ?? result.device_total_bytes) >= result.ranges.device_total_bytes.high);
  const pageSearch = (training) => cli('search', { ...searchRequest(request), training: { ...searchRequest(request).training, ...training } });
  // The current code's ★ (its version named) would not: judged on the high end it is tight or OOM.
  const current = pageSearch({ framework_version: '2026-01' }).recommended;
  assert.notEqual(cli('estimate', candidateRequest(request, current)).fit.verdict, 'fits');
  // Every row's verdict and peak are its estimate's at the high end.
  await showAllMethods(page);
  const search = pageSearch({});
  assert.deepEqual(search.judged_on.unknown, ['/training/framework_version']);
  const rows = await page.$$eval('#methods tbody tr', (trs) => trs.map((tr) => [tr.querySelector('th button').textContent, tr.cells[2].textContent, tr.cells[3].textContent]));
  for (const [method, peak, verdict] of rows) {
    const m = search.methods.find((x) => x.method === method);
    const e = cli('estimate', candidateRequest(request, m.best || m.closest));
    assert.equal(verdict, e.fit.verdict === 'oom' ? 'OOM' : e.fit.verdict.replace('host_oom', 'host OOM'), method);
    assert.equal(peak, headlinePeak(e), method);
  }
  assert.match(await page.textContent('#methods-range'), /every row is judged by the high end/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('one recommendation: ★ is the first row and the search\'s; a chosen row is "your choice", keeps focus, and one click goes back', { skip }, async () => {
  const page = await open(at({ model: 'meta-llama/Llama-3.1-70B-Instruct' }));
  await settled(page);
  await showAllMethods(page);
  const { request } = await assertMatchesCli(page);
  const search = cli('search', searchRequest(request));
  let rows = await tableRows(page);
  // Fits, then tight, then OOM; fastest first inside each group that runs.
  const group = { fits: 0, tight: 1, OOM: 2, 'host OOM': 2 };
  for (let i = 1; i < rows.length; i += 1) {
    const [a, b] = [rows[i - 1], rows[i]];
    assert.ok(group[a.verdict] <= group[b.verdict], `${a.method} (${a.verdict}) before ${b.method} (${b.verdict})`);
  }
  assert.ok(rows[0].star && rows[0].shown && rows.filter((r) => r.star).length === 1);
  assert.equal(rows[0].method, search.recommended.method);
  assert.equal(rows[0].verdict, 'fits');
  assert.ok(rows.some((r) => r.verdict !== 'fits'), 'the case has rows below the line');
  // Choose the third row with the keyboard: focus stays on it, the ★ stays on the first.
  const third = rows[2].method;
  await page.locator(`#methods button[data-method="${third}"]`).focus();
  await page.keyboard.press('Enter');
  await settled(page);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.method), third);
  rows = await tableRows(page);
  const chosen = rows.find((r) => r.method === third);
  assert.ok(chosen.choice && chosen.shown && !rows[0].shown && rows[0].star);
  assert.match(page.url(), /pick=/);
  assert.equal(await page.isVisible('#pick-note'), true);
  assert.match(await page.textContent('#pick-note-text'), new RegExp(`★ recommended: ${search.recommended.method.replace(/[+/()]/g, '\\$&')}`));
  assert.match(await page.textContent('#pick-name'), new RegExp(third.replace(/[+/()]/g, '\\$&')));
  // One click back to the ★, focus on its row.
  await page.click('#back-to-star');
  await settled(page);
  rows = await tableRows(page);
  assert.ok(rows[0].shown && !rows.some((r) => r.choice));
  assert.doesNotMatch(page.url(), /pick=/);
  assert.equal(await page.isVisible('#pick-note'), false);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.method), rows[0].method);
  // A choice does not survive a change of model.
  await page.click(`#methods button[data-method="${rows[1].method}"]`);
  await settled(page);
  assert.ok((await tableRows(page)).find((r) => r.method === rows[1].method).choice);
  await page.selectOption('#preset', 'Qwen/Qwen3-8B');
  await settled(page);
  rows = await tableRows(page);
  assert.ok(!rows.some((r) => r.choice) && rows[0].shown && rows[0].star);
  assert.doesNotMatch(page.url(), /pick=/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the summary stays in view, uncovering the field, while any input is edited, at 1280 x 900 and 390 x 844', { skip }, async () => {
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    const page = await open(at({ method: 'lora' }), { width, height });
    await settled(page);
    await page.click('#paste-box summary');
    await page.click('#kernels summary');
    const ids = await page.$$eval('form input, form select, form textarea', (els) => els.filter((e) => e.checkVisibility()).map((e) => e.id));
    assert.ok(ids.length >= 20, ids.join());
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    // Upwards, as Shift+Tab goes: the browser scrolls each field to the top of the window.
    for (const id of ids.reverse()) {
      await page.focus(`#${id}`);
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      const view = await page.evaluate((fieldId) => {
        const bar = document.querySelector('.summary-bar').getBoundingClientRect();
        const field = document.getElementById(fieldId).getBoundingClientRect();
        const hit = document.elementFromPoint(field.left + field.width / 2, field.top + Math.min(field.height / 2, 12));
        return { barTop: bar.top, barBottom: bar.bottom, covered: !document.getElementById(fieldId).contains(hit) };
      }, id);
      assert.ok(view.barTop >= 0 && view.barBottom <= height, `${width}px ${id}: summary at ${view.barTop}–${view.barBottom}`);
      assert.ok(!view.covered, `${width}px ${id}: the summary covers the field`);
    }
    // Choosing the GPU (below the fold on both) updates the summary in view.
    const before = await page.textContent('#sum-peak');
    await page.selectOption('#gpu', 'A100-40GB');
    await settled(page);
    assert.notEqual(await page.textContent('#sum-peak'), before);
    assert.ok(await page.isVisible('#sum-badge'));
    // The live region is the verdict line alone, not the results panel.
    const live = await page.$$eval('[aria-live]', (els) => els.map((e) => e.id || e.className));
    assert.ok(live.includes('sum-live') && !live.includes('results'), live.join());
    assert.ok((await page.textContent('#sum-live')).length < 120);
    await page.close();
  }
});

test('errors: one readable message in the banner and at the field, never dimmed; axe finds nothing in the error state', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  await settled(page);
  await page.click('#paste-box summary');
  for (const text of ['{"model_type": "llama", "hidden_size": 4096,', "{'model_type': 'llama', 'hidden_size': 4096}"]) {
    await page.fill('#config', text);
    await settled(page);
    const field = await page.textContent('#err-config');
    assert.match(field, /^invalid_json at \/model\/config: /);
    assert.equal(await page.textContent('#error-text'), field);
    assert.doesNotMatch(field, /"config"|@CONFIG@/, 'positions are in the pasted text, not the request around it');
    assert.equal(/Python dict/.test(field), text.startsWith("{'"));
    assert.equal(await page.textContent('#peak'), '–');
    assert.equal(await page.textContent('#verdict'), 'error');
    assert.equal(await page.textContent('#sum-badge'), 'error');
    assert.match(await page.textContent('#sum-live'), /^error: invalid_json/);
    assert.ok(await page.isVisible('#stale-note'));
    const opacity = await page.$eval('#error-banner', (e) => {
      let o = 1;
      for (let n = e; n instanceof Element; n = n.parentElement) o *= Number(getComputedStyle(n).opacity);
      return o;
    });
    assert.equal(opacity, 1);
  }
  await checkAxeAndShoot(page, 'error');
  await page.click('#error-goto');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'config');
  // Recovery clears the error state everywhere.
  await page.selectOption('#preset', 'Qwen/Qwen3-8B');
  await settled(page);
  assert.equal(await page.isVisible('#error-banner'), false);
  assert.equal(await page.isVisible('#stale-note'), false);
  await assertMatchesCli(page);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('LoRA fields only for adapter methods; a LoRA error sits next to its field', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  await settled(page);
  assert.equal(await page.inputValue('#method'), 'full');
  assert.equal(await page.isVisible('#lora_rank'), false);
  assert.equal(await page.isVisible('#lora_targets'), false);
  await page.selectOption('#method', 'lora');
  await settled(page);
  assert.equal(await page.isVisible('#lora_rank'), true);
  await page.fill('#lora_rank', '0');
  await settled(page);
  assert.match(await page.textContent('#err-lora'), /^\w+ at \/training\/lora\/rank: /);
  assert.equal(await page.textContent('#err-training'), '');
  await page.click('#error-goto');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'lora_rank');
  await page.close();
});

test('presets: popular families first, each by size; the filter never switches to a synthetic model silently', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  await settled(page);
  const groups = await page.$$eval('#preset optgroup', (gs) => gs.map((g) => [g.label, [...g.children].map((o) => o.value)]));
  assert.equal(groups[0][0], 'meta-llama');
  assert.equal(groups.at(-1)[0], 'synthetic test models');
  assert.ok(groups.at(-1)[1].includes('iseekyan/mixtral-8x2b-4layers'));
  const order = (label) => groups.find(([l]) => l === label)[1];
  const llama = order('meta-llama');
  const before = (list, a, b) => assert.ok(list.indexOf(a) >= 0 && list.indexOf(a) < list.indexOf(b), `${a} before ${b}`);
  before(llama, 'meta-llama/Llama-3.2-1B-Instruct', 'meta-llama/Llama-3.1-8B');
  before(llama, 'meta-llama/Llama-3.1-8B', 'meta-llama/Llama-3.1-70B-Instruct');
  before(llama, 'meta-llama/Llama-3.1-70B-Instruct', 'meta-llama/Llama-3.1-405B-Instruct');
  before(order('Qwen'), 'Qwen/Qwen3-0.6B', 'Qwen/Qwen3-8B');
  before(order('Qwen'), 'Qwen/Qwen3-8B', 'Qwen/Qwen2.5-32B');
  before(groups.map(([l]) => l), 'Qwen', 'bigscience');
  // The families people fine-tune now, each a preset.
  const ids = groups.flatMap(([, list]) => list);
  for (const id of ['meta-llama/Llama-3.3-70B-Instruct', 'meta-llama/Llama-4-Scout-17B-16E-Instruct', 'Qwen/Qwen2.5-72B', 'Qwen/Qwen3-32B',
    'Qwen/Qwen3-235B-A22B', 'google/gemma-3-4b-it', 'google/gemma-3-12b-it', 'google/gemma-3-27b-it', 'microsoft/phi-4',
    'mistralai/Mistral-Small-24B-Base-2501', 'openai/gpt-oss-20b', 'openai/gpt-oss-120b']) assert.ok(ids.includes(id), id);
  before(order('google'), 'google/gemma-3-4b-it', 'google/gemma-3-27b-it');
  before(order('Qwen'), 'Qwen/Qwen3-32B', 'Qwen/Qwen3-235B-A22B');
  before(groups.map(([l]) => l), 'openai', 'bigscience');
  for (const [typed, expected] of [['mixtral', 'mistralai/Mixtral-8x7B-Instruct-v0.1'], ['70b', 'meta-llama/Llama-3.3-70B-Instruct']]) {
    await page.fill('#preset-filter', typed);
    await settled(page);
    assert.equal(await page.inputValue('#preset'), expected);
    assert.match(await page.textContent('#preset-filter-status'), new RegExp(`now using ${expected}`));
    assert.equal(JSON.parse(await page.textContent('#request-json')).model.preset, expected);
  }
  await page.fill('#preset-filter', '4layers');
  assert.equal(await page.inputValue('#preset'), 'meta-llama/Llama-3.3-70B-Instruct');
  assert.match(await page.textContent('#preset-filter-status'), /Only synthetic test models match.*still using meta-llama\/Llama-3\.3-70B-Instruct/);
  // A new preset is estimated: its count is the CLI's.
  await page.fill('#preset-filter', '');
  await page.selectOption('#preset', 'openai/gpt-oss-20b');
  await settled(page);
  const { result: oss } = await assertMatchesCli(page);
  assert.equal(oss.model.id, 'openai/gpt-oss-20b');
  assert.equal(await page.textContent('#total-params'), oss.model.total_params.toLocaleString('en-US'));
  assert.deepEqual(page.errors, []);
  await page.close();
});

/// google/gemma-3-4b-it's config.json as copies quoted in public test suites give it (not fetched
/// from the Hub here): its text_config names no vocab_size, heads or head_dim.
const GEMMA3_4B = { architectures: ['Gemma3ForConditionalGeneration'], boi_token_index: 255999, eoi_token_index: 256000,
  eos_token_id: [1, 106], image_token_index: 262144, initializer_range: 0.02, mm_tokens_per_image: 256, model_type: 'gemma3',
  text_config: { hidden_size: 2560, intermediate_size: 10240, model_type: 'gemma3_text', num_hidden_layers: 34,
    rope_scaling: { factor: 8.0, rope_type: 'linear' }, sliding_window: 1024 },
  torch_dtype: 'bfloat16', transformers_version: '4.50.0.dev0',
  vision_config: { hidden_size: 1152, image_size: 896, intermediate_size: 4304, model_type: 'siglip_vision_model',
    num_attention_heads: 16, num_hidden_layers: 27, patch_size: 14, vision_use_head: false } };

test('load from Hugging Face: full URLs, a token kept only in memory, failures that say so and leave no stale "loaded" result', { skip }, async () => {
  const hub = (u) => u.startsWith('https://huggingface.co/');
  const page = await open(`${env.baseUrl}/index.html`, { allow: (u) => u.startsWith(env.baseUrl) || hub(u) });
  const asked = [];
  await page.route('https://huggingface.co/**', (route) => {
    const r = route.request();
    asked.push([r.url().replace('https://huggingface.co/', ''), r.headers().authorization]);
    if (r.url().includes('/gated/')) return route.fulfill({ status: 401, body: 'gated' });
    if (r.url().includes('/broken/')) return route.fulfill({ status: 200, contentType: 'application/json', body: '{"model_type": "llama", "hidden_size": 64}' });
    if (r.url().includes('/gemma-3-4b-it/')) return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(GEMMA3_4B) });
    return route.fulfill({ status: 200, contentType: 'application/json', headers: { 'access-control-allow-origin': '*' },
      body: JSON.stringify({ model_type: 'gpt2', vocab_size: 50257, n_embd: 768, n_layer: 12, n_head: 12 }) });
  });
  await settled(page);
  await page.click('#paste-box summary');
  await page.fill('#hf-repo', 'https://huggingface.co/openai-community/gpt2/tree/main');
  await page.fill('#hf-token', 'hf_secret123');
  await page.click('#hf-load');
  await page.waitForFunction(() => document.querySelector('#hf-status').textContent.startsWith('Loaded'));
  await settled(page);
  assert.deepEqual(asked, [['openai-community/gpt2/resolve/main/config.json', 'Bearer hf_secret123']]);
  assert.equal(await page.textContent('#hf-status'), 'Loaded openai-community/gpt2: 124,439,808 parameters.');
  assert.match(await page.textContent('#model-name'), /^openai-community\/gpt2 · gpt2/);
  assert.equal(await page.$eval('#preset', (s) => s.selectedOptions[0].textContent), '(the config.json below)');
  const kept = await page.evaluate(() => JSON.stringify([location.href, { ...localStorage }, { ...sessionStorage }, document.querySelector('#request-json').textContent]));
  assert.doesNotMatch(kept, /hf_secret123/);
  // A refused load says so and names the model still in use.
  await page.fill('#hf-token', '');
  await page.fill('#hf-repo', 'gated/model');
  await page.click('#hf-load');
  await page.waitForFunction(() => /gated or private/.test(document.querySelector('#hf-status').textContent));
  assert.match(await page.textContent('#hf-status'), /Still using openai-community\/gpt2\.$/);
  assert.equal(await page.$eval('#hf-status', (e) => e.classList.contains('error')), true);
  assert.equal(asked.at(-1)[1], undefined);
  // A config memfit cannot read: no "Loaded", and the old result is not shown as the answer.
  await page.fill('#hf-repo', 'https://huggingface.co/broken/model');
  await page.click('#hf-load');
  await page.waitForFunction(() => /^Fetched broken\/model, but memfit cannot use/.test(document.querySelector('#hf-status').textContent));
  await settled(page);
  assert.match(await page.textContent('#err-config'), /^missing_field at \/model\/config\//);
  assert.equal(await page.textContent('#peak'), '–');
  assert.equal(await page.textContent('#sum-badge'), 'error');
  for (const [typed, pattern] of [['https://huggingface.co/datasets/org/data', /a dataset, not a model/], ['https://huggingface.co/org', /names no repository/]]) {
    await page.fill('#hf-repo', typed);
    await page.click('#hf-load');
    assert.match(await page.textContent('#hf-status'), pattern);
  }
  // google/gemma-3-4b-it's text_config leaves out vocab_size and the heads: the core fills them
  // with transformers' Gemma3TextConfig defaults and says so; the count is the CLI's.
  await page.fill('#hf-repo', 'https://huggingface.co/google/gemma-3-4b-it');
  await page.click('#hf-load');
  await page.waitForFunction(() => /^Loaded google\/gemma-3-4b-it/.test(document.querySelector('#hf-status').textContent));
  await settled(page);
  const params = cli('params', GEMMA3_4B);
  assert.equal(await page.textContent('#hf-status'), `Loaded google/gemma-3-4b-it: ${params.total_params.toLocaleString('en-US')} parameters.`);
  assert.match(await page.textContent('#model-name'), /^google\/gemma-3-4b-it · gemma3_text/);
  assert.match(await page.textContent('#warnings'), /text_config leaves out .*vocab_size 262208.*transformers' defaults \(Gemma3TextConfig/);
  assert.equal(await page.textContent('#err-config'), '');
  assert.equal(asked.length, 4);
  assert.deepEqual(page.unexpected, []);
  await page.close();
});

/// Wrappers whose text_config leaves shape keys to transformers' text config class (written here
/// to exercise the defaults, not copies of published files), and gpt-oss's top-level MoE config.
const WRAPPERS = {
  'meta-llama/Llama-4-Scout-17B-16E-Instruct': [{ architectures: ['Llama4ForConditionalGeneration'], model_type: 'llama4',
    text_config: { rope_theta: 500000.0, torch_dtype: 'bfloat16' } }, /^meta-llama\/Llama-4-Scout-17B-16E-Instruct · llama4_text/, /Llama4TextConfig/],
  'mistralai/Mistral-Small-3.1-24B-Instruct-2503': [{ architectures: ['Mistral3ForConditionalGeneration'], model_type: 'mistral3',
    text_config: { head_dim: 128, hidden_size: 5120, intermediate_size: 32768, model_type: 'mistral', num_hidden_layers: 40, vocab_size: 131072, rope_theta: 1e9 },
    vision_config: { hidden_size: 1024, model_type: 'pixtral', num_hidden_layers: 24 } }, /^mistralai\/Mistral-Small-3\.1-24B-Instruct-2503 · mistral/, /MistralConfig/],
  'openai/gpt-oss-20b': [{ architectures: ['GptOssForCausalLM'], model_type: 'gpt_oss', vocab_size: 201088, hidden_size: 2880, num_hidden_layers: 24,
    num_attention_heads: 64, num_key_value_heads: 8, head_dim: 64, intermediate_size: 2880, num_local_experts: 32, num_experts_per_tok: 4,
    attention_bias: true, tie_word_embeddings: false }, /^openai\/gpt-oss-20b · /, /32 routed experts/],
};

test('Hub loads of Llama 4, Mistral 3 and gpt-oss: omitted text_config keys take transformers\' defaults, named in the summary', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`, { allow: (u) => u.startsWith(env.baseUrl) || u.startsWith('https://huggingface.co/') });
  await page.route('https://huggingface.co/**', (route) => {
    const repo = Object.keys(WRAPPERS).find((r) => route.request().url().includes(`/${r}/`));
    return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(WRAPPERS[repo][0]) });
  });
  await settled(page);
  await page.click('#paste-box summary');
  for (const [repo, [config, name, warning]] of Object.entries(WRAPPERS)) {
    await page.fill('#hf-repo', `https://huggingface.co/${repo}`);
    await page.click('#hf-load');
    await page.waitForFunction((r) => document.querySelector('#hf-status').textContent.startsWith(`Loaded ${r}`), repo);
    await settled(page);
    const params = cli('params', config);
    assert.equal(await page.textContent('#hf-status'), `Loaded ${repo}: ${params.total_params.toLocaleString('en-US')} parameters.`);
    assert.match(await page.textContent('#model-name'), name);
    assert.match(await page.textContent('#warnings'), warning);
    assert.equal(await page.textContent('#err-config'), '');
    assert.notEqual(await page.textContent('#peak'), '–');
  }
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the breakdown gives each part its share, what it is and the setting that shrinks it, one click away', { skip }, async () => {
  const page = await open(at({ method: 'qlora', gpu: 'RTX-4090', gpus: '1', per_node: '1', micro_batch: '4' }));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  const rows = await page.$$eval('#breakdown tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  const parts = Object.entries(result.breakdown).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
  parts.forEach(([, v], i) => {
    assert.equal(rows[i][2], percent(v / result.device_total_bytes), rows[i][0]);
    assert.ok(rows[i][3].length > 20, `${rows[i][0]} is explained`);
  });
  const logits = rows.findIndex((r) => r[0] === 'logits loss');
  assert.ok(logits >= 0 && /Smaller: the fused or chunked loss kernel/.test(rows[logits][3]));
  assert.equal(await page.$eval('#kernels', (d) => d.open), false);
  await page.click(`#breakdown tr:nth-child(${logits + 1}) button.lever`);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'loss');
  assert.equal(await page.$eval('#kernels', (d) => d.open), true);
  await page.close();
});

test('GB or GiB for every amount of memory, kept in the link; "Copy link" copies the link', { skip }, async () => {
  const page = await open(at({ model: 'meta-llama/Llama-3.1-70B-Instruct' }));
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.baseUrl });
  await settled(page);
  assert.match(await page.textContent('#peak'), / GiB$/);
  await page.selectOption('#units', 'GB');
  await settled(page);
  const result = cli('estimate', JSON.parse(await page.textContent('#request-json')));
  const gb = (bytes, digits = 1) => `${(bytes / 1e9).toFixed(digits)} GB`;
  assert.equal(await page.textContent('#peak'), headlinePeak(result, gb));
  assert.equal(await page.textContent('#sum-peak'), sumPeak(result, gb));
  assert.equal(await page.textContent('#sum-host'), result.host_bytes_per_node > 0 ? gb(result.host_bytes_per_node) : 'none');
  assert.equal(await page.textContent('#breakdown tr:last-child td'), gb(result.device_total_bytes, 2));
  const cells = await page.$$eval('#methods tbody td.num', (tds) => tds.map((td) => td.textContent).filter((t) => /B$/.test(t)));
  assert.ok(cells.length > 0 && cells.every((t) => / GB$/.test(t)), cells.join());
  assert.match(page.url(), /units=GB/);
  await page.click('#copy-link');
  await page.waitForFunction(() => document.querySelector('#link-status').textContent !== '');
  assert.equal(await page.textContent('#link-status'), 'Copied the link.');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), page.url());
  const again = await open(page.url());
  await settled(again);
  assert.equal(await again.inputValue('#units'), 'GB');
  assert.equal(await again.textContent('#peak'), headlinePeak(result, gb));
  assert.deepEqual([...page.errors, ...again.errors], []);
  await page.close();
  await again.close();
});

test('the launch config shown first is the chosen framework\'s own', { skip }, async () => {
  const page = await open(at({ framework: 'megatron' }));
  await settled(page);
  assert.equal(await page.inputValue('#launch-format'), 'megatron_args');
  assert.match(await page.textContent('#launch-text'), /--tensor-model-parallel-size/);
  await page.selectOption('#launch-format', 'accelerate_yaml');
  await page.fill('#seq_len', '2048');
  await settled(page);
  assert.equal(await page.inputValue('#launch-format'), 'accelerate_yaml', 'a format the user chose stays');
  await page.selectOption('#framework', 'torchtitan');
  await settled(page);
  assert.equal(await page.inputValue('#launch-format'), 'torchtitan_toml');
  await page.close();
});

test('TRL and Unsloth: their own launch file first, their loss kernels in the select', { skip }, async () => {
  const page = await open(at({ framework: 'trl' }));
  await settled(page);
  assert.equal(await page.inputValue('#launch-format'), 'trl_sft_yaml');
  assert.match(await page.textContent('#launch-text'), /loss_type: nll/);  // the profile's default loss (TRL 1.15+: the fused head)
  assert.deepEqual(page.errors, []);
  await page.close();
  // The Unsloth script is a one-GPU file.
  const one = await open(at({ framework: 'unsloth', gpus: '1', per_node: '1', method: 'qlora' }));
  await settled(one);
  assert.equal(await one.inputValue('#launch-format'), 'unsloth_python');
  assert.match(await one.textContent('#launch-text'), /load_in_4bit=True/);
  await one.click('#kernels summary');
  await one.selectOption('#loss', 'cut_ce');
  await settled(one);
  assert.equal(JSON.parse(await one.textContent('#request-json')).training.loss, 'cut_ce');
  assert.deepEqual(one.errors, []);
  await one.close();
});

test('nothing fits: the settings that would, each searched by the core, fastest under 90 % first, applied with a click', { skip }, async () => {
  const state = { method: 'qlora', gpu: 'RTX-4090', gpus: '1', per_node: '1', micro_batch: '4' };
  const { page, request, items, find } = await openLevers(at(state), 30000);
  // The review's two biggest levers: the fused loss kernel and micro-batch 1 × accumulation 4.
  const loss = find(/^Use fused linear \+ cross-entropy loss kernel$/);
  const accum = find(/^Use micro-batch 1 × gradient accumulation 4 \(the same batch\)$/);
  // The run's settings at once: the loss kernel, micro-batch 1 × 4 and 8-bit AdamW states.
  const together = find(/, together$/);
  assert.ok(loss && accum && together, items.join('\n'));
  assert.match(together[0], /fused linear \+ cross-entropy loss kernel, micro-batch 1 × gradient accumulation 4, 8-bit AdamW optimizer states, together/);
  for (const [[, text], training] of [[loss, { loss: 'fused' }], [accum, { micro_batch: 1, grad_accum: 4 }],
    [together, { loss: 'fused', micro_batch: 1, grad_accum: 4, optimizer: 'adamw_8bit' }]]) {
    const c = leverSearch(request, training).recommended;
    assert.ok(text.includes(`→ ${c.method}: ${gib(c.memory.device_total_bytes)} per GPU (${percent(c.memory.usage_fraction)})`), `${text} vs ${c.method} ${gib(c.memory.device_total_bytes)}`);
  }
  // Ranked: under 90 % first, fastest first; a shorter sequence last.
  const shares = items.map(([, t]) => Number(/\((\d+) %\)/.exec(t)[1]));
  const speeds = items.map(([, t]) => / ([\d.]+)( k)? tokens\/s/.exec(t)).map((m) => Number(m[1]) * (m[2] ? 1000 : 1));
  for (let i = 1; i < items.length; i += 1) {
    if (/sequence length/.test(items[i - 1][0])) assert.fail('the shorter sequence is not last');
    const another = (b) => /sequence length|GPU with more memory|own memory/.test(b);
    if (shares[i - 1] < 90 && shares[i] < 90 && !another(items[i][0])) assert.ok(speeds[i - 1] >= speeds[i], items.join('\n'));
  }
  // One click applies it: the form, the link and the verdict follow.
  await page.click('#suggestions li button >> text=/^Use fused linear [+] cross-entropy loss kernel$/');
  await settled(page);
  assert.equal(await page.inputValue('#loss'), 'fused');
  assert.match(page.url(), /loss=fused/);
  assert.notEqual(await page.textContent('#verdict'), 'OOM');
  assert.equal(await page.$$eval('#suggestions li', (lis) => lis.length), 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('nothing fits for a full fine-tune: checkpointing, 8-bit states, LoRA and QLoRA each searched alone; offered exactly when the core finds a fit, with its numbers', { skip }, async () => {
  const state = { method: 'full', gpu: 'A100-40GB', gpus: '1', per_node: '1', micro_batch: '2', ckpt: 'none', optimizer: 'adamw' };
  const { page, request, items, find } = await openLevers(at(state), 30000);
  const offered = [];
  for (const [pattern, training] of [[/^Use full activation checkpointing$/, { activation_checkpointing: 'full' }],
    [/^Use 8-bit AdamW optimizer states$/, { optimizer: 'adamw_8bit' }],
    [/^Use LoRA adapters instead of every weight$/, { method: 'lora' }], [/^Use QLoRA: LoRA over a 4-bit \(NF4\) base$/, { method: 'qlora' }]]) {
    // The page searches each lever with the form's other settings as set (micro-batch 2, no checkpointing).
    const c = leverSearch(request, { micro_batch: 2, activation_checkpointing: 'none', ...training }).recommended;
    const item = find(pattern);
    if (!c) {
      assert.equal(item, undefined, `${pattern} offered, but the core finds no layout that fits`);
      continue;
    }
    assert.ok(item, `${pattern} missing though ${c.method} fits:\n${items.join('\n')}`);
    const host = c.memory.host_bytes_per_node > 0 ? `, host ${gib(c.memory.host_bytes_per_node)} per node` : '';
    const expected = `→ ${c.method}: ${gib(c.memory.device_total_bytes)} per GPU (${percent(c.memory.usage_fraction)})${host}`;
    assert.ok(item[1].includes(expected), `${item[1]} vs ${expected}`);
    offered.push(pattern.source);
  }
  // On a 40 GB card without checkpointing, checkpointing alone fits with the optimizer offloaded (its host
  // memory shown); the others are offered or not as the core answers them (above).
  assert.ok(offered.includes(/^Use full activation checkpointing$/.source), offered.join(', '));
  assert.match(find(/^Use full activation checkpointing$/)[1], /host [\d.]+ GiB per node/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a host memory per node set: layouts whose offload needs more are "host OOM", sorted last and never ★', { skip }, async () => {
  // The version named: at the high end of the unknown version's range only offload layouts fit.
  const page = await open(at({ model: 'meta-llama/Llama-3.1-70B-Instruct', fw_version: '2026-01' }));
  await settled(page);
  const starBefore = (await tableRows(page))[0];
  const capacity = 300;
  assert.ok(starBefore.host !== 'none' && parseFloat(starBefore.host) > capacity, `the ★ needs ${starBefore.host}`);
  await page.fill('#host_mem', String(capacity));
  await settled(page);
  await showAllMethods(page);
  const rows = await tableRows(page);
  const over = (r) => r.host !== 'none' && parseFloat(r.host) > capacity;
  const firstOver = rows.findIndex(over);
  assert.ok(firstOver > 0, 'some layouts need more host memory');
  for (const r of rows.slice(firstOver)) assert.ok(over(r) || r.verdict === 'OOM', `${r.method} (${r.verdict}, ${r.host}) after a host OOM row`);
  for (const r of rows.filter(over)) assert.equal(r.verdict, 'host OOM', r.method);
  // The ★ is the core's recommendation: the fastest that fits under 80 %, else the fastest tight one.
  assert.ok(rows[0].star && rows[0].shown && !over(rows[0]) && ['fits', 'tight'].includes(rows[0].verdict), JSON.stringify(rows.slice(0, 3)));
  assert.notEqual(rows[0].method, starBefore.method);
  const { result } = await assertMatchesCli(page);
  assert.ok(result.host_bytes_per_node <= capacity * 2 ** 30);
  assert.match(page.url(), /host_mem=300/);
  // The ★ row of before, chosen by hand: the headline and summary say it does not fit.
  await page.click(`#methods button[data-method="${starBefore.method}"]`);
  await settled(page);
  assert.equal(await page.textContent('#sum-badge'), 'host OOM');
  assert.match(await page.textContent('#sum-host'), new RegExp(`, more than the ${capacity}\\.0 GiB per node$`));
  assert.equal(await page.textContent('#sum-step'), '– (does not fit)');
  assert.equal(await page.textContent('#throughput'), '– (does not fit)');
  await page.fill('#host_mem', '-1');
  await settled(page);
  assert.match(await page.textContent('#err-host_mem'), /positive number of GiB/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('charts: the GPU\'s memory drawn on the timeline, each chart saved as PNG; printed: the setup, the summary and the results, no form', { skip }, async () => {
  const page = await open(at({ model: 'meta-llama/Llama-3.1-70B-Instruct' }));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  const legend = await page.$$eval('#timeline-chart .u-legend th', (ths) => ths.map((th) => th.textContent));
  assert.ok(legend.includes('GPU memory'), legend.join());
  assert.ok(await page.$eval('#timeline-chart .u-legend', (l) => l.textContent.includes('79.6')), `capacity ${gib(result.fit.gpu_memory_bytes)}`);
  // The core's peak event is marked: the marker's event and its legend value (the stack's top there).
  const peakAt = result.timeline.findIndex((t) => t.phase === result.peak.phase && t.label === result.peak.label && t.layer === result.peak.layer);
  assert.ok(peakAt >= 0, JSON.stringify(result.peak));
  assert.ok(legend.includes('peak'), legend.join());
  assert.equal(await page.getAttribute('#timeline-chart', 'data-peak'), `${result.peak.phase}: ${result.peak.label}`);
  const top = ['weights', 'gradients', 'optimizer_states', 'activations', 'logits_loss', 'temporaries', 'communication']
    .reduce((sum, k) => sum + result.timeline[peakAt][`${k}_bytes`], 0);
  const peakValue = await page.$eval('#timeline-chart .u-legend', (l) => [...l.querySelectorAll('tr')].find((tr) => tr.querySelector('th')?.textContent === 'peak')?.querySelector('td')?.textContent);
  assert.equal(peakValue, `${(top / 2 ** 30).toFixed(2)} GiB`);
  assert.match(await page.textContent('#timeline-note'), new RegExp(`the dot marks the peak \\(${result.peak.phase}: ${result.peak.label}\\)`));
  for (const chart of ['breakdown', 'timeline']) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.click(`#${chart}-chart-png`)]);
    assert.equal(download.suggestedFilename(), `memfit-${chart}.png`);
    assert.deepEqual([...readFileSync(await download.path()).subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
  }
  await page.emulateMedia({ media: 'print' });
  assert.equal(await page.isVisible('#gpus'), false);
  assert.equal(await page.isVisible('#launch-text'), false);
  assert.equal(await page.$eval('.summary-bar', (e) => getComputedStyle(e).position), 'static');
  assert.equal(await page.textContent('#sum-setup'), `meta-llama/Llama-3.1-70B-Instruct · full · 8 × ${result.gpu.name} · sequence ${result.training.seq_len} · micro-batch ${result.training.micro_batch} × accumulation ${result.training.grad_accum} · ${result.framework.name}`);
  assert.ok(await page.isVisible('#sum-setup') && await page.isVisible('#methods') && await page.isVisible('#breakdown'));
  await page.close();
});

test('time to train the tokens set, from the estimate\'s throughput; none for a run that does not fit', { skip }, async () => {
  const page = await open(at({ train_tokens: '2e9' }));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  const s = 2e9 / result.perf.tokens_per_s;
  const expected = s >= 86400 ? `${(s / 86400).toFixed(1)} days` : s >= 3600 ? `${(s / 3600).toFixed(1)} h` : `${(s / 60).toFixed(0)} min`;
  assert.equal(await page.textContent('#train-time'), `${expected} for 2,000,000,000 tokens`);
  await page.selectOption('#gpu', 'T4');
  await page.fill('#per_node', '1');
  await page.fill('#gpus', '1');
  await settled(page);
  assert.equal(await page.textContent('#verdict'), 'OOM');
  assert.equal(await page.textContent('#train-time'), '– (does not fit)');
  await page.fill('#train_tokens', 'lots');
  await settled(page);
  assert.match(await page.textContent('#err-train_tokens'), /positive number such as 2e9/);
  await page.close();
});

test('two setups side by side: pin one, change the inputs, compare, restore the pinned one', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  await settled(page);
  assert.equal(await page.isVisible('#compare'), false);
  const full = { peak: await page.textContent('#sum-peak'), method: await page.textContent('#sum-method') };
  await page.click('#pin');
  await page.selectOption('#method', 'lora');
  await settled(page);
  const lora = await page.textContent('#sum-peak');
  assert.notEqual(lora, full.peak);
  const rows = await page.$$eval('#compare-rows tr', (trs) => Object.fromEntries(trs.map((tr) => [tr.cells[0].textContent, [tr.cells[1].textContent, tr.cells[2].textContent]])));
  assert.deepEqual(rows['Peak per GPU'], [full.peak, lora]);
  assert.deepEqual(rows.Method[0], full.method);
  assert.match(rows.Setup[0], /· full ·/);
  assert.match(rows.Setup[1], /· lora ·/);
  assert.match(rows.Throughput[1], /tokens\/s/);
  assert.deepEqual(await axeViolations(page), []);
  await page.click('#compare-restore');
  await settled(page);
  assert.equal(await page.inputValue('#method'), 'full');
  assert.equal(await page.textContent('#sum-peak'), full.peak);
  await page.click('#compare-unpin');
  assert.equal(await page.isVisible('#compare'), false);
  await page.close();
});

test('the ★ is a layout the chosen framework runs, and its own launch file expresses it', { skip }, async () => {
  // The same 70B run: any framework's ★ is a parameter-offload layout; Megatron-LM offloads optimizer states only.
  const page = await open(at({ model: 'meta-llama/Llama-3.1-70B-Instruct', fw_version: '2026-01' }));
  await settled(page);
  const plain = (await tableRows(page))[0];
  assert.ok(plain.star && /parameter offload/.test(plain.method), plain.method);
  for (const [framework, format, forbidden] of [['megatron', 'megatron_args', /parameter offload/], ['torchtune', 'torchtune_command', /^DDP/]]) {
    await page.selectOption('#framework', framework);
    await settled(page);
    await showAllMethods(page);
    const rows = await tableRows(page);
    const star = rows.find((r) => r.star);
    assert.ok(star && star === rows[0] && star.shown, JSON.stringify(rows.slice(0, 2)));
    assert.ok(rows.every((r) => !forbidden.test(r.method)), `${framework}: ${rows.map((r) => r.method).join(', ')}`);
    const { request } = await assertMatchesCli(page);
    assert.equal(cli('search', searchRequest(request)).recommended.method, star.method);
    assert.equal(await page.inputValue('#launch-format'), format);
    assert.doesNotMatch(await page.$eval('#launch-format', (s) => s.selectedOptions[0].textContent), /cannot express/);
    assert.notEqual(await page.textContent('#launch-text'), '');
  }
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a tiny GPU: levers still come (the GPU\'s own memory, a GPU with more memory, more GPUs), ranked and applied with a click', { skip }, async () => {
  const { page, request, items } = await openLevers(at({ gpu_mem: '1' }), 60000);
  assert.match(await page.textContent('#suggestions h3'), /How to make it fit/);
  const own = items.find(([b]) => /own memory \(not 1 GiB\)/.test(b));
  const larger = items.find(([b]) => /a GPU with more memory/.test(b));
  assert.ok(own && larger, items.join('\n'));
  // Each as the core's search of that change answers it.
  const shown = searchRequest(request);
  const ownAnswer = cli('search', { ...shown, cluster: { ...shown.cluster, gpu: { preset: 'H100-80GB' } }, search: { top: 1, launch: false } }).recommended;
  assert.ok(own[1].includes(`→ ${ownAnswer.method}: ${gib(ownAnswer.memory.device_total_bytes)} per GPU (${percent(ownAnswer.memory.usage_fraction)})`), own[1]);
  // Run settings first, then another GPU, the shorter sequence last.
  const kinds = items.map(([b]) => (/sequence length/.test(b) ? 2 : /GPU with more memory|own memory/.test(b) ? 1 : 0));
  assert.deepEqual(kinds, [...kinds].sort((a, b) => a - b), items.join('\n'));
  await checkAxeAndShoot(page, 'levers');
  await page.click('#suggestions li button >> text=/own memory/');
  await settled(page);
  assert.equal(await page.inputValue('#gpu_mem'), '');
  assert.doesNotMatch(page.url(), /gpu_mem=1/);
  assert.notEqual(await page.textContent('#verdict'), 'OOM');
  assert.deepEqual(page.errors, []);
  await page.close();
});
