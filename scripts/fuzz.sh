#!/usr/bin/env bash
# Fuzzes every api entry point with libFuzzer (clang 14, AddressSanitizer + UBSan) for the given
# time each, one target after the other, and prints executions and findings per target.
# Usage: scripts/fuzz.sh [seconds_per_target=60] [target ...]
#   targets: inspect_config inspect estimate search launch (default: all)
# Build: build-fuzz/ (CMake option MEMFIT_FUZZ). Corpus kept between runs in build-fuzz/corpus/,
# seeds regenerated from the repo (tests/fuzz/make_corpus.mjs), findings (crash-*, timeout-*,
# oom-*) written to build-fuzz/findings/<target>/. Keep each one as a regression:
# tests/fuzz/regressions/<target>/ (replayed by tests/unit/api/fuzz_regression_test.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(inspect_config inspect estimate search launch)

bash scripts/setup.sh fuzz
if [ ! -f build-fuzz/CMakeCache.txt ]; then
  CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMFIT_FUZZ=ON >/dev/null
fi
cmake --build build-fuzz -j "${JOBS:-1}" >/dev/null
rm -rf build-fuzz/seeds
node tests/fuzz/make_corpus.mjs build-fuzz/seeds >/dev/null

rows=()
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t" findings="build-fuzz/findings/$t" log="build-fuzz/fuzz-$t.log"
  mkdir -p "$corpus" "$findings" "tests/fuzz/regressions/$t"
  before=$(find "$findings" -type f | wc -l)
  # Fork mode with one job: a finding is saved and fuzzing goes on until the time is up.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "./build-fuzz/fuzz_$t" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -dict=tests/fuzz/memfit.dict -artifact_prefix="$findings/" -print_final_stats=1 \
      "$corpus" build-fuzz/seeds/"$t" "tests/fuzz/regressions/$t" >"$log" 2>&1 || true
  # Fork mode's status lines: "#<execs>: cov: … oom/timeout/crash: a/b/c time: …".
  last=$(grep -E '^#[0-9]+: cov:' "$log" | tail -n 1 || true)
  execs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  otc=$(sed -E 's#.*oom/timeout/crash: ([0-9]+)/([0-9]+)/([0-9]+).*#\3 \2 \1#' <<<"$last")
  read -r crashes timeouts ooms <<<"${otc:-? ? ?}"
  new=$(( $(find "$findings" -type f | wc -l) - before ))
  rows+=("$(printf '%-15s %8s %12s %8s %9s %6s %10s' "$t" "$secs" "${execs:-?}" "$crashes" "$timeouts" "$ooms" "$new")")
done
printf '%-15s %8s %12s %8s %9s %6s %10s\n' target seconds executions crashes timeouts ooms new_files
printf '%s\n' "${rows[@]}"
echo "findings: build-fuzz/findings/<target>/; logs: build-fuzz/fuzz-<target>.log"
