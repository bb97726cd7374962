// cli/validate.js with a fake estimator (no WASM), then `memfit validate` end to end: once against
// a fake module, once against the built module when it has estimate().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, site } from './helpers.mjs';

const require = createRequire(import.meta.url);
const v = require('../../cli/validate.js');

const GIB = 2 ** 30;

/// A case row with every column; `overrides` replaces cells.
function caseRow(overrides = {}) {
  const row = Object.fromEntries(v.REQUIRED_COLUMNS.map((c) => [c, '']));
  return Object.assign(row, {
    id: 'TT-001', source: 'src', date: '2024-09', grade: 'A', model: 'meta-llama/Llama-3.1-8B',
    gpu: 'A100-80GB', n_gpus: '1', method: 'full', precision: 'bf16', optimizer: 'adamw',
    framework: 'torchtune', measured_gib: '10', measured_kind: 'max_allocated', measured_scope: 'per_gpu',
  }, overrides);
}

/// A CSV text of rows (all columns, header first), quoting every cell.
function csvOf(rows, eol = '\r\n') {
  const quote = (s) => `"${String(s).replace(/"/g, '""')}"`;
  const line = (r) => v.REQUIRED_COLUMNS.map((c) => quote(r[c])).join(',');
  const lines = [v.REQUIRED_COLUMNS.join(','), ...rows.map(line)];
  return lines.join(eol) + eol;
}

/// A result with a different value in every counter field (GiB 1..6) and a logged counter.
function resultOf(loggedCounter = 'max_reserved') {
  return {
    peak_allocated_bytes: 1 * GIB,
    peak_active_bytes: 2 * GIB,
    peak_reserved_bytes: 3 * GIB,
    device_total_bytes: 4 * GIB,
    activations_peak_bytes: 5 * GIB,
    model_states_bytes: 6 * GIB,
    layer_model_states_bytes: 7 * GIB,
    framework: { logged_counter: loggedCounter },
  };
}

const ok = (result) => JSON.stringify({ ok: true, schema_version: 1, result });
const fail = (code, message, path = '') =>
  JSON.stringify({ ok: false, schema_version: 1, error: { code, message, path } });

/// A fake estimator that answers `reply(request)` and records the requests it got.
function fakeEstimator(reply = () => ok(resultOf())) {
  const requests = [];
  const estimate = (text) => {
    const request = JSON.parse(text);
    requests.push(request);
    return reply(request);
  };
  return { estimate, requests };
}

const run = (rows, reply, options = {}) => {
  const fake = fakeEstimator(reply);
  const report = v.validate(rows, { estimate: fake.estimate, findConfig: () => null, ...options });
  return { report, requests: fake.requests };
};

// --- CSV -----------------------------------------------------------------------------------------

test('CSV: quoted commas, doubled quotes, line breaks in quotes, CRLF and LF, empty fields', () => {
  const text = '\uFEFFa,b,c\r\n"x,1","say ""hi""",\r\n"two\r\nlines",,"z"\nlast,"",q';
  assert.deepEqual(v.parseCsv(text), [
    ['a', 'b', 'c'],
    ['x,1', 'say "hi"', ''],
    ['two\r\nlines', '', 'z'],
    ['last', '', 'q'],
  ]);
  assert.deepEqual(v.parseCsv('a,b\n\n1,2\n'), [['a', 'b'], ['1', '2']]);
  assert.throws(() => v.parseCsv('a,"b\n1,2'), /unterminated/);
  assert.throws(() => v.parseCsv('a,b"c"\n'), /quote inside/);
  assert.throws(() => v.parseCsv('a,"b"c\n'), /after a closing quote/);
});

test('CSV: header names the columns; missing columns, ragged records and repeated ids are rejected', () => {
  const rows = v.readCases(csvOf([caseRow({ notes: 'a, "quoted" note' }), caseRow({ id: 'PM-002' })]));
  assert.equal(rows.length, 2);
  assert.equal(rows[0].notes, 'a, "quoted" note');
  assert.equal(rows[1].id, 'PM-002');
  assert.equal(rows[1].n_gpus, '1');

  const noKind = csvOf([caseRow()]).replace('measured_kind,', '').replace('"max_allocated",', '');
  assert.throws(() => v.readCases(noKind), /missing required column\(s\): measured_kind$/);
  assert.throws(() => v.readCases(''), /no header/);
  assert.throws(() => v.readCases(csvOf([caseRow()]) + 'TT-009,1\r\n'), /record 2: 2 fields/);
  assert.throws(() => v.readCases(csvOf([caseRow(), caseRow()])), /duplicate id 'TT-001'/);
});

