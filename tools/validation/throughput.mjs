// Step-time model vs published throughput: prints a markdown table of predicted and measured tokens/s
// per GPU with the error of every row, bad rows included, for the rows the model was shaped on
// (tests/validation/throughput.json) and for the blind ones (tests/validation/throughput_blind.json,
// whose first predictions are frozen in tests/validation/blind/throughput_blind.json), then the
// ranking statistics per source: Spearman within each cluster, median and p90 |error|, the share
// optimistic, and whether the measured best of a cluster is memfit's #1 or in its top 3.
// Usage: node tools/validation/throughput.mjs [--freeze | --add]   (after `npm run build`)
//   --freeze records the blind rows' current predictions; it refuses to overwrite a record.
//   --add records the predictions of blind rows added since, beside the frozen ones.
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const validation = require(join(root, 'cli', 'validate.js'));
const M = await require(join(root, 'build-wasm', 'site', 'memfit_single.js'))();

const cases = validation.readCases(readFileSync(join(root, 'tests', 'validation', 'calibration.csv'), 'utf8'));
const byId = new Map(cases.map((r) => [r.id, r]));
const findConfig = validation.configFinder([join(root, 'tests', 'validation', 'configs')]);
const readJson = (...parts) => JSON.parse(readFileSync(join(root, ...parts), 'utf8'));

function gpuSpec(data, source) {
  const o = data.gpu_overrides?.[source];
  if (!o) return null;
  const spec = readJson('presets', 'gpus', `${o.base}.json`);
  for (const [k, v] of Object.entries(o)) if (k !== 'base') spec[k] = v;
  return spec;
}

// A source that publishes teraFLOP/s per GPU converts with its own FLOPs per token. Megatron's
// SC21 Table 1: Narayanan et al. 2021 eq. (3), 96 l h^2 (1 + s / (6 h) + V / (16 l h)), which
// counts the recomputed forward (every row recomputes in full). NeMo's Llama 2 formula
// (nemo/utils/flops_formulas.py `llama2`): l h^2 (12 + 12 g / a + 18 f / h + 12 s / h + 6 V / (l h))
// per token, attention counted whole (the causal half came in 2025; NeMo 24.07's table, 780
// TFLOP/s at 16934 tokens/s for Llama 2 7B at 4k, is 46.06 GFLOP a token, the whole count).
function flopsPerToken(row, config) {
  const s = row.request.training.seq_len;
  if (row.flops_formula === 'nemo-llama2') {
    const c = config, l = c.num_hidden_layers, h = c.hidden_size;
    const g = c.num_key_value_heads ?? c.num_attention_heads;
    return l * h * h * (12 + (12 * g) / c.num_attention_heads + (18 * c.intermediate_size) / h + (12 * s) / h + (6 * c.vocab_size) / (l * h));
  }
  const c = config, l = c.n_layer, h = c.n_embd, v = c.vocab_size;
  return 96 * l * h * h * (1 + s / (6 * h) + v / (16 * l * h));
}

// A published iteration time: the step's sequences over the time and the GPUs.
function stepTokensPerS(row) {
  const t = row.request.training, p = row.request.parallel;  // the published setup
  return (t.micro_batch * t.grad_accum * (p.dp ?? 1) * t.seq_len) / (row.step_time_s * row.request.cluster.gpus);
}

// Rows of one cluster run the same model, task and sequence on the same GPUs, number included:
// the layouts a user chooses between.
// A source that measured on several days names the row's day and shape (`cluster`): layouts are
// compared within one day's runs.
function clusterKey(request, modelName, sourceCluster) {
  const t = request.training, c = request.cluster;
  const gpu = c.gpu?.preset ?? c.gpu?.spec?.id ?? '?';
  const key = `${gpu} × ${c.gpus} · ${modelName} · ${t.method ?? 'full'} · seq ${t.seq_len}`;
  return sourceCluster ? `${key} · ${sourceCluster}` : key;
}

