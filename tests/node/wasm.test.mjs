// The WASM module: same envelope and numbers as the native core, errors as data (never a throw).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadEs, loadSingle, envelope, site } from './helpers.mjs';

const M = await loadEs();

test('exact parameter count through the ES module', () => {
  const r = envelope(M.inspect(JSON.stringify({ model: { preset: 'meta-llama/Llama-3.1-8B' } })));
  assert.equal(r.ok, true);
  assert.equal(r.result.total_params, 8030261248);
  assert.equal(r.result.architecture.attention, 'gqa');
});

test("C++ exceptions are WebAssembly's own: no JS invoke_* trampoline in any build's glue (docs/toolchain.md)", () => {
  for (const glue of ['memfit.mjs', 'memfit_single.js', 'memfit_web.js']) {
    assert.doesNotMatch(readFileSync(`${site}${glue}`, 'utf8'), /function invoke_[a-z]+\(/, glue);
  }
});

test('malformed config: coded error with pointer and message, module still usable', () => {
  const bad = envelope(M.inspectConfig('{"model_type": "llama", "hidden_size": 4096,', false));
  assert.equal(bad.ok, false);
  assert.equal(bad.error.code, 'invalid_json');
  assert.equal(bad.error.path, '');
  assert.match(bad.error.message, /^invalid json: /);
  const missing = envelope(M.inspectConfig(JSON.stringify({
    model_type: 'llama', vocab_size: 32000, hidden_size: 4096, num_attention_heads: 32, intermediate_size: 11008,
  }), false));
  assert.deepEqual(missing.error, {
    code: 'missing_field', path: '/num_hidden_layers', message: 'missing required field num_hidden_layers',
  });
  const huge = envelope(M.inspect(JSON.stringify({ model: { config: {
    model_type: 'llama', vocab_size: 32000, hidden_size: 4096, num_attention_heads: 32,
    intermediate_size: 11008, num_hidden_layers: 1e12 } } })));
  assert.equal(huge.error.code, 'out_of_range');
  assert.equal(huge.error.path, '/model/config/num_hidden_layers');
  assert.equal(huge.error.message, 'num_hidden_layers must be at most 10,000, got 1,000,000,000,000');
  assert.equal(envelope(M.inspect(JSON.stringify({ model: { preset: 'openai-community/gpt2' } }))).ok, true);
});

test('deeply nested and multi-megabyte input give errors, not a crash', () => {
  assert.equal(envelope(M.inspectConfig('['.repeat(200000), false)).error.code, 'too_deep');
  const big = JSON.stringify({ model_type: 'llama', pad: 'x'.repeat(5 << 20) });
  assert.equal(envelope(M.inspectConfig(big, false)).error.code, 'input_too_large');
});

test('single-file build gives the same answer as the ES module', async () => {
  const S = await loadSingle();
  for (const id of ['deepseek-ai/DeepSeek-V3', 'google-t5/t5-base', 'tiiuae/falcon-7b']) {
    const req = JSON.stringify({ model: { preset: id }, include_tensors: true });
    assert.equal(S.inspect(req), M.inspect(req));
  }
});

test('presets: at least 60 models and 20 GPUs', () => {
  const r = envelope(M.presets()).result;
  assert.ok(r.models.length >= 60);
  assert.ok(r.gpus.length >= 20);
  assert.ok(r.gpus.every((g) => g.memory_total_bytes > 0 && g.sources.length > 0));
});

test('estimate through WASM: the same numbers from both builds, errors as envelopes', async () => {
  const request = JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-8B' },
    training: { framework: 'torchtune', seq_len: 4096, micro_batch: 2 },
    cluster: { gpu: { preset: 'A100-80GB' } },
  });
  const a = JSON.parse(M.estimate(request));
  assert.equal(a.ok, true);
  const single = await loadSingle();
  const b = JSON.parse(single.estimate(request));
  assert.equal(a.result.peak_allocated_bytes, b.result.peak_allocated_bytes);
  assert.equal(a.result.fit.max_micro_batch, b.result.fit.max_micro_batch);
  const bad = JSON.parse(M.estimate('{"model":{"preset":"meta-llama/Llama-3.1-8B"},"cluster":{"gpu":{"preset":"A100-80GB"}},"training":{"seq_len":-1}}'));
  assert.equal(bad.ok, false);
  assert.equal(bad.error.path, '/training/seq_len');
});

// The engines are built without exception cleanups (CMakeLists.txt, MEMFIT_ENGINES): the
// candidate bound and sizes past 2^53 (a flag, src/common/units.h) must reach the caller as data,
// and leave the module as it was.
test('search without exception cleanups: the candidate bound and sizes past 2^53 as data, module unchanged', async () => {
  const normal = JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-70B-Instruct' },
    training: { framework: 'megatron', seq_len: 8192 },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 64 },
    search: { global_batch: 256, top: 5 },
  });
  const before = M.search(normal);
  assert.equal(envelope(before).ok, true);

  const bound = envelope(M.search(JSON.stringify({
    model: { preset: 'deepseek-ai/DeepSeek-V3' }, training: { seq_len: 4096 },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 55440 }, search: { top: 3 },
  })));
  assert.deepEqual(bound.error, {
    code: 'out_of_range', path: '/search',
    message: 'the search space holds more than 4000000 candidates; fix some dimensions under search.space',
  });

  // Eager attention over 16M tokens: the score matrices of most layouts pass 2^53 bytes (an
  // estimate of one says so), so the search reads them as out of memory.
  const huge = { model: { preset: 'openai-community/gpt2' }, training: { seq_len: 16777216, attention: 'eager' },
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 8 } };
  const one = envelope(M.estimate(JSON.stringify({ ...huge, parallel: { dp: 8 } })));
  assert.equal(one.error.code, 'out_of_range');
  assert.match(one.error.message, /exceeds 2\^53/);
  const searched = envelope(M.search(JSON.stringify({ ...huge, search: { top: 3 } })));
  assert.equal(searched.ok, true);
  const c = searched.result.counts;
  assert.equal(c.fit, 0);
  assert.ok(c.memory_estimated > 0);
  assert.equal(c.valid, c.fit + c.oom + c.not_needed + c.unexplored);
  assert.ok(searched.result.methods.length > 0 && searched.result.methods.every((m) => !m.fits));

  assert.equal(M.search(normal), before);
  assert.equal((await loadSingle()).search(normal), before);
});
