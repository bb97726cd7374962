#!/usr/bin/env python3
"""Generates the oracle cases, runs each in its version set's environment, writes tests/oracle/{records.jsonl,cases.csv}.

    python3 tools/oracle/run.py [--only REGEX] [--limit N] [--setup]

Resumable: a case whose id is already in records.jsonl is not run again (delete its line to rerun it).
--setup creates the missing environments under tools/oracle/.venvs with uv (pip install uv) from envs/<set>.txt.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases as case_table  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = case_table.REPO
OUT_DIR = os.path.join(REPO, "tests", "oracle")
RECORDS = os.path.join(OUT_DIR, "records.jsonl")
CASES_CSV = os.path.join(OUT_DIR, "cases.csv")
COLUMNS = ["id", "source", "date", "grade", "model", "gpu", "n_gpus", "dp", "tp", "pp", "vpp", "cp", "ep",
           "sequence_parallel", "sharding", "offload", "method", "lora_rank", "lora_targets", "base_quant",
           "precision", "optimizer", "optimizer_in_backward", "micro_batch", "grad_accum", "seq_len", "packed",
           "activation_checkpointing", "attention", "loss", "compile", "framework", "measured_gib",
           "measured_kind", "measured_scope", "notes"]


def venv_python(version_set):
    return os.path.join(HERE, ".venvs", version_set, "bin", "python")


def setup_env(version_set):
    venv = os.path.join(HERE, ".venvs", version_set)
    if os.path.exists(venv_python(version_set)):
        return
    subprocess.run(["uv", "venv", "-q", "-p", "3.11", venv], check=True)
    subprocess.run(["uv", "pip", "install", "-q", "--compile-bytecode", "-r",
                    os.path.join(HERE, "envs", f"{version_set}.txt")], check=True, env={**os.environ,
                                                                                        "VIRTUAL_ENV": venv})


def load_records():
    out = {}
    if os.path.exists(RECORDS):
        with open(RECORDS) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    out[r["id"]] = r
    return out


def progress(done, total, ok, failed, start):
    width = 30
    filled = int(width * done / max(total, 1))
    rate = (time.time() - start) / max(done, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}  ok {ok}  failed {failed}  "
                     f"eta {rate * (total - done) / 60:.1f} min ")
    sys.stderr.flush()


def run_pending(pending):
    """Runs the pending cases, one worker process per version set; appends each record as it arrives."""
    total, done, ok, failed, start = len(pending), 0, 0, 0, time.time()
    by_set = {}
    for c in pending:
        by_set.setdefault(c["version_set"], []).append(c)
    with open(RECORDS, "a") as records:
        for version_set, batch in by_set.items():
            python = venv_python(version_set)
            if not os.path.exists(python):
                sys.stderr.write(f"\n{version_set}: no environment (run with --setup)\n")
                continue
            queue = tempfile.TemporaryFile("w+")
            for c in batch:
                queue.write(json.dumps({**c, "config_path": case_table.config_path(c["model"])}) + "\n")
            queue.seek(0)
            worker = subprocess.Popen([python, os.path.join(HERE, "worker.py")], stdin=queue,
                                      stdout=subprocess.PIPE, text=True, cwd=HERE)
            for line in worker.stdout:
                r = json.loads(line)
                records.write(json.dumps(r, sort_keys=True) + "\n")
                records.flush()
                done += 1
                ok, failed = ok + r["ok"], failed + (not r["ok"])
                progress(done, total, ok, failed, start)
            worker.wait()
    sys.stderr.write("\n")


def versions_note(versions):
    return " ".join(f"{k} {v}" for k, v in sorted(versions.items()))


# The memfit framework whose behaviour a runner executes (fsdp2_loop: the plain loop, sharded).
MEMFIT_FRAMEWORK = {"fsdp2_loop": "transformers_loop"}


def runner_note(c, r):
    if c["framework"] == "fsdp2_loop":
        cp = c.get("cp", 1)
        ring = f", context_parallel over cp {cp} (ring attention, all-gather rotation)" if cp > 1 else ""
        return (f"AdamW {c['optimizer_impl']}; fsdp_version=2 (fully_shard per decoder layer and the root), rank 0 "
                f"of {c['dp'] * cp} (fake process group){ring}, pure bf16; loop holds outputs through backward and step")
    if c["framework"] == "torchtune":
        t = r.get("trainer", {})
        return (f"torchtune {t.get('recipe')} _loss_step with {t.get('loss')}, {t.get('optimizer')}"
                f"{', optimizer_in_bwd' if t.get('optimizer_in_bwd') else ''}")
    if c["framework"] == "litgpt":
        t = r.get("trainer", {})
        return (f"litgpt {t.get('recipe')} fit() step through Fabric {t.get('precision')} on its {t.get('config')} "
                f"config, lm_head_chunk_size {t.get('lm_head_chunk_size')}, {t.get('optimizer')}")
    if c["framework"] == "transformers_loop":
        return f"AdamW/SGD {c['optimizer_impl']}; loop holds outputs through backward and step"
    t = r.get("trainer", {})
    return (f"{c['framework']} training_step with its compute_loss; trainer's optimizer {t.get('optim')} "
            f"({t.get('optimizer_impl')}), grad clipping {t.get('max_grad_norm')}")


def csv_row(c, r):
    where = r["where"]
    notes = (f"oracle: fake execution on cpu with H100 choices pinned (flash SDPA op, 512-B blocks); "
             f"{versions_note(r['versions'])}; family {c['family']}; {c['layers']} layers; {runner_note(c, r)}; "
             f"2 steps, peak at {where['phase']} step {where['step'] + 1} op {where['op']}")
    framework = MEMFIT_FRAMEWORK.get(c["framework"], c["framework"])
    loss = c.get("loss") or ("standard" if framework == "transformers_loop" else "")  # else the trainer's
    dp, cp = c.get("dp", 1), c.get("cp", 1)
    if c.get("virtual_tokens"):
        notes += f"; virtual_tokens={c['virtual_tokens']}"
    for key, note in (("encoder", "encoder_reparameterization_type"), ("adapter_len", "adapter_len"),
                      ("adapter_layers", "adapter_layers"), ("block_size", "block_size"),
                      ("lora_init", "init_lora_weights"), ("n_frequency", "n_frequency")):
        if c.get(key):
            notes += f"; {note}={c[key]}"
    if c.get("modules_to_save"):
        notes += f"; modules_to_save={c['modules_to_save']}"
    if c.get("badam_block"):
        notes += f"; badam_block={c['badam_block']}"
    if c.get("peft_kwargs"):  # PEFT config keywords as JSON (cli/validate.js reads them)
        notes += "; peft_kwargs=" + json.dumps(c["peft_kwargs"], separators=(",", ":"), sort_keys=True)
    if c["framework"] == "torchtune" and c.get("optimizer_impl", "fused") != "fused":  # the profile's is fused
        notes += f"; optimizer_impl={c['optimizer_impl']}"
    if c["precision"] == "amp_bf16":
        notes += "; fp32 weights under autocast bf16 with CUDA's policy (cuda_autocast.py)"
    row = {k: "" for k in COLUMNS}
    row.update(
        id=c["id"], source=f"oracle:{c['version_set']}", date=case_table.VERSION_SETS[c["version_set"]]["date"],
        grade="A", model=c["model"], gpu="H100-80GB", n_gpus=dp * cp, dp=dp, tp=1, pp=1, vpp=1, cp=cp, ep=1,
        sequence_parallel=0, sharding=c.get("sharding", "none"), offload="none", method=c["method"],
        lora_rank=c["lora_rank"] or "", lora_targets=c["lora_targets"] or "",
        base_quant="nf4" if c["method"] == "qlora" else "none", precision=c["precision"], optimizer=c["optimizer"],
        optimizer_in_backward=c.get("optimizer_in_backward", 0), micro_batch=c["micro_batch"],
        grad_accum=1, seq_len=c["seq_len"], packed=1, activation_checkpointing=c["activation_checkpointing"],
        attention=c["attention"], loss=loss, compile=0, framework=framework,
        measured_gib=f"{r['peak_bytes'] / 2 ** 30:.6f}", measured_kind="tensor_bytes", measured_scope="per_gpu",
        notes=notes)
    return row


def write_csv(all_cases, records):
    with open(CASES_CSV, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for c in all_cases:
            r = records.get(c["id"])
            if r and r["ok"]:
                w.writerow(csv_row(c, r))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="run only the case ids matching this regular expression")
    ap.add_argument("--limit", type=int, help="run at most N pending cases")
    ap.add_argument("--setup", action="store_true", help="create missing environments with uv first")
    args = ap.parse_args()
    all_cases = case_table.all_cases()
    records = load_records()
    pending = [c for c in all_cases if c["id"] not in records and (not args.only or re.search(args.only, c["id"]))]
    if args.limit is not None:
        pending = pending[:args.limit]
    if args.setup:
        for version_set in sorted({c["version_set"] for c in pending}):
            setup_env(version_set)
    os.makedirs(OUT_DIR, exist_ok=True)
    sys.stderr.write(f"{len(all_cases)} cases, {len(records)} recorded, {len(pending)} to run\n")
    run_pending(pending)
    records = load_records()
    write_csv(all_cases, records)
    failed = [r for r in records.values() if not r["ok"]]
    ok_count = sum(1 for c in all_cases if records.get(c["id"], {}).get("ok"))
    sys.stderr.write(f"{ok_count} cases in {os.path.relpath(CASES_CSV, REPO)}; {len(failed)} failed\n")
    for r in failed[:20]:
        sys.stderr.write(f"  {r['id']}: {r['error'][:200]}\n")


if __name__ == "__main__":
    main()
