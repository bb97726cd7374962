"""Tests of the GPU cross-check (gpu_check.csv, gpu_check.sh) and of the harness parts it added:
QLoRA and allocator-setting columns, the time budget, capped memory-history snapshots. No torch:
a stub interpreter stands in for the worker.

    python3 -m unittest discover -s tools/measure -p 'test_*.py'
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import os
import pickle
import random
import stat
import subprocess
import sys
import tarfile
import time
import unittest
from collections import defaultdict
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases  # noqa: E402
import measure  # noqa: E402
import snapshots  # noqa: E402
from test_dry_run import REPO_CONFIGS, HarnessTest, run_measure  # noqa: E402

GPU_CHECK = os.path.join(HERE, "gpu_check.csv")
DRIVER = os.path.join(HERE, "gpu_check.sh")
DRIVER_DEFAULT_BUDGET_S = 480   # gpu_check.sh's GPU_CHECK_BUDGET_S default
DRIVER_PACK_RESERVE_S = 15      # gpu_check.sh's pack_reserve_s
COLD_START_S = 30               # the first case's cold imports, beyond PROCESS_OVERHEAD_S

# Writes a plausible log (and a snapshot when asked) after sleeping STUB_SLEEP_S; never imports torch.
STUB = '''#!{python}
import json, os, sys, time
spec = json.load(open(sys.argv[2]))
time.sleep(float(os.environ.get("STUB_SLEEP_S", "0")))
gib = 2 ** 30
steps = [{{"max_allocated": a * gib, "max_reserved": (a + 1) * gib, "device_used": (a + 2) * gib}}
         for a in (10, 9, 9)]
log = {{"status": "ok", "date": "2026-11", "steps": steps,
       "summary": {{"first_step": steps[0], "steady_state": steps[1], "all_steps": steps[0]}},
       "memory": {{"context_bytes": gib // 2, "expandable_segments_seen": False,
                  "after_training": {{"outside_allocator": gib}}}},
       "settings": {{"steps": 3, "seed": 0, "trainable_params": 123}},
       "env": {{"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_total_bytes": 85 * 10 ** 9,
                "torch": "2.11.0", "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}}}}
if "snapshot_path" in spec:
    with open(spec["snapshot_path"], "wb") as f:
        f.write(os.urandom(4096))
json.dump(log, open(spec["log_path"], "w"))
'''


def read_gpu_check() -> list[dict]:
    with open(GPU_CHECK, newline="") as f:
        return list(csv.DictReader(f))


def write_stub(folder: str) -> str:
    path = os.path.join(folder, "fake-python")
    with open(path, "w") as f:
        f.write(STUB.format(python=sys.executable))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def estimate(row: dict) -> float:
    config, problem = cases.load_config(REPO_CONFIGS, row["model"])
    assert config is not None, problem
    return cases.estimated_seconds(cases.Case(row, 0), config, 3)


class GpuCheckCasesTest(unittest.TestCase):
    """What the case set must teach; each assertion names a comparison the run exists for."""

    def setUp(self):
        self.rows = read_gpu_check()

    def pairs(self, column: str) -> set[tuple[str, str]]:
        """Value pairs of `column` between cases equal in every other setting."""
        ignore = {"id", "notes", "record_history", column}
        groups = defaultdict(set)
        for r in self.rows:
            key = tuple(sorted((k, v) for k, v in r.items() if k not in ignore))
            groups[key].add(r[column])
        return {tuple(sorted(values)) for values in groups.values() if len(values) > 1}

    def test_passes_the_dry_run_with_the_repo_configs(self):
        code, out, err = run_measure(GPU_CHECK, "--configs", REPO_CONFIGS, "--dry-run")
        self.assertEqual(code, 0, err)
        self.assertIn(f"total: {len(self.rows)} cases ({len(self.rows)} single-GPU", out)

    def test_size_and_single_gpu(self):
        self.assertTrue(10 <= len(self.rows) <= 20, len(self.rows))
        self.assertEqual({r["n_gpus"] for r in self.rows}, {"1"})

    def test_two_micro_batch_points_per_method(self):
        with_slope = set()
        for r in self.rows:
            for s in self.rows:
                same = all(r[k] == s[k] for k in r if k not in ("id", "notes", "record_history",
                                                                  "micro_batch"))
                if same and r["micro_batch"] != s["micro_batch"]:
                    with_slope.add(r["method"])
        self.assertEqual(with_slope, {"full", "lora", "qlora"})

    def test_one_knob_comparisons(self):
        self.assertIn(("eager", "sdpa"), self.pairs("attention"))
        self.assertIn(("full", "none"), self.pairs("activation_checkpointing"))
        self.assertIn(("amp_bf16", "bf16"), self.pairs("precision"))  # fp32 vs bf16 AdamW states
        self.assertIn(("expandable_segments:False", "expandable_segments:True"), self.pairs("alloc_conf"))

    def test_every_case_states_its_allocator_settings(self):
        self.assertTrue(all(r["alloc_conf"].startswith("expandable_segments:") for r in self.rows))

    def test_a_large_vocabulary_model_for_the_loss_peak(self):
        vocabs = {cases.load_config(REPO_CONFIGS, r["model"])[0]["vocab_size"] for r in self.rows}
        self.assertGreaterEqual(max(vocabs), 250_000)

    def test_two_memory_history_snapshots(self):
        self.assertEqual(sum(r["record_history"] == "1" for r in self.rows), 2)

    def test_fits_the_driver_budget_on_estimates(self):
        total = sum(estimate(r) for r in self.rows) + COLD_START_S
        self.assertLessEqual(total, DRIVER_DEFAULT_BUDGET_S - DRIVER_PACK_RESERVE_S)


class NewColumnsTest(HarnessTest):
    """QLoRA and the allocator/history columns, rejected with the case id and a reason."""

    def assert_rejected(self, changes: dict, message: str):
        good = read_gpu_check()[0]
        bad = {**good, **changes, "id": "BAD-1"}
        path = self.write_cases(list(good), [good, bad])
        code, out, err = run_measure(path, "--configs", self.configs, "--dry-run")
        self.assertEqual(code, measure.EXIT_INVALID, out)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        self.assertTrue(errors and all("(BAD-1)" in line for line in errors), err)
        self.assertTrue(any(message in line for line in errors), f"{message!r} not in\n{err}")

    def test_qlora_needs_nf4(self):
        self.assert_rejected({"method": "qlora", "lora_rank": "16", "lora_targets": "q,v",
                              "precision": "bf16"}, "method=qlora and base_quant=nf4 go together")

    def test_nf4_needs_qlora(self):
        self.assert_rejected({"method": "lora", "lora_rank": "16", "lora_targets": "q,v",
                              "base_quant": "nf4", "precision": "bf16"}, "go together")

    def test_qlora_computes_in_bf16(self):
        self.assert_rejected({"method": "qlora", "lora_rank": "16", "lora_targets": "q,v",
                              "base_quant": "nf4", "precision": "amp_bf16"},
                             "method=qlora runs precision=bf16")

    def test_qlora_is_single_gpu(self):
        self.assert_rejected({"method": "qlora", "lora_rank": "16", "lora_targets": "q,v",
                              "base_quant": "nf4", "precision": "bf16", "n_gpus": "2", "dp": "2",
                              "sharding": "zero3"}, "supported on a single GPU only")

    def test_alloc_conf_must_be_known_key_value_pairs(self):
        self.assert_rejected({"alloc_conf": "expandable:True"}, "unknown option 'expandable'")
        self.assert_rejected({"alloc_conf": "expandable_segments"}, "is not key:value")
        self.assert_rejected({"alloc_conf": "expandable_segments:yes"}, "must be True or False")

    def test_record_history_is_a_flag(self):
        self.assert_rejected({"record_history": "2"}, "record_history='2' must be 0, 1, all or empty")

    def test_alloc_conf_reaches_the_worker_under_both_names(self):
        row = {**read_gpu_check()[0], "alloc_conf": "expandable_segments:True"}
        with mock.patch.dict(os.environ, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:64"}):
            env = measure.worker_env(cases.Case(row, 0))
            inherited = measure.worker_env(cases.Case({**row, "alloc_conf": ""}, 0))
        self.assertEqual(env["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True")
        self.assertEqual(env["PYTORCH_ALLOC_CONF"], "expandable_segments:True")
        self.assertEqual(inherited["PYTORCH_CUDA_ALLOC_CONF"], "max_split_size_mb:64")


class BudgetTest(HarnessTest):
    def test_cases_that_no_longer_fit_are_skipped_without_a_log(self):
        rows = read_gpu_check()[:3]
        path = self.write_cases(list(rows[0]), rows)
        out_csv = os.path.join(self.tmp, "out", "measured.csv")
        stub = write_stub(self.tmp)
        # Estimates of 2 s a case; the first case takes 2.5 s of a 4 s budget, so the next two
        # (2 s each) no longer fit.
        with mock.patch.object(cases, "PROCESS_OVERHEAD_S", 2.0), \
                mock.patch.object(cases, "BUILD_BYTES_PER_S", 1e30), \
                mock.patch.object(cases, "EFFECTIVE_FLOPS", 1e30), \
                mock.patch.dict(os.environ, {"STUB_SLEEP_S": "2.5"}):
            code, out, _ = run_measure(path, "--configs", REPO_CONFIGS, "--out", out_csv,
                                       "--python", stub, "--budget", "4",
                                       "--summary", os.path.join(self.tmp, "summary.txt"))
        self.assertEqual(code, measure.EXIT_FAILED)
        self.assertIn(f"{rows[1]['id']}: skipped", out)
        self.assertIn("skipped 2", out)
        logs = sorted(os.listdir(os.path.join(self.tmp, "out", "logs")))
        self.assertEqual(logs, [f"{rows[0]['id']}.json", f"{rows[0]['id']}.out.txt"])
        with open(os.path.join(self.tmp, "summary.txt")) as f:
            table = f.read()
        self.assertEqual(table.count("skipped (budget)"), 2)
        self.assertRegex(table, rf"{rows[0]['id']}\s+ok\s+10\.000\s+11\.000\s+12\.000\s+0\.500\s+1\.000")


class DriverTest(HarnessTest):
    """gpu_check.sh end to end with the stub worker: packing, $OUT's limits, the budget."""

    def run_driver(self, case_rows: list[dict], budget_s: int, sleep_s: float):
        path = self.write_cases(list(case_rows[0]), case_rows)
        self.out = os.path.join(self.tmp, "OUT")
        env = {**os.environ, "OUT": self.out, "GPU_CHECK_PYTHON": write_stub(self.tmp),
               "GPU_CHECK_CASES": path, "GPU_CHECK_BUDGET_S": str(budget_s),
               "STUB_SLEEP_S": str(sleep_s), "PYTORCH_CUDA_ALLOC_CONF": "leaked:1"}
        started = time.monotonic()
        proc = subprocess.run(["bash", DRIVER], capture_output=True, text=True, env=env, timeout=120)
        return proc, time.monotonic() - started

    def test_everything_comes_back_within_the_tool_limits(self):
        rows = read_gpu_check()
        chosen = [r for r in rows if r["record_history"] == "1"] + [rows[0]]
        proc, _ = self.run_driver(chosen, budget_s=DRIVER_DEFAULT_BUDGET_S, sleep_s=0)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        names = sorted(os.listdir(self.out))
        snaps = sorted(f"{r['id']}.snapshot.pickle.gz" for r in chosen if r["record_history"] == "1")
        self.assertEqual(names, sorted(["logs.tar.gz", "measured.csv", "summary.txt"] + snaps))
        self.assertLessEqual(len(names), 8)
        self.assertTrue(all(os.path.isfile(os.path.join(self.out, n)) for n in names))
        with tarfile.open(os.path.join(self.out, "logs.tar.gz")) as tar:
            members = set(tar.getnames())
            console = tar.extractfile("logs/console.txt").read().decode()
            log = json.load(tar.extractfile(f"logs/{chosen[0]['id']}.json"))
        for r in chosen:
            self.assertIn(f"logs/{r['id']}.json", members)
            self.assertIn(f"logs/{r['id']}.out.txt", members)
        self.assertIn("logs/nvidia-smi.txt", members)
        self.assertIn("gpu_check: 5 files under $OUT", proc.stdout)
        self.assertIn("[3/3]", console)  # measure.py's progress went to the console too
        # The driver cleared the outside allocator setting; the case's own alloc_conf reached it.
        self.assertEqual(log["env"]["alloc_conf"], chosen[0]["alloc_conf"])
        with open(os.path.join(self.out, "measured.csv"), newline="") as f:
            self.assertEqual(len(list(csv.DictReader(f))), 3 * len(chosen))

    def test_a_spent_budget_skips_the_rest_cleanly(self):
        rows = [r for r in read_gpu_check() if r["model"] == "Qwen/Qwen2-0.5B-Instruct"]
        self.assertGreaterEqual(len(rows), 2)
        rows = [rows[0], rows[0] | {"id": "GC-X2"}, rows[0] | {"id": "GC-X3"}]
        # Room for the first case's estimate plus under 1.5 s: after it (2 s) the rest cannot fit.
        budget = math.ceil(DRIVER_PACK_RESERVE_S + estimate(rows[0]) + 0.5)
        proc, _ = self.run_driver(rows, budget_s=budget, sleep_s=2)
        self.assertEqual(proc.returncode, measure.EXIT_FAILED, proc.stdout + proc.stderr)
        with open(os.path.join(self.out, "summary.txt")) as f:
            table = f.read()
        self.assertRegex(table, rf"{rows[0]['id']}\s+ok")
        self.assertEqual(table.count("skipped (budget)"), 2)
        self.assertIn("logs.tar.gz", os.listdir(self.out))