test('the calibration file parses: every row has an id and a known measured_kind', () => {
  const rows = v.readCases(readFileSync(join(root, 'tests/validation/calibration.csv'), 'utf8'));
  assert.ok(rows.length >= 100, `${rows.length} rows`);
  for (const row of rows) {
    assert.match(row.id, /^[A-Za-z0-9]+-/);
    assert.ok(row.measured_kind in v.COUNTER_FIELDS || row.measured_kind === 'unknown', row.id);
  }
});

// --- row -> request ------------------------------------------------------------------------------

test('a full row maps to the exact request', () => {
  const row = caseRow({
    n_gpus: '8', dp: '2', tp: '2', pp: '2', vpp: '3', cp: '1', ep: '1', sequence_parallel: '1',
    sharding: 'zero1', offload: 'optimizer', method: 'qlora', lora_rank: '16', lora_targets: 'q, k,v,',
    base_quant: 'nf4', precision: 'amp_bf16', optimizer: 'paged_adamw_8bit', optimizer_in_backward: '0',
    micro_batch: '2', grad_accum: '4', seq_len: '4096', packed: '1', activation_checkpointing: 'selective',
    attention: 'flash', loss: 'chunked', compile: '1', framework: 'megatron', gpu: 'H100-80GB',
  });
  assert.deepEqual(v.rowToRequest(row, null), {
    schema_version: 1,
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    training: {
      framework: 'megatron', framework_version: '2024-09', method: 'qlora', lora: { rank: 16, targets: ['q', 'k', 'v'] },
      base_quant: 'nf4', precision: 'amp_bf16', optimizer: 'paged_adamw_8bit', optimizer_in_backward: false,
      micro_batch: 2, grad_accum: 4, seq_len: 4096, packed: true, activation_checkpointing: 'selective',
      offload: 'optimizer', attention: 'flash', loss: 'chunked', compile: true,
    },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 8 },
    parallel: { dp: 2, tp: 2, pp: 2, vpp: 3, cp: 1, ep: 1, sequence_parallel: true, sharding: 'zero1' },
  });
});

test('empty cells are left out; lora only for adapter methods; all-linear stays a string', () => {
  const emptyCells = caseRow({ gpu: '', n_gpus: '', framework: '', precision: '', optimizer: '' });
  assert.deepEqual(v.rowToRequest(emptyCells, { model_type: 'gpt2' }),
    { schema_version: 1, model: { config: { model_type: 'gpt2' } }, training: { method: 'full' } });

  const full = v.rowToRequest(caseRow({ method: 'full', lora_rank: '8', lora_targets: 'q,v' }), null);
  assert.equal(full.training.lora, undefined);
  const dora = v.rowToRequest(caseRow({ method: 'dora', lora_targets: 'all-linear' }), null);
  assert.deepEqual(dora.training.lora, { targets: 'all-linear' });
  const bare = v.rowToRequest(caseRow({ method: 'lora' }), null);
  assert.equal(bare.training.lora, undefined);

  const rowError = (column) => (e) => e instanceof v.RowError && e.path === column && e.code === 'invalid_row';
  assert.throws(() => v.rowToRequest(caseRow({ seq_len: '2k' }), null), rowError('seq_len'));
  assert.throws(() => v.rowToRequest(caseRow({ packed: 'yes' }), null), rowError('packed'));
});

test('a config file in one of the --configs directories replaces the preset', () => {
  const empty = mkdtempSync(join(tmpdir(), 'memfit-configs-a-'));
  const dir = mkdtempSync(join(tmpdir(), 'memfit-configs-b-'));
  writeFileSync(join(dir, 'org__Model-1B.json'), JSON.stringify({ model_type: 'llama', hidden_size: 64 }));
  const fake = fakeEstimator();
  v.validate([caseRow({ id: 'X-1', model: 'org/Model-1B' }), caseRow({ id: 'X-2', model: 'org/Other' })],
    { estimate: fake.estimate, configDirs: [empty, dir] });
  assert.deepEqual(fake.requests[0].model, { config: { model_type: 'llama', hidden_size: 64 } });
  assert.deepEqual(fake.requests[1].model, { preset: 'org/Other' });

  writeFileSync(join(dir, 'org__Broken.json'), '{"model_type":');
  const { report } = run([caseRow({ model: 'org/Broken' })], undefined, { findConfig: v.configFinder([dir]) });
  assert.equal(report.errors.length, 1);
  assert.equal(report.errors[0].code, 'invalid_config');
  assert.match(report.errors[0].message, /not valid JSON/);
});

