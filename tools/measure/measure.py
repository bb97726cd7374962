#!/usr/bin/env python3
"""Measure peak GPU memory of training cases and write them as validation rows.

    python3 tools/measure/measure.py tools/measure/campaign.csv --dry-run
    python3 tools/measure/measure.py tools/measure/campaign.csv --out measured.csv

Each case runs in its own worker process (worker.py) so that every measurement starts from an empty
caching allocator and a fresh CUDA context; this process never imports torch, which is what lets
--dry-run check a case file on any machine. See README.md for what the numbers mean.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter

import cases as casefmt

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CONFIGS = os.path.join(REPO_ROOT, "tests", "validation", "configs")
DEFAULT_OUT_DIR = os.path.join(HERE, "out")

# Output rows per case: (id suffix, FORMAT measured_kind, key in the worker's per-step records).
COUNTERS = [
    ("alloc", "max_allocated", "max_allocated"),
    ("reserved", "max_reserved", "max_reserved"),
    ("smi", "nvidia_smi", "device_used"),
]
GIB = 2 ** 30

EXIT_INVALID = 2   # the case file or a config is wrong: nothing was run
EXIT_FAILED = 1    # some cases ran out of memory or failed; the others are in the output


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", help="case CSV (FORMAT.md columns, measured columns empty)")
    p.add_argument("--configs", default=DEFAULT_CONFIGS,
                   help="folder of <org>__<name>.json configs (default: tests/validation/configs)")
    p.add_argument("--dry-run", action="store_true",
                   help="validate cases and configs and print the plan; needs neither torch nor a GPU")
    p.add_argument("--out", default=os.path.join(DEFAULT_OUT_DIR, "measured.csv"),
                   help="output CSV of measured rows (default: tools/measure/out/measured.csv)")
    p.add_argument("--logs", default=None,
                   help="folder for one JSON log per case (default: <folder of --out>/logs)")
    p.add_argument("--steps", type=int, default=3,
                   help="optimizer steps per case; step 1 allocates optimizer states, 2.. are steady")
    p.add_argument("--only", default=None, help="run only cases whose id matches this regex")
    p.add_argument("--force", action="store_true",
                   help="re-run cases that already have a successful log (default: reuse it)")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per case before it is killed")
    p.add_argument("--python", default=sys.executable, help="interpreter that has torch (worker)")
    p.add_argument("--budget", type=float, default=None,
                   help="seconds for the whole run: a case whose rough estimate no longer fits is "
                        "skipped (no log, so a later run does it), and each case's timeout is cut "
                        "to what is left")
    p.add_argument("--snapshots", default=None,
                   help="folder for memory-history snapshots of record_history=1 cases "
                        "(default: the logs folder)")
    p.add_argument("--summary", default=None,
                   help="also write the per-case summary table (printed at the end) to this file")
    args = p.parse_args(argv)
    if args.steps < 2:
        p.error("--steps must be at least 2: a steady-state step needs a step before it")
    return args


def check(path: str, configs_dir: str) -> tuple[list[casefmt.Case], casefmt.Report]:
    report = casefmt.Report()
    if not os.path.isfile(path):
        report.error(path, "case file not found")
        return [], report
    if not os.path.isdir(configs_dir):
        report.error(configs_dir, "configs folder not found (pass --configs DIR)")
        return [], report
    cases = casefmt.read_cases(path, report)
    casefmt.validate(cases, configs_dir, report, os.path.basename(path))
    return cases, report


def case_seconds(case: casefmt.Case, configs_dir: str, steps: int) -> float:
    config, _ = casefmt.load_config(configs_dir, case["model"])
    return casefmt.estimated_seconds(case, config, steps)


def print_plan(cases: list[casefmt.Case], steps: int, configs_dir: str) -> None:
    seconds = [case_seconds(c, configs_dir, steps) for c in cases]
    for case, s in zip(cases, seconds):
        print(f"{casefmt.plan_line(case)}  ~{s:.0f}s")
    layouts = Counter(c.layout for c in cases)
    methods = Counter(c["method"] for c in cases)
    models = Counter(c["model"] for c in cases)
    print()
    print(f"total: {len(cases)} cases ({layouts['single']} single-GPU, "
          f"{layouts['fsdp2']} FSDP2 simulated, {layouts['tp']} TP simulated), "
          f"{len(cases) * len(COUNTERS)} output rows, {steps} optimizer steps each")
    print("methods: " + ", ".join(f"{k} {v}" for k, v in sorted(methods.items())))
    print(f"rough device time: {sum(seconds):.0f} s on an H100 (each case's estimate ends its line)")
    print(f"models: {len(models)}: " + ", ".join(f"{k} {v}" for k, v in sorted(models.items())))


# ---------------------------------------------------------------------------------------------
# Turning a worker log into FORMAT rows


def gpu_id(name: str, total_bytes: int) -> str:
    """Map the driver's device name to a FORMAT gpu id ('' when the table has no match)."""
    n = name.upper()
    gib = total_bytes / GIB
    rules = [
        ("H200", "H200"), ("H100 NVL", "H100-94GB"), ("H100", "H100-80GB"), ("H20", "H20"),
        ("B200", "B200"), ("MI300X", "MI300X"), ("A100", "A100-80GB" if gib > 50 else "A100-40GB"),
        ("A10G", "A10G"), ("L40S", "L40S"), ("L4", "L4"), ("RTX 4090", "RTX-4090"),
        ("RTX 3090", "RTX-3090"), ("RTX A6000", "RTX-A6000"),
        ("V100", "V100-32GB" if gib > 20 else "V100-16GB"), ("T4", "T4"),
    ]
    for needle, gid in rules:  # order matters: H200 before H20, H100 NVL before H100
        if needle in n:
            return gid
    return ""


