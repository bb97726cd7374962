#!/usr/bin/env bash
# Benchmarks (print numbers, assert nothing): native api calls per model preset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh native >/dev/null
build-native/memfit_bench "${1:-2000}"
