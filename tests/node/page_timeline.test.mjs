// The memory timeline as a chart that helps decide (issue 33): live bytes against the step's time
// as the core's step-time model places each event (start_s, end_s), the step's phases and layers
// visible, the GPU's memory and the peak marked and labelled inside the chart, and the chart in words.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { env, useBrowser, open, settled, assertMatchesCli, axeViolations, skip, SHOTS } from './browser.mjs';

useBrowser();

const at = (hash) => `${env.baseUrl}/index.html#${new URLSearchParams(hash)}`;
const oneGpu = { model: 'meta-llama/Llama-3.2-1B-Instruct', gpus: '1', per_node: '1', micro_batch: '2', grad_accum: '1' };

/// What the chart drew: each event's x values, the label boxes, the series and the text alternative.
const drawn = (page) => page.$eval('#timeline-chart', (host) => ({
  x: JSON.parse(host.dataset.x), labels: JSON.parse(host.dataset.labels), aria: host.getAttribute('aria-label'),
  series: host.plot.data.slice(1), ticks: [...host.querySelectorAll('.u-axis')].map((a) => a.textContent) }));

/// Each label inside the canvas.
function assertInside(labels, where) {
  for (const b of labels.boxes) {
    assert.ok(b.left >= 0 && b.top >= 0 && b.right <= labels.width && b.bottom <= labels.height, `${where}: ${JSON.stringify(b)} in ${labels.width}x${labels.height}`);
  }
}

