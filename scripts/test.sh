#!/usr/bin/env bash
# Sets up and runs every test: native Catch2 suite (ctest), the same suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, test binary only), the GPU
# measurement harness's dry run and unit tests (standard library only), then the WASM module,
# CLI and page under Node's test runner (node --test, with Debian's Chromium for the page).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh all
ctest --test-dir build-native --output-on-failure -j "$(nproc)" | tail -n 15
# Sanitizers: -O1 keeps the build short; any report fails the run (docs/hardening.md).
[ -f build-asan/CMakeCache.txt ] || cmake -S . -B build-asan -DMEMFIT_SANITIZE=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" >/dev/null
cmake --build build-asan -j "${JOBS:-$(nproc)}" --target memfit_tests
if ! ASAN_OPTIONS=halt_on_error=1:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" >build-asan/ctest.log 2>&1; then
  cat build-asan/ctest.log; exit 1
fi
tail -n 3 build-asan/ctest.log
python3 -m unittest discover -s tools/measure -p "test_*.py"
python3 -m unittest discover -s tools/oracle -p "test_*.py"  # skipped without torch (CI); run in tools/oracle/.venvs
python3 tools/measure/measure.py --dry-run tools/measure/campaign.csv --configs tests/validation/configs | tail -n 1
python3 tools/measure/measure.py --dry-run tools/measure/gpu_check.csv --configs tests/validation/configs | tail -n 1
node --test tests/node/
