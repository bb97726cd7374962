// The validation documents show what the current model computes: regenerating their tables
// gives the committed text (a model change without `npm run validation-report` and
// `node tools/validation/throughput.mjs` fails here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
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

/// package.json's `validation-report` command: the node arguments and the file it writes.
function validationReportScript() {
  const script = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts['validation-report'];
  const match = /^node (.+) > (\S+)$/.exec(script);
  assert.ok(match, `validation-report is 'node ARGS > FILE': ${script}`);
  return { script, args: match[1].split(/\s+/), output: match[2] };
}

test('the validation report names the command that generates it', () => {
  const { script, output } = validationReportScript();
  assert.equal(output, 'docs/validation.md');
  assert.equal(createRequire(import.meta.url)('../../cli/validation_report.js').REPORT_COMMAND, script);
});

test('docs/validation.md is the memory validation report of the current model', { skip }, () => {
  const { args, output } = validationReportScript();
  for (const input of ['tests/validation/calibration.csv', 'tests/validation/sources']) {
    assert.ok(args.includes(input), `${input} in: ${args.join(' ')}`);
  }
  const report = run([join(root, args[0]), ...args.slice(1)]);
  const doc = readFileSync(join(root, output), 'utf8');
  assert.equal(doc, report, 'regenerate it with `npm run validation-report`');
});
