// memfit's optimizer-state bytes for the cases of tools/oracle/optimizer_states.py (same small
// Llama, same optimizers), and the comparison with the oracle's records.
//   node tools/oracle/optimizer_states.js predict > tests/oracle/optimizer_states.json   (frozen before the oracle ran)
//   node tools/oracle/optimizer_states.js compare oracle.jsonl                           (the oracle's lines)
//   node tools/oracle/optimizer_states.js record oracle.jsonl     (adds the oracle's bytes to the frozen file; tests/node/oracle_optimizers.test.mjs)
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const NATIVE = path.join(ROOT, 'build-native', 'memfit_native');
const CONFIG = { model_type: 'llama', hidden_size: 256, intermediate_size: 688, num_hidden_layers: 2, num_attention_heads: 4,
  num_key_value_heads: 2, vocab_size: 1024, max_position_embeddings: 512, tie_word_embeddings: false };
const CASES = [  // the oracle's, in its order: [id, optimizer, rank, dtype]
  ['galore_r8_fp32', 'galore_adamw', 8, 'fp32'], ['galore_r32_bf16', 'galore_adamw', 32, 'bf16'],
  ['galore_r512_fp32', 'galore_adamw', 512, 'fp32'], ['apollo_r8_fp32', 'apollo_adamw', 8, 'fp32'],
  ['apollo_r32_bf16', 'apollo_adamw', 32, 'bf16'], ['apollo_mini_fp32', 'apollo_mini', 1, 'fp32'],
  ['adam_mini_fp32', 'adam_mini', 0, 'fp32'], ['adam_mini_bf16', 'adam_mini', 0, 'bf16'],
];

/// The estimate request of a case: the oracle's model, one full fine-tuning step.
function requestFor({ optimizer, rank, dtype }) {
  const training = { framework: 'other', method: 'full', optimizer, precision: dtype, seq_len: 64 };
  if (['galore_adamw', 'apollo_adamw'].includes(optimizer)) training.projection = { rank };
  return { model: { config: CONFIG }, training, cluster: { gpu: { preset: 'H100-80GB' } }, options: { timeline: false, max_micro_batch: false } };
}

function predict([id, optimizer, rank, dtype]) {
  const request = requestFor({ optimizer, rank, dtype });
  const out = JSON.parse(execFileSync(NATIVE, ['estimate', '-'], { input: JSON.stringify(request) }).toString());
  if (!out.ok) throw new Error(`${id}: ${JSON.stringify(out.error)}`);
  return { id, optimizer, rank, dtype, memfit_optimizer_state_bytes: out.result.states.optimizer_states_bytes };
}

const FROZEN = path.join(ROOT, 'tests', 'oracle', 'optimizer_states.json');
const readOracle = (file) => new Map(fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{'))
  .map((l) => JSON.parse(l)).map((r) => [r.id, r]));

function main([command, file]) {
  if (command === 'predict') {
    process.stdout.write(`${JSON.stringify({ frozen: new Date().toISOString().slice(0, 10), cases: CASES.map(predict) }, null, 1)}\n`);
  } else if (command === 'compare' || command === 'record') {
    const frozen = JSON.parse(fs.readFileSync(FROZEN, 'utf8'));
    const oracle = readOracle(file);
    for (const c of frozen.cases) {
      const o = oracle.get(c.id)?.optimizer_state_bytes;
      if (command === 'record') c.oracle_optimizer_state_bytes = o;
      const err = o ? ((c.memfit_optimizer_state_bytes - o) / o * 100).toFixed(3) : 'n/a';
      console.log(`${c.id.padEnd(18)} memfit ${String(c.memfit_optimizer_state_bytes).padStart(9)}  oracle ${String(o).padStart(9)}  ${err} %`);
    }
    if (command === 'record') fs.writeFileSync(FROZEN, `${JSON.stringify(frozen, null, 1)}\n`);
  } else {
    console.error('usage: optimizer_states.js predict | compare <oracle.jsonl> | record <oracle.jsonl>');
    process.exitCode = 2;
  }
}

if (require.main === module) main(process.argv.slice(2));
module.exports = { requestFor };
