// The reports of `memfit validate` over one or more case files, each with or without a blind
// (frozen) record: the text table, the --json document and the --markdown page (docs/validation.md).
// Every summary leads with the share of rows under-estimated by more than 10 %, the dangerous
// direction, next to median and p90 |error|.
'use strict';
const v = require('./validate.js');

const { fixed, signed, mdTable } = v;

/// The command that regenerates docs/validation.md (package.json's `validation-report`).
const REPORT_COMMAND = 'node cli/memfit.js validate tests/validation/calibration.csv tests/validation/sources '
  + 'tests/validation/measured_h200.csv tests/validation/measured_h200_trainers.csv --configs tests/validation/configs '
  + '--markdown > docs/validation.md';
/// Issue 32's targets on the rows memfit was not shaped on.
const BLIND_TARGET = { median_abs_error_pct: 5, p90_abs_error_pct: 12, under_10_share_pct: 5 };
const SHAPED_ON = 'shaped on (tuned; no blind record)';

// ---------------------------------------------------------------------------------------------
// Text

/// An outcome's estimate and error cells: numbers when compared, its status otherwise, '-' when none.
function outcomeCells(outcome) {
  if (!outcome) return ['-', '-'];
  if (outcome.status !== 'compared') return [outcome.status, '-'];
  return [fixed(outcome.estimate_gib, 2), signed(outcome.error_pct, 1)];
}

/// What the comparison says about a row beyond its numbers.
const CHANGE_NOTES = {
  added: 'added after the freeze: no blind number',
  changed: 'CHANGED since the freeze',
  removed: 'removed since the freeze',
};

/// "blind: FILE, frozen 2026-11-27 with memfit 0.1.0 at 43de0a0; since then 1 added, 0 changed, 0 removed".
function freezeLine(file) {
  const f = file.blind.freeze;
  const commit = f.git_commit ? ` at ${f.git_commit.slice(0, 12)}` : '';
  return `blind: ${file.blindPath}, frozen ${f.frozen_on} with memfit ${f.memfit_version}${commit}; since then `
    + `${file.blind.added.length} rows added, ${file.blind.changed.length} changed, `
    + `${file.blind.removed.length} removed`;
}

/// [label, blind stats or null, current stats or null] for every group of either summary.
function pairedGroups(blindSummary, currentSummary) {
  const pairs = new Map();
  for (const [label, stats] of v.summaryGroups(currentSummary)) pairs.set(label, [label, null, stats]);
  for (const [label, stats] of v.summaryGroups(blindSummary)) {
    if (pairs.has(label)) pairs.get(label)[1] = stats;
    else pairs.set(label, [label, stats, null]);
  }
  return [...pairs.values()];
}

/// The text report of one file compared with its freeze.
function formatBlindTable(file) {
  const { report, blind } = file;
  const out = [
    v.dangerLine('blind (frozen)', blind.blind_summary.overall),
    v.dangerLine('current', report.summary.overall),
    freezeLine(file), '',
  ];
  const header = ['id', 'grade', 'model', 'measured_kind', 'measured_GiB', 'blind_GiB', 'blind_err_%',
    'current_GiB', 'current_err_%', 'since_freeze'];
  const cells = blind.rows.map((r) => [
    r.id, r.grade, v.shortModel(r.model).slice(0, 32), r.measured_kind, fixed(r.measured_gib, 2),
    ...outcomeCells(r.blind), ...outcomeCells(r.current), CHANGE_NOTES[r.change] || '',
  ]);
  out.push(...v.textTable(header, cells, new Set([4, 5, 6, 7, 8])), '', ...v.skippedAndErrorLines(report));
  out.push('', 'summary (blind = frozen, current = this model):');
  for (const [label, b, c] of pairedGroups(blind.blind_summary, report.summary)) {
    out.push(`  ${label}`, `    blind:   ${b ? v.statsLine(b) : 'n=0'}`, `    current: ${c ? v.statsLine(c) : 'n=0'}`);
  }
  out.push(`  skipped: ${report.summary.skipped}  errors: ${report.summary.errors}`);
  return out.join('\n') + '\n';
}

/// The text report of files: each file's table (headed by its path when there are several).
function formatText(files) {
  const one = (file) => (file.blind ? formatBlindTable(file) : v.formatTable(file.report));
  if (files.length === 1) return one(files[0]);
  return files.map((file) => `== ${file.casesPath} ==\n${one(file)}`).join('\n');
}

