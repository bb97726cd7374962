#!/usr/bin/env python3
"""memfit's blind predictions for the GPU cross-check, and their comparison with the measurement.

    python3 tools/measure/compare_gpu_check.py predict            # before any measurement
    python3 tools/measure/compare_gpu_check.py compare OUT_DIR    # after gpu_check.sh's device call

`predict` runs `memfit validate --json` over the case file expanded into one row per counter
(max_allocated, max_reserved, nvidia_smi) and every GPU in PREDICT_GPUS. validate needs a measured
value on each row, so the expanded rows carry a placeholder (PLACEHOLDER_GIB): only the estimates
are kept, never the placeholder's "error". The same requests also go through `memfit estimate` for
the breakdown (CUDA context, cuBLAS workspace, allocator cache); the two paths must agree.
Writes tools/measure/gpu_check.memfit.json.

`compare` reads what gpu_check.sh left under $OUT (measured.csv, logs.tar.gz), writes
tests/validation/measured_<gpu>.csv (the measured rows, their logs beside it) and a markdown table
GPU vs memfit (allocated, reserved, device total, CUDA context) with median |error|, p90 and the
share under-estimated by more than 10 %; `--oracle FILE` adds the oracle's allocated column.
Standard library only; `predict` needs node and the WASM module (bash scripts/build.sh wasm).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cases as casefmt  # noqa: E402
from measure import COUNTERS, GIB  # noqa: E402

DEFAULT_CASES = os.path.join(HERE, "gpu_check.csv")
DEFAULT_PREDICTIONS = os.path.join(HERE, "gpu_check.memfit.json")
DEFAULT_CONFIGS = os.path.join(REPO_ROOT, "tests", "validation", "configs")
DEFAULT_VALIDATION_DIR = os.path.join(REPO_ROOT, "tests", "validation")
MEMFIT = os.path.join(REPO_ROOT, "cli", "memfit.js")
# The device tool lends an H100 or, failing that, an H200: predict both, compare with the one used.
PREDICT_GPUS = ["H100-80GB", "H200"]
PLACEHOLDER_GIB = "1"
UNDER_ESTIMATE_PCT = 10     # BRIEF: the share under-estimated by more than this is reported
# measure.py's counter -> the estimate result's field (cli/validate.js COUNTER_FIELDS).
RESULT_FIELDS = {"max_allocated": "peak_allocated_bytes", "max_reserved": "peak_reserved_bytes",
                 "nvidia_smi": "device_total_bytes"}
COUNTER_LABELS = {"max_allocated": "allocated", "max_reserved": "reserved", "nvidia_smi": "device total"}
BREAKDOWN_KEYS = ["cuda_context_bytes", "cublas_workspace_bytes", "allocator_cache_bytes",
                  "outside_allocator_bytes"]


# ---------------------------------------------------------------------------------------------
# predict


def read_case_rows(path: str) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def expanded_rows(case_rows: list[dict], gpu: str) -> list[dict]:
    """One FORMAT row per case and counter on `gpu`, measured_gib a placeholder."""
    rows = []
    for case in case_rows:
        for suffix, kind, _ in COUNTERS:
            row = {c: case.get(c, "") for c in casefmt.FORMAT_COLUMNS}
            row.update(id=f"{case['id']}-{suffix}", gpu=gpu, measured_kind=kind,
                       measured_scope="per_gpu", measured_gib=PLACEHOLDER_GIB,
                       notes="placeholder measured_gib: prediction only")
            rows.append(row)
    return rows


def write_csv(path: str, rows: list[dict], columns: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def node(*args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(["node", *args], input=stdin, capture_output=True, text=True, cwd=REPO_ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"node {' '.join(args)} failed ({proc.returncode}): {proc.stderr or proc.stdout}")
    return proc.stdout


# validate.js's own row -> request mapping, so estimate sees exactly what validate sends.
REQUESTS_JS = """
const v = require('./cli/validate.js');
const rows = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const find = v.configFinder([process.argv[1]]);
process.stdout.write(JSON.stringify(rows.map((r) => v.rowToRequest(r, find(r.model)))));
"""


def estimates(rows: list[dict], configs: str, tmp: str) -> dict[str, dict]:
    """case id -> the estimate result (or {'error': envelope}) for the case's first expanded row."""
    requests = json.loads(node("-e", REQUESTS_JS, configs, stdin=json.dumps(rows)))
    results = {}
    for row, request in zip(rows, requests):
        path = os.path.join(tmp, "request.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(request, f)
        proc = subprocess.run(["node", MEMFIT, "estimate", path], capture_output=True, text=True,
                              cwd=REPO_ROOT)
        body = json.loads(proc.stdout)
        results[row["id"].rsplit("-", 1)[0]] = body if proc.returncode == 0 else {"error": body}
    return results


def source_commit() -> str:
    """The commit whose estimator made the predictions; '+modified' if src/ or cli/ differ from it."""
    git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, cwd=REPO_ROOT).stdout.strip()  # noqa: E731
    commit = git("rev-parse", "HEAD") or "unknown"
    return commit + ("+modified" if git("status", "--porcelain", "src", "cli", "wasm_bindings") else "")