function evaluate(data) {
  const rows = [];
  for (const raw of data.rows) {
    let request, modelName;
    if (raw.calibration_id) {
      const c = byId.get(raw.calibration_id);
      request = validation.rowToRequest(c, findConfig(c.model));
      modelName = c.model;
    } else {
      request = structuredClone(raw.request);
      const m = request.model;
      const c = m.config;
      modelName = m.validation_config ?? m.preset ?? `${c.n_layer ?? c.n_layers} × ${c.n_embd ?? c.n_embed ?? c.d_model}`;
      // A model of the memory validation's configs, by its id.
      if (request.model.validation_config) request.model = { config: findConfig(request.model.validation_config) };
    }
    let row = { ...raw, cluster: clusterKey(request, modelName, raw.cluster) };
    if (raw.tflops_per_gpu !== undefined) row.tps = (raw.tflops_per_gpu * 1e12) / flopsPerToken(raw, request.model.config);
    if (raw.step_time_s !== undefined) row.tps = stepTokensPerS(raw);
    const spec = gpuSpec(data, row.source);
    if (spec) request.cluster.gpu = { spec };
    request.cluster.gpus_per_node ??= 8;
    request.options = { timeline: false, max_micro_batch: false };
    const env = JSON.parse(M.estimate(JSON.stringify(request)));
    if (!env.ok) {
      rows.push({ ...row, error: `${env.error.code} at ${env.error.path}: ${env.error.message}` });
      continue;
    }
    const predicted = env.result.perf.tokens_per_s_per_gpu;
    rows.push({ ...row, predicted, mfu: env.result.perf.mfu, err: (100 * (predicted - row.tps)) / row.tps });
  }
  return rows;
}

// The measured column: tokens/s as published, or converted with what was published beside it.
function measuredCell(r) {
  if (r.tflops_per_gpu !== undefined) return `${r.tps.toFixed(0)} (${r.tflops_per_gpu} TFLOP/s)`;
  if (r.step_time_s !== undefined) return `${r.tps.toFixed(0)} (${r.step_time_s} s a step)`;
  return `${r.tps}`;
}

