#!/usr/bin/env bash
# Benchmarks (print numbers, assert nothing): the estimator natively and as WebAssembly under
# Node, for 70B / 405B / DeepSeek-V3 presets.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh all >/dev/null
build-native/memfit_bench "${1:-2000}"
node tools/bench/bench_wasm.mjs "${2:-200}"
node tools/bench/page_bench.mjs "${3:-7}"