// ---------------------------------------------------------------------------------------------
// JSON

/// The --json document of one file: validate's document plus, with a freeze, `blind`: the record,
/// the rows' blind and current numbers and the blind summary.
function fileJson(file) {
  const json = v.toJson(file.report);
  if (!file.blind) return json;
  const b = file.blind;
  const number = (outcome, key) => (outcome && outcome.status === 'compared' ? outcome[key] : null);
  json.blind = {
    file: file.blindPath,
    ...b.freeze,
    rows_sha256_now: b.rows_sha256_now,
    added: b.added,
    changed: b.changed,
    removed: b.removed,
    rows: b.rows.map((r) => ({
      id: r.id,
      change: r.change,
      blind_status: r.blind ? r.blind.status : null,
      blind_estimate_gib: number(r.blind, 'estimate_gib'),
      blind_error_pct: number(r.blind, 'error_pct'),
      current_status: r.current ? r.current.status : null,
      current_estimate_gib: number(r.current, 'estimate_gib'),
      current_error_pct: number(r.current, 'error_pct'),
    })),
    summary: b.blind_summary,
  };
  return json;
}

/// The --json document: one file's document, or {files: [{cases, ...document}]} for several.
function toJson(files) {
  if (files.length === 1) return fileJson(files[0]);
  return { files: files.map((file) => ({ cases: file.casesPath, ...fileJson(file) })) };
}

// ---------------------------------------------------------------------------------------------
// Markdown

const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const STATS_HEADER = ['rows', 'under-estimated >10 %', 'median \\|error\\| %', 'p90 \\|error\\| %', 'mean error %'];
const STATS_ALIGN = 'rrrrr';
const statsCells = (s) => (s
  ? [s.count, v.underCell(s, ' '), fixed(s.median_abs_error_pct, 1), fixed(s.p90_abs_error_pct, 1),
    signed(s.mean_error_pct, 1)]
  : [0, '-', '-', '-', '-']);
/// The three numbers of the per-source overview: under-estimated share (of how many compared
/// rows), median, p90.
const shortStatsCells = (s) => [
  s.count === 0 ? '-' : `${fixed(s.under_10_share_pct, 1)} % (${s.under_10_count} of ${s.count})`,
  fixed(s.median_abs_error_pct, 1), fixed(s.p90_abs_error_pct, 1),
];
const fileName = (p) => p.slice(p.lastIndexOf('/') + 1);
const sourceName = (file) => fileName(file.casesPath).replace(/\.csv$/, '');

