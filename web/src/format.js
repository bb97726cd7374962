// Display formatting only: bytes as GiB (2^30), counts, percentages, durations. No estimator
// math lives here; every number formatted comes from the core's JSON.
'use strict';
(function (ns) {
  const GIB = 2 ** 30;
  const count = (n) => Number(n).toLocaleString('en-US');
  const gib = (bytes, digits = 1) => `${(Number(bytes) / GIB).toFixed(digits)} GiB`;
  const percent = (fraction) => `${(100 * fraction).toFixed(0)} %`;
  function rate(perSecond) {
    if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)} M`;
    if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)} k`;
    return perSecond.toFixed(0);
  }
  function seconds(s) {
    if (s >= 1) return `${s.toFixed(2)} s`;
    return `${(s * 1e3).toFixed(0)} ms`;
  }
  /// "dp 2 · tp 4+SP · pp 2×2 · cp 2 · ep 8 · ZeRO-3" from a search candidate's `parallel`.
  function layout(p) {
    const parts = [`dp ${p.dp}`];
    if (p.tp > 1) parts.push(`tp ${p.tp}${p.sequence_parallel ? '+SP' : ''}`);
    if (p.pp > 1) parts.push(`pp ${p.pp}${p.vpp > 1 ? `×${p.vpp}` : ''}`);
    if (p.cp > 1) parts.push(`cp ${p.cp}`);
    if (p.ep > 1) parts.push(`ep ${p.ep}`);
    if (p.sharding && p.sharding !== 'none') parts.push(p.sharding.replace('zero', 'ZeRO-'));
    return parts.join(' · ');
  }
  /// Category names of the core's breakdown and timeline keys: "optimizer_states_bytes" -> "optimizer states".
  const category = (key) => key.replace(/_bytes$/, '').replace(/_/g, ' ');
  ns.format = { GIB, count, gib, percent, rate, seconds, layout, category };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});
