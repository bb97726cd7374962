// A fixed request corpus for byte-identity checks across a refactoring: estimates (the calibration
// rows and seeded random requests, some with activation offload or under other accountings),
// launches and searches, one "<entry> <json>" line each, for `memfit_native batch`.
// Usage: node tools/bench/answer_corpus.mjs > corpus.txt
//        build-native/memfit_native batch < corpus.txt | sha256sum   (before and after; diff the lines)
import { calibrationRequests, randomRequests, rng, searchRequestOf } from '../../tests/node/corpus.mjs';

const r = rng(30);
const requests = [...calibrationRequests(), ...randomRequests(600, 30)];
// Every fifth multi-GPU request again with activation offload (the step time moves what memory keeps).
const offloaded = requests.filter((q) => q.parallel).filter((_, i) => i % 5 === 0)
  .map((q) => ({ ...q, training: { ...q.training, offload: 'activations' } }));
const lines = [];
for (const q of [...requests, ...offloaded]) lines.push(['estimate', q]);
for (const q of requests.filter((x) => x.parallel).slice(0, 80)) lines.push(['launch', q]);
for (const q of requests.slice(-60)) lines.push(['search', searchRequestOf(q, r)]);
process.stdout.write(lines.map(([entry, q]) => `${entry} ${JSON.stringify(q)}`).join('\n') + '\n');
