// Blind-first validation (issue 32): freeze what the model predicts for a case file before the
// model is changed for it, then report the frozen (blind) and the current error side by side.
// A freeze is a record: it names the memfit version, the git commit, the date and a hash of every
// row, so later edits of the rows show up as changed. Pure: the CLI reads and writes the files.
'use strict';
const crypto = require('node:crypto');
const { summarize } = require('./validate.js');

const FREEZE_FORMAT = 'memfit-blind-freeze/1';
/// Hex digits kept of a row's SHA-256: 64 bits tell an edited row apart and stay readable.
const ROW_HASH_HEX_DIGITS = 16;
/// Digits kept in a freeze: 1e-6 GiB is 1 KiB, 1e-3 % is far below any measurement's precision.
const FROZEN_GIB_DIGITS = 6;
const FROZEN_PCT_DIGITS = 3;

const ROW_STATUSES = new Set(['compared', 'skipped', 'error']);

/// A problem with a freeze file: `code` (invalid_freeze, freeze_mismatch) and the JSON Pointer
/// of the field at fault.
class FreezeError extends Error {
  constructor(code, path, message) {
    super(message);
    this.code = code;
    this.path = path;
  }
}

const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');
const rounded = (value, digits) => Number(value.toFixed(digits));
const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/// A row's hash over every cell, columns by name (reordering columns changes nothing).
function rowHash(row) {
  const cells = Object.keys(row).sort().map((column) => [column, row[column]]);
  return sha256(JSON.stringify(cells)).slice(0, ROW_HASH_HEX_DIGITS);
}

/// The hash of a case file's rows: ids and row hashes, by id (reordering rows changes nothing).
function casesHash(cases) {
  return sha256(cases.map((row) => `${row.id} ${rowHash(row)}\n`).sort().join(''));
}

/// What a freeze keeps of each row of `cases`, by id: the compared numbers, or why there are none.
function frozenRows(cases, report) {
  const compared = new Map(report.rows.map((r) => [r.id, r]));
  const skipped = new Map(report.skipped.map((s) => [s.id, s]));
  const errors = new Map(report.errors.map((e) => [e.id, e]));
  return cases.map((row) => {
    const head = { id: row.id, row_sha256: rowHash(row) };
    const r = compared.get(row.id);
    if (r) {
      return {
        ...head, status: 'compared', source: r.source, grade: r.grade, n_gpus: r.n_gpus,
        measured_kind: r.measured_kind, counter: r.counter,
        estimate_gib: rounded(r.estimate_gib, FROZEN_GIB_DIGITS), measured_gib: r.measured_gib,
        error_pct: rounded(r.error_pct, FROZEN_PCT_DIGITS),
      };
    }
    if (skipped.has(row.id)) return { ...head, status: 'skipped', reason: skipped.get(row.id).reason };
    const e = errors.get(row.id);
    return { ...head, status: 'error', code: e.code, path: e.path, message: e.message };
  }).sort(byId);
}

/// The freeze document of a validated case file. `info`: {casesName (the CSV's file name),
/// version, gitCommit (or null), date (YYYY-MM-DD), configDirs}.
function buildFreeze(cases, report, info) {
  return {
    format: FREEZE_FORMAT,
    cases: info.casesName,
    rows_sha256: casesHash(cases), // the rows when the freeze was last written (made or added to)
    memfit_version: info.version,
    git_commit: info.gitCommit,
    frozen_on: info.date,
    configs: info.configDirs,
    rows: frozenRows(cases, report),
  };
}

/// `freeze` with records added for the rows of `cases` it lacks; its own rows stay as they are.
/// An added row carries when and by what it was frozen (`info` as for buildFreeze), since the
/// head names the first freeze. Returns {freeze, added: [ids]}.
function addToFreeze(freeze, cases, report, info) {
  const known = new Set(freeze.rows.map((row) => row.id));
  const added = frozenRows(cases.filter((row) => !known.has(row.id)), report)
    .map((row) => ({ ...row, frozen_on: info.date, memfit_version: info.version, git_commit: info.gitCommit }));
  if (added.length === 0) return { freeze, added: [] };
  const rows = [...freeze.rows, ...added].sort(byId);
  return { freeze: { ...freeze, rows_sha256: casesHash(cases), rows }, added: added.map((row) => row.id) };
}