def predict(cases_path: str, configs: str, out_path: str) -> int:
    case_rows = read_case_rows(cases_path)
    version = json.loads(node(MEMFIT, "version"))["version"]
    document = {
        "about": "memfit's predictions for tools/measure/gpu_check.csv, made before any measurement "
                 "(tools/measure/compare_gpu_check.py predict). validate needs a measured value, so "
                 f"each case was expanded into one row per counter with measured_gib={PLACEHOLDER_GIB} "
                 "as a placeholder; only estimate_gib is kept. breakdown: `memfit estimate` of the "
                 "same request.",
        "memfit_version": version,
        "memfit_commit": source_commit(),
        "cases": os.path.relpath(cases_path, REPO_ROOT),
        "command": "node cli/memfit.js validate <expanded cases> --configs "
                   f"{os.path.relpath(configs, REPO_ROOT)} --json",
        "gpus": {},
    }
    with tempfile.TemporaryDirectory(prefix="memfit-gpu-check-") as tmp:
        for gpu in PREDICT_GPUS:
            rows = expanded_rows(case_rows, gpu)
            path = os.path.join(tmp, f"expanded-{gpu}.csv")
            write_csv(path, rows, casefmt.FORMAT_COLUMNS)
            report = json.loads(node(MEMFIT, "validate", path, "--configs", configs, "--json"))
            document["gpus"][gpu] = predictions_for(case_rows, report, estimates(rows[::len(COUNTERS)], configs, tmp))
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1, sort_keys=False)
        f.write("\n")
    failed = sum(1 for g in document["gpus"].values() for c in g["cases"].values() if "problem" in c)
    print(f"{len(case_rows)} cases x {len(PREDICT_GPUS)} GPUs -> {out_path}; "
          f"{failed} without a prediction")
    return 0


def predictions_for(case_rows: list[dict], report: dict, results: dict[str, dict]) -> dict:
    """{'cases': {case id: {counter: GiB, 'breakdown': {...}} or {'problem': ...}}}."""
    by_row = {r["id"]: r for r in report["rows"]}
    problems = {p["id"]: p for p in report["skipped"] + report["errors"]}
    out = {}
    for case in case_rows:
        entry: dict = {}
        for suffix, kind, _ in COUNTERS:
            row_id = f"{case['id']}-{suffix}"
            if row_id in problems:
                entry["problem"] = problems[row_id].get("reason") or problems[row_id].get("message")
                continue
            entry[kind] = by_row[row_id]["estimate_gib"]
        result = results.get(case["id"], {})
        if "error" not in result and "problem" not in entry:
            for kind, field in RESULT_FIELDS.items():  # both paths are one estimator: they agree
                if not math.isclose(result[field] / GIB, entry[kind], rel_tol=1e-12):
                    raise RuntimeError(f"{case['id']} {kind}: validate {entry[kind]} GiB but "
                                       f"estimate {result[field] / GIB} GiB")
            entry["breakdown_gib"] = {k[:-len("_bytes")]: result["breakdown"][k] / GIB
                                      for k in BREAKDOWN_KEYS if k in result.get("breakdown", {})}
        out[case["id"]] = entry
    return {"cases": out}


