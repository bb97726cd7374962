// Writes the seed corpora of the fuzz targets into <out>/<target>/ (scripts/fuzz.sh): the preset
// and validation configs for inspect_config, preset and config requests for inspect, the
// calibration rows and generated requests for estimate and launch, and search requests made from
// them. Usage: node tests/fuzz/make_corpus.mjs <out>
import { mkdirSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { root } from '../node/helpers.mjs';
import { calibrationRequests, configTexts, modelIds, randomRequests, rng, searchRequestOf } from '../node/corpus.mjs';

const out = process.argv[2];
if (!out) throw new Error('usage: node tests/fuzz/make_corpus.mjs <out>');
const seeds = { inspect_config: [], inspect: [], estimate: [], search: [], launch: [] };

const presetConfigs = readdirSync(`${root}presets/models`).filter((f) => f.endsWith('.json')).sort()
  .map((f) => readFileSync(`${root}presets/models/${f}`, 'utf8'));
seeds.inspect_config.push(...presetConfigs, ...configTexts.map((c) => c.text));
seeds.inspect.push(...modelIds.map((id, i) => JSON.stringify({ model: { preset: id }, include_tensors: i % 4 === 0 })));
seeds.inspect.push(...configTexts.slice(0, 20).map((c) => JSON.stringify({ model: { config: JSON.parse(c.text) } })));

const requests = [...calibrationRequests(), ...randomRequests(200, 8)];
seeds.estimate.push(...requests.map((r) => JSON.stringify(r)));
seeds.launch.push(...requests.filter((r) => r.parallel).map((r) => JSON.stringify(r)));
const r = rng(9);
seeds.search.push(...requests.filter((_, i) => i % 3 === 0).map((q) => JSON.stringify(searchRequestOf(q, r))));

for (const [target, list] of Object.entries(seeds)) {
  mkdirSync(`${out}/${target}`, { recursive: true });
  list.forEach((text, i) => writeFileSync(`${out}/${target}/seed-${String(i).padStart(4, '0')}.json`, text));
  console.log(`${target}: ${list.length} seeds`);
}
