// The validation documents show what the current model computes: regenerating their tables
// gives the committed text (a model change without `npm run validation-report` and
// `node tools/validation/throughput.mjs` fails here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root, built } from './helpers.mjs';

const skip = !built;

function run(args) {
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('docs/search_validation.md holds the throughput table the step-time model gives now', { skip }, () => {
  const table = run([join(root, 'tools', 'validation', 'throughput.mjs')]).trim();
  const doc = readFileSync(join(root, 'docs', 'search_validation.md'), 'utf8');
  assert.ok(table.split('\n').length > 20, 'the tool prints a row per measurement');
  assert.ok(doc.includes(table), 'regenerate the table with `node tools/validation/throughput.mjs`');
});

test('docs/validation.md is the memory validation report of the current model', { skip }, () => {
  const report = run([join(root, 'cli', 'memfit.js'), 'validate', 'tests/validation/calibration.csv',
    '--configs', 'tests/validation/configs', '--markdown']);
  const doc = readFileSync(join(root, 'docs', 'validation.md'), 'utf8');
  assert.equal(doc, report, 'regenerate it with `npm run validation-report`');
});
