#!/usr/bin/env bash
# The trainer runs (tools/measure/trainer_gpu.py) in one device call, inside a time budget; results under $OUT.
#
#   OUT=/some/dir bash tools/measure/trainer_gpu.sh          # on the GPU machine, .whl/trlset carried
#   OUT=/tmp/dry TRAINER_GPU_DRY=1 TRAINER_GPU_PYTHON=tools/oracle/.venvs/y2026_05/bin/python \
#     bash tools/measure/trainer_gpu.sh                      # dry run here: tiny model, cpu, gloo
#
# TRAINER_GPU_ONLY: a regex of case ids (a rerun of some cases). A case's "versions": "benchmark" (default) or
# "device" (the GPU image's own transformers/accelerate, no TRL). The benchmark versions are the TRL SFT benchmark's own (trl 1.4.0, accelerate 1.13.0, transformers 5.8.0, datasets 5.2.0),
# carried as wheels in .whl/trlset (trainer_gpu_prep.sh); torch is the device's. Cases with "layout": "deepspeed" also
# need .whl/dsset (DeepSpeed 0.19.8 built with DS_BUILD_OPS=0, its dependencies for the device's Python 3.12).
# $OUT afterwards: summary.json (every case's counters), logs.tar.gz (each case's JSON log and console),
# <case>.snapshot.pickle.gz (memory history from step 2 on, for the cases with "history").
set -u -o pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
: "${OUT:?set OUT to the folder whose files come back}"
budget_s="${TRAINER_GPU_BUDGET_S:-420}"
case_timeout_s="${TRAINER_GPU_CASE_TIMEOUT_S:-120}"
python="${TRAINER_GPU_PYTHON:-python3}"
dry="${TRAINER_GPU_DRY:-}"
export PYTHONUNBUFFERED=1
started=$(date +%s)
work="$(mktemp -d)"
mkdir -p "$OUT" "$work/logs"
if [ -z "$dry" ]; then
  site=/tmp/trlsite
  "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    "$repo"/.whl/trlset/*.whl || exit 3
  if [ -d "$repo/.whl/dsset" ]; then  # DeepSpeed 0.19.8 (built without ops: DS_BUILD_OPS=0) and its pure deps
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
      "$repo"/.whl/dsset/*.whl || exit 3
  fi
  nvidia-smi >"$work/logs/nvidia-smi.txt" 2>&1
fi
while read -r line; do
  id=$(printf '%s' "$line" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  if [ -n "${TRAINER_GPU_ONLY:-}" ] && ! [[ "$id" =~ ^(${TRAINER_GPU_ONLY})$ ]]; then continue; fi
  left=$((budget_s - ($(date +%s) - started)))
  if [ "$left" -lt 45 ]; then echo "$id: skipped, ${left}s left"; continue; fi
  limit=$((left < case_timeout_s ? left : case_timeout_s))
  case=$(printf '%s' "$line" | DRY="$dry" REPO="$repo" "$python" -c '
import json, os, sys
case = {"model": "Qwen/Qwen3-4B", "attention": "sdpa", "micro_batch": 1, "steps": 3,
        "activation_checkpointing": "full", "use_reentrant": True}
case.update(json.load(sys.stdin))
case["config_path"] = os.environ["REPO"] + "/tests/validation/configs/" + case["model"].replace("/", "__") + ".json"
if os.environ["DRY"]:
    case.update(seq_len=256, steps=2, history=False, config_overrides={"num_hidden_layers": 2, "hidden_size": 256,
                "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
                "vocab_size": 1000})
print(json.dumps(case))')
  device=cuda; [ -n "$dry" ] && device=cpu
  versions=$(printf '%s' "$case" | "$python" -c 'import json,sys; print(json.load(sys.stdin).get("versions", "benchmark"))')
  path="${site:-}"; [ "$versions" = device ] && path=""
  PYTHONPATH="$path" timeout "$limit" "$python" "$here/trainer_gpu.py" "$case" --out "$work/logs" --device "$device" \
    >"$work/logs/$id.out.txt" 2>&1
  echo "$id: exit $? after $(($(date +%s) - started)) s: $(tail -1 "$work/logs/$id.out.txt" | cut -c1-400)"
done <"$here/trainer_gpu_cases.jsonl"
"$python" - "$work/logs" "$OUT/summary.json" <<'PY'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    r = json.load(open(path))
    rows.append({k: r.get(k) for k in ("case", "status", "error", "versions", "gpu", "setup_peak", "run_peak",
                                       "steps", "nvml", "allocator_stats", "optimizer", "param_dtypes",
                                       "params_sharded", "params_sharded_after", "distributed_type",
                                       "optimizer_state_dtypes", "deepspeed", "wall_s")})
json.dump(rows, open(sys.argv[2], "w"), indent=1)
GIB = 1 << 30
for r in rows:
    peak, nvml = r.get("run_peak") or {}, (r.get("nvml") or {}).get("peak", 0)
    print(r["case"]["id"], r["status"], {k: round(v / GIB, 3) for k, v in peak.items()}, "nvml", round(nvml / GIB, 3))
PY
for snapshot in "$work"/logs/*.snapshot.pickle; do
  [ -e "$snapshot" ] || continue
  gzip -c "$snapshot" >"$OUT/$(basename "$snapshot").gz" && rm "$snapshot"
done
tar -czf "$OUT/logs.tar.gz" -C "$work" logs
ls -la "$OUT"
echo "trainer_gpu: done after $(($(date +%s) - started)) s"