class SnapshotCapTest(unittest.TestCase):
    def setUp(self):
        import tempfile
        self.tmp = tempfile.mkdtemp(prefix="memfit-snap-")
        self.addCleanup(__import__("shutil").rmtree, self.tmp)

    @staticmethod
    def fake_snapshot(events: int) -> dict:
        FRAMES = 10  # noqa: N806
        """Shaped like torch.cuda.memory._snapshot(): random frame text so gzip cannot hide it."""
        rng = random.Random(0)
        frames = lambda: [{"filename": f"/x/{rng.getrandbits(64):x}.py", "line": rng.randrange(999),  # noqa: E731
                           "name": f"f{rng.getrandbits(32):x}"} for _ in range(FRAMES)]
        sizes = [512, 4096, 2 ** 21, 2 ** 30]
        trace = [{"action": "alloc", "addr": i, "size": sizes[i % 4], "stream": 0, "frames": frames()}
                 for i in range(events)]
        blocks = [{"size": sizes[i % 4], "state": "active_allocated", "frames": frames()}
                  for i in range(50)]
        return {"segments": [{"address": 0, "total_size": 2 ** 31, "blocks": blocks}],
                "device_traces": [trace]}

    def load(self, path: str) -> dict:
        with gzip.open(path, "rb") as f:
            return pickle.load(f)

    def test_small_snapshot_is_kept_whole(self):
        snap = self.fake_snapshot(100)
        kept = snapshots.write_capped(snap, os.path.join(self.tmp, "s.pickle.gz"), 10 * 2 ** 20)
        self.assertEqual(kept["level"], "full")
        self.assertEqual(self.load(kept["path"]), snap)

    def test_stacks_of_small_allocations_go_first_then_all_stacks_then_small_events(self):
        snap = self.fake_snapshot(400)
        sizes = {level: len(gzip.compress(pickle.dumps(shrink(snap), protocol=4), compresslevel=6))
                 for level, shrink in snapshots.LEVELS}
        self.assertEqual(list(sizes.values()), sorted(sizes.values(), reverse=True))
        full = sizes["full"]
        path = os.path.join(self.tmp, "s.pickle.gz")
        kept = snapshots.write_capped(snap, path, int(full * 0.6))
        self.assertEqual(kept["level"], "stacks kept for allocations >= 1 MiB")
        loaded = self.load(path)
        trace = loaded["device_traces"][0]
        self.assertTrue(all(e["frames"] for e in trace if e["size"] >= 2 ** 20))
        self.assertFalse(any(e["frames"] for e in trace if e["size"] < 2 ** 20))
        self.assertLessEqual(os.path.getsize(path), int(full * 0.6))
        self.assertEqual(len(snap["device_traces"][0][0]["frames"]), 10)  # the input is untouched

        kept = snapshots.write_capped(snap, path, sizes["no stacks"])
        self.assertEqual(kept["level"], "no stacks")
        kept = snapshots.write_capped(snap, path, sizes["no stacks"] - 1)
        self.assertEqual(kept["level"], "no stacks, trace events < 1 MiB dropped")
        self.assertEqual(kept["trace_events"], 200)  # the 2 MiB and 1 GiB allocations of 400

    def test_nothing_is_written_when_even_the_smallest_level_is_over(self):
        path = os.path.join(self.tmp, "s.pickle.gz")
        kept = snapshots.write_capped(self.fake_snapshot(200), path, 100)
        self.assertIsNone(kept["path"])
        self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    unittest.main()


