// Agreement statistics of memfit against the oracle (shared by tools/oracle/compare.mjs and tests/node/oracle.test.mjs).
'use strict';
const { median, p90 } = require('../../cli/validate.js');

/// The issue's bar (issue 31): memfit's allocated peak within 2 % of the oracle on at least 95 % of cases.
const WITHIN_PCT = 2;
const UNDER_PCT = 10;

/// count, median and p90 of |error| %, share within 2 %, share under-estimated by more than 10 % (memfit below).
function agreement(rows) {
  const abs = rows.map((r) => Math.abs(r.error_pct));
  const share = (pred) => (rows.length ? rows.filter(pred).length / rows.length : null);
  return {
    count: rows.length,
    median_abs_error_pct: median(abs),
    p90_abs_error_pct: p90(abs),
    within_2pct_share: share((r) => Math.abs(r.error_pct) <= WITHIN_PCT),
    under_10pct_share: share((r) => r.error_pct < -UNDER_PCT),
  };
}

function groupBy(rows, key) {
  const groups = new Map();
  for (const r of rows) {
    const k = key(r);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  return [...groups.keys()].sort().map((k) => [k, agreement(groups.get(k))]);
}

const pct = (x, d = 1) => (x === null ? '-' : x.toFixed(d));
const share = (x) => (x === null ? '-' : `${(100 * x).toFixed(0)} %`);

function table(title, groups) {
  const lines = [`| ${title} | n | median abs err % | p90 abs err % | within 2 % | under by > 10 % |`,
    '|---|---|---|---|---|---|'];
  for (const [k, s] of groups) {
    lines.push(`| ${k} | ${s.count} | ${pct(s.median_abs_error_pct)} | ${pct(s.p90_abs_error_pct)} | `
      + `${share(s.within_2pct_share)} | ${share(s.under_10pct_share)} |`);
  }
  return lines.join('\n');
}

/// Blind (memfit's frozen prediction) beside now, per group: `rows` carry error_pct and blind_error_pct (or null).
function pairedTable(title, rows, key) {
  const head = (w) => `${w}: median abs err % | p90 | within 2 % | under by > 10 %`;
  const lines = [`| ${title} | n | ${head('blind')} | ${head('now')} |`, '|---|---|---|---|---|---|---|---|---|---|'];
  const cells = (s) => `${pct(s.median_abs_error_pct)} | ${pct(s.p90_abs_error_pct)} | ${share(s.within_2pct_share)} | `
    + `${share(s.under_10pct_share)}`;
  for (const [k] of groupBy(rows, key)) {
    const group = rows.filter((r) => key(r) === k);
    const blind = group.filter((r) => r.blind_error_pct !== null).map((r) => ({ error_pct: r.blind_error_pct }));
    lines.push(`| ${k} | ${group.length} | ${cells(agreement(blind))} | ${cells(agreement(group))} |`);
  }
  return lines.join('\n');
}

/// The error tables (all, by framework, version set, family, method, precision, checkpointing, attention) and the
/// worst cases, as Markdown.
function markdownReport(rows, errors = []) {
  const out = [table('cases', [['all', agreement(rows)]])];
  const keys = [['framework', (r) => r.framework], ['version set', (r) => r.version_set],
    ['runner x version set', (r) => `${r.framework} ${r.version_set}`],
    ['family', (r) => r.family], ['method', (r) => r.method], ['precision', (r) => r.precision],
    ['checkpointing', (r) => r.ac], ['attention', (r) => r.attention]];
  for (const [title, key] of keys) out.push(table(title, groupBy(rows, key)));
  const worst = [...rows].sort((a, b) => Math.abs(b.error_pct) - Math.abs(a.error_pct)).slice(0, 25);
  out.push(['| worst cases | oracle GiB | memfit GiB | error % | oracle peak (phase step / op / module) | memfit peak |',
    '|---|---|---|---|---|---|',
    ...worst.map((r) => `| ${r.id} | ${r.oracle_gib.toFixed(3)} | ${r.memfit_gib.toFixed(3)} | ${r.error_pct >= 0 ? '+' : ''}`
      + `${r.error_pct.toFixed(1)} | ${r.oracle_where.phase} ${r.oracle_where.step + 1} / ${r.oracle_where.op} / `
      + `${r.oracle_where.module || r.oracle_where.autograd_node} | ${r.memfit_peak ? `${r.memfit_peak.phase} / ${r.memfit_peak.label}` : ''} |`)].join('\n'));
  if (errors.length) out.push(`memfit errors: ${errors.length} (${errors.slice(0, 5).map((e) => `${e.id}: ${e.error.message}`).join('; ')})`);
  return out.join('\n\n') + '\n';
}

module.exports = { WITHIN_PCT, UNDER_PCT, agreement, groupBy, markdownReport, pairedTable };
