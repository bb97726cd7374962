// The two charts, drawn by uPlot (bundled from npm): the breakdown at the peak as bars and the
// step's allocated memory as stacked areas by category. This file only configures the library
// and shapes the core's numbers into its series; it computes no memory.
'use strict';
(function (ns) {
  const { format } = ns;
  /// Timeline categories, bottom to top, and their colours (colour-blind-safe palette, Okabe-Ito).
  const CATEGORIES = [
    ['weights_bytes', '#0072B2'], ['gradients_bytes', '#E69F00'], ['optimizer_states_bytes', '#009E73'],
    ['activations_bytes', '#CC79A7'], ['logits_loss_bytes', '#D55E00'], ['temporaries_bytes', '#56B4E9'],
    ['communication_bytes', '#999999'],
  ];
  const COLOUR = Object.fromEntries(CATEGORIES);
  const OTHER = '#7f7f7f';
  /// uPlot, run on the first chart (web/assemble.mjs wraps it so that loading the page does not).
  const plotLibrary = () => (ns.uPlot ??= ns.loadUplot());
  const gibValue = (v) => (v == null ? '–' : `${v.toFixed(2)} ${format.unit.name}`);

  function themed(host) {
    const style = getComputedStyle(host);
    const colour = (name, fallback) => style.getPropertyValue(name).trim() || fallback;
    return { fg: colour('--fg', '#222'), grid: colour('--line', '#ddd'), err: colour('--err', '#b3261e') };
  }

  function axes(host, xValues, xAxis = {}) {
    const t = themed(host);
    const common = { stroke: t.fg, grid: { stroke: t.grid, width: 1 }, ticks: { stroke: t.grid } };
    return [{ ...common, values: xValues, ...xAxis }, { ...common, size: 60, values: (u, splits) => splits.map((v) => `${v} ${format.unit.name}`) }];
  }

  class Chart {
    constructor(host, height) {
      this.host = host;
      this.height = height;
      this.plot = null;
      this.observer = new ResizeObserver(() => this.plot && this.plot.setSize(this.size()));
      this.observer.observe(host);
    }
    size() { return { width: Math.max(240, Math.floor(this.host.getBoundingClientRect().width)), height: this.height }; }
    draw(opts, data) {
      this.plot?.destroy();
      this.host.replaceChildren();
      this.plot = new (plotLibrary())({ ...this.size(), ...opts }, data, this.host);
    }
    clear() {
      this.plot?.destroy();
      this.plot = null;
      this.host.replaceChildren();
    }
  }

  /// Bars of the breakdown at the peak (every non-zero category, largest first).
  function drawBreakdown(chart, breakdown) {
    const entries = Object.entries(breakdown).filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
    const names = entries.map(([k]) => format.category(k));
    const colours = entries.map(([k]) => COLOUR[k] || OTHER);
    const x = entries.map((_, i) => i);
    const y = entries.map(([, v]) => v / format.unit.bytes);
    chart.draw({
      legend: { show: false },
      scales: { x: { time: false, range: [-0.5, Math.max(0.5, entries.length - 0.5)] }, y: { range: (u, lo, hi) => [0, hi * 1.08] } },
      axes: axes(chart.host, (u, splits) => splits.map((i) => (Number.isInteger(i) ? names[i] || '' : '')), { rotate: -30, size: 84 }),
      series: [{}, {
        label: format.unit.name, value: (u, v) => gibValue(v),
        paths: plotLibrary().paths.bars({ size: [0.7, 64], disp: { fill: { unit: 3, values: () => colours }, stroke: { unit: 3, values: () => colours } } }),
        points: { show: false },
      }],
    }, [x, y]);
  }

  /// Stacked areas: series i is the sum of categories 0..i; the legend shows each category's own
  /// value. A dashed line marks the GPU's memory (`capacityBytes`), which the y axis always shows.
  function drawTimeline(chart, timeline, capacityBytes, peakIndex = -1) {
    const present = CATEGORIES.filter(([k]) => timeline.some((e) => e[k] > 0));
    const x = timeline.map((_, i) => i);
    const sums = [];
    let running = timeline.map(() => 0);
    for (const [k] of present) {
      running = running.map((v, i) => v + timeline[i][k] / format.unit.bytes);
      sums.push(running);
    }
    const own = (k) => (u, v, s, i) => (i == null ? '–' : gibValue(timeline[i][k] / format.unit.bytes));
    const series = present.map(([k, colour]) => ({
      label: format.category(k), stroke: colour, fill: colour, width: 1,
      value: own(k), points: { show: false }, paths: plotLibrary().paths.stepped({ align: 1 }),
    }));
    // Draw the tallest sum first so that each lower band paints over it.
    const order = present.map((_, i) => i).reverse();
    const phaseAt = (i) => timeline[i] && (i === 0 || timeline[i - 1].phase !== timeline[i].phase) ? timeline[i].phase : '';
    const capacity = capacityBytes / format.unit.bytes;
    const t = themed(chart.host);
    const line = { label: 'GPU memory', stroke: t.err, dash: [6, 4], width: 1.5, points: { show: false }, value: () => gibValue(capacity) };
    // The core's peak event, marked on top of the stack (no line: a point at that event only).
    const top = sums.length ? sums[sums.length - 1] : x.map(() => 0);
    const peak = { label: 'peak', stroke: t.fg, width: 0, paths: () => null, value: () => (peakIndex < 0 ? '–' : gibValue(top[peakIndex])),
      points: { show: (u, si, i0, i1) => true, size: 11, width: 2, stroke: t.fg, fill: t.err } };
    chart.host.dataset.peak = peakIndex < 0 ? '' : `${timeline[peakIndex].phase}: ${timeline[peakIndex].label}`;
    chart.draw({
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, Math.max(hi, capacity) * 1.05] } },
      axes: axes(chart.host, (u, splits) => splits.map((i) => (Number.isInteger(i) ? phaseAt(i) : ''))),
      series: [{ label: 'event', value: (u, i) => (i == null || !timeline[i] ? '–' : `${timeline[i].phase}: ${timeline[i].label}`) },
        ...order.map((i) => series[i]), line, peak],
    }, [x, ...order.map((i) => sums[i]), x.map(() => capacity), x.map((i) => (i === peakIndex ? top[i] : null))]);
  }

  ns.charts = { Chart, drawBreakdown, drawTimeline, CATEGORIES };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});
