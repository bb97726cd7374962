// cli/validate.js, cli/blind.js and cli/validation_report.js with a fake estimator (no WASM), then
// `memfit validate` end to end: against a fake module (freeze, blind comparison, bad input), and
// against the built module when it has estimate().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, site } from './helpers.mjs';

const require = createRequire(import.meta.url);
const v = require('../../cli/validate.js');
const blind = require('../../cli/blind.js');
const reports = require('../../cli/validation_report.js');

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
    nvml_used_bytes: 8 * GIB,
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

test('a row run on the DeepSpeed engine (backend=deepspeed in its notes) asks for parallel.backend', () => {
  const tagged = v.rowToRequest(caseRow({ notes: 'DS-Z3 through accelerate. backend=deepspeed (the engine).' }), null);
  assert.equal(tagged.parallel.backend, 'deepspeed');
  const prose = v.rowToRequest(caseRow({ notes: 'backend deepspeed, said in prose only' }), null);
  assert.equal(prose.parallel?.backend, undefined);
});

test('a row whose cp column holds Ulysses (cp_kind=ulysses in its notes) asks for parallel.cp_kind', () => {
  const tagged = v.rowToRequest(caseRow({ cp: '4', notes: 'SP 4 recorded in cp. cp_kind=ulysses (DeepSpeed).' }), null);
  assert.equal(tagged.parallel.cp_kind, 'ulysses');
  const prose = v.rowToRequest(caseRow({ cp: '4', notes: 'DeepSpeed Ulysses, said in prose only' }), null);
  assert.equal(prose.parallel?.cp_kind, undefined);
});

test('a compiled row under accelerate regional compilation asks for training.compile_scope regions', () => {
  const tagged = v.rowToRequest(caseRow({ compile: '1', notes: 'compiled. compile_scope=regions (accelerate).' }), null);
  assert.equal(tagged.training.compile_scope, 'regions');
  const named = v.rowToRequest(caseRow({ compile: '1', notes: 'compile = accelerate regional compilation (inductor)' }), null);
  assert.equal(named.training.compile_scope, 'regions');
  // Not compiled: nothing to scope (the request would refuse compile_scope without compile).
  const eager = v.rowToRequest(caseRow({ compile: '0', notes: 'compile = accelerate regional compilation (inductor)' }), null);
  assert.equal(eager.training.compile_scope, undefined);
  const whole = v.rowToRequest(caseRow({ compile: '1', notes: 'torch_compile true' }), null);
  assert.equal(whole.training.compile_scope, undefined);
});

test('a row run on accelerate FSDP2 (fsdp_version=2 in its notes) asks for parallel.fsdp_version 2', () => {
  const tagged = v.rowToRequest(caseRow({ notes: 'FSDP2 defaults. fsdp_version=2 (fully_shard).' }), null);
  assert.equal(tagged.parallel.fsdp_version, 2);
  const other = v.rowToRequest(caseRow({ notes: 'fsdp_version=20 is not a version' }), null);
  assert.equal(other.parallel?.fsdp_version, undefined);
});

test('a full row with badam_block in its notes asks for training.badam with that block', () => {
  const tagged = v.rowToRequest(caseRow({ method: 'full', notes: 'oracle; badam_block=last' }), null);
  assert.deepEqual(tagged.training.badam, { active_block: 'last' });
  assert.equal(v.rowToRequest(caseRow({ method: 'full', notes: 'badam without a block' }), null).training.badam, undefined);
});

test('peft_kwargs in the notes set MiSS\'s and GLoRA\'s settings; malformed JSON is a row error', () => {
  const bat = v.rowToRequest(caseRow({ method: 'miss', lora_targets: 'q,v', notes: 'x; peft_kwargs={"init_weights":"bat","mini_r":1,"r":64}' }), null);
  assert.deepEqual(bat.training.miss, { init: 'bat' });
  assert.equal(bat.training.lora.rank, 64);
  const plain = v.rowToRequest(caseRow({ method: 'miss', notes: 'peft_kwargs={"init_weights":true,"r":32}' }), null);
  assert.deepEqual(plain.training.miss, { init: 'default' });
  const mini = v.rowToRequest(caseRow({ method: 'miss', notes: 'peft_kwargs={"init_weights":"mini","mini_r":64}' }), null);
  assert.deepEqual(mini.training.miss, { init: 'mini', mini_r: 64 });
  const glora = v.rowToRequest(caseRow({ method: 'glora', notes: 'peft_kwargs={"config_A_B":"vector","r":8}' }), null);
  assert.deepEqual(glora.training.glora, { a_b: 'vector' });
  assert.equal(glora.training.lora.rank, 8);
  assert.equal(v.rowToRequest(caseRow({ method: 'lora', notes: 'peft_kwargs={"r":4}' }), null).training.miss, undefined);
  assert.throws(() => v.rowToRequest(caseRow({ method: 'miss', notes: 'peft_kwargs={r:4}' }), null), /peft_kwargs is not JSON/);
});

