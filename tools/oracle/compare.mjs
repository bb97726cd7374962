// memfit against the oracle, like for like: memfit's peak_tensor_bytes (its allocated peak without the cuBLAS
// workspaces, which the oracle does not run; the `tensor_bytes` counter of cli/validate.js COUNTER_FIELDS) against
// the oracle's peak of live tensor bytes, with both breakdowns at the peak.
//   node tools/oracle/compare.mjs [--json OUT] [--markdown] [--blind-by-runner]
// --blind-by-runner: memfit's frozen predictions (tests/oracle/freeze.json) beside now, per runner x version set.
// Reads tests/oracle/cases.csv and records.jsonl; needs the built WASM module (build-wasm/site/memfit_single.js).
import { createRequire } from 'node:module';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL('../../', import.meta.url));
const v = require(`${root}cli/validate.js`);
const stats = require(`${root}tools/oracle/oracle_stats.js`);

const GIB = 2 ** 30;
// oracle category -> memfit breakdown fields (src/export/estimate_json.cpp at_peak)
const CATEGORY_FIELDS = {
  weights: ['weights_bytes', 'master_weights_bytes'],
  gradients: ['gradients_bytes'],
  optimizer: ['optimizer_states_bytes'],
  activations: ['activations_bytes'],
  logits_loss: ['logits_loss_bytes'],
  temporaries: ['temporaries_bytes', 'communication_bytes'],
};

function readRecords() {
  const out = new Map();
  for (const line of readFileSync(`${root}tests/oracle/records.jsonl`, 'utf8').split('\n')) {
    if (line.trim()) { const r = JSON.parse(line); out.set(r.id, r); }
  }
  return out;
}

// id -> memfit's frozen estimate in GiB (6 decimals, as the freeze keeps it)
function frozenEstimates() {
  const freeze = JSON.parse(readFileSync(`${root}tests/oracle/freeze.json`, 'utf8'));
  return new Map(freeze.rows.filter((r) => r.estimate_gib !== undefined).map((r) => [r.id, r.estimate_gib]));
}

function memfitBreakdown(result) {
  const b = result.breakdown;
  return Object.fromEntries(Object.entries(CATEGORY_FIELDS).map(([k, fields]) => [k, fields.reduce((s, f) => s + (b[f] || 0), 0)]));
}

function oracleBreakdown(record) {
  const b = { ...record.breakdown_bytes };
  b.activations += b.inputs; // memfit counts the token ids with the activations
  delete b.inputs;
  return b;
}

export async function compare() {
  const M = await require(`${root}build-wasm/site/memfit_single.js`)();
  const cases = v.readCases(readFileSync(`${root}tests/oracle/cases.csv`, 'utf8'));
  const records = readRecords();
  const findConfig = v.configFinder([`${root}tests/validation/configs`, `${root}tests/oracle/configs`]);
  const frozen = frozenEstimates();
  const rows = [];
  const errors = [];
  for (const row of cases) {
    const env = JSON.parse(M.estimate(JSON.stringify(v.rowToRequest(row, findConfig(row.model)))));
    if (!env.ok) { errors.push({ id: row.id, error: env.error }); continue; }
    const rec = records.get(row.id);
    const oracle = rec.peak_bytes;
    const memfit = env.result.peak_tensor_bytes;
    rows.push({
      id: row.id, version_set: row.source.replace('oracle:', ''), framework: row.framework,
      family: /family (\S+);/.exec(row.notes)[1], method: row.method, precision: row.precision,
      ac: row.activation_checkpointing, attention: row.attention,
      oracle_gib: oracle / GIB, memfit_gib: memfit / GIB, error_pct: ((memfit - oracle) / oracle) * 100,
      blind_error_pct: frozen.has(row.id) ? ((frozen.get(row.id) * GIB - oracle) / oracle) * 100 : null,
      oracle_where: rec.where, memfit_peak: env.result.peak, sdpa_calls: rec.sdpa_calls,
      oracle_breakdown_gib: mapGib(oracleBreakdown(rec)),
      memfit_breakdown_gib: mapGib(memfitBreakdown(env.result)),
    });
  }
  return { rows, errors };
}

const mapGib = (o) => Object.fromEntries(Object.entries(o).map(([k, b]) => [k, b / GIB]));

async function main() {
  const args = process.argv.slice(2);
  const report = await compare();
  const jsonAt = args.indexOf('--json');
  if (jsonAt >= 0) writeFileSync(args[jsonAt + 1], JSON.stringify(report, null, 1) + '\n');
  if (args.includes('--blind-by-runner')) {
    const key = (r) => `${r.framework} ${r.version_set}`;
    process.stdout.write(`${stats.pairedTable('runner x version set', report.rows, key)}\n`);
    return;
  }
  process.stdout.write(stats.markdownReport(report.rows, report.errors));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
