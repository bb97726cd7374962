#!/usr/bin/env bash
# Sets up and runs every test: native Catch2 suite (ctest), the GPU measurement harness's
# dry run and unit tests (standard library only), then the WASM module, CLI and page under
# Node's test runner (node --test, with Debian's Chromium for the page).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh all
ctest --test-dir build-native --output-on-failure -j "$(nproc)" | tail -n 15
python3 -m unittest discover -s tools/measure -p "test_*.py"
python3 tools/measure/measure.py --dry-run tools/measure/campaign.csv --configs tests/validation/configs | tail -n 1
node --test tests/node/
