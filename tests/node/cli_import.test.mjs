// `memfit import`: every example config becomes a request the core estimates (so each field the
// importer fills is one the core reads); bad input exits 2 with the coded envelope and its line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root, built } from './helpers.mjs';

const skip = !built;
const FIXTURES = join(root, 'tests', 'node', 'fixtures', 'import');
const scratch = mkdtempSync(join(tmpdir(), 'memfit-import-'));

function memfit(...args) {
  const r = spawnSync(process.execPath, [join(root, 'cli', 'memfit.js'), ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/// The request `memfit import` writes, estimated by `memfit estimate`.
function importAndEstimate(files, ...options) {
  const imported = memfit('import', ...files.map((f) => join(FIXTURES, f)), '--gpu', 'H100-80GB', ...options);
  assert.equal(imported.code, 0, imported.out + imported.err);
  const request = JSON.parse(imported.out);
  const file = join(scratch, `${files[0]}.request.json`);
  writeFileSync(file, imported.out);
  const estimate = memfit('estimate', file);
  assert.equal(estimate.code, 0, `${files[0]}: ${estimate.out}`);
  return { request, result: JSON.parse(estimate.out), report: imported.err };
}

const CASES = [
  [['axolotl_qlora.yml'], []],
  [['axolotl_fft_liger_fsdp.yaml'], ['--gpus', '8']],
  [['llamafactory_lora_sft_ds3.yaml', 'ds_z3_config.json'], ['--gpus', '8']],
  [['llamafactory_full_sft.yaml'], ['--gpus', '8']],
  [['axolotl_fft_8b.yaml'], []],
  [['axolotl_lora_1b.yml'], []],
  [['llamafactory_galore_full_sft.yaml'], []],
  [['llamafactory_apollo_full_sft.yaml'], []],
  [['llamafactory_adam_mini_full_sft.yaml'], []],
  [['torchtune_8b_qlora_single_device.yaml'], []],
  [['ds_z3_offload_config.json'], ['--model', 'meta-llama/Llama-3.1-8B', '--gpus', '8']],
  [['accelerate_fsdp.yaml'], ['--model', 'meta-llama/Llama-3.1-8B']],
  [['accelerate_deepspeed.yaml'], ['--model', 'meta-llama/Llama-3.1-8B']],
  [['trl_sft_qlora.yaml'], []],
  [['training_args_full.json'], ['--gpus', '8']],
  [['megatron_llama3_8b_fp8.sh'], []],
  [['peft_lora_rank32.json'], ['--model', 'meta-llama/Llama-3.2-3B']],
  [['peft_oft_rank32.json'], ['--model', 'meta-llama/Llama-3.2-3B']],
  [['peft_fourierft_5000.json'], ['--model', 'meta-llama/Llama-3.2-3B']],
  [['peft_glora_vector.json'], ['--model', 'meta-llama/Llama-3.2-3B']],
  [['peft_ptuning.json'], ['--model', 'meta-llama/Llama-3.2-3B']],
  [['peft_boft.json'], ['--model', 'meta-llama/Llama-3.2-3B']],
];

for (const [files, options] of CASES) {
  test(`memfit import ${files.join(' ')}: the core estimates the request`, { skip }, () => {
    const { request, result, report } = importAndEstimate(files, ...options);
    const t = request.training;
    for (const key of ['framework', 'method', 'precision', 'micro_batch', 'grad_accum', 'seq_len', 'activation_checkpointing', 'offload', 'optimizer',
      'projection', 'optimizer_in_backward']) {
      if (t[key] === undefined) continue;
      const got = key === 'framework' ? result.framework.id : result.training[key];
      // projection: the imported keys (rank, update_gap), the other one the default's
      if (key === 'projection') for (const k of Object.keys(t.projection)) assert.equal(got[k], t.projection[k], `${files[0]}: training.projection.${k}`);
      else assert.equal(got, t[key], `${files[0]}: training.${key}`);
    }
    if (request.parallel?.sharding) assert.equal(result.parallel.sharding, request.parallel.sharding);
    assert.match(report, /^memfit import: /);
  });
}

test('memfit import: the DeepSpeed file a config names is read from beside it; --json carries the lists', { skip }, () => {
  const r = memfit('import', join(FIXTURES, 'llamafactory_lora_sft_ds3.yaml'), '--json');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.request.parallel.sharding, 'zero3', 'examples/deepspeed/ds_z3_config.json found by its name beside the config');
  assert.ok(j.ignored.some((x) => x.key === '/learning_rate'));
  assert.ok(j.mapped.some((x) => x.to === '/parallel/sharding' && x.line === 11));
});

test('memfit import: the report lists ignored keys with their lines and says what is missing', { skip }, () => {
  const r = memfit('import', join(FIXTURES, 'accelerate_fsdp.yaml'));
  assert.equal(r.code, 0);
  assert.match(r.err, /ignored {2}\/fsdp_config\/fsdp_backward_prefetch \(line 9\)/);
  assert.match(r.err, /missing {2}model .*cluster\.gpu/);
});

test('memfit import: bad input exits 2 with the code, pointer and line', { skip }, () => {
  const file = join(scratch, 'bad.yaml');
  writeFileSync(file, 'base_model: x\nadapter: lora\nmicro_batch_size: 0\n');
  let r = memfit('import', file);
  assert.equal(r.code, 2);
  assert.deepEqual(JSON.parse(r.out).error, { code: 'invalid_value', path: '/micro_batch_size', line: 3,
    message: 'micro_batch_size must be a whole number ≥ 1, got 0' });
  writeFileSync(file, 'a: [1\n');
  r = memfit('import', file);
  assert.equal(r.code, 2);
  assert.equal(JSON.parse(r.out).error.code, 'invalid_yaml');
  r = memfit('import', join(scratch, 'missing.yaml'));
  assert.equal(r.code, 2);
  assert.equal(JSON.parse(r.out).error.code, 'invalid_usage');
  r = memfit('import', join(FIXTURES, 'axolotl_qlora.yml'), '--model', 'no/such-model');
  assert.equal(r.code, 2);
  assert.equal(JSON.parse(r.out).error.code, 'unknown_preset');
  r = memfit('import', join(FIXTURES, 'axolotl_qlora.yml'), '--gpus', 'eight');
  assert.equal(r.code, 2);
});

test('memfit import: accelerate FSDP2 with the plugin\'s checkpointing asks for it (per-child under accelerate 1.8-1.14)', { skip }, () => {
  const file = join(scratch, 'accelerate_fsdp2_ac.yaml');
  writeFileSync(file, 'distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 8\nfsdp_config:\n  fsdp_version: 2\n' +
    '  fsdp_activation_checkpointing: true\n  fsdp_reshard_after_forward: true\n');
  const r = memfit('import', file, '--model', 'Qwen/Qwen3-4B', '--gpu', 'H100-80GB', '--json');
  assert.equal(r.code, 0, r.err);
  const { request, mapped } = JSON.parse(r.out);
  assert.equal(request.parallel.fsdp_version, 2);
  assert.equal(request.parallel.fsdp_activation_checkpointing, true);
  assert.equal(request.training.activation_checkpointing, 'full');
  assert.ok(mapped.some((x) => x.to === '/parallel/fsdp_activation_checkpointing' && x.line === 6));
  // The core reads both: accelerate 1.13 (2026-04) keeps each child's input, 1.15 (2026-10) one per block.
  const peak = (version) => {
    const f = join(scratch, `fsdp2_ac_${version}.json`);
    writeFileSync(f, JSON.stringify({ ...request, training: { ...request.training, framework_version: version, micro_batch: 4, seq_len: 4096 } }));
    const e = memfit('estimate', f);
    assert.equal(e.code, 0, e.out);
    return JSON.parse(e.out).activations_peak_bytes;
  };
  assert.ok(peak('2026-04') > peak('2026-10'));
});

test('memfit import: FSDP checkpointing under Axolotl stays whole-block, with a note', { skip }, () => {
  const file = join(scratch, 'axolotl_fsdp_ac.yaml');
  writeFileSync(file, 'base_model: Qwen/Qwen3-4B\nfsdp:\n  - full_shard\nfsdp_config:\n  fsdp_version: 2\n  fsdp_activation_checkpointing: true\n');
  const r = memfit('import', file, '--json');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.request.parallel?.fsdp_activation_checkpointing, undefined);
  assert.equal(j.request.training.activation_checkpointing, 'full');
  assert.ok(j.notes.some((n) => /whole-block checkpointing/.test(n)), JSON.stringify(j.notes));
});

test('memfit import: PEFT modules_to_save from Axolotl, LLaMA-Factory and TRL; modules memfit does not model are noted', { skip }, () => {
  const files = {
    'axolotl_saved.yaml': 'base_model: meta-llama/Llama-3.1-8B\nadapter: lora\nlora_target_linear: true\nlora_modules_to_save:\n  - embed_tokens\n  - lm_head\n  - norm\n',
    'llamafactory_saved.yaml': 'model_name_or_path: meta-llama/Llama-3.1-8B\nstage: sft\nfinetuning_type: lora\nadditional_target: embed_tokens,lm_head\n',
    'trl_saved.yaml': 'model_name_or_path: meta-llama/Llama-3.1-8B\nmax_length: 1024\nuse_peft: true\nlora_modules_to_save: [lm_head]\n',
  };
  const expected = { 'axolotl_saved.yaml': ['embedding', 'head'], 'llamafactory_saved.yaml': ['embedding', 'head'], 'trl_saved.yaml': ['head'] };
  for (const [name, text] of Object.entries(files)) {
    const file = join(scratch, name);
    writeFileSync(file, text);
    const r = memfit('import', file, '--gpu', 'H100-80GB', '--json');
    assert.equal(r.code, 0, r.err);
    const j = JSON.parse(r.out);
    assert.deepEqual(j.request.training.lora.modules_to_save, expected[name], name);
    if (name.startsWith('axolotl')) assert.ok(j.notes.some((n) => /modules_to_save norm: not modelled/.test(n)), JSON.stringify(j.notes));
    const f = join(scratch, `${name}.json`);
    writeFileSync(f, JSON.stringify(j.request));
    const e = memfit('estimate', f);
    assert.equal(e.code, 0, e.out);
    assert.deepEqual(JSON.parse(e.out).training.lora.modules_to_save, expected[name]);
  }
});