/// The opening text: what the rows are, what is compared, the blind-first protocol.
function preamble(files, info) {
  const counters = Object.entries(v.COUNTER_FIELDS).map(([kind, field]) => `\`${kind}\` → \`${field}\``).join(', ');
  const names = files.map((f) => `\`${f.casesPath}\``).join(', ');
  return [
    `Every row of ${names || 'the case files'} is a peak GPU memory figure that someone `
    + 'published for a real training run, with the setup needed to reproduce it (format: '
    + '`tests/validation/FORMAT.md`). memfit estimates each setup and the estimate is compared with '
    + `the counter the source read: ${counters}; \`unknown\` uses the counter the run's framework `
    + 'logs by default (`framework.logged_counter` in the result), or, where its memory log prints several '
    + '(`framework.logged_counters`), spans them. A row whose estimate is a range (an unknown counter, or a '
    + 'setting the row gives as `unknown`, `ranges` in the result) is compared on the range\'s high end, as '
    + 'the verdict is judged; its table cell shows low–high. A measurement summed over all '
    + 'GPUs (`measured_scope` = `total`) is compared with the per-GPU estimate times the GPU count. '
    + 'GiB = 2^30 bytes; error = (estimate − measured) / measured, signed, so positive means memfit '
    + 'overestimates. The same model runs on every row: there is no per-row tuning'
    + (info.version ? ` (memfit ${info.version}).` : '.'),
    '',
    '**The dangerous direction comes first.** Every summary leads with the share of rows '
    + `under-estimated by more than ${v.UNDER_ESTIMATE_THRESHOLD_PCT} % (estimate below the measurement): `
    + 'there the calculator says "fits" and the job runs out of memory. Median and p90 |error| follow.',
    '',
    '**Blind first.** `tests/validation/calibration.csv` holds the rows the model was shaped on: its errors '
    + 'are fits, not predictions. Every new source of measurements is one CSV, '
    + '`tests/validation/sources/<source>.csv` (same columns, configs in `tests/validation/configs/`), and is '
    + 'frozen before any change to the model for it: `npx memfit validate tests/validation/sources/<source>.csv '
    + '--configs tests/validation/configs --freeze tests/validation/blind/<source>.json` records every row\'s '
    + 'estimate, measurement and signed error, the memfit version, the git commit, the date and a hash of every '
    + 'row; it refuses to overwrite a freeze (`--force` does, for a record that was wrong, not for a better '
    + 'number). Rows added to a source later are frozen the same way with `--add`, which records only the rows '
    + 'the freeze lacks, each with its own date and version, and leaves the frozen ones as they are. From then '
    + 'on `validate` reports the frozen (blind) and the current error side by side (it finds '
    + '`tests/validation/blind/<name>.json` by itself; `--blind FILE` names another): rows not frozen have no '
    + 'blind number, rows edited since the freeze are flagged. Blind numbers are what memfit predicted for runs it '
    + 'had not seen; current numbers show what the changes made of them.',
    '',
    '**Measured here.** `tests/validation/measured_h200.csv` is the GPU cross-check: 16 single-GPU cases run '
    + 'on one H200 (`tools/measure/gpu_check.sh`), three counters each, predicted before the run; '
    + '`docs/gpu_check.md` sets them beside the executable oracle and lists what the run taught. '
    + '`tests/validation/measured_h200_trainers.csv` runs the TRL SFT benchmark\'s own trainer stack (TRL 1.4, '
    + 'accelerate 1.13 FSDP2 or DeepSpeed 0.19.8 ZeRO-2/3 at world size 1, Qwen3-4B at 4k to 16k tokens, and the GPU '
    + 'image\'s own transformers and accelerate; `tools/measure/trainer_gpu.sh`) on the same GPU: 18 cases, three '
    + 'counters each, predicted before the run (`tools/measure/trainer_gpu.memfit.json`).',
  ];
}

/// How many rows of a report's case file have ids of `source` (every source when undefined).
function caseRowCount(report, source) {
  const all = [...report.rows, ...report.skipped, ...report.errors];
  return source === undefined ? all.length : all.filter((r) => v.sourceOf(r.id) === source).length;
}

/// The overview table: one line per blind source (blind and current numbers), one for all of
/// them, then each shaped-on file's sources (current numbers only). `rows` counts the file's rows,
/// skipped and rejected ones included.
function overview(files) {
  const blindFiles = files.filter((f) => f.blind);
  const lines = blindFiles.map((f) => [
    sourceName(f), `\`${f.casesPath}\``, `blind (frozen ${f.blind.freeze.frozen_on})`, caseRowCount(f.report),
    ...shortStatsCells(f.blind.blind_summary.overall), ...shortStatsCells(f.report.summary.overall),
  ]);
  if (blindFiles.length > 1) {
    const all = (pick) => v.groupStats(blindFiles.flatMap(pick));
    lines.push(['**all blind sources**', '', '', blindFiles.reduce((n, f) => n + caseRowCount(f.report), 0),
      ...shortStatsCells(all((f) => frozenComparedRows(f))), ...shortStatsCells(all((f) => f.report.rows))]);
  }
  for (const f of files.filter((file) => !file.blind)) {
    const sources = Object.entries(f.report.summary.by_source);
    for (const [source, stats] of sources) {
      lines.push([source, `\`${f.casesPath}\``, SHAPED_ON, caseRowCount(f.report, source), '—', '—', '—',
        ...shortStatsCells(stats)]);
    }
    if (sources.length > 1) {
      lines.push([`**all of ${fileName(f.casesPath)}**`, '', '', caseRowCount(f.report), '—', '—', '—',
        ...shortStatsCells(f.report.summary.overall)]);
    }
  }
  return mdTable(
    ['source', 'file', 'record', 'rows', 'blind: under-estimated >10 %', 'blind: median %', 'blind: p90 %',
      'current: under-estimated >10 %', 'current: median %', 'current: p90 %'],
    'lllrrrrrrr', lines,
  );
}

/// The frozen compared rows of a blind file, as the blind summary counted them.
function frozenComparedRows(file) {
  return file.blind.rows.filter((r) => r.blind && r.blind.status === 'compared')
    .map((r) => ({ error_pct: r.blind.error_pct }));
}