class CompareTest(HarnessTest):
    """compare_gpu_check.py on a fake device result: the committed CSV, the logs, the table."""

    def fake_out(self) -> str:
        out = os.path.join(self.tmp, "OUT")
        os.makedirs(os.path.join(out, "logs"))
        gib = 2 ** 30
        rows = []
        case_rows = read_gpu_check()[:2]
        measured = {"GC-01": (10.0, 12.0, 13.0), "GC-02": (20.0, 22.0, 23.5)}
        for case in case_rows:
            for (suffix, kind, _), value in zip(measure.COUNTERS, measured[case["id"]]):
                row = {c: case[c] for c in cases.FORMAT_COLUMNS}
                row.update(id=f"{case['id']}-{suffix}", gpu="H100-80GB", measured_kind=kind,
                           measured_gib=f"{value:.3f}", measured_scope="per_gpu", grade="A",
                           source=f"memfit tools/measure worker.py, log logs/{case['id']}.json")
                rows.append(row)
            log = {"case_id": case["id"], "status": "ok",
                   "memory": {"context_bytes": gib // 2, "expandable_segments_seen": False,
                              "after_training": {"outside_allocator": 3 * gib // 4}}}
            with open(os.path.join(out, "logs", f"{case['id']}.json"), "w") as f:
                json.dump(log, f)
        with tarfile.open(os.path.join(out, "logs.tar.gz"), "w:gz") as tar:
            tar.add(os.path.join(out, "logs"), arcname="logs")
        __import__("shutil").rmtree(os.path.join(out, "logs"))
        with open(os.path.join(out, "measured.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=cases.FORMAT_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        return out

    def predictions(self) -> str:
        # GC-01 allocated 9.0 vs 10.0 measured: -10 %; GC-02 allocated 16.0 vs 20.0: -20 %.
        doc = {"memfit_version": "test", "gpus": {"H100-80GB": {"cases": {
            "GC-01": {"max_allocated": 9.0, "max_reserved": 12.6, "nvidia_smi": 13.0,
                      "breakdown_gib": {"cuda_context": 0.5}},
            "GC-02": {"max_allocated": 16.0, "max_reserved": 23.1, "nvidia_smi": 23.5,
                      "breakdown_gib": {"cuda_context": 0.5}},
            "GC-03": {"max_allocated": 1.0, "max_reserved": 1.0, "nvidia_smi": 1.0}}}}}
        path = os.path.join(self.tmp, "predictions.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_measured_csv_logs_and_table(self):
        import compare_gpu_check as cg
        validation = os.path.join(self.tmp, "validation")
        oracle = os.path.join(self.tmp, "oracle.json")
        with open(oracle, "w") as f:
            json.dump({"GC-01": 10.5}, f)
        md = os.path.join(self.tmp, "table.md")
        with mock.patch("sys.stdout", new_callable=__import__("io").StringIO):
            code = cg.main(["compare", self.fake_out(), "--predictions", self.predictions(),
                            "--validation-dir", validation, "--markdown", md, "--oracle", oracle])
        self.assertEqual(code, 0)
        with open(os.path.join(validation, "measured_h100-80gb.csv"), newline="") as f:
            reader = csv.DictReader(f)
            self.assertEqual(reader.fieldnames, cases.FORMAT_COLUMNS)
            out = list(reader)
        self.assertEqual([r["id"] for r in out][:3], ["GC-01-alloc", "GC-01-reserved", "GC-01-smi"])
        self.assertEqual(out[0]["source"],
                         "memfit tools/measure/gpu_check.sh; log tests/validation/measured_h100-80gb/GC-01.json")
        with open(os.path.join(validation, "measured_h100-80gb", "GC-02.json")) as f:
            self.assertEqual(json.load(f)["case_id"], "GC-02")
        with open(md) as f:
            table = f.read()
        self.assertIn("| GC-01 | allocated | 10.00 | 9.00 | -10.0 | 10.50 | +5.0 |", table)
        self.assertIn("| GC-02 | allocated | 20.00 | 16.00 | -20.0 | — | — |", table)
        self.assertIn("| GC-01 | reserved | 12.00 | 12.60 | +5.0 |", table)
        # |errors| 10 and 20: median 15, p90 20; only -20 is beyond the 10 % danger line.
        self.assertIn("| allocated | 2 | 15.0 | 20.0 | 1 of 2 |", table)
        self.assertIn("| GC-01 | 0.500 | 0.750 | 0.500 | False |", table)
        self.assertIn("Not measured (failed, out of memory or skipped for time): GC-03.", table)

    def test_a_gpu_without_predictions_is_refused(self):
        import compare_gpu_check as cg
        path = self.predictions()
        with open(path) as f:
            doc = json.load(f)
        doc["gpus"] = {"H200": doc["gpus"]["H100-80GB"]}
        with open(path, "w") as f:
            json.dump(doc, f)
        with mock.patch("sys.stderr", new_callable=__import__("io").StringIO) as err:
            code = cg.main(["compare", self.fake_out(), "--predictions", path,
                            "--validation-dir", os.path.join(self.tmp, "v")])
        self.assertEqual(code, 1)
        self.assertIn("no predictions for H100-80GB", err.getvalue())

    def test_prediction_rows_and_the_two_paths_agreeing(self):
        import compare_gpu_check as cg
        case_rows = read_gpu_check()[:1]
        rows = cg.expanded_rows(case_rows, "H200")
        self.assertEqual([(r["id"], r["measured_kind"], r["gpu"]) for r in rows],
                         [("GC-01-alloc", "max_allocated", "H200"), ("GC-01-reserved", "max_reserved", "H200"),
                          ("GC-01-smi", "nvidia_smi", "H200")])
        self.assertTrue(all(r["measured_gib"] == cg.PLACEHOLDER_GIB for r in rows))
        self.assertNotIn("alloc_conf", rows[0])  # harness columns stay out of the FORMAT rows
        gib = 2 ** 30
        report = {"rows": [{"id": "GC-01-alloc", "estimate_gib": 9.0},
                           {"id": "GC-01-reserved", "estimate_gib": 10.0},
                           {"id": "GC-01-smi", "estimate_gib": 11.0}], "skipped": [], "errors": []}
        result = {"peak_allocated_bytes": 9 * gib, "peak_reserved_bytes": 10 * gib,
                  "device_total_bytes": 11 * gib, "breakdown": {"cuda_context_bytes": gib // 2}}
        out = cg.predictions_for(case_rows, report, {"GC-01": result})["cases"]["GC-01"]
        self.assertEqual(out, {"max_allocated": 9.0, "max_reserved": 10.0, "nvidia_smi": 11.0,
                               "breakdown_gib": {"cuda_context": 0.5}})
        result["device_total_bytes"] = 12 * gib
        with self.assertRaisesRegex(RuntimeError, "GC-01 nvidia_smi: validate 11.0 GiB but estimate 12.0"):
            cg.predictions_for(case_rows, report, {"GC-01": result})
        report = {"rows": [], "skipped": [], "errors": [
            {"id": f"GC-01-{s}", "message": "unsupported thing"} for s in ("alloc", "reserved", "smi")]}
        self.assertEqual(cg.predictions_for(case_rows, report, {"GC-01": {"error": {}}})["cases"]["GC-01"],
                         {"problem": "unsupported thing"})