/// The freeze as JSON text: one row per line, so a diff of two freezes shows changed rows.
function serializeFreeze(freeze) {
  const head = Object.entries(freeze).filter(([key]) => key !== 'rows')
    .map(([key, value]) => `  ${JSON.stringify(key)}: ${JSON.stringify(value)}`);
  const rows = freeze.rows.map((row) => `    ${JSON.stringify(row)}`);
  const rowsText = rows.length === 0 ? '[]' : `[\n${rows.join(',\n')}\n  ]`;
  return `{\n${head.join(',\n')},\n  "rows": ${rowsText}\n}\n`;
}

// ---------------------------------------------------------------------------------------------
// Reading a freeze back

const isText = (value) => typeof value === 'string';
const isNumber = (value) => typeof value === 'number' && Number.isFinite(value);

/// The fields each row status must carry, with their checks.
const ROW_FIELDS = {
  compared: [['source', isText], ['grade', isText], ['n_gpus', Number.isInteger],
    ['measured_kind', isText], ['counter', isText], ['estimate_gib', isNumber],
    ['measured_gib', isNumber], ['error_pct', isNumber]],
  skipped: [['reason', isText]],
  error: [['code', isText], ['message', isText]],
};

/// Throws FreezeError(invalid_freeze) at `pointer` unless `ok`.
function check(ok, pointer, message) {
  if (!ok) throw new FreezeError('invalid_freeze', pointer, message);
}

/// One frozen row, checked; `pointer` is its JSON Pointer.
function checkRow(row, pointer, seen) {
  check(row !== null && typeof row === 'object' && !Array.isArray(row), pointer, 'a row must be an object');
  check(isText(row.id) && row.id !== '', `${pointer}/id`, 'a row needs a non-empty text id');
  check(!seen.has(row.id), `${pointer}/id`, `duplicate id '${row.id}'`);
  seen.add(row.id);
  check(isText(row.row_sha256), `${pointer}/row_sha256`, 'a row needs its row_sha256');
  check(ROW_STATUSES.has(row.status), `${pointer}/status`,
    `status must be compared, skipped or error, got ${JSON.stringify(row.status)}`);
  for (const field of ['frozen_on', 'memfit_version']) { // rows added to a freeze say when, by what
    check(row[field] === undefined || isText(row[field]), `${pointer}/${field}`, `${field} must be text`);
  }
  check(row.git_commit === undefined || row.git_commit === null || isText(row.git_commit), `${pointer}/git_commit`,
    'git_commit must be text or null');
  for (const [field, isValid] of ROW_FIELDS[row.status]) {
    check(isValid(row[field]), `${pointer}/${field}`,
      `a ${row.status} row needs a valid ${field}, got ${JSON.stringify(row[field])}`);
  }
}

/// The freeze in `text`, checked. Throws FreezeError with the pointer of the first bad field.
function parseFreeze(text) {
  let freeze;
  try {
    freeze = JSON.parse(text);
  } catch (e) {
    throw new FreezeError('invalid_freeze', '', `not valid JSON (${e.message})`);
  }
  check(freeze !== null && typeof freeze === 'object' && !Array.isArray(freeze), '', 'a freeze is a JSON object');
  check(freeze.format === FREEZE_FORMAT, '/format',
    `format must be '${FREEZE_FORMAT}', got ${JSON.stringify(freeze.format)}`);
  for (const field of ['cases', 'rows_sha256', 'memfit_version', 'frozen_on']) {
    check(isText(freeze[field]), `/${field}`, `${field} must be text`);
  }
  check(freeze.git_commit === null || isText(freeze.git_commit), '/git_commit', 'git_commit must be text or null');
  check(freeze.configs === undefined || (Array.isArray(freeze.configs) && freeze.configs.every(isText)), '/configs',
    'configs must be a list of directories');
  check(Array.isArray(freeze.rows), '/rows', 'rows must be an array');
  const seen = new Set();
  freeze.rows.forEach((row, i) => checkRow(row, `/rows/${i}`, seen));
  return freeze;
}