# ---------------------------------------------------------------------------------------------
# compare


def read_logs(out_dir: str) -> dict[str, dict]:
    """case id -> its JSON log, from logs.tar.gz or a logs/ folder under out_dir."""
    logs = {}
    archive = os.path.join(out_dir, "logs.tar.gz")
    if os.path.isfile(archive):
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.endswith(".json"):
                    log = json.load(tar.extractfile(member))
                    logs[log.get("case_id") or os.path.basename(member.name)[:-5]] = log
    folder = os.path.join(out_dir, "logs")
    if os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    log = json.load(f)
                logs[log.get("case_id") or name[:-5]] = log
    return logs


def error_pct(estimate: float, measured: float) -> float:
    return (estimate - measured) / measured * 100


def stats(errors: list[float]) -> dict:
    """Median and p90 (nearest rank, as cli/validate.js) of |error|, and the dangerous share."""
    if not errors:
        return {"n": 0}
    absolute = sorted(abs(e) for e in errors)
    mid = len(absolute) // 2
    median = absolute[mid] if len(absolute) % 2 else (absolute[mid - 1] + absolute[mid]) / 2
    p90 = absolute[math.ceil(9 * len(absolute) / 10) - 1]
    under = sum(1 for e in errors if e < -UNDER_ESTIMATE_PCT)
    return {"n": len(errors), "median": median, "p90": p90, "under": under}


def compare(out_dir: str, predictions_path: str, cases_path: str, validation_dir: str,
            markdown_path: str | None, oracle_path: str | None) -> int:
    with open(os.path.join(out_dir, "measured.csv"), newline="", encoding="utf-8") as f:
        measured = list(csv.DictReader(f))
    if not measured:
        print("no measured rows: nothing to compare", file=sys.stderr)
        return 1
    gpus = {r["gpu"] for r in measured}
    if len(gpus) != 1:
        print(f"measured rows name several GPUs: {sorted(gpus)}", file=sys.stderr)
        return 1
    gpu = gpus.pop()
    with open(predictions_path, encoding="utf-8") as f:
        predictions = json.load(f)
    if gpu not in predictions["gpus"]:
        print(f"no predictions for {gpu} (have {', '.join(predictions['gpus'])})", file=sys.stderr)
        return 1
    predicted = predictions["gpus"][gpu]["cases"]
    logs = read_logs(out_dir)
    oracle = {}
    if oracle_path:
        with open(oracle_path, encoding="utf-8") as f:
            oracle = json.load(f)  # {case id: allocated GiB}
    why = {r["id"]: r["notes"].removeprefix("why: ") for r in read_case_rows(cases_path)}

    stem = f"measured_{gpu.lower()}"
    logs_dir = os.path.join(validation_dir, stem)
    os.makedirs(logs_dir, exist_ok=True)
    rows = []
    for row in measured:
        case_id = row["id"].rsplit("-", 1)[0]
        row = dict(row, source=f"memfit tools/measure/gpu_check.sh; log "
                              f"tests/validation/{stem}/{case_id}.json")
        rows.append(row)
        if case_id in logs:
            with open(os.path.join(logs_dir, f"{case_id}.json"), "w", encoding="utf-8") as f:
                json.dump(logs[case_id], f, indent=1)
    csv_path = os.path.join(validation_dir, f"{stem}.csv")
    write_csv(csv_path, rows, casefmt.FORMAT_COLUMNS)

    table = markdown(gpu, rows, predicted, logs, oracle, why, predictions.get("memfit_version", ""))
    if markdown_path:
        with open(markdown_path, "w", encoding="utf-8") as f:
            f.write(table)
    print(table, end="")
    print(f"\n{len(rows)} rows -> {csv_path}; logs -> {logs_dir}")
    return 0


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}"


