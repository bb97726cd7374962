#!/usr/bin/env bash
# Builds memfit: native core + tests (build-native/) and the WebAssembly module with the page
# (build-wasm/site/). Incremental. Usage: scripts/build.sh [native|wasm|all]
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
JOBS="${JOBS:-$(nproc)}"
# Debian's emcc runs acorn-optimizer.js at -O2+, which needs Debian's node modules on the path
# when node is not Debian's (docs/toolchain.md, workaround 1).
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"

if [ "$what" = native ] || [ "$what" = all ]; then
  [ -f build-native/CMakeCache.txt ] || cmake -S . -B build-native -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-native -j "$JOBS"
fi
if [ "$what" = wasm ] || [ "$what" = all ]; then
  [ -f build-wasm/CMakeCache.txt ] || emcmake cmake -S . -B build-wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-wasm -j "$JOBS"
fi