// --- skipped and error rows ----------------------------------------------------------------------

test('other_peft rows are skipped with the PEFT method name, without calling the estimator', () => {
  const { report, requests } = run([
    caseRow({ id: 'PM-001', method: 'other_peft', notes: 'original 1 bytes; PEFT method ADALORA, rank/r=8' }),
    caseRow({ id: 'PM-002', method: 'other_peft', notes: 'no name here' }),
  ]);
  assert.equal(requests.length, 0);
  assert.deepEqual(report.skipped, [
    { id: 'PM-001', reason: 'PEFT method other than LoRA/DoRA is not modelled (ADALORA)' },
    { id: 'PM-002', reason: 'PEFT method other than LoRA/DoRA is not modelled' },
  ]);
  assert.equal(report.rows.length, 0);
  assert.equal(report.summary.skipped, 2);
});

test('an "unsupported" envelope skips the row with its message', () => {
  const { report } = run([caseRow({ id: 'A-1', gpu: 'B200' }), caseRow({ id: 'A-2' })],
    (req) => (req.cluster.gpu.preset === 'B200'
      ? fail('unsupported', 'fp8 on B200 is not modelled yet') : ok(resultOf())),
  );
  assert.deepEqual(report.skipped, [{ id: 'A-1', reason: 'fp8 on B200 is not modelled yet' }]);
  assert.deepEqual(report.rows.map((r) => r.id), ['A-2']);
  assert.equal(report.errors.length, 0);
  assert.equal(report.summary.overall.count, 1);
});

test('any other error envelope lists the row under errors, outside the statistics', () => {
  const { report } = run([caseRow({ id: 'E-1', model: 'no/such' }), caseRow({ id: 'E-2', measured_gib: '2' })],
    (req) => (req.model.preset === 'no/such'
      ? fail('unknown_preset', "no preset 'no/such'", '/model/preset') : ok(resultOf())),
  );
  assert.deepEqual(report.errors,
    [{ id: 'E-1', code: 'unknown_preset', path: '/model/preset', message: "no preset 'no/such'" }]);
  assert.deepEqual(report.rows.map((r) => r.id), ['E-2']);
  assert.equal(report.summary.errors, 1);
  assert.equal(report.summary.overall.count, 1);
  assert.equal(report.summary.overall.median_abs_error_pct, 50); // 1 GiB vs 2 GiB; E-1 not counted
});

test('malformed cells and non-envelope replies become error rows', () => {
  const { report, requests } = run([
    caseRow({ id: 'B-1', measured_gib: 'n/a' }),
    caseRow({ id: 'B-2', measured_kind: 'max_memory' }),
    caseRow({ id: 'B-3', measured_scope: 'cluster' }),
    caseRow({ id: 'B-4', micro_batch: '-1' }),
  ]);
  assert.deepEqual(report.errors.map((e) => [e.id, e.code, e.path]), [
    ['B-1', 'invalid_row', 'measured_gib'],
    ['B-2', 'invalid_row', 'measured_kind'],
    ['B-3', 'invalid_row', 'measured_scope'],
    ['B-4', 'invalid_row', 'micro_batch'],
  ]);
  assert.equal(requests.length, 0); // found before the estimator runs
  const { report: garbage } = run([caseRow()], () => 'Aborted()');
  assert.equal(garbage.errors[0].code, 'bad_envelope');
});

// --- counters and scope --------------------------------------------------------------------------