/// Whether the blind numbers of every compared row of the blind sources (all grades) meet issue 32's targets.
function blindTargetLine(files) {
  const rows = files.filter((f) => f.blind).flatMap(frozenComparedRows);
  const t = BLIND_TARGET;
  const target = `median ≤ ${t.median_abs_error_pct} %, p90 ≤ ${t.p90_abs_error_pct} %, `
    + `under-estimated by more than ${v.UNDER_ESTIMATE_THRESHOLD_PCT} % on ≤ ${t.under_10_share_pct} % of rows`;
  const head = `Target on the blind numbers of every compared row not shaped on (${target})`;
  if (rows.length === 0) return `${head}: no blind rows yet.`;
  const s = v.groupStats(rows);
  const met = s.median_abs_error_pct <= t.median_abs_error_pct && s.p90_abs_error_pct <= t.p90_abs_error_pct
    && s.under_10_share_pct <= t.under_10_share_pct;
  return `${head}: ${met ? 'met' : 'NOT met'} `
    + `(${s.count} rows: ${fixed(s.under_10_share_pct, 1)} % under-estimated by more than `
    + `${v.UNDER_ESTIMATE_THRESHOLD_PCT} %, median ${fixed(s.median_abs_error_pct, 1)} %, `
    + `p90 ${fixed(s.p90_abs_error_pct, 1)} %).`;
}

/// The skipped and rejected rows of a report, under `level` headings.
function skippedAndErrors(report, level) {
  return [
    '', `${level} Skipped rows`, '',
    report.skipped.length === 0 ? 'None.'
      : mdTable(['id', 'reason'], 'll', [...report.skipped].sort(byId).map((r) => [r.id, r.reason])),
    '', `${level} Rows the estimator rejected`, '',
    report.errors.length === 0 ? 'None.'
      : mdTable(['id', 'code', 'path', 'message'], 'llll',
        [...report.errors].sort(byId).map((e) => [e.id, e.code, e.path, e.message])),
  ];
}

/// The section of a file without a blind record: targets, groups and every row.
function shapedOnSection(file) {
  const s = file.report.summary;
  const out = ['', `## Shaped on: \`${file.casesPath}\``, ''];
  out.push('Rows the model was tuned on (no blind record): these errors show the fit, not how well memfit '
    + 'predicts unseen runs.');
  const targetRow = (g, text) => [...statsCells(g), text, g.meets_target ? 'pass' : 'FAIL'];
  const h = s[v.HEADLINE_GROUP];
  const m = s[v.MULTI_GPU_GROUP];
  const k = s[v.ACTIVATION_GROUP];
  out.push('', '### Single GPU, grade A/B (headline)', '');
  out.push(mdTable([...STATS_HEADER, 'target', 'result'], `${STATS_ALIGN}ll`,
    [targetRow(h, `median ≤ ${h.target_median_abs_error_pct} %, p90 ≤ ${h.target_p90_abs_error_pct} %`)]));
  out.push('', '### Multi-GPU, grade A/B', '');
  out.push(mdTable([...STATS_HEADER, 'target', 'result'], `${STATS_ALIGN}ll`,
    [targetRow(m, `median ≤ ${m.target_median_abs_error_pct} %, p90 ≤ ${m.target_p90_abs_error_pct} %`)]));
  out.push('', '### Korthikanti et al. activation rows', '');
  out.push(mdTable([...STATS_HEADER, 'max \\|error\\| %', 'target', 'result'], `${STATS_ALIGN}rll`,
    [[...statsCells(k), fixed(k.max_abs_error_pct, 1), `every row ≤ ${k.target_max_abs_error_pct} %`,
      k.meets_target ? 'pass' : 'FAIL']]));
  const groupRows = (groups) => Object.entries(groups).map(([name, g]) => [name, ...statsCells(g)]);
  out.push('', '### By source', '', mdTable(['source', ...STATS_HEADER], `l${STATS_ALIGN}`, groupRows(s.by_source)));
  out.push('', '### By grade', '', mdTable(['grade', ...STATS_HEADER], `l${STATS_ALIGN}`, groupRows(s.by_grade)));
  out.push('', '### Overall', '',
    mdTable(['', ...STATS_HEADER], `l${STATS_ALIGN}`, [['all compared rows', ...statsCells(s.overall)]]));
  out.push('', `Skipped: ${s.skipped} rows. Errors: ${s.errors} rows. Neither counts in the statistics.`);
  out.push('', '### Every row', '');
  out.push(mdTable(
    ['id', 'grade', 'model', 'GPUs', 'measured kind', 'compared with', 'estimate GiB', 'measured GiB', 'error %'],
    'lllrllrrr',
    [...file.report.rows].sort(byId).map((r) => [
      r.id, r.grade, r.model, r.n_gpus, r.measured_kind + (r.measured_scope === 'total' ? ' (total)' : ''),
      comparedWith(r), estimateCell(r), fixed(r.measured_gib, 2), signed(r.error_pct, 1),
    ]),
  ));
  out.push(...skippedAndErrors(file.report, '###'));
  return out;
}