/// Throws FreezeError(freeze_mismatch) when `freeze` records another case file than `casesName`
/// with rows `cases`: another file name, or not one id in common.
function checkFreezeMatches(freeze, casesName, cases) {
  if (freeze.cases !== casesName) {
    throw new FreezeError('freeze_mismatch', '/cases',
      `this freeze records '${freeze.cases}', not '${casesName}'`);
  }
  const ids = new Set(cases.map((row) => row.id));
  if (freeze.rows.length > 0 && cases.length > 0 && !freeze.rows.some((row) => ids.has(row.id))) {
    throw new FreezeError('freeze_mismatch', '/rows', `no row of this freeze is in '${casesName}'`);
  }
}

// ---------------------------------------------------------------------------------------------
// Blind against current

/// The reason text of a skipped or error row (frozen or current).
const reasonOf = (r) => (r.status === 'skipped' ? r.reason : `${r.code}: ${r.message}`);

/// The current outcome of each id of a report: {status, estimate_gib, error_pct} or {status, reason}.
function currentOutcomes(report) {
  const now = new Map();
  for (const r of report.rows) {
    now.set(r.id, { status: 'compared', estimate_gib: r.estimate_gib, error_pct: r.error_pct });
  }
  for (const s of report.skipped) now.set(s.id, { status: 'skipped', reason: s.reason });
  for (const e of report.errors) now.set(e.id, { status: 'error', reason: reasonOf({ status: 'error', ...e }) });
  return now;
}

/// A frozen row's outcome in the shape of currentOutcomes'.
function frozenOutcome(frozen) {
  return frozen.status === 'compared'
    ? { status: 'compared', estimate_gib: frozen.estimate_gib, error_pct: frozen.error_pct }
    : { status: frozen.status, reason: reasonOf(frozen) };
}

/// What happened to a row since the freeze: added, changed (its cells), removed, or null.
function changeOf(row, frozen) {
  if (!row) return 'removed';
  if (!frozen) return 'added';
  return frozen.row_sha256 === rowHash(row) ? null : 'changed';
}

/// A number cell of a case row, or null.
const numberCell = (text) => (text !== '' && Number.isFinite(Number(text)) ? Number(text) : null);

/// One id's line of the comparison: the case row's description (the freeze's for a removed row),
/// the blind and current outcomes (null where there is none) and the change since the freeze.
function comparisonRow(id, row, frozen, current) {
  const described = row || frozen;
  return {
    id,
    grade: described.grade || '',
    model: row ? row.model : '',
    n_gpus: row ? numberCell(row.n_gpus) || 1 : frozen.n_gpus || 1,
    measured_kind: described.measured_kind || '',
    measured_gib: row ? numberCell(row.measured_gib) : frozen.measured_gib ?? null,
    blind: frozen ? frozenOutcome(frozen) : null,
    current: current || null,
    change: changeOf(row, frozen),
  };
}

/// The blind (frozen) and current outcome of every id in the case file or the freeze, by id.
/// Returns {freeze (its record without rows), rows_sha256_now, rows, added, changed, removed,
/// blind_summary, current_summary}. The blind summary is over the freeze's own rows, untouched by
/// later edits of the case file; rows added since have no blind number.
function compareWithFreeze(cases, report, freeze) {
  const caseById = new Map(cases.map((row) => [row.id, row]));
  const frozenById = new Map(freeze.rows.map((row) => [row.id, row]));
  const now = currentOutcomes(report);
  const ids = [...new Set([...caseById.keys(), ...frozenById.keys()])].sort();
  const rows = ids.map((id) => comparisonRow(id, caseById.get(id), frozenById.get(id) || null, now.get(id)));
  const frozenCompared = freeze.rows.filter((row) => row.status === 'compared');
  const countStatus = (status) => freeze.rows.filter((row) => row.status === status).length;
  const idsWith = (change) => rows.filter((r) => r.change === change).map((r) => r.id);
  const { rows: _frozenRows, ...record } = freeze;
  return {
    freeze: record,
    rows_sha256_now: casesHash(cases),
    rows,
    added: idsWith('added'),
    changed: idsWith('changed'),
    removed: idsWith('removed'),
    blind_summary: summarize(frozenCompared, countStatus('skipped'), countStatus('error')),
    current_summary: report.summary,
  };
}

module.exports = {
  FREEZE_FORMAT,
  FreezeError,
  rowHash,
  casesHash,
  buildFreeze,
  addToFreeze,
  serializeFreeze,
  parseFreeze,
  checkFreezeMatches,
  compareWithFreeze,
};