test('peft_kwargs in the notes set the shared-bank adapters\' rank and shapes (FRoD has no rank)', () => {
  const lily = v.rowToRequest(caseRow({ method: 'lily', notes: 'peft_kwargs={"r":896,"stride_A":14,"num_B":2}' }), null);
  assert.deepEqual(lily.training.lily, { stride_a: 14, num_b: 2 });
  assert.equal(lily.training.lora.rank, 896);
  const frod = v.rowToRequest(caseRow({ method: 'frod', notes: 'peft_kwargs={"sparse_rate":0.02,"runtime_offload_base_weight":true}' }), null);
  assert.deepEqual(frod.training.frod, { sparse_rate: 0.02, offload_base_weight: true });
  assert.equal(frod.training.lora?.rank, undefined);
  const adamss = v.rowToRequest(caseRow({ method: 'adamss', notes: 'peft_kwargs={"r":100,"num_subspaces":32,"subspace_rank":1}' }), null);
  assert.deepEqual(adamss.training.adamss, { subspaces: 32, subspace_rank: 1 });
  const tiny = v.rowToRequest(caseRow({ method: 'tinylora', notes: 'peft_kwargs={"r":2,"u":64,"weight_tying":1.0}' }), null);
  assert.deepEqual(tiny.training.tinylora, { u: 64, weight_tying: 1 });
});

test('peft_kwargs in the notes set RoAd\'s variant, DEFT\'s r and para, and the trainable token count', () => {
  const road = v.rowToRequest(caseRow({ method: 'road', lora_targets: 'q,v', notes: 'x; peft_kwargs={"group_size":64,"variant":"road_2"}' }), null);
  assert.deepEqual(road.training.road, { variant: 'road_2' });
  assert.deepEqual(road.training.lora, { targets: ['q', 'v'] });
  const deft = v.rowToRequest(caseRow({ method: 'deft', lora_targets: 'q,v', notes: 'peft_kwargs={"para":true,"r":32}' }), null);
  assert.deepEqual(deft.training.deft, { para: true });
  assert.equal(deft.training.lora.rank, 32);
  const tokens = v.rowToRequest(caseRow({ method: 'trainable_tokens', notes: 'peft_kwargs={"token_indices":[128000,128001]}' }), null);
  assert.deepEqual(tokens.training.trainable_tokens, { count: 2 });
  assert.equal(tokens.training.lora, undefined);
  const osf = v.rowToRequest(caseRow({ method: 'osf', lora_rank: '128', lora_targets: 'all-linear' }), null);
  assert.deepEqual(osf.training.lora, { rank: 128, targets: 'all-linear' });
});

test('a row with PEFT modules_to_save in its notes asks for training.lora.modules_to_save, keeping rank and targets', () => {
  const tagged = v.rowToRequest(caseRow({ method: 'lora', lora_rank: '16', lora_targets: 'all-linear', notes: 'peft; modules_to_save=embedding,head' }), null);
  assert.deepEqual(tagged.training.lora.modules_to_save, ['embedding', 'head']);
  assert.equal(tagged.training.lora.rank, 16);
  const prose = v.rowToRequest(caseRow({ method: 'lora', notes: 'embedding and head saved, in prose' }), null);
  assert.equal(prose.training.lora?.modules_to_save, undefined);
});

test('a row run with Liger patched in (liger_kernels in its notes) asks for training.liger_kernels', () => {
  const tagged = v.rowToRequest(caseRow({ loss: 'liger_flce', notes: 'use_liger_kernel=True; liger_kernels (RMSNorm, SwiGLU, RoPE).' }), null);
  assert.equal(tagged.training.liger_kernels, true);
  assert.equal(tagged.training.loss, 'liger_flce');
  const prose = v.rowToRequest(caseRow({ notes: 'Liger kernels, said in prose only' }), null);
  assert.equal(prose.training.liger_kernels, undefined);
});

test('optimizer_impl=foreach in the notes asks for training.optimizer_impl', () => {
  assert.equal(v.rowToRequest(caseRow({ notes: 'oracle: ...; optimizer_impl=foreach' }), null).training.optimizer_impl, 'foreach');
  assert.equal(v.rowToRequest(caseRow({ notes: 'AdamW foreach' }), null).training.optimizer_impl, undefined);
});

test('a PEFT adaption prompt row (adapter_len=N adapter_layers=N in its notes) asks for training.adapter', () => {
  const tagged = v.rowToRequest(caseRow({ method: 'adaption_prompt', notes: 'adapter_len 100; adapter_len=100 adapter_layers=28' }), null);
  assert.deepEqual(tagged.training.adapter, { prompt_length: 100, layers: 28 });
  const prose = v.rowToRequest(caseRow({ method: 'adaption_prompt', notes: 'adapter_len 100, said in prose only' }), null);
  assert.equal(prose.training.adapter, undefined);
});

