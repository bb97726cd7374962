// GaLore, APOLLO, APOLLO-Mini and Adam-mini optimizer states against the oracle's real step
// (tools/oracle/optimizer_states.py, version set opt_2026_11; records and memfit's blind
// predictions, frozen before the oracle ran, in tests/oracle/optimizer_states.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { built, loadSingle, root } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { requestFor } = require('../../tools/oracle/optimizer_states.js');
const frozen = JSON.parse(readFileSync(`${root}tests/oracle/optimizer_states.json`, 'utf8'));

test('every case has the oracle\'s bytes and a blind prediction', () => {
  assert.equal(frozen.cases.length, 8);
  for (const c of frozen.cases) assert.ok(c.oracle_optimizer_state_bytes > 0 && c.memfit_optimizer_state_bytes > 0, c.id);
});

test('memfit\'s optimizer states equal the oracle\'s on every case', { skip: !built }, async () => {
  const M = await loadSingle();
  for (const c of frozen.cases) {
    const out = JSON.parse(M.estimate(JSON.stringify(requestFor(c))));
    assert.ok(out.ok, JSON.stringify(out.error));
    assert.equal(out.result.states.optimizer_states_bytes, c.oracle_optimizer_state_bytes, c.id);
  }
});