test('timeline: events on the core\'s time axis, not at equal widths; capacity and peak labelled; the chart in words; axe finds nothing', { skip }, async () => {
  const page = await open(at(oneGpu));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  assert.equal(result.training.grad_accum, 1);
  const tl = result.timeline;
  assert.ok(tl.every((e) => e.end_s >= e.start_s && e.start_s >= 0), 'the core times every event');
  const chart = await drawn(page);
  // Every event at the core's times: its start, and its end where it takes time.
  const expected = tl.flatMap((e, i) => (e.end_s > e.start_s ? [[i, e.start_s], [i, e.end_s]] : [[i, e.start_s]]));
  assert.equal(chart.x.length, expected.length);
  chart.x.forEach(([i, x], j) => {
    assert.equal(i, expected[j][0]);
    assert.ok(Math.abs(x - expected[j][1]) <= 1e-12 * result.perf.step_time_s, `${tl[i].label}: ${x} vs ${expected[j][1]}`);
    if (j > 0) assert.ok(x >= chart.x[j - 1][1], 'monotone in time');
  });
  // Not equal widths: the forward of 15 layers before the last one's event takes far longer than the loss.
  const starts = tl.map((e) => e.start_s);
  const gaps = starts.slice(1).map((s, i) => s - starts[i]).filter((g) => g > 0);
  assert.ok(Math.max(...gaps) > 5 * Math.min(...gaps), gaps.join());
  const forward = tl.find((e) => e.phase === 'forward' && e.layer >= 0);
  assert.ok(forward.start_s > 10 * (forward.end_s - forward.start_s) * 0.9, 'the group event is its last layer');
  // The step's phases from the core's schedule, the optimizer ending the step.
  const phases = [...new Set(result.step_schedule.map((s) => s.phase))];
  assert.deepEqual(phases.filter((p) => p !== 'rest'), ['forward', 'loss', 'backward', 'optimizer']);
  assert.ok(Math.abs(result.step_schedule.at(-1).end_s - result.perf.step_time_s) <= 1e-9 * result.perf.step_time_s);
  // Capacity and peak labelled inside the canvas with their values.
  const gib2 = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  const texts = chart.labels.boxes.map((b) => b.text);
  assert.equal(texts[0], `GPU memory ${gib2(result.fit.gpu_memory_bytes)}`);
  const peakAt = tl.findIndex((t) => t.phase === result.peak.phase && t.label === result.peak.label && t.layer === result.peak.layer);
  assert.equal(result.peak_tensor_bytes, tl[peakAt].live_bytes);
  assert.equal(texts[1], `peak ${gib2(result.peak_tensor_bytes)} · ${result.peak.phase}: ${result.peak.label}`);
  assertInside(chart.labels, '1280');
  // The peak marker sits on the peak event's start.
  const marker = chart.series.at(-1);
  const markerAt = marker.findIndex((v) => v != null);
  assert.deepEqual(chart.x[markerAt], [peakAt, tl[peakAt].start_s]);
  // In words: the phases with their times, the peak and the capacity.
  for (const word of ['forward', 'loss', 'backward', 'optimizer', `peak ${gib2(tl[peakAt].live_bytes)}`, `GPU memory ${gib2(result.fit.gpu_memory_bytes)}`, 'layers 0-15']) {
    assert.ok(chart.aria.includes(word), `${word} in: ${chart.aria}`);
  }
  // The legend shows the peak's values before any hover (touch screens).
  const legendActivations = await page.$eval('#timeline-chart .u-legend', (l) => [...l.querySelectorAll('tr')].find((tr) => tr.querySelector('th')?.textContent === 'activations')?.querySelector('td')?.textContent);
  assert.equal(legendActivations, gib2(tl[peakAt].activations_bytes));
  assert.deepEqual(await axeViolations(page), []);
  for (const width of [1280, 390]) {
    await page.setViewportSize({ width, height: width === 390 ? 844 : 900 });
    await page.waitForTimeout(200);
    assertInside((await drawn(page)).labels, `${width}`);
    await page.locator('section[aria-labelledby="timeline-h"]').screenshot({ path: join(SHOTS, `timeline-${width}.png`) });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.reload();
  await settled(page);
  assert.deepEqual(await axeViolations(page), [], 'dark');
  await page.locator('section[aria-labelledby="timeline-h"]').screenshot({ path: join(SHOTS, 'timeline-1280-dark.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('timeline of a run that does not fit: the peak above the GPU\'s memory, both labelled apart', { skip }, async () => {
  const page = await open(at({ model: 'meta-llama/Llama-3.1-8B', gpus: '1', per_node: '1', micro_batch: '8', grad_accum: '1' }));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  assert.equal(result.fit.verdict, 'oom');
  const chart = await drawn(page);
  const [capacity, peak] = chart.labels.boxes;
  assert.ok(!(capacity.left < peak.right && peak.left < capacity.right && capacity.top < peak.bottom && peak.top < capacity.bottom), JSON.stringify(chart.labels));
  assertInside(chart.labels, 'oom');
  await page.locator('section[aria-labelledby="timeline-h"]').screenshot({ path: join(SHOTS, 'timeline-oom-1280.png') });
  await page.close();
});

test('timeline with accumulation: the other micro-batches drawn as a narrow break, the line broken over them', { skip }, async () => {
  const page = await open(at({ ...oneGpu, micro_batch: '1', grad_accum: '16' }));
  await settled(page);
  const { result } = await assertMatchesCli(page);
  assert.equal(result.training.grad_accum, 16);
  const rest = result.step_schedule.find((s) => s.phase === 'rest');
  assert.ok(rest && rest.end_s - rest.start_s > 10 * rest.start_s, JSON.stringify(rest));
  const chart = await drawn(page);
  const optimizer = result.timeline.findIndex((e) => e.phase === 'optimizer');
  const optimizerX = chart.x.find(([i]) => i === optimizer)[1];
  // Compressed: the optimizer sits a quarter of the step's other parts after the micro-batch.
  const others = result.perf.step_time_s - (rest.end_s - rest.start_s);
  assert.ok(Math.abs(optimizerX - (rest.start_s + others / 4)) <= 1e-9 * result.perf.step_time_s, `${optimizerX}`);
  assert.ok(chart.series[0].includes(null), 'the line breaks over the micro-batches not replayed');
  assert.ok(chart.aria.includes('15 more micro-batches'), chart.aria);
  // The peak, in whichever micro-batch, marked and labelled with the core's bytes.
  const gib2 = (b) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  assert.equal(chart.labels.boxes[1].text, `peak ${gib2(result.peak_tensor_bytes)} · ${result.peak.phase}: ${result.peak.label}`);
  assertInside(chart.labels, 'accumulation');
  await page.locator('section[aria-labelledby="timeline-h"]').screenshot({ path: join(SHOTS, 'timeline-accumulation-1280.png') });
  assert.deepEqual(await axeViolations(page), []);
  await page.close();
});
