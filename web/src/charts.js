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
    return { fg: colour('--fg', '#222'), grid: colour('--line', '#ddd'), err: colour('--err', '#b3261e'),
      muted: colour('--muted', '#555'), card: colour('--card', '#fff') };
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
      this.host.plot = this.plot;
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

  /// The step's phases as bands: consecutive spans of the core's schedule with one phase.
  function phaseBands(schedule) {
    const bands = [];
    for (const s of schedule) {
      const last = bands[bands.length - 1];
      if (last && last.phase === s.phase) {
        last.end_s = s.end_s;
        last.spans.push(s);
      } else {
        bands.push({ phase: s.phase, start_s: s.start_s, end_s: s.end_s, spans: [s] });
      }
    }
    return bands;
  }

  /// Where each time of the step sits on the x axis: as it is, except the rest of the step (the
  /// other micro-batches, the bubble, exposed communication) when it is longer than all the
  /// rest: then drawn a quarter as wide as the micro-batch and the optimizer, and marked as a break.
  function timeAxis(bands) {
    const rest = bands.find((b) => b.phase === 'rest');
    const end = bands.length ? bands[bands.length - 1].end_s : 0;
    const restS = rest ? rest.end_s - rest.start_s : 0;
    if (!rest || restS <= end - restS) return { toX: (t) => t, toT: (x) => x, broken: null, end };
    const shown = (end - restS) / 4;
    const k = shown / restS;
    const toX = (t) => (t <= rest.start_s ? t : t >= rest.end_s ? t - restS + shown : rest.start_s + (t - rest.start_s) * k);
    const toT = (x) => (x <= rest.start_s ? x : x >= rest.start_s + shown ? x + restS - shown : rest.start_s + (x - rest.start_s) / k);
    return { toX, toT, broken: rest, end };
  }

  /// Seconds as the axis shows them: ms below 2 s of step.
  const timeText = (t, end) => (end < 2 ? `${(t * 1e3).toFixed(t * 1e3 < 10 && end < 0.05 ? 1 : 0)} ms` : `${t.toFixed(2)} s`);
  const BAND_NAMES = { forward: 'forward', loss: 'loss', backward: 'backward', optimizer: 'optimizer' };

  /// Where a text box goes on the canvas (device pixels), kept inside the plot.
  function labelBox(u, text, x, y, align) {
    const px = devicePixelRatio || 1;
    u.ctx.font = `${12 * px}px system-ui, sans-serif`;
    const w = u.ctx.measureText(text).width + 6 * px;
    const h = 16 * px;
    const { left, top, width, height } = u.bbox;
    const x0 = align === 'right' ? x - w : x;
    const l = Math.min(Math.max(x0, left), left + width - w);
    const t = Math.min(Math.max(y - h / 2, top), top + height - h);
    return { text, left: l, top: t, right: l + w, bottom: t + h };
  }
  /// The box's text on a backing rectangle; returns the box in CSS pixels.
  function paintLabel(u, t, box) {
    const ctx = u.ctx;
    const px = devicePixelRatio || 1;
    ctx.font = `${12 * px}px system-ui, sans-serif`;
    ctx.fillStyle = t.card;
    ctx.globalAlpha = 0.85;
    ctx.fillRect(box.left, box.top, box.right - box.left, box.bottom - box.top);
    ctx.globalAlpha = 1;
    ctx.fillStyle = t.fg;
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'left';
    ctx.fillText(box.text, box.left + 3 * px, (box.top + box.bottom) / 2);
    return { text: box.text, left: box.left / px, top: box.top / px, right: box.right / px, bottom: box.bottom / px };
  }
  const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

  /// Behind the series: a tint per phase of the step, its name where it fits, and the break.
  function drawBands(u, bands, axis, t, microBatches) {
    const ctx = u.ctx;
    const px = devicePixelRatio || 1;
    const { top, height } = u.bbox;
    const at = (s) => u.valToPos(axis.toX(s), 'x', true);
    ctx.save();
    ctx.font = `${11 * px}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    ctx.textAlign = 'center';
    bands.forEach((b, i) => {
      const x0 = at(b.start_s);
      const x1 = at(b.end_s);
      ctx.fillStyle = t.grid;
      ctx.globalAlpha = b.phase === 'rest' ? 0.5 : i % 2 ? 0.35 : 0.18;
      ctx.fillRect(x0, top, x1 - x0, height);
      ctx.globalAlpha = 1;
      const name = b.phase === 'rest' ? (microBatches > 1 ? `${microBatches - 1} more micro-batch${microBatches > 2 ? 'es' : ''}` : 'comm., offload') : BAND_NAMES[b.phase];
      if (name && ctx.measureText(name).width + 6 * px < x1 - x0) {
        ctx.fillStyle = t.muted;
        ctx.fillText(name, (x0 + x1) / 2, top + 3 * px);
      }
    });
    if (axis.broken) {
      const x0 = at(axis.broken.start_s);
      const x1 = at(axis.broken.end_s);
      ctx.strokeStyle = t.muted;
      ctx.lineWidth = px;
      ctx.beginPath();
      for (let x = x0 - height; x < x1; x += 8 * px) {
        ctx.moveTo(Math.max(x, x0), top + height - Math.max(0, x0 - x));
        ctx.lineTo(Math.min(x + height, x1), top + height - Math.min(height, x1 - x));
      }
      ctx.globalAlpha = 0.25;
      ctx.stroke();
      ctx.globalAlpha = 1;
    }
    ctx.restore();
  }

  /// Over the series, along the time axis: a tick at each layer's start (the core's runs of
  /// identical layers, drawn as that many equal slices) where they are 3 px apart or more.
  function drawLayerTicks(u, schedule, axis, t) {
    const ctx = u.ctx;
    const px = devicePixelRatio || 1;
    const bottom = u.bbox.top + u.bbox.height;
    const at = (s) => u.valToPos(axis.toX(s), 'x', true);
    ctx.save();
    ctx.strokeStyle = t.fg;
    ctx.globalAlpha = 0.6;
    ctx.lineWidth = px;
    ctx.beginPath();
    for (const s of schedule) {
      const step = (at(s.end_s) - at(s.start_s)) / s.layers;
      if (s.layers < 1 || step < 3 * px) continue;
      for (let k = 0; k <= s.layers; k += 1) {
        ctx.moveTo(at(s.start_s) + k * step, bottom);
        ctx.lineTo(at(s.start_s) + k * step, bottom - 6 * px);
      }
    }
    ctx.stroke();
    ctx.restore();
  }

  /// Stacked areas against the step's time (each event where the core's step-time model places
  /// it: `start_s`, `end_s`); series i is the sum of categories 0..i. Phases of the step behind
  /// them, a dashed line at the GPU's memory (`capacityBytes`) and the core's peak event marked,
  /// both labelled on the chart; the legend shows the peak's values until a point is hovered.
  /// `peak`: the core's peak event (`index` in the timeline, -1: none), its allocated bytes and its name;
  /// a peak in a later, accumulating micro-batch is marked at the same event of the one shown.
  function drawTimeline(chart, timeline, schedule, capacityBytes, peak, microBatches = 1) {
    const peakIndex = peak.index;
    const present = CATEGORIES.filter(([k]) => timeline.some((e) => e[k] > 0));
    const bands = phaseBands(schedule);
    const axis = timeAxis(bands);
    // Each event's span as two points (one where it takes no time); the line breaks over the
    // other micro-batches, which the timeline does not replay.
    const xs = [];
    const eventAt = [];
    const gapAt = microBatches > 1 ? bands.find((b) => b.phase === 'rest') : null;
    timeline.forEach((e, i) => {
      if (gapAt && e.start_s >= gapAt.end_s && !eventAt.includes(null)) {
        xs.push(axis.toX((gapAt.start_s + gapAt.end_s) / 2));
        eventAt.push(null);
      }
      xs.push(axis.toX(e.start_s));
      eventAt.push(i);
      if (e.end_s > e.start_s) {
        xs.push(axis.toX(e.end_s));
        eventAt.push(i);
      }
    });
    const sums = [];
    let running = eventAt.map(() => 0);
    for (const [k] of present) {
      running = running.map((v, j) => (eventAt[j] == null ? null : v + timeline[eventAt[j]][k] / format.unit.bytes));
      sums.push(running);
    }
    const shownEvent = (i) => (i == null ? peakIndex : eventAt[i]);
    const own = (k) => (u, v, s, i) => { const e = timeline[shownEvent(i)]; return e ? gibValue(e[k] / format.unit.bytes) : '–'; };
    const series = present.map(([k, colour]) => ({
      label: format.category(k), stroke: colour, fill: colour, width: 1, value: own(k), points: { show: false },
    }));
    // Draw the tallest sum first so that each lower band paints over it.
    const order = present.map((_, i) => i).reverse();
    const capacity = capacityBytes / format.unit.bytes;
    const t = themed(chart.host);
    const line = { label: 'GPU memory', stroke: t.err, dash: [6, 4], width: 1.5, points: { show: false }, value: () => gibValue(capacity) };
    const top = sums.length ? sums[sums.length - 1] : xs.map(() => 0);
    const peakPoint = eventAt.indexOf(peakIndex);
    const peakValue = peakPoint < 0 ? null : peak.bytes / format.unit.bytes;
    const peakSeries = { label: 'peak', stroke: t.fg, width: 0, paths: () => null, value: () => gibValue(peakValue),
      points: { show: true, size: 11, width: 2, stroke: t.fg, fill: t.err } };
    const peakEvent = timeline[peakIndex];
    chart.host.dataset.peak = peakEvent ? peak.name : '';
    const capacityText = `GPU memory ${gibValue(capacity)}`;
    const peakText = peakEvent ? `peak ${gibValue(peakValue)} · ${peak.name}` : '';
    chart.host.setAttribute('aria-label', timelineText(timeline, bands, axis.end, capacityText, peakText, peakEvent, microBatches));
    const drawLabels = (u) => {
      const px = devicePixelRatio || 1;
      drawLayerTicks(u, schedule, axis, t);
      // Below the line: the phases' names are above it.
      const capacityBox = labelBox(u, capacityText, u.bbox.left + u.bbox.width - 4 * px, u.valToPos(capacity, 'y', true) + 11 * px, 'right');
      const boxes = [paintLabel(u, t, capacityBox)];
      if (peakPoint >= 0) {
        const x = u.valToPos(xs[peakPoint], 'x', true);
        const y = u.valToPos(peakValue, 'y', true);
        // The whole text where it fits beside the dot, on its right or left; else the bytes alone.
        const room = { right: u.bbox.left + u.bbox.width - x - 10 * px, left: x - 10 * px - u.bbox.left };
        const widthOf = (text) => { const b = labelBox(u, text, 0, 0, 'left'); return b.right - b.left; };
        const text = widthOf(peakText) <= Math.max(room.right, room.left) ? peakText : `peak ${gibValue(peakValue)}`;
        const right = widthOf(text) <= room.right;
        const place = (dy) => labelBox(u, text, right ? x + 10 * px : x - 10 * px, y + dy, right ? 'left' : 'right');
        let box = place(-12 * px);
        if (overlaps(box, capacityBox)) box = place(y > u.valToPos(capacity, 'y', true) ? 14 * px : -26 * px);
        boxes.push(paintLabel(u, t, box));
      }
      chart.host.dataset.labels = JSON.stringify({ width: u.ctx.canvas.width / px, height: u.ctx.canvas.height / px, boxes });
    };
    chart.draw({
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: false, range: [0, axis.toX(axis.end)] }, y: { range: (u, lo, hi) => [0, Math.max(hi, capacity) * 1.12] } },
      axes: axes(chart.host, (u, splits) => splits.map((x) => (axis.broken && x > axis.toX(axis.broken.start_s) && x < axis.toX(axis.broken.end_s) ? '' : timeText(axis.toT(x), axis.end))),
        { label: 'time in the step', labelSize: 20, labelFont: '12px system-ui, sans-serif' }),
      series: [{ label: 'event', value: (u, x, s, i) => { const e = timeline[shownEvent(i)]; return e ? `${e.phase}: ${e.label} · ${timeText(e.start_s, axis.end)}` : '–'; } },
        ...order.map((i) => series[i]), line, peakSeries],
      hooks: { drawClear: [(u) => drawBands(u, bands, axis, t, microBatches)], draw: [drawLabels] },
    }, [xs, ...order.map((i) => sums[i]), xs.map(() => capacity), xs.map((_, j) => (j === peakPoint ? peakValue : null))]);
    chart.host.dataset.x = JSON.stringify(xs.map((x, j) => (eventAt[j] == null ? null : [eventAt[j], x])).filter(Boolean));
  }

  /// The chart in words (its text alternative): the phases with their times, the peak and the GPU's memory.
  function timelineText(timeline, bands, end, capacityText, peakText, peakEvent, microBatches) {
    const phases = bands.map((b) => {
      const name = b.phase === 'rest' ? (microBatches > 1 ? `${microBatches - 1} more micro-batches and communication` : 'exposed communication and offload') : b.phase;
      const layers = b.spans.filter((s) => s.layers > 0).map((s) => s.label).join(', ');
      return `${name} ${timeText(b.start_s, end)}–${timeText(b.end_s, end)}${layers ? ` (${layers})` : ''}`;
    });
    const at = peakEvent ? ` at ${timeText(peakEvent.start_s, end)}` : '';
    return `Allocated memory over one training step of ${timeText(end, end)}: ${phases.join('; ')}. ${peakText}${at}; ${capacityText}.`;
  }

  ns.charts = { Chart, drawBreakdown, drawTimeline, CATEGORIES };
})(globalThis.memfitWeb = globalThis.memfitWeb || {});
