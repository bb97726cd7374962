// Step-time model vs published throughput (tests/validation/throughput.json): prints a markdown
// table of predicted and measured tokens/s per GPU with the error of every row, bad rows included.
// Usage: node tools/validation/throughput.mjs   (after `npm run build`)
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const validation = require(join(root, 'cli', 'validate.js'));
const M = await require(join(root, 'build-wasm', 'site', 'memfit_single.js'))();

const data = JSON.parse(readFileSync(join(root, 'tests', 'validation', 'throughput.json'), 'utf8'));
const cases = validation.readCases(readFileSync(join(root, 'tests', 'validation', 'calibration.csv'), 'utf8'));
const byId = new Map(cases.map((r) => [r.id, r]));
const findConfig = validation.configFinder([join(root, 'tests', 'validation', 'configs')]);

function gpuSpec(source) {
  const o = data.gpu_overrides[source];
  if (!o) return null;
  const spec = JSON.parse(readFileSync(join(root, 'presets', 'gpus', `${o.base}.json`), 'utf8'));
  for (const [k, v] of Object.entries(o)) if (k !== 'base') spec[k] = v;
  return spec;
}

// A source that publishes teraFLOP/s per GPU (Megatron's SC21 Table 1) converts with its own
// FLOPs per token, Narayanan et al. 2021 eq. (3): 96 l h^2 (1 + s / (6 h) + V / (16 l h)),
// which counts the recomputed forward (every row recomputes in full).
function sc21TokensPerS(row) {
  const c = row.request.model.config;
  const l = c.n_layer, h = c.n_embd, v = c.vocab_size, s = row.request.training.seq_len;
  return (row.tflops_per_gpu * 1e12) / (96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)));
}

const rows = [];
// A published iteration time: the step's sequences over the time and the GPUs.
function stepTokensPerS(row) {
  const t = row.request.training, p = row.request.parallel;  // the published setup
  return (t.micro_batch * t.grad_accum * (p.dp ?? 1) * t.seq_len) / (row.step_time_s * row.request.cluster.gpus);
}

for (const raw of data.rows) {
  let row = raw;
  if (raw.tflops_per_gpu !== undefined) row = { ...raw, tps: sc21TokensPerS(raw) };
  if (raw.step_time_s !== undefined) row = { ...raw, tps: stepTokensPerS(raw) };
  let request;
  if (row.calibration_id) {
    const c = byId.get(row.calibration_id);
    request = validation.rowToRequest(c, findConfig(c.model));
  } else {
    request = structuredClone(row.request);
    // A model of the memory validation's configs, by its id.
    if (request.model.validation_config) request.model = { config: findConfig(request.model.validation_config) };
  }
  const spec = gpuSpec(row.source);
  if (spec) request.cluster.gpu = { spec };
  request.cluster.gpus_per_node = 8;
  request.options = { timeline: false, max_micro_batch: false };
  const env = JSON.parse(M.estimate(JSON.stringify(request)));
  if (!env.ok) {
    rows.push({ ...row, error: `${env.error.code} at ${env.error.path}: ${env.error.message}` });
    continue;
  }
  const predicted = env.result.perf.tokens_per_s_per_gpu;
  rows.push({ ...row, predicted, mfu: env.result.perf.mfu, err: (100 * (predicted - row.tps)) / row.tps });
}

// One table per framework whose runs the rows come from (the source id's prefix): torchtitan's
// pre-training runs, torchtune's fine-tuning runs, then Megatron-LM's.
// The measured column: tokens/s as published, or converted with what was published beside it.
function measuredCell(r) {
  if (r.tflops_per_gpu !== undefined) return `${r.tps.toFixed(0)} (${r.tflops_per_gpu} TFLOP/s)`;
  if (r.step_time_s !== undefined) return `${r.tps.toFixed(0)} (${r.step_time_s} s a step)`;
  return `${r.tps}`;
}

const names = { titan: 'torchtitan', tune: 'torchtune', megatron: 'Megatron-LM' };
const groups = [...new Set(rows.map((r) => r.source.split('-')[0]))];
const out = [];
for (const g of groups) {
  const group = rows.filter((r) => r.source.split('-')[0] === g);
  const ok = group.filter((r) => r.err !== undefined);
  const abs = ok.map((r) => Math.abs(r.err)).sort((a, b) => a - b);
  const median = abs.length ? abs[Math.floor((abs.length - 1) / 2)] : NaN;
  const within = ok.filter((r) => Math.abs(r.err) <= 25).length;
  if (out.length) out.push('');
  out.push('| row | setup | measured tok/s/GPU | memfit tok/s/GPU | error | memfit MFU |');
  out.push('|---|---|---:|---:|---:|---:|');
  for (const r of group) {
    if (r.error) out.push(`| ${r.id} | ${r.what} | ${r.tps} | error: ${r.error} | | |`);
    else out.push(`| ${r.id} | ${r.what} | ${measuredCell(r)} | ${r.predicted.toFixed(0)} | ${r.err >= 0 ? '+' : ''}${r.err.toFixed(1)} % | ${(100 * r.mfu).toFixed(1)} % |`);
  }
  out.push(`\n${ok.length} ${names[g] ?? g} rows: median |error| ${median.toFixed(1)} %, ${within} of ${ok.length} within 25 %.`);
}
console.log(out.join('\n'));
