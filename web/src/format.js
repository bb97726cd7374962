// Display formatting only: bytes in GiB (2^30) or GB, counts, percentages, durations. No estimator
// math lives here; every number formatted comes from the core's JSON.
'use strict';
(function (ns) {
  const GIB = 2 ** 30;
  /// Memory is shown in GiB (2^30 bytes, what nvidia-smi and PyTorch count) or GB (10^9, what
  /// GPU data sheets print); the calculator sets the unit before it renders.
  const UNIT_BYTES = { GiB: GIB, GB: 1e9 };
  const unit = { name: 'GiB', bytes: GIB };
  function setUnit(name) {
    unit.name = UNIT_BYTES[name] ? name : 'GiB';
    unit.bytes = UNIT_BYTES[unit.name];
  }
  /// "8,030,261,248": integers grouped by hand, so that the first result does not wait for
  /// Intl's locale data (~25 ms on the first toLocaleString); anything else as en-US formats it.
  const count = (n) => (Number.isSafeInteger(Number(n)) ? String(Number(n)).replace(/\B(?=(\d{3})+$)/g, ',') : Number(n).toLocaleString('en-US'));
  const memory = (bytes, digits = 1) => `${(Number(bytes) / unit.bytes).toFixed(digits)} ${unit.name}`;
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
  /// A long duration: minutes, hours or days.
  function duration(s) {
    if (s >= 86400) return `${(s / 86400).toFixed(1)} days`;
    if (s >= 3600) return `${(s / 3600).toFixed(1)} h`;
    return `${(s / 60).toFixed(0)} min`;
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
  ns.format = { GIB, unit, setUnit, count, memory, percent, rate, seconds, duration, layout, category };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});