def _gib(value: int) -> str:
    return f"{value / GIB:.3f}"


def case_notes(case: casefmt.Case, log: dict) -> list[str]:
    """Settings and environment shared by the three rows of a case, as key=value pairs."""
    s, env = log["settings"], log["env"]
    notes = [f"optimizer_impl={case.optimizer_impl}"] if case.optimizer_impl else []
    for key in ("lora_alpha", "lora_dropout", "lora_modules", "lora_target_note", "adapter_dtype",
                "quantization", "freeze_trainable_layers", "fsdp_mixed_precision", "tp_plan",
                "t5_decoder_len", "compile_mode"):
        if key in s:
            value = s[key]
            notes.append(f"{key}={'+'.join(value) if isinstance(value, list) else value}")
    notes.append(f"trainable_params={s['trainable_params']}")
    if case.layout != "single":
        notes.append(f"simulated=1 (world size {case['n_gpus']} on one GPU with a fake process "
                     "group; rank 0 measured; no NCCL buffers)")
    notes.append(f"steps={s['steps']}; seed={s['seed']}")
    memory = log["memory"]
    notes.append(f"cuda_context={_gib(memory['context_bytes'])} GiB")
    after = memory.get("after_training", {})
    if "outside_allocator" in after:
        notes.append(f"outside_allocator_after_training={_gib(after['outside_allocator'])} GiB")
    if memory.get("expandable_segments_seen") is not None:
        notes.append(f"expandable_segments_seen={int(memory['expandable_segments_seen'])}")
    keys = ["gpu_name", "driver", "torch", "cuda", "transformers", "peft"]
    keys += ["bitsandbytes"] if env.get("bitsandbytes") else []
    notes.append("env: " + "; ".join(f"{k}={env.get(k, '')}" for k in keys + ["alloc_conf"]))
    return notes