test('every measured_kind compares its own counter', () => {
  const expected = {
    max_allocated: ['peak_allocated_bytes', 1],
    peak_active: ['peak_active_bytes', 2],
    max_reserved: ['peak_reserved_bytes', 3],
    nvidia_smi: ['device_total_bytes', 4],
    activations: ['activations_peak_bytes', 5],
    model_states: ['model_states_bytes', 6],
    layer_model_states: ['layer_model_states_bytes', 7],
  };
  const rows = Object.keys(expected).map((kind) => caseRow({ id: `K-${kind}`, measured_kind: kind }));
  const { report } = run(rows);
  assert.equal(report.rows.length, 7);
  for (const row of report.rows) {
    const [field, gib] = expected[row.measured_kind];
    assert.equal(row.counter, field, row.id);
    assert.equal(row.estimate_gib, gib, row.id);
    assert.equal(row.measured_gib, 10, row.id);
    assert.equal(row.error_pct, (gib - 10) * 10, row.id);
  }
});

test('unknown uses the counter the framework logs', () => {
  const logged = { max_allocated: 1, peak_active: 2, max_reserved: 3, nvidia_smi: 4 };
  for (const [counter, gib] of Object.entries(logged)) {
    const { report } = run([caseRow({ measured_kind: 'unknown' })], () => ok(resultOf(counter)));
    assert.equal(report.rows[0].estimate_gib, gib, counter);
    assert.equal(report.rows[0].counter, v.COUNTER_FIELDS[counter], counter);
  }
  const none = resultOf();
  delete none.framework;
  const { report } = run([caseRow({ measured_kind: 'unknown' })], () => ok(none));
  assert.equal(report.rows.length, 0);
  assert.equal(report.errors[0].code, 'bad_result');
  assert.equal(report.errors[0].path, '/framework/logged_counter');
  for (const bogus of ['activations', 'max_memory']) { // not a counter frameworks log
    const { report: r } = run([caseRow({ measured_kind: 'unknown' })], () => ok(resultOf(bogus)));
    assert.deepEqual([r.errors[0].code, r.errors[0].path], ['bad_result', '/framework/logged_counter'], bogus);
  }
  const noField = resultOf('max_allocated');
  delete noField.peak_allocated_bytes;
  const { report: missing } = run([caseRow({ measured_kind: 'unknown' })], () => ok(noField));
  assert.deepEqual([missing.errors[0].code, missing.errors[0].path], ['bad_result', '/peak_allocated_bytes']);
});

test('a total over all GPUs compares the per-GPU estimate times n_gpus', () => {
  const { report } = run([
    caseRow({ id: 'S-1', n_gpus: '8', measured_scope: 'total', measured_gib: '8' }),
    caseRow({ id: 'S-2', n_gpus: '8', measured_scope: 'per_gpu', measured_gib: '8' }),
  ]);
  assert.equal(report.rows[0].estimate_gib, 8);
  assert.equal(report.rows[0].error_pct, 0);
  assert.equal(report.rows[1].estimate_gib, 1);
  assert.equal(report.rows[1].error_pct, -87.5);
});

// --- statistics ----------------------------------------------------------------------------------

test('median and nearest-rank p90', () => {
  const ten = [10, 3, 1, 7, 5, 2, 9, 4, 8, 6];
  assert.equal(v.median(ten), 5.5);
  assert.equal(v.p90(ten), 9);
  assert.equal(v.median([3, 1, 2]), 2);
  assert.equal(v.p90([3, 1, 2]), 3);
  const thirty = Array.from({ length: 30 }, (_, i) => 30 - i); // 30 down to 1
  assert.equal(v.p90(thirty), 27);
  assert.equal(v.p90(thirty.slice(0, 11)), 29); // 20..30: rank ceil(9.9) = 10
  assert.equal(v.median([]), null);
  assert.equal(v.p90([]), null);
  assert.deepEqual(ten, [10, 3, 1, 7, 5, 2, 9, 4, 8, 6]); // inputs are not sorted in place
});

test('summary: |errors| 1..10 give median 5.5, p90 9; mean is signed', () => {
  // estimate 1 GiB each; measured chosen so that error_pct = -e for e = 1..10 on odd ids, +e on even
  const rows = Array.from({ length: 10 }, (_, i) => {
    const e = i + 1;
    const sign = e % 2 === 0 ? 1 : -1;
    return caseRow({ id: `G-${String(e).padStart(2, '0')}`, measured_gib: String(1 / (1 + (sign * e) / 100)) });
  });
  const { report } = run(rows);
  const s = report.summary.overall;
  assert.equal(s.count, 10);
  assert.ok(Math.abs(s.median_abs_error_pct - 5.5) < 1e-9, s.median_abs_error_pct);
  assert.ok(Math.abs(s.p90_abs_error_pct - 9) < 1e-9, s.p90_abs_error_pct);
  assert.ok(Math.abs(s.mean_error_pct - 0.5) < 1e-9, s.mean_error_pct); // (-1+2-3+...+10)/10
});

