// Config import in the page (Debian's Chromium): the importer and its YAML parser are not part of
// the first load (a separate file, fetched on the first import); a pasted or dropped config fills
// the form, whose numbers then equal the CLI's; what the form cannot hold and what was ignored are
// listed; bad input is a coded error with its line; the single saved file says it has no importer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync, constants } from 'node:zlib';
import { root, site, built } from './helpers.mjs';
import { env, useBrowser, open, settled, assertMatchesCli, axeViolations, skip, scratch } from './browser.mjs';

useBrowser();
const FIXTURES = join(root, 'tests', 'node', 'fixtures', 'import');
const fixture = (name) => readFileSync(join(FIXTURES, name), 'utf8');
// Issue 33's target for the first load is 400 KiB gzip. The page was 433.7 KiB until the code
// that runs once per request was compiled for size (-Oz) and launch configs stopped using
// iostreams (354.6 KiB; 360.4 KiB with the Axolotl and LLaMA-Factory profiles and three optimizers;
// 362.8 KiB with the search judged over the framework's dated versions; 364.2 KiB with the shared
// rank plan, LitGPT's and autocast's mechanisms; 364.4 KiB with uPlot wrapped to run on the first chart; 365.9 KiB with the gradients' pool, the first
// step's loss segments and the GEMM tile model for eager attention and unaligned widths; 365.3 KiB
// with the wasm's data at the top of the document; 370.4 KiB with the LLaMA-Adapter and P-tuning methods,
// DeepSpeed's ZeRO step and buckets, the FSDP plugin's checkpointing and Megatron's per-micro-batch
// gradient add; 374.5 KiB with the timeline on the step's time axis: the step-time model's
// per-part times in the core, +2.7 KiB, and the chart's phases, layer ticks and labels, +2.3 KiB;
// 381.9 KiB with OFT, BOFT, LN tuning, P-tuning's LSTM encoder, LoRA's init, modules_to_save, BAdam
// and the block's op program; 372.7 KiB with WebAssembly's own exceptions instead of JS
// trampolines; 376.2 KiB with PEFT's MiSS, GLoRA, FourierFT, WaveFT, HiRA, SHiRA, C3A, DeLoRA, GraLoRA and
// PEANUT, the BAdam and prompt-encoder fields and CUDA_LAUNCH_BLOCKING, +3.5 KiB; 367.3 KiB, from 376.8,
// with src/model and the framework profiles, run once per request, compiled for size; then the MPT config
// parser, FlashAttention's Triton kernel, twelve more PEFT methods, torchtune's and FSDP1's dated behaviours and
// the ring's wave fill: 383.3 KiB; 384.6 KiB with twelve more model presets, the popular families, and the levers for a tiny GPU; 388.9 KiB with AdaLoRA, PSOFT, RandLoRA and trainable tokens' row count, the frameworks' folders, the
// block's steps as ops, DGX-1's link groups, compile_scope and zero3_init; the ratchet raised from 385 to 390 KiB
// for them, under the 400 KiB target; 390.7 KiB with the prime_rl profile; 397.5 KiB with the
// framework capability rules for offloaded and launchable optimizers, every launch format's optimizer, DeepSpeed's
// offload and communicator behaviours, the NVML counter and the layer-activation memo, the ratchet at 398 KiB): a
// ratchet, so that the page may not grow back.
const PAGE_BUDGET_BYTES = 398 * 1024;

test('the single file stays under its gzip ratchet and holds neither the importer nor the YAML parser', { skip: !built }, () => {
  const html = readFileSync(`${site}index.html`);
  const gz = gzipSync(html, { level: constants.Z_BEST_COMPRESSION }).length;
  assert.ok(gz <= PAGE_BUDGET_BYTES, `index.html is ${(gz / 1024).toFixed(1)} KiB gzip`);
  for (const marker of ['LineCounter', 'readWithoutField', 'TRAINING_KEYS']) assert.ok(!html.includes(marker), marker);
  assert.match(readFileSync(`${site}memfit-import.js`, 'utf8'), /LineCounter[\s\S]*importFiles[\s\S]*toState/);
});

async function importText(page, text) {
  if (!(await page.locator('#import-box').evaluate((d) => d.open))) await page.click('#import-box summary');
  await page.fill('#import-text', text);
  await page.click('#import-run');
}