def markdown(gpu: str, rows: list[dict], predicted: dict, logs: dict, oracle: dict, why: dict,
             version: str) -> str:
    errors: dict[str, list[float]] = {k: [] for k in RESULT_FIELDS}
    oracle_errors: list[float] = []
    lines = [f"### GPU cross-check on {gpu} (memfit {version}, predicted before the run)", "",
             "| case | counter | GPU GiB | memfit GiB | error % | oracle GiB | oracle error % |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for row in rows:
        case_id, kind = row["id"].rsplit("-", 1)[0], row["measured_kind"]
        gpu_gib = float(row["measured_gib"])
        estimate = predicted.get(case_id, {}).get(kind)
        err = error_pct(estimate, gpu_gib) if estimate is not None else None
        if err is not None:
            errors[kind].append(err)
        o_gib = oracle.get(case_id) if kind == "max_allocated" else None
        o_err = error_pct(o_gib, gpu_gib) if o_gib is not None else None
        if o_err is not None:
            oracle_errors.append(o_err)
        lines.append(f"| {case_id} | {COUNTER_LABELS[kind]} | {gpu_gib:.2f} | {_fmt(estimate)} | "
                     f"{_signed(err)} | {_fmt(o_gib)} | {_signed(o_err)} |")
    lines += ["", "| counter | cases | median \\|error\\| % | p90 \\|error\\| % | under-estimated > 10 % |",
              "|---|---:|---:|---:|---:|"]
    for name, errs in [(COUNTER_LABELS[k], v) for k, v in errors.items()] + [("allocated (oracle)", oracle_errors)]:
        s = stats(errs)
        if s["n"]:
            lines.append(f"| {name} | {s['n']} | {s['median']:.1f} | {s['p90']:.1f} | {s['under']} of {s['n']} |")
    lines += ["", "| case | CUDA context GiB (GPU, at init) | outside the allocator GiB (GPU, after training) "
                  "| memfit cuda_context GiB | expandable segments seen | why |", "|---|---:|---:|---:|---|---|"]
    for case_id in sorted({r["id"].rsplit("-", 1)[0] for r in rows}):
        memory = logs.get(case_id, {}).get("memory", {})
        context = memory.get("context_bytes")
        outside = memory.get("after_training", {}).get("outside_allocator")
        predicted_context = predicted.get(case_id, {}).get("breakdown_gib", {}).get("cuda_context")
        seen = memory.get("expandable_segments_seen")
        lines.append(f"| {case_id} | {_fmt(context / GIB if context is not None else None, 3)} | "
                     f"{_fmt(outside / GIB if outside is not None else None, 3)} | "
                     f"{_fmt(predicted_context, 3)} | {'—' if seen is None else seen} | {why.get(case_id, '')} |")
    missing = sorted(set(predicted) - {r["id"].rsplit("-", 1)[0] for r in rows})
    if missing:
        lines += ["", f"Not measured (failed, out of memory or skipped for time): {', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    pr = sub.add_parser("predict", help="memfit's predictions for the case file (before measuring)")
    pr.add_argument("--cases", default=DEFAULT_CASES)
    pr.add_argument("--configs", default=DEFAULT_CONFIGS)
    pr.add_argument("--out", default=DEFAULT_PREDICTIONS)
    co = sub.add_parser("compare", help="measured rows vs the predictions")
    co.add_argument("out_dir", help="the folder gpu_check.sh wrote ($OUT as it came back)")
    co.add_argument("--predictions", default=DEFAULT_PREDICTIONS)
    co.add_argument("--cases", default=DEFAULT_CASES)
    co.add_argument("--validation-dir", default=DEFAULT_VALIDATION_DIR,
                    help="where measured_<gpu>.csv and its logs go (default tests/validation)")
    co.add_argument("--markdown", default=None, help="also write the table to this file")
    co.add_argument("--oracle", default=None, help="JSON {case id: allocated GiB} from the oracle")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "predict":
        return predict(args.cases, args.configs, args.out)
    return compare(args.out_dir, args.predictions, args.cases, args.validation_dir, args.markdown,
                   args.oracle)


if __name__ == "__main__":
    sys.exit(main())