test('OFT, BOFT, P-tuning and LoRA init rows read their notes keys into the request', () => {
  const oft = v.rowToRequest(caseRow({ method: 'oft', lora_rank: '32', lora_targets: 'q,v' }), null);
  assert.deepEqual(oft.training.lora, { rank: 32, targets: ['q', 'v'] });
  const boft = v.rowToRequest(caseRow({ method: 'boft', lora_targets: 'q,v', notes: 'x; block_size=4' }), null);
  assert.deepEqual(boft.training.lora, { targets: ['q', 'v'], block_size: 4 });
  const pissa = v.rowToRequest(caseRow({ method: 'lora', lora_rank: '16', notes: 'init_lora_weights=pissa' }), null);
  assert.equal(pissa.training.lora.init, 'pissa');
  const lstm = v.rowToRequest(caseRow({ method: 'p_tuning', notes: 'encoder_reparameterization_type=LSTM' }), null);
  assert.equal(lstm.training.prompt_encoder, 'lstm');
  const prose = v.rowToRequest(caseRow({ method: 'p_tuning', notes: 'an LSTM encoder, said in prose only' }), null);
  assert.equal(prose.training.prompt_encoder, undefined);
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
    { id: 'PM-001', reason: 'PEFT method not modelled by memfit (ADALORA)' },
    { id: 'PM-002', reason: 'PEFT method not modelled by memfit' },
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
    nvml_used: ['nvml_used_bytes', 8],
  };
  const rows = Object.keys(expected).map((kind) => caseRow({ id: `K-${kind}`, measured_kind: kind }));
  const { report } = run(rows);
  assert.equal(report.rows.length, 8);
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

test('unknown over a framework that logs several counters spans them and compares the high end', () => {
  const several = { ...resultOf('peak_active'), framework: { logged_counter: 'peak_active',
    logged_counters: ['peak_active', 'max_allocated', 'max_reserved'] } };
  const { report } = run([caseRow({ measured_kind: 'unknown', measured_gib: '2.5' })], () => ok(several));
  const r = report.rows[0];
  assert.equal(r.estimate_gib, 3);                  // peak_reserved_bytes, the highest of the three
  assert.equal(r.counter, 'peak_reserved_bytes');
  assert.equal(r.range.low_gib, 1);                 // peak_allocated_bytes, the lowest
  assert.deepEqual(r.range.unknown, ['counter']);
  assert.equal(r.error_pct, 20);
  // A stated counter is compared as it is, whatever the framework logs.
  const { report: stated } = run([caseRow({ measured_kind: 'peak_active' })], () => ok(several));
  assert.equal(stated.rows[0].estimate_gib, 2);
  assert.equal(stated.rows[0].range, undefined);
});

test('a setting the row gives as unknown: the range of the estimate is compared on its high end', () => {
  const { report, requests } = run([caseRow({ activation_checkpointing: 'unknown' })], () => ok({
    ...resultOf('max_allocated'),
    ranges: { unknown: ['/training/activation_checkpointing'], peak_allocated_bytes: { low: 1 * GIB, high: 5 * GIB } },
  }));
  assert.equal(requests[0].training.activation_checkpointing, 'unknown');
  const r = report.rows[0];
  assert.equal(r.estimate_gib, 5);
  assert.equal(r.range.low_gib, 1);
  assert.deepEqual(r.range.unknown, ['/training/activation_checkpointing']);
  assert.equal(r.error_pct, -50);
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

// --- the dangerous direction ---------------------------------------------------------------------

test('under-estimated by more than 10 %: strictly below -10 %, share of the compared rows', () => {
  // -10 exactly and over-estimates of any size do not count; -10.01, -20 and -50 do
  const errors = [-20, -10, -10.01, 5, 30, -50, 0, 9.99];
  const s = v.groupStats(errors.map((e, i) => compared(`U-${i}`, 'A', 1, e)));
  assert.equal(s.under_10_count, 3);
  assert.equal(s.under_10_share_pct, 37.5);
  assert.deepEqual(Object.keys(s).slice(0, 3), ['count', 'under_10_share_pct', 'under_10_count']);
  assert.equal(v.groupStats([]).under_10_share_pct, null);
  const summary = v.summarize([compared('A-1', 'A', 1, -11), compared('A-2', 'B', 1, 3),
    compared('B-1', 'A', 4, -30), compared('B-2', 'A', 4, -12)], 0, 0);
  assert.equal(summary.single_gpu_AB.under_10_share_pct, 50);
  assert.equal(summary.multi_gpu_AB.under_10_share_pct, 100);
  assert.equal(summary.by_source.A.under_10_count, 1);
  assert.equal(summary.by_source.B.under_10_count, 2);
  assert.equal(summary.overall.under_10_share_pct, 75);
  assert.match(v.statsLine(summary.overall), /^n=4  under >10% 75\.0% \(3\)  median/);
});

// --- freeze and blind comparison (cli/blind.js) ---------------------------------------------------

/// Case rows whose fake estimate is 1 GiB (resultOf's allocated counter): TT-001 exact, TT-002
/// measured 1.25 GiB (-20 %), PM-001 skipped.
function freezeCases() {
  return [
    caseRow({ id: 'TT-002', measured_gib: '1.25' }),
    caseRow({ id: 'TT-001', measured_gib: '1' }),
    caseRow({ id: 'PM-001', method: 'other_peft' }),
  ];
}
const FREEZE_INFO = { casesName: 'cases.csv', version: '1.2.3', gitCommit: 'abc', date: '2026-11-27', configDirs: [] };

test('row and file hashes: cell order and row order do not matter, any cell does', () => {
  const row = caseRow();
  const reordered = Object.fromEntries(Object.entries(row).reverse());
  assert.equal(blind.rowHash(reordered), blind.rowHash(row));
  assert.match(blind.rowHash(row), /^[0-9a-f]{16}$/);
  assert.notEqual(blind.rowHash(caseRow({ notes: 'transformers 4.40' })), blind.rowHash(row));
  const cases = freezeCases();
  assert.equal(blind.casesHash([...cases].reverse()), blind.casesHash(cases));
  assert.notEqual(blind.casesHash(cases.slice(1)), blind.casesHash(cases));
});

test('a freeze records every row by id, one per line, and reads back', () => {
  const cases = freezeCases();
  const { report } = run(cases);
  const freeze = blind.buildFreeze(cases, report, FREEZE_INFO);
  assert.deepEqual(Object.keys(freeze),
    ['format', 'cases', 'rows_sha256', 'memfit_version', 'git_commit', 'frozen_on', 'configs', 'rows']);
  assert.deepEqual(freeze.rows.map((r) => [r.id, r.status]),
    [['PM-001', 'skipped'], ['TT-001', 'compared'], ['TT-002', 'compared']]);
  const tt2 = freeze.rows[2];
  assert.deepEqual([tt2.estimate_gib, tt2.measured_gib, tt2.error_pct, tt2.counter], [1, 1.25, -20, 'peak_allocated_bytes']);
  assert.equal(tt2.row_sha256, blind.rowHash(cases[0]));
  assert.match(freeze.rows[0].reason, /not modelled/);
  const text = blind.serializeFreeze(freeze);
  assert.deepEqual(blind.parseFreeze(text), freeze);
  const rowLines = text.split('\n').filter((line) => line.startsWith('    {'));
  assert.equal(rowLines.length, 3); // one line per row: a diff shows the rows that changed
  const reversed = [...cases].reverse(); // the same rows in another order freeze to the same text
  assert.equal(text, blind.serializeFreeze(blind.buildFreeze(reversed, run(reversed).report, FREEZE_INFO)));
  assert.deepEqual(blind.parseFreeze(blind.serializeFreeze({ ...freeze, rows: [] })).rows, []);
});

test('a bad freeze names its code and the JSON Pointer of the field', () => {
  const cases = freezeCases();
  const good = blind.buildFreeze(cases, run(cases).report, FREEZE_INFO);
  const problem = (text) => {
    try {
      blind.parseFreeze(text);
    } catch (e) {
      assert.ok(e instanceof blind.FreezeError, e.stack);
      return [e.code, e.path];
    }
    return null;
  };
  const edited = (edit) => {
    const copy = JSON.parse(JSON.stringify(good));
    edit(copy);
    return JSON.stringify(copy);
  };
  assert.deepEqual(problem('{"format": '), ['invalid_freeze', '']);
  assert.deepEqual(problem('[]'), ['invalid_freeze', '']);
  assert.deepEqual(problem(edited((f) => { f.format = 'other/2'; })), ['invalid_freeze', '/format']);
  assert.deepEqual(problem(edited((f) => { delete f.memfit_version; })), ['invalid_freeze', '/memfit_version']);
  assert.deepEqual(problem(edited((f) => { f.rows = {}; })), ['invalid_freeze', '/rows']);
  assert.deepEqual(problem(edited((f) => { f.configs = 'tests/validation/configs'; })), ['invalid_freeze', '/configs']);
  assert.deepEqual(problem(edited((f) => { f.rows[2].error_pct = '-20'; })), ['invalid_freeze', '/rows/2/error_pct']);
  assert.deepEqual(problem(edited((f) => { f.rows[1].status = 'done'; })), ['invalid_freeze', '/rows/1/status']);
  assert.deepEqual(problem(edited((f) => { f.rows[1].id = 'TT-002'; })), ['invalid_freeze', '/rows/2/id']);
  assert.deepEqual(problem(edited((f) => { delete f.rows[0].reason; })), ['invalid_freeze', '/rows/0/reason']);

  const mismatch = (name, rows) => {
    try {
      blind.checkFreezeMatches(good, name, rows);
    } catch (e) {
      return [e.code, e.path];
    }
    return null;
  };
  assert.equal(mismatch('cases.csv', cases), null);
  assert.deepEqual(mismatch('other.csv', cases), ['freeze_mismatch', '/cases']);
  assert.deepEqual(mismatch('cases.csv', [caseRow({ id: 'ZZ-001' })]), ['freeze_mismatch', '/rows']);
});

test('blind against current: the frozen numbers stay, added rows have none, edited rows are flagged', () => {
  const cases = freezeCases();
  const freeze = blind.buildFreeze(cases, run(cases).report, FREEZE_INFO);
  // the model changes: TT-002 now comes out 10 % over; a frozen estimate stays what was said
  freeze.rows[1].estimate_gib = 0.8; // TT-001 as if the old model had said 0.8 GiB (-20 %)
  freeze.rows[1].error_pct = -20;
  const later = [
    ...cases.slice(0, 2).map((row) => (row.id === 'TT-001' ? { ...row, notes: 're-read: torch 2.4' } : row)),
    caseRow({ id: 'TT-003', measured_gib: '2' }), // added after the freeze
  ]; // PM-001 removed
  const { report } = run(later);
  const c = blind.compareWithFreeze(later, report, freeze);
  const byId = Object.fromEntries(c.rows.map((r) => [r.id, r]));
  assert.deepEqual(c.rows.map((r) => r.id), ['PM-001', 'TT-001', 'TT-002', 'TT-003']);
  assert.deepEqual([c.added, c.changed, c.removed], [['TT-003'], ['TT-001'], ['PM-001']]);
  assert.deepEqual(byId['TT-001'].blind, { status: 'compared', estimate_gib: 0.8, error_pct: -20 });
  assert.deepEqual(byId['TT-001'].current, { status: 'compared', estimate_gib: 1, error_pct: 0 });
  assert.equal(byId['TT-002'].change, null);
  assert.equal(byId['TT-002'].blind.error_pct, -20);
  assert.equal(byId['TT-003'].blind, null);
  assert.equal(byId['TT-003'].current.error_pct, -50);
  assert.equal(byId['PM-001'].current, null);
  assert.equal(byId['PM-001'].blind.status, 'skipped');
  // blind: both frozen compared rows at -20 %; current: 0, -20, -50
  assert.deepEqual([c.blind_summary.overall.count, c.blind_summary.overall.under_10_share_pct], [2, 100]);
  assert.equal(c.blind_summary.skipped, 1);
  assert.deepEqual([c.current_summary.overall.count, c.current_summary.overall.under_10_count], [3, 2]);
  assert.notEqual(c.rows_sha256_now, c.freeze.rows_sha256);
  assert.equal(c.freeze.rows, undefined);

  const file = { casesPath: 'cases.csv', report, blind: c, blindPath: 'blind/cases.json' };
  const text = reports.formatText([file]);
  const lines = text.split('\n');
  assert.equal(lines[0], 'blind (frozen): 2 of 2 rows under-estimated by more than 10% (100.0%); '
    + 'median |err| 20.0%, p90 |err| 20.0%');
  assert.match(lines[1], /^current: 2 of 3 rows under-estimated/);
  assert.match(lines[2], /^blind: blind\/cases\.json, frozen 2026-11-27 with memfit 1\.2\.3 at abc; since then 1 rows added, 1 changed, 1 removed$/);
  assert.match(text, /\nTT-001 .* 0\.80\s+-20\.0\s+1\.00\s+\+0\.0\s+CHANGED since the freeze\n/);
  assert.match(text, /\nTT-003 .* 2\.00\s+-\s+-\s+1\.00\s+-50\.0\s+added after the freeze: no blind number\n/);
  assert.match(text, /\nPM-001 .*skipped\s+-\s+-\s+-\s+removed since the freeze\n/);
  assert.match(text, / {2}overall\n {4}blind: {3}n=2  under >10% 100\.0% \(2\)[^\n]*\n {4}current: n=3  under >10% 66\.7% \(2\)/);

  const j = reports.toJson([file]);
  assert.deepEqual(j.blind.rows.find((r) => r.id === 'TT-001'), {
    id: 'TT-001', change: 'changed', blind_status: 'compared', blind_estimate_gib: 0.8, blind_error_pct: -20,
    current_status: 'compared', current_estimate_gib: 1, current_error_pct: 0,
  });
  assert.equal(j.blind.rows.find((r) => r.id === 'TT-003').blind_error_pct, null);
  assert.deepEqual([j.blind.memfit_version, j.blind.git_commit, j.blind.frozen_on], ['1.2.3', 'abc', '2026-11-27']);
  assert.equal(j.blind.summary.overall.under_10_share_pct, 100);

  const calibration = { casesPath: 'calibration.csv', report: sampleReport(), blind: null, blindPath: null };
  const md = reports.formatMarkdown([file, calibration], { version: '1.2.4' });
  assert.match(md, /\| cases \| `cases\.csv` \| blind \(frozen 2026-11-27\) \| 3 \| 100\.0 % \(2 of 2\) \| 20\.0 \| 20\.0 \| 66\.7 % \(2 of 3\) \| 20\.0 \| 50\.0 \|/);
  assert.match(md, /\| AA \| `calibration\.csv` \| shaped on \(tuned; no blind record\) \|/);
  assert.match(md, /NOT met \(2 rows: 100\.0 % under-estimated/);
  assert.match(md, /\| TT-001 \| A \| meta-llama\/Llama-3\.1-8B \| 1 \| max_allocated \| 1\.00 \| 0\.80 \| -20\.0 \| 1\.00 \| \+0\.0 \| CHANGED since the freeze \|/);
  assert.ok(md.indexOf('### cases: `cases.csv`') < md.indexOf('## Shaped on: `calibration.csv`'));
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
  assert.deepEqual(j.skipped, [{ id: 'PM-001', reason: 'PEFT method not modelled by memfit (VERA)' }]);
  assert.deepEqual(j.errors, [{ id: 'TT-003', code: 'unknown_preset', path: '/model/preset', message: 'no | such' }]);
});

test('table output lists rows, skipped, errors and the summary', () => {
  const text = v.formatTable(sampleReport());
  const lines = text.split('\n');
  assert.equal(lines[0], 'all compared rows: 0 of 2 rows under-estimated by more than 10% (0.0%); '
    + 'median |err| 10.1%, p90 |err| 11.1%');
  assert.match(lines[2], /^id\s+grade\s+model\s+measured_kind\s+estimate_GiB\s+measured_GiB\s+error_%$/);
  assert.match(lines[3], /^TT-002\s+A\s+Llama-3\.1-8B\s+max_allocated\s+1\.00\s+1\.10\s+-9\.1$/);
  assert.match(lines[4], /^AA-001\s+C\s+Llama-3\.1-8B\s+max_allocated\s+1\.00\s+0\.90\s+\+11\.1$/);
  assert.match(text, /skipped \(1\):\n {2}PM-001 {2}PEFT method not modelled/);
  assert.match(text, /errors \(1\):\n {2}TT-003 {2}unknown_preset {2}\/model\/preset {2}no \| such/);
  assert.match(text, /single GPU, grade A\/B: n=1  under >10% 0\.0% \(0\)  median .* NOT met/);
  assert.match(text, /skipped: 1 {2}errors: 1\n$/);
});

test('markdown report: sections in order, rows sorted by id, reproducible, no timestamps', () => {
  const files = () => [{ casesPath: 'cases.csv', report: sampleReport(), blind: null, blindPath: null }];
  const md = reports.formatMarkdown(files(), { version: '9.9.9' });
  assert.equal(md, reports.formatMarkdown(files(), { version: '9.9.9' }));
  const order = ['# Validation', 'dangerous direction', 'Blind first', '## Summary by source', '## Blind sources',
    'None yet', '## Shaped on: `cases.csv`', '### Single GPU, grade A/B', '### By source', '### By grade',
    '### Overall', '### Every row', '### Skipped rows', '### Rows the estimator rejected', 'npm run validation-report'];
  const at = order.map((s) => md.indexOf(s));
  assert.ok(at.every((i) => i >= 0), JSON.stringify(at));
  assert.deepEqual([...at].sort((a, b) => a - b), at);
  assert.ok(md.indexOf('| AA-001 |') < md.indexOf('| TT-002 |'));
  assert.match(md, /`max_reserved` → `peak_reserved_bytes`/);
  assert.match(md, /2\^30/);
  // the headline group leads with the under-estimated share: TT-002 is -9.1 %, not below -10 %
  assert.match(md, /\| 1 \| 0\.0 % \(0\) \| 9\.1 \| 9\.1 \| -9\.1 \| median ≤ 5 %, p90 ≤ 12 % \| FAIL \|/);
  assert.match(md, /\| AA \| `cases\.csv` \| shaped on \(tuned; no blind record\) \| 1 \| — \| — \| — \| 0\.0 % \(0 of 1\) \| 11\.1 \| 11\.1 \|/);
  assert.match(md, /\| TT \| `cases\.csv` \| shaped on \(tuned; no blind record\) \| 2 \|/); // TT-003 rejected
  assert.match(md, /\| \*\*all of cases\.csv\*\* \| {2}\| {2}\| 4 \| — \| — \| — \| 0\.0 % \(0 of 2\) \| 10\.1 \| 11\.1 \|/);
  assert.match(md, /no blind rows yet/);
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
  assert.match(table.out, /^all compared rows: 0 of 1 rows under-estimated by more than 10%/);
  assert.match(table.out, /\n\nid\s+grade/);
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

test('memfit validate --freeze, then --blind: frozen vs current, overwrite refused, bad freezes exit 2', () => {
  const { dir, file } = fakeModuleFile();
  const env = { MEMFIT_WASM_JS: file };
  const cases = join(dir, 'src1.csv');
  // the fake estimate is seq_len MiB: 1 GiB against 1 and 1.25 GiB measured
  const rows = [caseRow({ id: 'S1-001', seq_len: '1024', measured_gib: '1' }),
    caseRow({ id: 'S1-002', seq_len: '1024', measured_gib: '1.25' }), caseRow({ id: 'S1-003', method: 'other_peft' })];
  writeFileSync(cases, csvOf(rows));
  const blindDir = join(dir, 'blind');
  const freezePath = join(blindDir, 'src1.json');

  const frozen = memfit(['validate', cases, '--freeze', freezePath, '--json'], env);
  assert.equal(frozen.code, 0, frozen.err);
  assert.match(frozen.err, /froze 3 rows of .* \(2 compared, 1 skipped, 0 rejected\)/);
  const freeze = JSON.parse(readFileSync(freezePath, 'utf8'));
  assert.equal(freeze.cases, 'src1.csv');
  assert.equal(freeze.memfit_version, '0.0.0-fake');
  assert.match(freeze.frozen_on, /^\d{4}-\d\d-\d\d$/);
  assert.ok(freeze.git_commit === null || /^[0-9a-f]{40}$/.test(freeze.git_commit), freeze.git_commit);
  assert.deepEqual(freeze.rows.map((r) => [r.id, r.status, r.estimate_gib, r.error_pct]),
    [['S1-001', 'compared', 1, 0], ['S1-002', 'compared', 1, -20], ['S1-003', 'skipped', undefined, undefined]]);

  // never overwritten without --force; --force rewrites it
  const before = readFileSync(freezePath, 'utf8');
  const again = memfit(['validate', cases, '--freeze', freezePath], env);
  assert.equal(again.code, 2);
  assert.equal(JSON.parse(again.out).error.code, 'freeze_exists');
  assert.equal(readFileSync(freezePath, 'utf8'), before);
  assert.equal(memfit(['validate', cases, '--freeze', freezePath, '--force'], env).code, 0);

  // a faked model change: the frozen S1-001 said 0.5 GiB; a row is added after the freeze
  const edited = join(dir, 'edited.json');
  const copy = JSON.parse(before);
  Object.assign(copy.rows[0], { estimate_gib: 0.5, error_pct: -50 });
  writeFileSync(edited, JSON.stringify(copy));
  writeFileSync(cases, csvOf([...rows, caseRow({ id: 'S1-004', seq_len: '2048', measured_gib: '1' })]));
  const compared = memfit(['validate', cases, '--blind', edited, '--json'], env);
  assert.equal(compared.code, 0, compared.err);
  const b = JSON.parse(compared.out).blind;
  const byId = Object.fromEntries(b.rows.map((r) => [r.id, r]));
  assert.deepEqual([byId['S1-001'].blind_error_pct, byId['S1-001'].current_error_pct], [-50, 0]);
  assert.deepEqual([byId['S1-002'].blind_error_pct, byId['S1-002'].current_error_pct], [-20, -20]);
  const added = byId['S1-004'];
  assert.deepEqual([added.change, added.blind_error_pct, added.current_error_pct], ['added', null, 100]);
  assert.deepEqual(b.added, ['S1-004']);
  assert.deepEqual(b.changed, []);
  assert.deepEqual([b.summary.overall.count, b.summary.overall.under_10_share_pct], [2, 100]);

  // found by itself in the blind directory; the text report leads with blind and current
  const auto = memfit(['validate', cases, '--blind-dir', blindDir], env);
  assert.equal(auto.code, 0, auto.err);
  assert.match(auto.out, /^blind \(frozen\): 1 of 2 rows under-estimated by more than 10% \(50\.0%\)/);
  assert.match(auto.out, /\ncurrent: 1 of 3 rows under-estimated/);
  assert.match(auto.out, /S1-004 .*added after the freeze: no blind number/);
  const md = memfit(['validate', cases, '--blind-dir', blindDir, '--markdown'], env);
  assert.match(md.out, /\| src1 \| `[^`]*src1\.csv` \| blind \(frozen \d{4}-\d\d-\d\d\) \| 4 \| 50\.0 % \(1 of 2\) \|/);
  const otherConfigs = memfit(['validate', cases, '--blind-dir', blindDir, '--configs', dir], env);
  assert.match(otherConfigs.err, /src1\.json was frozen with --configs \(none\), this run has /);
  assert.equal(auto.err, '');
  const none = memfit(['validate', cases, '--blind-dir', join(dir, 'absent')], env);
  assert.match(none.out, /^all compared rows: /);

  // bad input: a clear error with a code and exit 2
  const errorOf = (args) => {
    const r = memfit(args, env);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.out} ${r.err}`);
    return JSON.parse(r.out).error;
  };
  assert.equal(errorOf(['validate', cases, '--blind', join(dir, 'absent.json')]).code, 'invalid_usage');
  writeFileSync(edited, '{"format": "memfit-blind-freeze/1", "rows": [');
  const malformed = errorOf(['validate', cases, '--blind', edited]);
  assert.deepEqual([malformed.code, malformed.path], ['invalid_freeze', '']);
  assert.match(malformed.message, /not valid JSON/);
  writeFileSync(edited, JSON.stringify({ ...copy, rows: [{ ...copy.rows[0], estimate_gib: null }] }));
  assert.deepEqual(Object.values(errorOf(['validate', cases, '--blind', edited])).slice(0, 1), ['invalid_freeze']);
  assert.equal(errorOf(['validate', cases, '--blind', edited]).path, '/rows/0/estimate_gib');
  const other = join(dir, 'src2.csv');
  copyFileSync(cases, other);
  const mismatch = errorOf(['validate', other, '--blind', freezePath]);
  assert.deepEqual([mismatch.code, mismatch.path], ['freeze_mismatch', '/cases']);
  assert.match(mismatch.message, /records 'src1\.csv', not 'src2\.csv'/);
  mkdirSync(join(dir, 'blind2'));
  writeFileSync(join(dir, 'blind2', 'src1.json'), '[]'); // a broken freeze found by itself is an error too
  assert.equal(errorOf(['validate', cases, '--blind-dir', join(dir, 'blind2')]).code, 'invalid_freeze');
  assert.equal(errorOf(['validate', cases, '--freeze', freezePath, '--blind', freezePath]).code, 'invalid_usage');
  assert.equal(errorOf(['validate', cases, '--force']).code, 'invalid_usage');
  assert.equal(errorOf(['validate', cases, other, '--freeze', join(dir, 'x.json')]).code, 'invalid_usage');
});

test('memfit validate --freeze --add records only the rows a freeze lacks, the frozen ones untouched', () => {
  const { dir, file } = fakeModuleFile();
  const env = { MEMFIT_WASM_JS: file };
  const cases = join(dir, 'src3.csv');
  const freezePath = join(dir, 'blind', 'src3.json');
  const first = [caseRow({ id: 'S3-001', seq_len: '1024', measured_gib: '1' }),
    caseRow({ id: 'S3-002', seq_len: '1024', measured_gib: '2' })];
  writeFileSync(cases, csvOf(first));
  const made = memfit(['validate', cases, '--freeze', freezePath, '--add'], env); // no freeze yet: made whole
  assert.equal(made.code, 0, made.err);
  const before = readFileSync(freezePath, 'utf8');
  // the frozen S3-001 as an older model said it; the CSV gains S3-003 and edits S3-002
  const older = before.replace('"estimate_gib":1,"measured_gib":1,"error_pct":0',
    '"estimate_gib":0.5,"measured_gib":1,"error_pct":-50');
  assert.notEqual(older, before);
  writeFileSync(freezePath, older);
  writeFileSync(cases, csvOf([first[0], { ...first[1], notes: 'edited' },
    caseRow({ id: 'S3-003', seq_len: '3072', measured_gib: '2' })]));
  const added = memfit(['validate', cases, '--freeze', freezePath, '--add'], env);
  assert.equal(added.code, 0, added.err);
  assert.match(added.err, /added 1 rows to .*: S3-003/);
  const after = readFileSync(freezePath, 'utf8');
  const rowLines = (text) => text.split('\n').filter((line) => line.startsWith('    {'))
    .map((line) => line.replace(/,$/, ''));
  assert.deepEqual(rowLines(after).slice(0, 2), rowLines(older)); // frozen rows byte for byte
  const s3 = JSON.parse(after).rows[2];
  assert.deepEqual([s3.id, s3.estimate_gib, s3.error_pct, s3.memfit_version], ['S3-003', 3, 50, '0.0.0-fake']);
  assert.match(s3.frozen_on, /^\d{4}-\d\d-\d\d$/);
  const again = memfit(['validate', cases, '--freeze', freezePath, '--add'], env);
  assert.match(again.err, /added 0 rows .*every row is frozen already/);
  assert.equal(readFileSync(freezePath, 'utf8'), after);

  const b = JSON.parse(memfit(['validate', cases, '--blind', freezePath, '--json'], env).out).blind;
  assert.deepEqual(b.rows.map((r) => [r.id, r.change, r.blind_error_pct, r.current_error_pct]),
    [['S3-001', null, -50, 0], ['S3-002', 'changed', -50, -50], ['S3-003', null, 50, 50]]);
  const other = join(dir, 'other.csv');
  copyFileSync(cases, other);
  const mismatch = memfit(['validate', other, '--freeze', freezePath, '--add'], env);
  assert.equal(mismatch.code, 2);
  assert.equal(JSON.parse(mismatch.out).error.code, 'freeze_mismatch');
  assert.equal(readFileSync(freezePath, 'utf8'), after);
  assert.equal(memfit(['validate', cases, '--freeze', freezePath, '--add', '--force'], env).code, 2);
});

test('memfit validate over several case files and directories: one report, empty directories allowed', () => {
  const { dir, file } = fakeModuleFile();
  const env = { MEMFIT_WASM_JS: file };
  const sources = join(dir, 'sources');
  mkdirSync(sources);
  mkdirSync(join(dir, 'empty'));
  writeFileSync(join(dir, 'calibration.csv'), csvOf([caseRow({ id: 'TT-001', seq_len: '1024', measured_gib: '1' })]));
  writeFileSync(join(sources, 'b.csv'), csvOf([caseRow({ id: 'B-001', seq_len: '1024', measured_gib: '2' })]));
  writeFileSync(join(sources, 'a.csv'), csvOf([caseRow({ id: 'A-001', seq_len: '1024', measured_gib: '1' })]));
  writeFileSync(join(sources, 'notes.txt'), 'not a case file');
  const blindDir = join(dir, 'blind');
  assert.equal(memfit(['validate', join(sources, 'b.csv'), '--freeze', join(blindDir, 'b.json')], env).code, 0);

  const args = ['validate', join(dir, 'calibration.csv'), sources, join(dir, 'empty'), '--blind-dir', blindDir];
  const j = JSON.parse(memfit([...args, '--json'], env).out);
  assert.deepEqual(j.files.map((f) => [f.cases.slice(dir.length), Boolean(f.blind)]),
    [['/calibration.csv', false], ['/sources/a.csv', false], ['/sources/b.csv', true]]);
  const md = memfit([...args, '--markdown'], env).out;
  assert.match(md, /### b: `[^`]*b\.csv`/);
  assert.match(md, /## Shaped on: `[^`]*calibration\.csv`/);
  assert.match(md, /## Shaped on: `[^`]*a\.csv`/);
  assert.match(md, /NOT met \(1 rows: 100\.0 % under-estimated/); // B-001: 1 GiB for 2 measured
  const text = memfit([...args], env).out;
  assert.match(text, /^== [^\n]*calibration\.csv ==\nall compared rows: /);
  const onlyEmpty = memfit(['validate', join(dir, 'calibration.csv'), join(dir, 'empty'), '--markdown'], env);
  assert.equal(onlyEmpty.code, 0, onlyEmpty.err);
  assert.match(onlyEmpty.out, /None yet: no case file has a blind record/);
  assert.equal(memfit(['validate', join(dir, 'nothing-here')], env).code, 2);
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