/// The counter a row is compared with; a range's high end says so, with what the row leaves unknown.
function comparedWith(r) {
  if (!r.range) return `\`${r.counter}\``;
  return `\`${r.counter}\` (high end; unknown: ${r.range.unknown.map((u) => `\`${u}\``).join(', ')})`;
}

/// The estimate: the compared value, and a range's low end before it.
function estimateCell(r) {
  return r.range ? `${fixed(r.range.low_gib, 2)}–${fixed(r.estimate_gib, 2)}` : fixed(r.estimate_gib, 2);
}

/// The section of a blind file: its record, blind and current per group, every row side by side.
function blindSection(file) {
  const b = file.blind;
  const f = b.freeze;
  const out = ['', `### ${sourceName(file)}: \`${file.casesPath}\``, ''];
  out.push(`Frozen ${f.frozen_on} with memfit ${f.memfit_version}`
    + `${f.git_commit ? ` at commit \`${f.git_commit.slice(0, 12)}\`` : ''} in \`${file.blindPath}\`; since then `
    + `${b.added.length} rows added (no blind number), ${b.changed.length} changed, ${b.removed.length} removed.`
    + (f.rows_sha256 === b.rows_sha256_now ? ' The rows are as frozen.' : ''));
  const half = STATS_HEADER.map((h) => `blind: ${h}`).concat(STATS_HEADER.map((h) => `current: ${h}`));
  out.push('', mdTable(['group', ...half], `l${STATS_ALIGN}${STATS_ALIGN}`,
    pairedGroups(b.blind_summary, file.report.summary)
      .map(([label, bs, cs]) => [label, ...statsCells(bs), ...statsCells(cs)])));
  out.push('', mdTable(
    ['id', 'grade', 'model', 'GPUs', 'measured kind', 'measured GiB', 'blind estimate GiB', 'blind error %',
      'current estimate GiB', 'current error %', 'since the freeze'],
    'lllrlrrrrrl',
    b.rows.map((r) => [r.id, r.grade, r.model, r.n_gpus, r.measured_kind, fixed(r.measured_gib, 2),
      ...outcomeCells(r.blind), ...outcomeCells(r.current), CHANGE_NOTES[r.change] || '']),
  ));
  out.push(...skippedAndErrors(file.report, '####'));
  return out;
}

/// The --markdown document (docs/validation.md) of files [{casesPath, report, blind, blindPath}].
/// `info`: {version}. Deterministic: the same files and estimator give the same bytes.
function formatMarkdown(files, info = {}) {
  const out = ['# Validation against published measurements', '', ...preamble(files, info)];
  out.push('', '## Summary by source', '', overview(files), '', blindTargetLine(files));
  const blindFiles = files.filter((f) => f.blind);
  out.push('', '## Blind sources', '');
  out.push(blindFiles.length === 0
    ? 'None yet: no case file has a blind record (a freeze in `tests/validation/blind/`).'
    : 'Blind numbers: what memfit predicted before it was changed for these rows. Current: this model.');
  for (const file of blindFiles) out.push(...blindSection(file));
  for (const file of files.filter((f) => !f.blind)) out.push(...shapedOnSection(file));
  out.push('', '---', '', `Generated by \`npm run validation-report\` (\`${REPORT_COMMAND}\`); `
    + 'edit the CSVs or the estimator, not this file.');
  return out.join('\n') + '\n';
}

module.exports = {
  REPORT_COMMAND,
  BLIND_TARGET,
  formatText,
  toJson,
  formatMarkdown,
};