test('pasting an Axolotl QLoRA config fills the form; the numbers equal the CLI\'s; leftovers and ignored keys are listed', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  const fetched = [];
  page.on('request', (r) => fetched.push(r.url()));
  await settled(page);
  assert.ok(!fetched.some((u) => u.includes('memfit-import.js')), 'not loaded before an import');
  assert.equal(await page.evaluate(() => typeof globalThis.memfitWeb.YAML), 'undefined');
  await importText(page, fixture('axolotl_qlora.yml'));
  await page.waitForSelector('#import-result p');
  await settled(page);
  assert.ok(fetched.some((u) => u.endsWith('/memfit-import.js')));
  const values = {};
  for (const id of ['preset', 'framework', 'method', 'lora_rank', 'lora_targets', 'precision', 'optimizer', 'micro_batch', 'grad_accum', 'seq_len', 'ckpt', 'attention']) {
    values[id] = await page.inputValue(`#${id}`);
  }
  assert.deepEqual(values, { preset: 'meta-llama/Meta-Llama-3-8B', framework: 'axolotl', method: 'qlora', lora_rank: '32',
    lora_targets: 'all-linear', precision: 'bf16', optimizer: 'paged_adamw_32bit', micro_batch: '2', grad_accum: '4', seq_len: '4096',
    ckpt: 'full', attention: 'flash' });
  const result = await page.textContent('#import-result');
  assert.match(result, /^Axolotl YAML: 12 fields set in the form\./);
  assert.match(result, /Not in the page's form \(3\)/);
  for (const leftover of ['/training/base_quant = nf4', '/training/lora/dropout = 0.05', '/training/packed = true']) assert.ok(result.includes(leftover), leftover);
  assert.match(result, /Keys memfit ignores \(12, 2 may change memory\)/);
  assert.match(result, /\/lora_alpha \(line 17\): may change memory, not modelled/);
  assert.match(result, /\/learning_rate \(line 26\)/);
  const { request } = await assertMatchesCli(page);
  assert.equal(request.training.method, 'qlora');
  assert.deepEqual(await axeViolations(page), []);
  assert.deepEqual(page.unexpected, []);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('dropping a LLaMA-Factory config with its DeepSpeed JSON imports both; a Megatron script brings its model', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  await settled(page);
  await page.click('#import-box summary');
  const files = [['llamafactory_full_sft.yaml', fixture('llamafactory_full_sft.yaml').replace('finetuning_type: full', 'finetuning_type: full\ndeepspeed: ds_z3_offload_config.json')],
    ['ds_z3_offload_config.json', fixture('ds_z3_offload_config.json')]];
  const drop = await page.evaluateHandle((list) => {
    const dt = new DataTransfer();
    for (const [name, text] of list) dt.items.add(new File([text], name));
    return dt;
  }, files);
  await page.dispatchEvent('#import-text', 'drop', { dataTransfer: drop });
  await page.waitForSelector('#import-result p');
  await settled(page);
  assert.equal(await page.inputValue('#method'), 'full');
  assert.equal(await page.inputValue('#precision'), 'amp_bf16');
  assert.equal(await page.inputValue('#ckpt'), 'full');
  const result = await page.textContent('#import-result');
  assert.match(result, /^LLaMA-Factory YAML · llamafactory_full_sft\.yaml/);
  assert.ok(result.includes('/parallel/sharding = zero3 ← ds_z3_offload_config.json:/zero_optimization/stage (line 14)'), result);
  assert.ok(result.includes('/training/offload = params_optimizer'));
  await assertMatchesCli(page);

  await importText(page, fixture('megatron_llama3_8b_fp8.sh'));
  await page.waitForSelector('#import-result p');
  await settled(page);
  assert.equal(await page.inputValue('#framework'), 'megatron');
  assert.equal(await page.inputValue('#precision'), 'fp8');
  assert.equal(await page.inputValue('#gpus'), '8');
  assert.equal(JSON.parse(await page.inputValue('#config')).num_key_value_heads, 8);
  await assertMatchesCli(page);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('bad input: a coded error with the pointer and line; the form is unchanged', { skip }, async () => {
  const page = await open(`${env.baseUrl}/index.html`);
  await settled(page);
  const before = await page.inputValue('#method');
  await importText(page, 'base_model: x\nadapter: lora\nmicro_batch_size: -1\n');
  await page.waitForFunction(() => document.getElementById('err-import').textContent !== '');
  assert.equal(await page.textContent('#err-import'), 'invalid_value at /micro_batch_size (line 3): micro_batch_size must be a whole number ≥ 1, got -1');
  assert.equal(await page.inputValue('#method'), before);
  await importText(page, 'a: [1\n');
  await page.waitForFunction(() => document.getElementById('err-import').textContent.startsWith('invalid_yaml'));
  assert.match(await page.textContent('#err-import'), /\(line 2\)/);
  await importText(page, '<img src=x onerror=alert(1)>: 1\n');
  await page.waitForFunction(() => document.getElementById('err-import').textContent.startsWith('unknown_format'));
  assert.equal(await page.locator('#import-result img, #err-import img').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the page saved as one file, without memfit-import.js beside it, says the importer is not there', { skip }, async () => {
  const lone = join(scratch, 'lone.html');
  copyFileSync(`${site}memfit_offline.html`, lone);
  const page = await open(`file://${lone}`);
  await settled(page);
  await importText(page, fixture('axolotl_qlora.yml'));
  await page.waitForFunction(() => document.getElementById('err-import').textContent !== '');
  assert.match(await page.textContent('#err-import'), /^importer_unavailable: .*memfit-import\.js could not be loaded.*npx memfit import/);
  assert.equal(await page.inputValue('#method'), 'full');
  await page.close();
});

test('the embedded element loads the importer from beside its own script', { skip }, async () => {
  const page = await open(`${env.baseUrl}/embed.html`, { height: 1400 });
  await page.waitForSelector('memfit-calculator[ready]', { timeout: 30000 });
  await page.click('memfit-calculator #import-box summary');
  await page.fill('memfit-calculator #import-text', fixture('torchtune_8b_qlora_single_device.yaml'));
  await page.click('memfit-calculator #import-run');
  await page.waitForSelector('memfit-calculator #import-result p');
  assert.equal(await page.inputValue('memfit-calculator #framework'), 'torchtune');
  assert.equal(await page.inputValue('memfit-calculator #method'), 'qlora');
  assert.equal(await page.inputValue('memfit-calculator #preset'), 'meta-llama/Llama-3.1-8B');
  assert.deepEqual(page.errors, []);
  await page.close();
});