/// A compared row with a given error for summarize().
const compared = (id, grade, n_gpus, error_pct) => ({ id, grade, n_gpus, source: v.sourceOf(id), error_pct });

test('single_gpu_AB holds single-GPU grade A/B rows only; per source and per grade groups', () => {
  const rows = [
    compared('TT-1', 'A', 1, 2), compared('TT-2', 'B', 1, -4), compared('PM-1', 'A', 1, 4),
    compared('TT-3', 'C', 1, 90), compared('MLM482-1', 'A', 8, -70),
  ];
  const s = v.summarize(rows, 3, 2);
  const h = s[v.HEADLINE_GROUP];
  assert.equal(v.HEADLINE_GROUP, 'single_gpu_AB');
  assert.equal(h.count, 3);
  assert.equal(h.median_abs_error_pct, 4);
  assert.equal(h.p90_abs_error_pct, 4);
  assert.ok(Math.abs(h.mean_error_pct - 2 / 3) < 1e-12);
  assert.equal(h.target_median_abs_error_pct, 5);
  assert.equal(h.target_p90_abs_error_pct, 12);
  assert.equal(h.meets_target, true);
  assert.deepEqual(Object.keys(s.by_source), ['MLM482', 'PM', 'TT']);
  assert.equal(s.by_source.TT.count, 3);
  assert.equal(s.by_source.MLM482.mean_error_pct, -70);
  assert.deepEqual(Object.keys(s.by_grade), ['A', 'B', 'C']);
  assert.equal(s.by_grade.A.count, 3);
  assert.equal(s.overall.count, 5);
  assert.equal(s.overall.median_abs_error_pct, 4);
  assert.equal(s.skipped, 3);
  assert.equal(s.errors, 2);
});

test('meets_target needs median <= 5 and p90 <= 12 (boundaries included) and at least one row', () => {
  const meets = (errors) =>
    v.summarize(errors.map((e, i) => compared(`X-${i}`, 'A', 1, e)), 0, 0).single_gpu_AB.meets_target;
  assert.equal(meets([5, -5, 12]), true);
  assert.equal(meets([5.01, -5.01, 1]), false); // median just over
  assert.equal(meets([1, 1, 12.01]), false); // p90 just over
  assert.equal(meets([]), false);
});

// --- output --------------------------------------------------------------------------------------

/// A small report: two compared rows (out of id order), one skipped, one error.
function sampleReport() {
  const { report } = run([
    caseRow({ id: 'TT-002', measured_gib: '1.1', notes: 'x' }),
    caseRow({ id: 'PM-001', method: 'other_peft', notes: 'PEFT method VERA' }),
    caseRow({ id: 'AA-001', measured_gib: '0.9', grade: 'C' }),
    caseRow({ id: 'TT-003', model: 'bad/model' }),
  ], (req) => (req.model.preset === 'bad/model'
    ? fail('unknown_preset', 'no | such', '/model/preset') : ok(resultOf())));
  return report;
}

test('--json shape: rows reduced to the compared fields', () => {
  const j = v.toJson(sampleReport());
  assert.deepEqual(Object.keys(j), ['rows', 'skipped', 'errors', 'summary']);
  assert.deepEqual(Object.keys(j.rows[0]),
    ['id', 'grade', 'source', 'measured_kind', 'counter', 'estimate_gib', 'measured_gib', 'error_pct']);
  assert.deepEqual(j.rows.map((r) => r.id), ['TT-002', 'AA-001']);
  assert.deepEqual(j.skipped, [{ id: 'PM-001', reason: 'PEFT method other than LoRA/DoRA is not modelled (VERA)' }]);
  assert.deepEqual(j.errors, [{ id: 'TT-003', code: 'unknown_preset', path: '/model/preset', message: 'no | such' }]);
});

