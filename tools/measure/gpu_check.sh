#!/usr/bin/env bash
# The GPU cross-check in one device call: every case of tools/measure/gpu_check.csv through
# measure.py, inside a time budget, everything the call brings back written under $OUT.
#
#   OUT=/some/dir bash tools/measure/gpu_check.sh
#
# Environment: OUT (required), GPU_CHECK_BUDGET_S (seconds for the cases, default 480),
# GPU_CHECK_PYTHON (the interpreter with torch, default python3), GPU_CHECK_CASES (default
# tools/measure/gpu_check.csv), GPU_CHECK_CASE_TIMEOUT_S (one case at most, default 150),
# GPU_CHECK_ONLY (a regex of case ids, for a rerun of some cases).
# bitsandbytes for the QLoRA cases comes from .whl/site when present (gpu_check_prep.sh).
#
# $OUT afterwards (the device tool returns at most 8 files, 16 MiB each, 2 folders deep):
#   measured.csv                   FORMAT rows, three per measured case
#   summary.txt                    the per-case table (also printed)
#   logs.tar.gz                    logs/<case>.json, logs/<case>.out.txt, console.txt, nvidia-smi.txt
#   <case>.snapshot.pickle.gz      memory history of one step, for the record_history=1 cases
set -u -o pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
: "${OUT:?set OUT to the folder whose files come back}"
budget_s="${GPU_CHECK_BUDGET_S:-480}"
python="${GPU_CHECK_PYTHON:-python3}"
cases="${GPU_CHECK_CASES:-$repo/tools/measure/gpu_check.csv}"
case_timeout_s="${GPU_CHECK_CASE_TIMEOUT_S:-150}"
pack_reserve_s=15           # packing and the limits check, kept out of the cases' budget
max_out_files=8
max_file_bytes=$((16 * 1024 * 1024))

export PYTHONUNBUFFERED=1
# Every case states its own allocator settings (alloc_conf); nothing may leak in from outside.
unset PYTORCH_CUDA_ALLOC_CONF PYTORCH_ALLOC_CONF
if [ -d "$repo/.whl/site" ]; then
  export PYTHONPATH="$repo/.whl/site${PYTHONPATH:+:$PYTHONPATH}"
fi

started=$(date +%s)
work="$(mktemp -d)"
mkdir -p "$OUT" "$work/logs" "$work/snapshots"
console="$work/logs/console.txt"

{
  echo "gpu_check: $(date -u +%FT%TZ), budget ${budget_s}s, cases $cases"
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv 2>&1 || true
} | tee "$console"
nvidia-smi >"$work/logs/nvidia-smi.txt" 2>&1 || true

left=$((budget_s - ($(date +%s) - started) - pack_reserve_s))
only=()
[ -n "${GPU_CHECK_ONLY:-}" ] && only=(--only "$GPU_CHECK_ONLY")
python3 "$here/measure.py" "$cases" "${only[@]}" --force --python "$python" \
  --out "$work/measured.csv" --logs "$work/logs" --snapshots "$work/snapshots" \
  --summary "$work/summary.txt" --budget "$left" --timeout "$case_timeout_s" 2>&1 | tee -a "$console"
status=$?

# Pack: the two tables as they are, every log in one archive, the snapshots beside them.
[ -f "$work/measured.csv" ] && cp "$work/measured.csv" "$OUT/"
[ -f "$work/summary.txt" ] && cp "$work/summary.txt" "$OUT/"
tar -czf "$OUT/logs.tar.gz" -C "$work" logs
for snapshot in "$work"/snapshots/*.snapshot.pickle.gz; do
  [ -e "$snapshot" ] || continue
  if [ "$(stat -c %s "$snapshot")" -le "$max_file_bytes" ]; then
    cp "$snapshot" "$OUT/"
  else
    echo "gpu_check: left out $(basename "$snapshot"): over 16 MiB" | tee -a "$OUT/summary.txt"
  fi
done

# The tool's limits, checked rather than assumed: too many or too large files are reported.
count=$(find "$OUT" -type f | wc -l)
too_large=$(find "$OUT" -type f -size +"$max_file_bytes"c | tr '\n' ' ')
echo "gpu_check: $count files under \$OUT (at most $max_out_files)${too_large:+; over 16 MiB: $too_large}"
[ "$count" -le "$max_out_files" ] && [ -z "$too_large" ] || status=4
# 0 every case measured; 1 some failed or were skipped for time; 2 invalid cases; 4 $OUT over limits
echo "gpu_check: exit $status after $(($(date +%s) - started)) s"
rm -rf "$work"
exit "$status"