def rows_for(case: casefmt.Case, log: dict, log_ref: str) -> list[dict[str, str]]:
    summary = log["summary"]
    env = log["env"]
    measured_gpu = gpu_id(env.get("gpu_name", ""), int(env.get("gpu_total_bytes", 0)))
    shared = case_notes(case, log)
    if not measured_gpu:
        measured_gpu = case["gpu"]
        shared.append("gpu name not in the FORMAT table: kept the case's gpu id")
    month = log.get("date", datetime.date.today().strftime("%Y-%m"))
    rows = []
    for suffix, kind, key in COUNTERS:
        row = {c: case[c] for c in casefmt.FORMAT_COLUMNS}
        first = summary["first_step"][key]
        steady = summary["steady_state"][key]
        overall = summary["all_steps"][key]
        counter_note = (f"value=max over all {len(log['steps'])} steps of {key}; "
                        f"first_step={_gib(first)} GiB; steady_state(steps 2..n)={_gib(steady)} GiB")
        if kind == "nvidia_smi":
            counter_note += ("; device total = mem_get_info total-free sampled after backward and "
                             f"after the optimizer step, incl. CUDA context "
                             f"({_gib(log['memory']['context_bytes'])} GiB before any tensor)")
        row.update({
            "id": f"{case.id}-{suffix}",
            "source": f"memfit tools/measure worker.py, log {log_ref}",
            "date": month,
            "grade": "A",
            "gpu": measured_gpu,
            "framework": "transformers_loop",
            "measured_gib": _gib(overall),
            "measured_kind": kind,
            "measured_scope": "per_gpu",
            "notes": "; ".join(([case["notes"]] if case["notes"] else []) + [counter_note] + shared),
        })
        rows.append(row)
    return rows