test('table output lists rows, skipped, errors and the summary', () => {
  const text = v.formatTable(sampleReport());
  const lines = text.split('\n');
  assert.match(lines[0], /^id\s+grade\s+model\s+measured_kind\s+estimate_GiB\s+measured_GiB\s+error_%$/);
  assert.match(lines[1], /^TT-002\s+A\s+Llama-3\.1-8B\s+max_allocated\s+1\.00\s+1\.10\s+-9\.1$/);
  assert.match(lines[2], /^AA-001\s+C\s+Llama-3\.1-8B\s+max_allocated\s+1\.00\s+0\.90\s+\+11\.1$/);
  assert.match(text, /skipped \(1\):\n {2}PM-001 {2}PEFT method other/);
  assert.match(text, /errors \(1\):\n {2}TT-003 {2}unknown_preset {2}\/model\/preset {2}no \| such/);
  assert.match(text, /single GPU, grade A\/B: n=1 .* NOT met/);
  assert.match(text, /skipped: 1 {2}errors: 1\n$/);
});

test('markdown report: sections in order, rows sorted by id, reproducible, no timestamps', () => {
  const report = sampleReport();
  const md = v.formatMarkdown(report, { casesPath: 'cases.csv', version: '9.9.9' });
  assert.equal(md, v.formatMarkdown(sampleReport(), { casesPath: 'cases.csv', version: '9.9.9' }));
  const order = ['# Validation', '### Single GPU, grade A/B', '### By source', '### By grade', '### Overall',
    '## Every row', '## Skipped rows', '## Rows the estimator rejected', 'npm run validation-report'];
  const at = order.map((s) => md.indexOf(s));
  assert.ok(at.every((i) => i >= 0), JSON.stringify(at));
  assert.deepEqual([...at].sort((a, b) => a - b), at);
  assert.ok(md.indexOf('| AA-001 |') < md.indexOf('| TT-002 |'));
  assert.match(md, /`max_reserved` → `peak_reserved_bytes`/);
  assert.match(md, /2\^30/);
  assert.match(md, /\| 1 \| 9\.1 \| 9\.1 \| -9\.1 \| median ≤ 5 %, p90 ≤ 12 % \| FAIL \|/);
  assert.match(md, /\| TT-003 \| unknown_preset \| \/model\/preset \| no \\\| such \|/);
  assert.match(md, /memfit 9\.9\.9/);
  assert.doesNotMatch(md, /\d{4}-\d\d-\d\dT|\d\d:\d\d:\d\d/);
});

// --- CLI -----------------------------------------------------------------------------------------