const pct = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(1)} %`;
function quantile(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : NaN;
}

// One table per group of rows (the source id's prefix), every row, then its median |error|.
function tables(rows, names, frozen) {
  const groups = [...new Set(rows.map((r) => r.source.split('-')[0]))];
  const out = [];
  for (const g of groups) {
    const group = rows.filter((r) => r.source.split('-')[0] === g);
    const ok = group.filter((r) => r.err !== undefined);
    const abs = ok.map((r) => Math.abs(r.err)).sort((a, b) => a - b);
    const median = abs.length ? abs[Math.floor((abs.length - 1) / 2)] : NaN;
    const within = ok.filter((r) => Math.abs(r.err) <= 25).length;
    if (out.length) out.push('');
    const blindCols = frozen ? ' blind tok/s/GPU | blind error |' : '';
    out.push(`| row | setup | measured tok/s/GPU |${blindCols} memfit tok/s/GPU | error | memfit MFU |`);
    out.push(`|---|---|---:|${frozen ? '---:|---:|' : ''}---:|---:|---:|`);
    for (const r of group) {
      const f = frozen?.get(r.id);
      const blind = frozen ? (f ? ` ${f.toFixed(0)} | ${pct((100 * (f - r.tps)) / r.tps)} |` : ' | |') : '';
      if (r.error) out.push(`| ${r.id} | ${r.what} | ${measuredCell(r)} |${blind} error: ${r.error} | | |`);
      else out.push(`| ${r.id} | ${r.what} | ${measuredCell(r)} |${blind} ${r.predicted.toFixed(0)} | ${pct(r.err)} | ${(100 * r.mfu).toFixed(1)} % |`);
    }
    out.push(`\n${ok.length} ${names[g] ?? g} rows: median |error| ${median.toFixed(1)} %, ${within} of ${ok.length} within 25 %.`);
  }
  return out;
}

// Spearman's rank correlation with average ranks for ties.
function ranks(xs) {
  const order = xs.map((x, i) => [x, i]).sort((a, b) => a[0] - b[0]);
  const r = new Array(xs.length);
  for (let i = 0; i < order.length; ) {
    let j = i;
    while (j + 1 < order.length && order[j + 1][0] === order[i][0]) j++;
    for (let k = i; k <= j; k++) r[order[k][1]] = (i + j) / 2;
    i = j + 1;
  }
  return r;
}
function spearman(xs, ys) {
  const rx = ranks(xs), ry = ranks(ys), n = xs.length;
  const mx = rx.reduce((a, b) => a + b, 0) / n, my = ry.reduce((a, b) => a + b, 0) / n;
  let sxy = 0, sxx = 0, syy = 0;
  for (let i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) ** 2;
    syy += (ry[i] - my) ** 2;
  }
  return sxx && syy ? sxy / Math.sqrt(sxx * syy) : NaN;
}

// Accuracy and ranking of predictions `pred` (row -> tokens/s) over rows with a measurement.
function stats(rows, pred) {
  const ok = rows.filter((r) => pred(r) !== undefined);
  const errs = ok.map((r) => (100 * (pred(r) - r.tps)) / r.tps);
  const abs = errs.map(Math.abs).sort((a, b) => a - b);
  const clusters = new Map();
  for (const r of ok) clusters.set(r.cluster, [...(clusters.get(r.cluster) ?? []), r]);
  const ranked = [...clusters.values()].filter((c) => c.length >= 2);
  const rhos = ranked.filter((c) => c.length >= 3).map((c) => spearman(c.map((r) => r.tps), c.map(pred)));
  let top1 = 0, top3 = 0;
  for (const c of ranked) {
    const best = c.reduce((a, b) => (b.tps > a.tps ? b : a));
    const place = c.filter((r) => pred(r) > pred(best)).length;
    if (place === 0) top1++;
    if (place < 3) top3++;
  }
  return {
    n: ok.length, median: quantile(abs, 0.5), p90: quantile(abs, 0.9),
    optimistic: errs.filter((e) => e > 0).length, optimistic10: errs.filter((e) => e > 10).length,
    ranked: ranked.length, rhos, top1, top3,
  };
}

function statsCells(s) {
  const rho = s.rhos.length ? `${(s.rhos.reduce((a, b) => a + b, 0) / s.rhos.length).toFixed(2)} (${s.rhos.map((x) => x.toFixed(2)).join(', ')})` : '–';
  const share = (k) => `${k} (${((100 * k) / s.n).toFixed(0)} %)`;
  return `${s.n} | ${s.median.toFixed(1)} % | ${s.p90.toFixed(1)} % | ${share(s.optimistic)} | ${share(s.optimistic10)} | ${rho} | ${s.ranked ? `${s.top1} / ${s.top3} of ${s.ranked}` : '–'}`;
}

function rankingTable(label, rowsBySource, predictions) {
  const out = [`| ${label} | rows | median \\|error\\| | p90 \\|error\\| | optimistic | optimistic > 10 % | Spearman within clusters of ≥ 3 (each) | measured best #1 / top 3, of clusters of ≥ 2 |`,
    '|---|---:|---:|---:|---:|---:|---|---|'];
  for (const [source, rows] of rowsBySource) {
    for (const [what, pred] of predictions) out.push(`| ${source}${what} | ${statsCells(stats(rows, pred))} |`);
  }
  return out;
}

const bySource = (rows) => {
  const m = new Map();
  for (const r of rows) m.set(r.source, [...(m.get(r.source) ?? []), r]);
  return m;
};

const shaped = evaluate(readJson('tests', 'validation', 'throughput.json'));
const blindData = readJson('tests', 'validation', 'throughput_blind.json');
const blind = evaluate(blindData);
const freezeFile = join(root, 'tests', 'validation', 'blind', 'throughput_blind.json');

