// WASM benchmark under Node: time per estimate call through the single-file module (the one the
// CLI and the offline page use). Prints numbers; asserts nothing.
// Usage: node tools/bench/bench_wasm.mjs [iterations]
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const M = await require(join(root, 'build-wasm', 'site', 'memfit_single.js'))();
const iters = Number(process.argv[2] || 200);

for (const id of ['meta-llama/Llama-3.1-70B-Instruct', 'meta-llama/Llama-3.1-405B-Instruct', 'deepseek-ai/DeepSeek-V3']) {
  for (const [name, options] of [['api estimate (no search)', { timeline: false, max_micro_batch: false }],
                                 ['api estimate (full)     ', {}]]) {
    const request = JSON.stringify({
      model: { preset: id },
      training: { seq_len: 4096, activation_checkpointing: 'full' },
      cluster: { gpu: { preset: 'H100-80GB' } },
      options,
    });
    for (let i = 0; i < 50; i++) M.estimate(request);  // warm up the JIT and the preset cache
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < iters; i++) M.estimate(request);
    const us = Number(process.hrtime.bigint() - t0) / 1e3 / iters;
    console.log(`wasm ${name} ${id.padEnd(36)} ${us.toFixed(2).padStart(9)} us/call`);
  }
}

// The layout search (same request as build-native/memfit_bench).
{
  const request = JSON.stringify({
    model: { preset: 'meta-llama/Llama-3.1-70B-Instruct' },
    training: { framework: 'megatron', framework_version: '2026-01', seq_len: 8192 },  // named: the current code alone
    cluster: { gpu: { preset: 'H100-80GB' }, gpus: 1024 },
    search: { global_batch: 1024, top: 10, space: { max_micro_batch: 8 } },
  });
  let out = M.search(request);
  const runs = Math.max(3, Math.floor(iters / 20));
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < runs; i++) out = M.search(request);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6 / runs;
  const counts = JSON.parse(out).result.counts;
  console.log(`wasm api search Llama-3.1-70B, 1024 x H100, seq 8192 ${ms.toFixed(2).padStart(9)} ms/call ` +
              `(enumerated ${counts.enumerated}, valid ${counts.valid}, memory estimates ${counts.memory_estimated})`);
}