function memfit(args, env = {}) {
  const childEnv = { ...process.env, ...env };
  if (!env.MEMFIT_WASM_JS) delete childEnv.MEMFIT_WASM_JS;
  const r = spawnSync(process.execPath, [join(root, 'cli/memfit.js'), ...args],
    { cwd: root, encoding: 'utf8', env: childEnv });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/// A stand-in module file for MEMFIT_WASM_JS: estimate() answers from the request alone.
function fakeModuleFile() {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-fake-'));
  const file = join(dir, 'fake_module.js');
  writeFileSync(file, `module.exports = () => Promise.resolve({
  version: () => JSON.stringify({ ok: true, schema_version: 1, result: { version: '0.0.0-fake' } }),
  estimate: (text) => {
    const req = JSON.parse(text);
    if (req.model.preset === 'no/such') {
      const error = { code: 'unknown_preset', message: 'nope', path: '/model/preset' };
      return JSON.stringify({ ok: false, schema_version: 1, error });
    }
    const b = req.training.seq_len * 2 ** 20;
    return JSON.stringify({ ok: true, schema_version: 1, result: { peak_allocated_bytes: b, peak_active_bytes: b,
      peak_reserved_bytes: b, device_total_bytes: b, activations_peak_bytes: b, model_states_bytes: b,
      framework: { logged_counter: 'peak_active' } } });
  },
});\n`);
  return { dir, file };
}

test('memfit validate / estimate from the command line (fake module)', () => {
  const { dir, file } = fakeModuleFile();
  const cases = join(dir, 'cases.csv');
  writeFileSync(cases, csvOf([
    caseRow({ id: 'TT-001', seq_len: '1024', measured_gib: '1' }),
    caseRow({ id: 'TT-002', model: 'no/such', seq_len: '1024' }),
    caseRow({ id: 'PM-001', method: 'other_peft' }),
  ]));
  const env = { MEMFIT_WASM_JS: file };

  const json = memfit(['validate', cases, '--json'], env);
  assert.equal(json.code, 0, json.err);
  const j = JSON.parse(json.out);
  assert.deepEqual(j.rows.map((r) => [r.id, r.estimate_gib, r.error_pct]), [['TT-001', 1, 0]]);
  assert.deepEqual(j.errors.map((e) => e.id), ['TT-002']);
  assert.deepEqual(j.skipped.map((e) => e.id), ['PM-001']);

  const table = memfit(['validate', cases], env);
  assert.equal(table.code, 0, table.err);
  assert.match(table.out, /^id\s+grade/);
  const md = memfit(['validate', cases, '--markdown', '--configs', dir], env);
  assert.equal(md.code, 0, md.err);
  assert.match(md.out, /^# Validation/);
  assert.match(md.out, /memfit 0\.0\.0-fake/);
  assert.equal(memfit(['validate', cases, '--markdown', '--configs', dir], env).out, md.out);

  // bad input: exit 2 and an error envelope on stdout
  const broken = join(dir, 'broken.csv');
  writeFileSync(broken, 'id,model\nTT-1,x\n');
  const bad = memfit(['validate', broken], env);
  assert.equal(bad.code, 2);
  assert.equal(JSON.parse(bad.out).error.code, 'invalid_csv');
  assert.match(JSON.parse(bad.out).error.message, /missing required column/);
  assert.equal(memfit(['validate', join(dir, 'absent.csv')], env).code, 2);
  assert.equal(memfit(['validate', cases, '--json', '--markdown'], env).code, 2);
  assert.equal(memfit(['validate', cases, '--configs', join(dir, 'absent')], env).code, 2);
  assert.equal(memfit(['validate'], env).code, 2);

  const request = join(dir, 'request.json');
  writeFileSync(request, JSON.stringify({ schema_version: 1, model: { preset: 'x/y' }, training: { seq_len: 2048 } }));
  const est = memfit(['estimate', request], env);
  assert.equal(est.code, 0, est.err);
  assert.equal(JSON.parse(est.out).peak_allocated_bytes, 2 * 2 ** 30);
  writeFileSync(request, JSON.stringify({ schema_version: 1, model: { preset: 'no/such' }, training: {} }));
  const estBad = memfit(['estimate', request], env);
  assert.equal(estBad.code, 2);
  assert.equal(JSON.parse(estBad.out).error.code, 'unknown_preset');
  const missing = memfit(['estimate', join(dir, 'absent.json')], env);
  assert.equal(missing.code, 2);
  assert.equal(JSON.parse(missing.out).error.code, 'invalid_usage');
});

/// Whether the built single-file module exports estimate() (it is being added on the C++ side).
async function builtHasEstimate() {
  const file = `${site}memfit_single.js`;
  if (!existsSync(file)) return false;
  const M = await require(file)();
  return typeof M.estimate === 'function';
}

test('memfit validate on the calibration cases (built module)', async (t) => {
  if (!(await builtHasEstimate())) {
    t.skip('build-wasm/site/memfit_single.js has no estimate() yet');
    return;
  }
  const r = memfit(['validate', 'tests/validation/calibration.csv', '--configs', 'tests/validation/configs', '--json']);
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  const csvIds = v.readCases(readFileSync(join(root, 'tests/validation/calibration.csv'), 'utf8')).map((row) => row.id);
  const seen = [...j.rows, ...j.skipped, ...j.errors].map((x) => x.id);
  assert.deepEqual([...seen].sort(), [...csvIds].sort()); // every id exactly once
  for (const row of j.rows) {
    for (const key of ['estimate_gib', 'measured_gib', 'error_pct']) {
      assert.ok(Number.isFinite(row[key]), `${row.id}.${key} = ${row[key]}`);
    }
    assert.ok(row.estimate_gib > 0, `${row.id}: estimate ${row.estimate_gib}`);
    assert.match(row.counter, /_bytes$/);
  }
  for (const s of j.skipped) assert.ok(s.reason.length > 0, s.id);
  for (const e of j.errors) assert.ok(e.code && typeof e.message === 'string', e.id);
  const s = j.summary;
  assert.equal(s.overall.count, j.rows.length);
  assert.equal(s.skipped, j.skipped.length);
  assert.equal(s.errors, j.errors.length);
  assert.equal(typeof s.single_gpu_AB.meets_target, 'boolean');
});