const git = (cmd) => execSync(cmd, { cwd: root, encoding: 'utf8' }).trim();
const provenance = () => ({ commit: git('git rev-parse HEAD'), dirty: git('git status --porcelain -- src wasm_bindings') !== '', date: new Date().toISOString() });
const frozenRow = (r) => ({ id: r.id, measured_tokens_per_s_per_gpu: r.tps, memfit_tokens_per_s_per_gpu: r.predicted ?? null, error: r.error ?? null });
if (process.argv.includes('--freeze')) {
  if (existsSync(freezeFile)) throw new Error(`${freezeFile} exists: a freeze is a record, never overwritten`);
  const record = {
    about: 'memfit\'s predictions for tests/validation/throughput_blind.json before the step-time model was changed for it (tools/validation/throughput.mjs --freeze).',
    ...provenance(),
    rows: blind.map(frozenRow),
  };
  writeFileSync(freezeFile, `${JSON.stringify(record, null, 1)}\n`);
}
// --add records the rows added to the blind file since, each batch with its own commit and date;
// the rows already frozen are never touched.
if (process.argv.includes('--add')) {
  const record = JSON.parse(readFileSync(freezeFile, 'utf8'));
  const known = new Set(record.rows.map((r) => r.id));
  const added = blind.filter((r) => !known.has(r.id));
  if (!added.length) throw new Error('--add: every blind row is already frozen');
  record.additions = [...(record.additions ?? []), { ...provenance(), ids: added.map((r) => r.id) }];
  record.rows.push(...added.map(frozenRow));
  writeFileSync(freezeFile, `${JSON.stringify(record, null, 1)}\n`);
}
const frozen = existsSync(freezeFile)
  ? new Map(JSON.parse(readFileSync(freezeFile, 'utf8')).rows.filter((r) => r.memfit_tokens_per_s_per_gpu !== null).map((r) => [r.id, r.memfit_tokens_per_s_per_gpu]))
  : new Map();

const out = tables(shaped, { titan: 'torchtitan', tune: 'torchtune', megatron: 'Megatron-LM' });
out.push('', '**Blind rows** (`tests/validation/throughput_blind.json`: published runs the model was not shaped on; the blind columns are the frozen first predictions):', '');
out.push(...tables(blind, { nemo: 'NeMo', bridge: 'Megatron-Bridge', bloom: 'BigScience BLOOM tuning', foundry: 'MosaicML llm-foundry', dlperf: 'DLPerf Megatron-LM (V100)', libai: 'LiBai\'s Megatron-LM baseline (V100)' }, frozen));
out.push('', '**Ranking per source.** A cluster is one model, task and sequence length on the same GPUs, number included. Optimistic: memfit faster than measured (the dangerous direction for a plan).', '');
const current = ['', (r) => r.predicted];
out.push(...rankingTable('shaped-on source', bySource(shaped), [current]));
out.push('');
// A publication of several tables (one source each) also counts as one: its clusters may span
// its tables (the same model, sequence and GPUs in two precisions).
const withPublications = (m) => {
  const out = [];
  const sources = [...m.keys()];
  for (const [i, source] of sources.entries()) {
    out.push([source, m.get(source)]);
    const prefix = source.split('-')[0];
    const siblings = sources.filter((s) => s.split('-')[0] === prefix);
    if (siblings.length > 1 && sources[i + 1]?.split('-')[0] !== prefix) {
      out.push([`${prefix} (its ${siblings.length} sources)`, siblings.flatMap((s) => m.get(s))]);
    }
  }
  return out;
};
out.push(...rankingTable('blind source', [...withPublications(bySource(blind)), ['all blind rows', blind]], [[' (blind)', (r) => frozen.get(r.id)], [' (now)', (r) => r.predicted]]));
console.log(out.join('\n'));