def write_output(path: str, rows: list[dict[str, str]]) -> None:
    """Write atomically, so an interrupted campaign never leaves half a CSV."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".csv")
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=casefmt.FORMAT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# Running cases


def read_log(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError):
        return None


def worker_env(case: casefmt.Case) -> dict[str, str]:
    """The worker's environment: a case's alloc_conf replaces the inherited allocator settings
    (torch >= 2.9 reads PYTORCH_ALLOC_CONF first, older ones PYTORCH_CUDA_ALLOC_CONF: both agree)."""
    env = dict(os.environ)
    if case["alloc_conf"]:
        env["PYTORCH_CUDA_ALLOC_CONF"] = env["PYTORCH_ALLOC_CONF"] = case["alloc_conf"]
    return env


def run_case(case: casefmt.Case, args: argparse.Namespace, log_path: str, timeout: float) -> dict:
    """Run worker.py for one case; always returns a log (a synthetic one if the worker died)."""
    spec = {"row": case.row, "config_path": os.path.join(args.configs, casefmt.config_filename(case["model"])),
            "steps": args.steps, "log_path": log_path}
    if case["record_history"] in ("1", "all"):
        spec["snapshot_path"] = os.path.join(args.snapshots, f"{case.id}.snapshot.pickle.gz")
        spec["history_steps"] = args.steps if case["record_history"] == "all" else 1
    fd, spec_path = tempfile.mkstemp(suffix=".json", prefix=f"case-{case.id}-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    if os.path.exists(log_path):
        os.remove(log_path)  # a stale log must not pass for this run's result
    started = time.perf_counter()
    cmd = [args.python, os.path.join(HERE, "worker.py"), spec_path]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env=worker_env(case))
        returncode, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode = None
        # Even with text=True, the partial output of a timed-out child arrives as bytes.
        output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                         for x in (exc.stdout, exc.stderr))
    finally:
        os.remove(spec_path)
    with open(log_path[:-len(".json")] + ".out.txt", "w", encoding="utf-8") as f:
        f.write(output)
    log = read_log(log_path)
    if log is None:  # killed, segfault, or an import error before the worker could write
        status = "timeout" if returncode is None else "crash"
        log = {"case_id": case.id, "status": status, "returncode": returncode,
               "error": output.strip().splitlines()[-1] if output.strip() else status}
    log["wall_s"] = round(time.perf_counter() - started, 2)
    with open(log_path, "w", encoding="utf-8") as f:
        json.dump(log, f, indent=1)
    return log


SUMMARY_HEADER = ["case", "status", "alloc GiB", "reserved GiB", "device GiB", "context GiB",
                  "outside alloc GiB", "wall s"]


def summary_row(case_id: str, log: dict) -> list[str]:
    """One line of the end-of-run table: the three counters, the context, the wall time."""
    wall = f"{log.get('wall_s', '')}"
    if log.get("status") != "ok":
        return [case_id, f"{log.get('status')}: {str(log.get('error', ''))[:60]}"] + [""] * 5 + [wall]
    peak, memory = log["summary"]["all_steps"], log["memory"]
    outside = memory.get("after_training", {}).get("outside_allocator")
    return [case_id, "ok", _gib(peak["max_allocated"]), _gib(peak["max_reserved"]),
            _gib(peak["device_used"]), _gib(memory["context_bytes"]),
            _gib(outside) if outside is not None else "", wall]


def format_summary(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [SUMMARY_HEADER] + rows) for i in range(len(SUMMARY_HEADER))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() + "\n"
                   for r in [SUMMARY_HEADER] + rows)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cases, report = check(args.cases, args.configs)
    if report.errors:
        for message in report.errors:
            print(f"error: {message}", file=sys.stderr)
        print(f"{len(report.errors)} problem(s); nothing was run.", file=sys.stderr)
        return EXIT_INVALID
    if args.only:
        pattern = re.compile(args.only)
        cases = [c for c in cases if pattern.search(c.id)]
    if args.dry_run:
        print_plan(cases, args.steps, args.configs)
        print("dry run: all cases valid")
        return 0

    logs_dir = args.logs or os.path.join(os.path.dirname(os.path.abspath(args.out)), "logs")
    args.snapshots = args.snapshots or logs_dir
    os.makedirs(logs_dir, exist_ok=True)
    os.makedirs(args.snapshots, exist_ok=True)
    rows: list[dict[str, str]] = []
    status = Counter()
    summary: list[list[str]] = []
    started = time.monotonic()
    for i, case in enumerate(cases, 1):
        log_path = os.path.join(logs_dir, f"{case.id}.json")
        log = None if args.force else read_log(log_path)
        reused = log is not None and log.get("status") == "ok"
        if not reused:
            timeout = float(args.timeout)
            if args.budget is not None:
                left = args.budget - (time.monotonic() - started)
                needed = case_seconds(case, args.configs, args.steps)
                if needed > left:
                    print(f"[{i}/{len(cases)}] {case.id}: skipped, ~{needed:.0f} s needed, "
                          f"{max(left, 0):.0f} s of the budget left", flush=True)
                    status["skipped"] += 1
                    summary.append([case.id, "skipped (budget)"] + [""] * 6)
                    continue
                timeout = min(timeout, left)
            print(f"[{i}/{len(cases)}] {casefmt.plan_line(case)}", flush=True)
            log = run_case(case, args, log_path, timeout)
        status[log["status"]] += 1
        summary.append(summary_row(case.id, log))
        if log["status"] == "ok":
            rows.extend(rows_for(case, log, os.path.relpath(log_path, os.path.dirname(os.path.abspath(args.out)))))
            peak = log["summary"]["all_steps"]
            print(f"    {'reused' if reused else 'ok'}: allocated {_gib(peak['max_allocated'])} GiB, "
                  f"reserved {_gib(peak['max_reserved'])} GiB, device {_gib(peak['device_used'])} GiB",
                  flush=True)
        else:
            print(f"    {log['status']}: {log.get('error', '')}", flush=True)
        write_output(args.out, rows)  # after every case: a crash of the box loses one case at most
    table = format_summary(summary)
    print("\n" + table, end="")
    if args.summary:
        with open(args.summary, "w", encoding="utf-8") as f:
            f.write(table)
    print(f"\n{len(rows)} rows -> {args.out}; " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())))
    return 0 if status["ok"] == len(cases) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
