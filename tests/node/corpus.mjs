// Deterministic request corpora, shared by the native/WASM parity test (parity.test.mjs) and the
// fuzz seed corpora (tests/fuzz/make_corpus.mjs): the calibration rows as estimate requests, and
// requests generated from the presets with a seeded generator (same seed, same corpus).
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { root } from './helpers.mjs';

const { readCases, rowToRequest, configFinder, skipReason } = createRequire(import.meta.url)(`${root}cli/validate.js`);

export const modelIds = JSON.parse(readFileSync(`${root}presets/index.json`, 'utf8')).models.map((m) => m.id);
export const gpuIds = readdirSync(`${root}presets/gpus`).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5)).sort();
export const configDir = `${root}tests/validation/configs`;
/// The config.json texts of the validation configs, by file name.
export const configTexts = readdirSync(configDir).filter((f) => f.endsWith('.json')).sort()
  .map((f) => ({ name: f, text: readFileSync(`${configDir}/${f}`, 'utf8') }));

/// The calibration rows (tests/validation/calibration.csv) as estimate requests, each with its
/// model's config.json inlined when tests/validation/configs has it.
export function calibrationRequests() {
  const find = configFinder([configDir]);
  const rows = readCases(readFileSync(`${root}tests/validation/calibration.csv`, 'utf8'));
  return rows.filter((row) => skipReason(row) === null).map((row) => rowToRequest(row, find(row.model)));
}

/// mulberry32: a small seeded generator, identical on every platform.
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = (list) => list[int(0, list.length - 1)];
  return { next, int, pick, chance: (p) => next() < p };
}

const FRAMEWORKS = ['hf_trainer', 'deepspeed', 'megatron', 'torchtitan', 'torchtune', 'fsdp_qlora', 'peft_bench', 'trl', 'unsloth'];
const LOSSES = ['standard', 'chunked', 'fused', 'chunked_nll', 'trl_fused_head', 'liger_flce', 'cut_ce', 'unsloth_fused_ce'];
const METHODS = ['full', 'full', 'lora', 'qlora', 'dora', 'freeze'];
const PRECISIONS = ['bf16', 'amp_bf16', 'amp_fp16', 'fp32', 'fp16', 'fp8'];
const OPTIMIZERS = ['adamw', 'adamw_8bit', 'paged_adamw_8bit', 'sgd', 'sgd_momentum', 'adafactor', 'lion', 'muon'];
const CHECKPOINTING = ['none', 'full', 'selective'];
const SHARDING = ['none', 'zero1', 'zero2', 'zero3'];

/// A random estimate request: a preset model (or now and then an inlined config), training
/// settings, a cluster and a layout whose degrees multiply to the GPU count. Some break a rule
/// on purpose: their error envelopes are compared too.
export function randomRequest(r) {
  const model = r.chance(0.15)
    ? { config: JSON.parse(r.pick(configTexts).text) }
    : { preset: r.pick(modelIds) };
  const training = {
    framework: r.pick(FRAMEWORKS),
    method: r.pick(METHODS),
    precision: r.pick(PRECISIONS),
    optimizer: r.pick(OPTIMIZERS),
    micro_batch: r.pick([1, 1, 2, 4, 8, 16]),
    seq_len: r.pick([128, 512, 1024, 2048, 4096, 8192, 32768]),
    activation_checkpointing: r.pick(CHECKPOINTING),
  };
  if (training.method === 'qlora' || (training.method === 'lora' && r.chance(0.3))) training.base_quant = 'nf4';
  if (training.method === 'lora' && r.chance(0.5)) training.lora = { rank: r.pick([8, 16, 64]), targets: 'all-linear' };
  if (r.chance(0.3)) training.grad_accum = r.pick([1, 2, 4, 8]);
  if (r.chance(0.3)) training.loss = r.pick(LOSSES);
  if (r.chance(0.1)) training.liger_kernels = true;
  const gpus = r.pick([1, 1, 2, 4, 8, 8, 16, 32, 64]);
  const tp = r.pick([1, 2, 4, 8].filter((d) => gpus % d === 0));
  const pp = r.pick([1, 2, 4].filter((d) => (gpus / tp) % d === 0));
  const request = {
    model,
    training,
    cluster: { gpu: { preset: r.pick(gpuIds) }, gpus },
  };
  if (gpus > 1) request.parallel = { tp, pp, sharding: r.pick(SHARDING), sequence_parallel: tp > 1 && r.chance(0.5) };
  if (r.chance(0.2)) request.options = { timeline: false };
  if (r.chance(0.2)) request.options = { accounting: r.pick(['korthikanti', 'megatron', 'fujii', 'deepspeed_zero2', 'deepspeed_zero3']) };
  return request;
}

/// `n` random estimate requests from `seed`.
export function randomRequests(n, seed) {
  const r = rng(seed);
  return Array.from({ length: n }, () => randomRequest(r));
}

/// A search request built from an estimate request: its layout becomes the search's space.
export function searchRequestOf(request, r) {
  const { parallel, options, ...rest } = request;
  const out = { ...rest, training: { ...request.training } };
  delete out.training.micro_batch;
  out.search = { top: r.pick([1, 3, 10]), objective: r.pick(['fastest', 'least_memory', 'largest_batch']) };
  if (r.chance(0.5)) out.search.space = { max_micro_batch: r.pick([1, 2, 4]), pp: [1, 2] };
  if (r.chance(0.3)) out.search.global_batch = r.pick([8, 64, 256]);
  else if (out.training.seq_len && r.chance(0.2)) out.search.tokens_per_step = r.pick([8, 64]) * out.training.seq_len;
  return out;
}
