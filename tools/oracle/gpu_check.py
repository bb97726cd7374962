#!/usr/bin/env python3
"""The GPU cross-check's cases (tools/measure/gpu_check.csv) through the oracle, in the device's versions.

    python3 tools/oracle/gpu_check.py [--setup]

Runs every case the oracle can run (bf16 or fp32 weights, no quantised base: amp_bf16 needs CUDA's autocast policy
and QLoRA bitsandbytes on fake tensors, docs/oracle.md) in version set `gpu_2026_11` (envs/gpu_2026_11.txt, the
torch / transformers / PEFT the device ran), with the measured loop's choices: `outputs` released after backward,
non-reentrant checkpointing, three steps, full-depth models. Writes tests/oracle/gpu_check_records.jsonl (one
record per case, as run.py's) and tests/oracle/gpu_check_allocated.json ({case id: peak allocated GiB}) for
`tools/measure/compare_gpu_check.py compare OUT --oracle tests/oracle/gpu_check_allocated.json`.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cases as case_table  # noqa: E402
import run as runner  # noqa: E402

VERSION_SET = "gpu_2026_11"
CASES = os.path.join(case_table.REPO, "tools", "measure", "gpu_check.csv")
RECORDS = os.path.join(runner.OUT_DIR, "gpu_check_records.jsonl")
ALLOCATED = os.path.join(runner.OUT_DIR, "gpu_check_allocated.json")
# With --reserved: {case id: {reserved_gib, reserved_expandable_gib}}, the oracle's allocations and frees replayed
# through caching_allocator.py (without and with expandable segments).
RESERVED = os.path.join(runner.OUT_DIR, "gpu_check_reserved.json")
MEASURED_STEPS = 3  # tools/measure/measure.py --steps default, which gpu_check.sh keeps
RUNNABLE_PRECISIONS = ("bf16", "fp32")


def why_not_runnable(row):
    """None when the oracle runs this row, else the reason it does not."""
    if row["precision"] not in RUNNABLE_PRECISIONS:
        return f"precision {row['precision']}: CUDA autocast is not emulated on the fake cpu device"
    if row["base_quant"] not in ("", "none"):
        return f"base {row['base_quant']}: bitsandbytes kernels do not run on fake tensors"
    if row["method"] not in ("full", "lora"):
        return f"method {row['method']} not in the transformers_loop runner"
    return None


def oracle_case(row):
    targets = row["lora_targets"] or None
    return {
        "id": row["id"], "version_set": VERSION_SET, "family": "gpu_check", "model": row["model"],
        "framework": "transformers_loop", "method": row["method"],
        "lora_rank": int(row["lora_rank"]) if row["lora_rank"] else None, "lora_targets": targets,
        "freeze_trainable_layers": 0, "precision": row["precision"], "optimizer": row["optimizer"],
        "optimizer_impl": row["optimizer_impl"] or "foreach", "micro_batch": int(row["micro_batch"]),
        "seq_len": int(row["seq_len"]), "activation_checkpointing": row["activation_checkpointing"],
        "attention": row["attention"], "release_outputs": True, "checkpoint_use_reentrant": False,
        "steps": MEASURED_STEPS, "config_path": case_table.config_path(row["model"]),
    }


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def run_cases(cases):
    python = runner.venv_python(VERSION_SET)
    if not os.path.exists(python):
        sys.exit(f"no environment {VERSION_SET}: run with --setup")
    feed = "".join(json.dumps(c) + "\n" for c in cases)
    done = subprocess.run([python, os.path.join(HERE, "worker.py")], input=feed, capture_output=True, text=True,
                          cwd=HERE, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help=f"create the {VERSION_SET} environment with uv first")
    ap.add_argument("--cases", default=CASES)
    ap.add_argument("--reserved", action="store_true",
                    help=f"record every allocation and free, replay them through the allocator model into {RESERVED}")
    ap.add_argument("--only", help="comma-separated case ids")
    args = ap.parse_args()
    if args.setup:
        runner.setup_env(VERSION_SET)
    cases = []
    for row in read_rows(args.cases):
        reason = why_not_runnable(row)
        if reason:
            sys.stderr.write(f"{row['id']}: left out ({reason})\n")
        elif not args.only or row["id"] in args.only.split(","):
            cases.append(dict(oracle_case(row), record_allocations=args.reserved))
    records = run_cases(cases)
    if args.reserved:
        reserved = {}
        if os.path.exists(RESERVED):  # cases run before (--only) are kept
            with open(RESERVED) as f:
                reserved = json.load(f)
        reserved.update({r["id"]: {"reserved_gib": round(r["reserved_bytes"] / 2 ** 30, 4),
                              "reserved_expandable_gib": round(r["reserved_expandable_bytes"] / 2 ** 30, 4),
                              "allocated_gib": round(r["peak_bytes"] / 2 ** 30, 4)} for r in records if r["ok"]})
        with open(RESERVED, "w") as f:
            json.dump(reserved, f, indent=1, sort_keys=True)
            f.write("\n")
        for r in records:
            sys.stderr.write(f"{r['id']}: {reserved.get(r['id'], r.get('error', '')[:200])}\n")
        return 0 if all(r["ok"] for r in records) else 1
    with open(RECORDS, "w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    allocated = {r["id"]: round(r["peak_bytes"] / 2 ** 30, 4) for r in records if r["ok"]}
    with open(ALLOCATED, "w") as f:
        json.dump(allocated, f, indent=1, sort_keys=True)
        f.write("\n")
    for r in records:
        where = r.get("where", {})
        status = f"{r['peak_bytes'] / 2 ** 30:.3f} GiB at {where.get('phase')} step {where.get('step', 0) + 1}" \
            if r["ok"] else f"failed: {r['error'][:200]}"
        sys.stderr.write(f"{r['id']}: {status}\n")
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
