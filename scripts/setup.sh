#!/usr/bin/env bash
# Installs what memfit needs on Debian 12, idempotently: compilers, emscripten, nlohmann-json,
# Catch2, Chromium (for the page tests) from Debian; playwright-core, axe-core, uPlot and yaml from npm (lockfile, no
# browser download). Safe to run again: it installs only what is missing.
# `setup.sh fuzz` also installs clang 14 and libFuzzer for scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

PKGS="cmake g++ make python3 emscripten nlohmann-json3-dev catch2 chromium"
# scripts/fuzz.sh also needs clang 14 and its libFuzzer runtime (not the test command).
if [ "${1:-}" = fuzz ]; then PKGS="$PKGS clang-14 libclang-rt-14-dev"; fi
missing=""
for p in $PKGS; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
# Node: keep a preinstalled one (e.g. nodesource 20, which bundles npm); else Debian's.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# npm packages, pinned by package-lock.json; reinstalled only when the lockfile changed.
if ! cmp -s package-lock.json node_modules/.memfit-lock 2>/dev/null; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.memfit-lock
fi
