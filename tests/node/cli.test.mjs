// `npx memfit ...` from the repository root: JSON out, exit 0; bad input exit 2 with the envelope.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { root } from './helpers.mjs';

function memfit(...args) {
  const r = spawnSync('npx', ['--no-install', 'memfit', ...args], { cwd: root, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('params of a preset id', () => {
  const r = memfit('params', 'Qwen/Qwen3-30B-A3B');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.total_params, 30532122624);
  assert.equal(j.trainable_params, 30532122624);
  assert.equal(j.active_params_per_token, 3353032704);
  assert.ok(j.params_by_kind.expert > 0);
});

test('params of a config file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ model_type: 'gpt2', vocab_size: 50257, n_embd: 768, n_layer: 12, n_head: 12 }));
  const r = memfit('params', file);
  assert.equal(r.code, 0, r.err);
  assert.equal(JSON.parse(r.out).total_params, 124439808);
});

test('bad input: exit 2 and the error envelope on stdout', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'broken.json');
  writeFileSync(file, '{"model_type": "llama",');
  const r = memfit('params', file);
  assert.equal(r.code, 2);
  const env = JSON.parse(r.out);
  assert.equal(env.ok, false);
  assert.equal(env.error.code, 'invalid_json');
  const unknown = memfit('params', 'no-such/model');
  assert.equal(unknown.code, 2);
  assert.equal(JSON.parse(unknown.out).error.code, 'unknown_preset');
  assert.equal(memfit('frobnicate').code, 2);
});

test('presets lists models and GPUs', () => {
  const r = memfit('presets');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.ok(j.models.some((m) => m.id === 'meta-llama/Llama-3.1-8B'));
  assert.ok(j.gpus.some((g) => g.id === 'H100-80GB'));
});

test('estimate: a request file gives the verdict and the largest micro-batch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'request.json');
  writeFileSync(file, JSON.stringify({
    model: { preset: 'Qwen/Qwen2.5-7B' },
    training: { framework: 'hf_trainer', method: 'lora', lora: { rank: 16, targets: 'all-linear' }, seq_len: 2048 },
    cluster: { gpu: { preset: 'H100-80GB' } },
  }));
  const r = memfit('estimate', file);
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.ok(['fits', 'tight', 'oom'].includes(j.fit.verdict));
  assert.ok(j.fit.max_micro_batch >= 1);
  assert.ok(j.peak_allocated_bytes <= j.peak_reserved_bytes && j.peak_reserved_bytes < j.device_total_bytes);
  assert.equal(j.training.lora.targets[0], 'all-linear');
});

test('estimate: an impossible layout exits 2 with the pointer of the field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'request.json');
  writeFileSync(file, JSON.stringify({
    model: { preset: 'Qwen/Qwen2.5-7B' },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 8 },
    parallel: { dp: 3, tp: 2 },
  }));
  const r = memfit('estimate', file);
  assert.equal(r.code, 2);
  const env = JSON.parse(r.out);
  assert.equal(env.error.code, 'invalid_value');
  assert.equal(env.error.path, '/parallel');
});

test('search: fastest layouts that fit, --top N, launch configs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'search.json');
  writeFileSync(file, JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    training: { seq_len: 4096 },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 16 },
    search: { global_batch: 64 },
  }));
  const r = memfit('search', file, '--top', '3');
  assert.equal(r.code, 0, r.err);
  const j = JSON.parse(r.out);
  assert.equal(j.top.length, 3);
  assert.deepEqual(j.best, j.top[0]);
  for (let i = 1; i < j.top.length; i++) assert.ok(j.top[i - 1].perf.tokens_per_s >= j.top[i].perf.tokens_per_s);
  for (const c of j.top) {
    assert.notEqual(c.memory.verdict, 'oom');
    assert.equal(c.parallel.dp * c.training.micro_batch * c.training.grad_accum, 64);
  }
  const rejected = Object.values(j.counts.rejected).reduce((a, b) => a + b, 0);
  assert.equal(j.counts.enumerated, j.counts.valid + rejected);
  assert.equal(j.launch.length, 11);
  // The default framework (hf_trainer) launches a train.py (first: the model, method and arguments) with accelerate, both marked for it.
  assert.deepEqual(j.launch.filter((f) => f.for_framework).map((f) => f.format), ['python_script', 'accelerate_yaml']);
  for (const f of j.launch.filter((x) => x.for_framework)) assert.ok(f.supported && f.text.length > 0, f.format);
  assert.ok(j.methods.some((m) => m.method === 'DDP'));
});

test('launch: configs for the request layout; a bad layout names its field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'launch.json');
  writeFileSync(file, JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    training: { micro_batch: 2, grad_accum: 4 },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 8 },
    parallel: { sharding: 'zero2' },
  }));
  const r = memfit('launch', file);
  assert.equal(r.code, 0, r.err);
  const ds = JSON.parse(JSON.parse(r.out).formats.find((f) => f.format === 'deepspeed_json').text);
  assert.equal(ds.train_batch_size, 64);
  assert.equal(ds.zero_optimization.stage, 2);
  writeFileSync(file, JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 8 },
    parallel: { tp: 3 },
  }));
  const bad = memfit('launch', file);
  assert.equal(bad.code, 2);
  assert.equal(JSON.parse(bad.out).error.path, '/parallel');
});

test('launch: QLoRA on one GPU under the HF Trainer opens with the train.py that loads 4-bit and adds the adapter', () => {
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'qlora.json');
  writeFileSync(file, JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    training: { framework: 'hf_trainer', method: 'qlora', base_quant: 'nf4', lora: { rank: 16 } },
    cluster: { gpu: { preset: 'RTX-4090' }, gpus: 1 },
  }));
  const r = memfit('launch', file);
  assert.equal(r.code, 0, r.err);
  const first = JSON.parse(r.out).formats.find((f) => f.for_framework);
  assert.equal(first.format, 'python_script');
  assert.match(first.text, /BitsAndBytesConfig/);
  assert.match(first.text, /LoraConfig/);
});

test('a reader that closes the pipe early ends the CLI quietly', async () => {
  // As `memfit search r.json | head -c 100`: a result past the pipe's buffer (a 64-GPU search
  // prints about 240 kB), its first chunk read, then the pipe closed.
  const dir = mkdtempSync(join(tmpdir(), 'memfit-cli-'));
  const file = join(dir, 'search.json');
  writeFileSync(file, JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    training: { seq_len: 4096 },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 64 },
  }));
  const child = spawn(process.execPath, [join(root, 'cli', 'memfit.js'), 'search', file], { cwd: root });
  let err = '';
  let read = 0;
  child.stderr.on('data', (d) => (err += d));
  child.stdout.once('data', (d) => {
    read = d.length;
    child.stdout.destroy();
  });
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.ok(read > 0);
  assert.equal(err, '');
  assert.equal(code, 0);
});
