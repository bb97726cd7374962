#!/usr/bin/env bash
# Sets up and runs every test: native Catch2 suite (ctest), then the WASM module, CLI and page
# under Node's test runner (node --test, with Debian's Chromium for the page).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh all
ctest --test-dir build-native --output-on-failure -j "$(nproc)" | tail -n 15
node --test tests/node/
