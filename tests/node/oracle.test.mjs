// memfit against the oracle's committed cases (tests/oracle/cases.csv: peaks of live tensor bytes traced by
// tools/oracle on fake tensors; docs/oracle.md), replayed through the built WASM module without torch.
// The floor is the agreement measured once memfit modelled the mechanisms the oracle found (docs/oracle.md; blind,
// before any fix, it was within 2 % on 32.7 %: tests/oracle/freeze.json); a change to the model that loses agreement
// fails here. Issue 31's target: memfit's allocated peak within 2 % of the oracle on >= 95 % of the cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { built, loadSingle, root } from './helpers.mjs';

const require = createRequire(import.meta.url);
const v = require('../../cli/validate.js');
const { agreement, WITHIN_PCT, UNDER_PCT } = require('../../tools/oracle/oracle_stats.js');

// Measured over all committed cases with the mechanisms modelled (docs/oracle.md "Agreement"). The FSDP2 and torchtune
// runners' cases raised the p90 from 0.56 % to 0.68 %; the litgpt runner's LoRA cases at 512 tokens (over by 2-3 %) and
// the amp_bf16 block's LoRA cases without checkpointing (over by 1.4-2.2 %) raise it further, and LitGPT's adapter
// cases (26, p90 2.7 %: over at 512 tokens like LoRA's, under by 0.2-0.5 % elsewhere, LitGPT's RoPE copy of q not
// modelled) to 0.85 %. Raise these as memfit improves.
const FLOOR = {
  max_under_10pct_share: 0.005,
  max_median_abs_error_pct: 0.1,
  max_p90_abs_error_pct: 0.9,
};
// Within 2 %, per runner (1,213 cases with the gap version sets): the plain loop's 1,009 at 97.5 %; the Trainer's and
// TRL's 204 at 88.2 %, held down by TRL 1.10's chunked_nll, PEFT 0.18-0.20 on transformers 5's MoE and GPT-2 under
// transformers 4.41 (docs/oracle.md mechanisms 14, 18, 19, 20: not modelled yet); FSDP2's 36 at 64 % (mechanism 21,
// the full fine-tunes over by up to 4.6 %, the safe side); torchtune's single-device recipes (tt_2025_06): 109 cases
// at 96.3 % with their mechanisms modelled (blind: 33 %, docs/oracle.md mechanisms 22-24; outside, four Llama-3.1-8B QLoRA cases at 1,024 tokens over
// by 2.6-3.0 %).
// LitGPT's fine-tuning loops through Fabric (lg_2026_11): 62 cases at 93.5 % (blind: 6.5 %, docs/oracle.md mechanisms
// 26-29; outside, four LoRA cases at 512 tokens over by 2.0-3.3 %); with adapter.py and adapter_v2.py (26 cases,
// mechanisms 30-32): 88 at 90.9 %, the four new ones outside the Llama-3.2-1B cases at (1, 512), over by 2.2-3.0 %
// (the same 512-token logits chunk as LoRA's). PEFT's second block (adaption prompt, P-tuning MLP / LSTM, OFT, BOFT,
// LN tuning, PiSSA / OLoRA; 68 transformers_loop cases) is within 0.5 % (blind: 74 % of the 35 compared within 2 %,
// the LSTM encoder under by 59-75 %; OFT, BOFT and LN tuning rejected).
const WITHIN_2PCT_FLOOR_BY_RUNNER = {
  transformers_loop: 0.97, hf_trainer_and_trl: 0.88, fsdp2_loop: 0.6, torchtune: 0.95, litgpt: 0.9,
};
const ISSUE_TARGET_WITHIN_2PCT_SHARE = 0.95;

/// The runner that traced a row: the id names it (the CSV's framework column is memfit's profile).
function runnerOfRow(row) {
  if (row.id.includes('-fsdp2loop-')) return 'fsdp2_loop';
  return ['transformers_loop', 'torchtune', 'litgpt'].includes(row.framework) ? row.framework : 'hf_trainer_and_trl';
}

const cases = v.readCases(readFileSync(`${root}tests/oracle/cases.csv`, 'utf8'));
const records = new Map(readFileSync(`${root}tests/oracle/records.jsonl`, 'utf8').split('\n')
  .filter((l) => l.trim()).map((l) => JSON.parse(l)).map((r) => [r.id, r]));

test('every committed case has its oracle record, and the CSV holds the record\'s peak', () => {
  assert.ok(cases.length >= 600, `only ${cases.length} cases`);
  for (const row of cases) {
    const r = records.get(row.id);
    assert.ok(r && r.ok, row.id);
    assert.equal(Number(row.measured_gib), Number((r.peak_bytes / 2 ** 30).toFixed(6)), row.id);
    const parts = Object.values(r.breakdown_bytes).reduce((a, b) => a + b, 0);
    assert.equal(parts, r.peak_bytes, `${row.id}: the breakdown sums to the peak`);
  }
});

test('memfit agrees with the oracle at least as well as when the cases were committed', { skip: !built }, async () => {
  const M = await loadSingle();
  const report = v.validate(cases, {
    estimate: (text) => M.estimate(text),
    configDirs: [`${root}tests/validation/configs`, `${root}tests/oracle/configs`],
  });
  assert.deepEqual(report.errors, []);
  assert.equal(report.rows.length, cases.length);
  const s = agreement(report.rows);
  const msg = JSON.stringify(s);
  const runnerOf = new Map(cases.map((row) => [row.id, runnerOfRow(row)]));
  for (const [runner, floor] of Object.entries(WITHIN_2PCT_FLOOR_BY_RUNNER)) {
    const own = agreement(report.rows.filter((r) => runnerOf.get(r.id) === runner));
    assert.ok(own.count > 0 && own.within_2pct_share >= floor, `${runner} within ${WITHIN_PCT} %: ${JSON.stringify(own)}`);
  }
  assert.ok(s.under_10pct_share <= FLOOR.max_under_10pct_share, `under by > ${UNDER_PCT} %: ${msg}`);
  assert.ok(s.median_abs_error_pct <= FLOOR.max_median_abs_error_pct, `median: ${msg}`);
  assert.ok(s.p90_abs_error_pct <= FLOOR.max_p90_abs_error_pct, `p90: ${msg}`);
  assert.ok(s.within_2pct_share >= ISSUE_TARGET_WITHIN_2PCT_SHARE, `issue 31's bar: ${msg}`);
});
