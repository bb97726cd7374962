// Native/WASM parity: a generated corpus of requests (valid and broken, every entry point) goes
// through the WASM module and through the native build (build-native/memfit_native batch); the
// two must answer with byte-identical JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { root, loadSingle } from './helpers.mjs';
import { calibrationRequests, configTexts, modelIds, randomRequests, rng, searchRequestOf } from './corpus.mjs';

const native = `${root}build-native/memfit_native`;

/// A broken variant of a request: cut short, a field of the wrong type or past its bound, an
/// unknown key, or a number beyond a double.
function broken(request, r) {
  const text = JSON.stringify(request);
  switch (r.int(0, 5)) {
    case 0: return text.slice(0, r.int(1, text.length - 1));
    case 1: return JSON.stringify({ ...request, training: { ...request.training, seq_len: r.pick([0, -1, 2 ** 31, 2 ** 53 + 2, 1e300, '8']) } });
    case 2: return JSON.stringify({ ...request, cluster: { ...request.cluster, gpus: r.pick([100000, 1048577, 2 ** 63, 0.5, null]) } });
    case 3: return JSON.stringify({ ...request, modle: 1 });
    case 4: return text.replace(/"micro_batch":\d+/, '"micro_batch":1e400');
    default: return JSON.stringify({ ...request, training: { ...request.training, micro_batch: 65536, seq_len: 16777216 } });
  }
}

/// [entry, text] pairs: every entry point, a few hundred in all.
function corpus() {
  const r = rng(2024);
  const requests = [...calibrationRequests(), ...randomRequests(300, 11)];
  const out = requests.map((q) => ['estimate', JSON.stringify(q)]);
  out.push(...requests.filter((q) => q.parallel).slice(0, 60).map((q) => ['launch', JSON.stringify(q)]));
  out.push(...requests.slice(-24).map((q) => ['search', JSON.stringify(searchRequestOf(q, r))]));
  out.push(...modelIds.map((id, i) => ['inspect', JSON.stringify({ model: { preset: id }, include_tensors: i % 8 === 0 })]));
  out.push(...configTexts.map((c) => ['inspect_config', JSON.stringify(JSON.parse(c.text))]));
  out.push(...requests.slice(0, 120).map((q) => ['estimate', broken(q, r)]));
  out.push(['estimate', '{"model": {"preset": "ünïcödé ✓"}, "cluster": {"gpu": {"preset": "H100-80GB"}}}']);
  return out;
}

test('the WASM module and the native build answer a generated corpus with identical JSON', { skip: !existsSync(native) }, async (t) => {
  const M = await loadSingle();
  const cases = corpus();
  const call = {
    estimate: (t) => M.estimate(t), launch: (t) => M.launch(t), search: (t) => M.search(t),
    inspect: (t) => M.inspect(t), inspect_config: (t) => M.inspectConfig(t, false),
  };
  const wasm = cases.map(([entry, text]) => call[entry](text));
  const run = spawnSync(native, ['batch'], {
    input: cases.map(([entry, text]) => `${entry} ${text}`).join('\n') + '\n',
    maxBuffer: 1 << 30,
  });
  assert.equal(run.status, 0, run.stderr.toString());
  const lines = run.stdout.toString('utf8').split('\n');
  assert.equal(lines.pop(), '');
  assert.equal(lines.length, cases.length);
  let ok = 0;
  for (let i = 0; i < cases.length; i++) {
    assert.equal(wasm[i], lines[i], `${cases[i][0]} #${i}: ${cases[i][1].slice(0, 300)}`);
    if (wasm[i].startsWith('{"ok":true')) ok++;
  }
  // Most of the corpus answers with a result; the broken part answers with errors.
  assert.ok(cases.length >= 600, `${cases.length} cases`);
  assert.ok(ok > cases.length / 2, `${ok} of ${cases.length} answered with a result`);
  t.diagnostic(`${cases.length} requests, ${ok} results, ${cases.length - ok} errors, identical`);
});
