"""Tests of the measurement harness that need neither torch nor a GPU.

    python3 -m unittest discover -s tools/measure -p 'test_*.py'

They write their own small configs: only the fields the checks read, with the real models' values
where a check depends on them (head counts for TP, position tables, T5's ungated MLP).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases  # noqa: E402
import families  # noqa: E402
import make_campaign  # noqa: E402
import measure  # noqa: E402

CAMPAIGN = os.path.join(HERE, "campaign.csv")
REPO_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "validation", "configs")

_LLAMA_8 = {"num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 8192,
            "max_position_embeddings": 131072}
TINY_CONFIGS = {
    "facebook/opt-125m": {"model_type": "opt", "max_position_embeddings": 2048},
    "bigscience/bloomz-560m": {"model_type": "bloom"},
    "Qwen/Qwen2-0.5B-Instruct": {"model_type": "qwen2", "num_attention_heads": 14,
                                 "num_key_value_heads": 2, "max_position_embeddings": 32768},
    "openai-community/gpt2-large": {"model_type": "gpt2", "n_positions": 1024},
    "meta-llama/Llama-3.2-1B-Instruct": {"model_type": "llama", **_LLAMA_8},
    "Qwen/Qwen3-1.7B": {"model_type": "qwen3", "num_attention_heads": 16, "num_key_value_heads": 8},
    "google/gemma-2-2b": {"model_type": "gemma2", "num_attention_heads": 8,
                          "num_key_value_heads": 4, "max_position_embeddings": 8192},
    "microsoft/phi-2": {"model_type": "phi", "max_position_embeddings": 2048},
    "google-t5/t5-base": {"model_type": "t5", "feed_forward_proj": "relu"},
    "Qwen/Qwen2.5-3B": {"model_type": "qwen2", "num_attention_heads": 16, "num_key_value_heads": 2,
                        "intermediate_size": 11008},
    "meta-llama/Llama-3.2-3B": {"model_type": "llama", **_LLAMA_8},
    "Qwen/Qwen2.5-7B": {"model_type": "qwen2", "num_attention_heads": 28, "num_key_value_heads": 4},
    "meta-llama/Llama-3.1-8B": {"model_type": "llama", **_LLAMA_8, "intermediate_size": 14336},
    "Qwen/Qwen3-8B": {"model_type": "qwen3", **_LLAMA_8, "intermediate_size": 12288},
    "mistralai/Mistral-7B-v0.3": {"model_type": "mistral", **_LLAMA_8, "intermediate_size": 14336},
    "Qwen/Qwen3-30B-A3B": {"model_type": "qwen3_moe", "num_attention_heads": 32,
                           "num_key_value_heads": 4},
}


def write_configs(folder: str) -> None:
    for model, config in TINY_CONFIGS.items():
        with open(os.path.join(folder, cases.config_filename(model)), "w") as f:
            json.dump(config, f)


def read_campaign() -> tuple[list[str], list[dict]]:
    with open(CAMPAIGN, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames), list(reader)


def run_measure(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = measure.main(list(argv))
    return code, out.getvalue(), err.getvalue()


class HarnessTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="memfit-measure-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.configs = os.path.join(self.tmp, "configs")
        os.mkdir(self.configs)
        write_configs(self.configs)

    def write_cases(self, header: list[str], rows: list[dict], name: str = "cases.csv") -> str:
        path = os.path.join(self.tmp, name)
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        return path


class CampaignTest(HarnessTest):
    def test_campaign_passes_the_dry_run(self):
        _, rows = read_campaign()
        code, out, err = run_measure(CAMPAIGN, "--configs", self.configs, "--dry-run")
        self.assertEqual(code, 0, err)
        self.assertIn(f"total: {len(rows)} cases", out)
        self.assertEqual(len([line for line in out.splitlines() if line.startswith("MFM-")]), len(rows))

    def test_campaign_size_and_coverage(self):
        header, rows = read_campaign()
        self.assertEqual(header, make_campaign.CAMPAIGN_COLUMNS)
        single = [r for r in rows if r["n_gpus"] == "1"]
        multi = [r for r in rows if r["n_gpus"] != "1"]
        self.assertGreaterEqual(len(single), 200)
        self.assertGreaterEqual(len(multi), 30)
        covered = {(column, r[column]) for r in rows for column in
                   ("method", "precision", "optimizer", "optimizer_impl", "activation_checkpointing",
                    "attention", "compile", "sharding")}
        for expected in [("method", "full"), ("method", "lora"), ("method", "freeze"),
                         ("precision", "fp32"), ("precision", "amp_bf16"), ("precision", "bf16"),
                         ("optimizer", "adamw"), ("optimizer", "sgd_momentum"),
                         ("optimizer", "adafactor"), ("optimizer_impl", "foreach"),
                         ("optimizer_impl", "fused"), ("activation_checkpointing", "full"),
                         ("attention", "eager"), ("attention", "sdpa"), ("compile", "1"),
                         ("sharding", "zero3"), ("sharding", "zero2")]:
            self.assertIn(expected, covered)
        self.assertEqual({r["tp"] for r in multi if r["tp"] != "1"}, {"2", "4", "8"})
        self.assertEqual({r["dp"] for r in multi if r["dp"] != "1"}, {"2", "4", "8"})
        self.assertTrue({int(r["micro_batch"]) for r in single} >= {1, 2, 4, 8})
        self.assertTrue({int(r["seq_len"]) for r in single} >= {256, 8192})
        self.assertEqual(len({r["id"] for r in rows}), len(rows))

    @unittest.skipUnless(all(os.path.isfile(os.path.join(REPO_CONFIGS, cases.config_filename(m)))
                             for m in make_campaign.MODELS.values()),
                         "tests/validation/configs does not hold every campaign model yet")
    def test_campaign_regenerates_byte_for_byte(self):
        out = os.path.join(self.tmp, "campaign.csv")
        with contextlib.redirect_stdout(io.StringIO()):
            code = make_campaign.main(["--configs", REPO_CONFIGS, "--out", out])
        self.assertEqual(code, 0)
        with open(out, "rb") as a, open(CAMPAIGN, "rb") as b:
            self.assertEqual(a.read(), b.read(), "campaign.csv is stale: rerun make_campaign.py")

    def test_dry_run_does_not_import_torch(self):
        # Poisoning sys.modules makes any `import torch` raise, wherever it hides.
        code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, sys.argv[1]); "
                "import measure; sys.exit(measure.main(sys.argv[2:]))")
        proc = subprocess.run([sys.executable, "-c", code, HERE, CAMPAIGN, "--configs",
                               self.configs, "--dry-run"], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("dry run: all cases valid", proc.stdout)


class MalformedTest(HarnessTest):
    def base_rows(self) -> tuple[list[str], dict, dict]:
        header, rows = read_campaign()
        by_id = {r["id"]: r for r in rows}
        single = next(r for r in rows if r["model"] == "meta-llama/Llama-3.2-1B-Instruct"
                      and r["method"] == "full" and r["n_gpus"] == "1")
        return header, dict(single), by_id

    def assert_rejected(self, changes: dict, message: str):
        header, good, _ = self.base_rows()
        bad = {**good, **changes, "id": "BAD-1"}
        path = self.write_cases(header, [dict(good), bad])
        code, out, err = run_measure(path, "--configs", self.configs, "--dry-run")
        self.assertEqual(code, measure.EXIT_INVALID, out)
        errors = [line for line in err.splitlines() if line.startswith("error:")]
        self.assertTrue(errors, err)
        self.assertTrue(all("(BAD-1)" in line for line in errors), err)  # the good row is clean
        self.assertTrue(any(message in line for line in errors), f"{message!r} not in\n{err}")

    def test_parallel_degrees_must_multiply_to_n_gpus(self):
        self.assert_rejected({"dp": "2"}, "dp*tp*pp*cp = 2 but n_gpus = 1")

    def test_lora_needs_rank_and_targets(self):
        self.assert_rejected({"method": "lora", "lora_targets": "q,v"},
                             "lora_rank is empty but method is lora")

    def test_unknown_enum_value(self):
        self.assert_rejected({"precision": "fp64"}, "precision='fp64' is not one of")

    def test_format_value_the_harness_cannot_run(self):
        self.assert_rejected({"method": "dora", "lora_rank": "16", "lora_targets": "q,v"},
                             "method=dora is not supported by this harness")

    def test_missing_config(self):
        self.assert_rejected({"model": "nobody/nothing"}, "config not found")

    def test_measured_columns_must_be_empty(self):
        self.assert_rejected({"measured_gib": "12.5"}, "measured_gib must be empty")

    def test_tensor_parallel_needs_divisible_heads(self):
        self.assert_rejected({"model": "Qwen/Qwen2.5-3B", "n_gpus": "8", "tp": "8"},
                             "num_key_value_heads=2 is not divisible by tp=8")

    def test_sdpa_on_an_eager_only_family(self):
        self.assert_rejected({"model": "bigscience/bloomz-560m", "attention": "sdpa"},
                             "only eager attention for bloom")

    def test_sequence_past_learned_positions(self):
        self.assert_rejected({"model": "openai-community/gpt2-large", "seq_len": "2048"},
                             "exceeds the learned position table (n_positions=1024)")

    def test_lora_target_the_family_lacks(self):
        self.assert_rejected({"model": "openai-community/gpt2-large", "method": "lora",
                              "lora_rank": "8", "lora_targets": "q,gate"}, "has no 'gate' projection")

    def test_missing_column(self):
        header, good, _ = self.base_rows()
        header = [c for c in header if c != "notes"]
        good.pop("notes")
        path = self.write_cases(header, [good])
        code, _, err = run_measure(path, "--configs", self.configs, "--dry-run")
        self.assertEqual(code, measure.EXIT_INVALID)
        self.assertIn("missing column(s): notes", err)

    def test_config_without_model_type(self):
        header, good, _ = self.base_rows()
        with open(os.path.join(self.configs, cases.config_filename(good["model"])), "w") as f:
            json.dump({"hidden_size": 8}, f)
        code, _, err = run_measure(self.write_cases(header, [good]), "--configs", self.configs,
                                   "--dry-run")
        self.assertEqual(code, measure.EXIT_INVALID)
        self.assertIn("has no model_type", err)


class LoraTargetTest(unittest.TestCase):
    def targets(self, config: dict, short: str):
        return families.lora_target_modules(config, short)

    def test_llama_family(self):
        self.assertEqual(self.targets({"model_type": "llama"}, "q,k,v,o,gate,up,down"),
                         ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        self.assertEqual(self.targets({"model_type": "qwen3"}, "q,v"), ["q_proj", "v_proj"])

    def test_gpt2_fuses_qkv_and_splits_the_two_c_proj(self):
        self.assertEqual(self.targets({"model_type": "gpt2"}, "q,v"), ["attn.c_attn"])
        self.assertEqual(self.targets({"model_type": "gpt2"}, "q,k,v,o,up,down"),
                         ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"])
        self.assertEqual(families.fused_target_note({"model_type": "gpt2"}, "q,v"),
                         "fused projection also adapts k")
        with self.assertRaisesRegex(families.TargetError, "no 'gate' projection"):
            self.targets({"model_type": "gpt2"}, "gate")

    def test_opt(self):
        self.assertEqual(self.targets({"model_type": "opt"}, "q,k,v,o,up,down"),
                         ["q_proj", "k_proj", "v_proj", "self_attn.out_proj", "fc1", "fc2"])

    def test_bloom(self):
        self.assertEqual(self.targets({"model_type": "bloom"}, "q,k,v,o,up,down"),
                         ["self_attention.query_key_value", "self_attention.dense",
                          "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"])

    def test_phi(self):
        self.assertEqual(self.targets({"model_type": "phi"}, "q,k,v,o,up,down"),
                         ["q_proj", "k_proj", "v_proj", "self_attn.dense", "mlp.fc1", "mlp.fc2"])

    def test_t5_plain_and_gated(self):
        self.assertEqual(self.targets({"model_type": "t5", "feed_forward_proj": "relu"},
                                      "q,k,v,o,up,down"), ["q", "k", "v", "o", "wi", "wo"])
        self.assertEqual(self.targets({"model_type": "t5", "feed_forward_proj": "gated-gelu"},
                                      "gate,up,down"), ["wi_0", "wi_1", "wo"])
        with self.assertRaisesRegex(families.TargetError, "no 'gate' projection"):
            self.targets({"model_type": "t5", "feed_forward_proj": "relu"}, "gate")

    def test_all_linear_passes_through_and_unknown_names_fail(self):
        self.assertEqual(self.targets({"model_type": "opt"}, "all-linear"), "all-linear")
        with self.assertRaisesRegex(families.TargetError, "unknown LoRA target"):
            self.targets({"model_type": "llama"}, "q,query")


class OutputTest(HarnessTest):
    """The orchestration around the worker, with a stub interpreter standing in for torch."""

    STUB = '''#!{python}
import json, sys
spec = json.load(open(sys.argv[2]))
with open({calls!r}, "a") as f:
    f.write(spec["row"]["id"] + "\\n")
gib = 2 ** 30
if spec["row"]["id"].endswith("2"):
    log = {{"status": "oom", "error": "CUDA out of memory"}}
else:
    steps = [{{"max_allocated": a * gib, "max_reserved": (a + 1) * gib, "device_used": (a + 2) * gib}}
             for a in (10, 9, 9)]
    log = {{"status": "ok", "date": "2025-01", "steps": steps,
           "summary": {{"first_step": steps[0], "steady_state": steps[1], "all_steps": steps[0]}},
           "memory": {{"context_bytes": gib // 2}},
           "settings": {{"steps": 3, "seed": 0, "trainable_params": 123}},
           "env": {{"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_total_bytes": 85 * 10 ** 9,
                    "torch": "2.6.0", "transformers": "4.50.0", "peft": "0.15.0"}}}}
json.dump(log, open(spec["log_path"], "w"))
'''

    def test_rows_per_counter_failures_and_reuse(self):
        header, rows = read_campaign()
        chosen = [dict(r) for r in rows[:2]]
        path = self.write_cases(header, chosen)
        calls = os.path.join(self.tmp, "calls.txt")
        stub = os.path.join(self.tmp, "fake-python")
        with open(stub, "w") as f:
            f.write(self.STUB.format(python=sys.executable, calls=calls))
        os.chmod(stub, os.stat(stub).st_mode | stat.S_IEXEC)
        out_csv = os.path.join(self.tmp, "out", "measured.csv")
        argv = [path, "--configs", self.configs, "--out", out_csv, "--python", stub]

        code, _, _ = run_measure(*argv)
        self.assertEqual(code, measure.EXIT_FAILED)  # the second case "ran out of memory"
        with open(out_csv, newline="") as f:
            reader = csv.DictReader(f)
            self.assertEqual(reader.fieldnames, cases.FORMAT_COLUMNS)
            out = list(reader)
        first = chosen[0]["id"]
        self.assertEqual([r["id"] for r in out], [f"{first}-alloc", f"{first}-reserved", f"{first}-smi"])
        self.assertEqual([r["measured_kind"] for r in out], ["max_allocated", "max_reserved", "nvidia_smi"])
        self.assertEqual([r["measured_gib"] for r in out], ["10.000", "11.000", "12.000"])
        self.assertEqual({(r["grade"], r["gpu"], r["framework"], r["measured_scope"]) for r in out},
                         {("A", "H100-80GB", "transformers_loop", "per_gpu")})
        self.assertIn("steady_state(steps 2..n)=9.000 GiB", out[0]["notes"])
        self.assertIn("torch=2.6.0", out[0]["notes"])

        # A second run reuses the successful log and retries only the failed case.
        code, _, _ = run_measure(*argv)
        self.assertEqual(code, measure.EXIT_FAILED)
        with open(calls) as f:
            self.assertEqual(f.read().split(), [first, chosen[1]["id"], chosen[1]["id"]])

    def test_gpu_names_map_to_format_ids(self):
        gib = 2 ** 30
        self.assertEqual(measure.gpu_id("NVIDIA H100 80GB HBM3", 80 * gib), "H100-80GB")
        self.assertEqual(measure.gpu_id("NVIDIA H100 NVL", 94 * gib), "H100-94GB")
        self.assertEqual(measure.gpu_id("NVIDIA H200", 140 * gib), "H200")
        self.assertEqual(measure.gpu_id("NVIDIA H20", 96 * gib), "H20")
        self.assertEqual(measure.gpu_id("NVIDIA A100-SXM4-40GB", 40 * gib), "A100-40GB")
        self.assertEqual(measure.gpu_id("NVIDIA A100-SXM4-80GB", 80 * gib), "A100-80GB")
        self.assertEqual(measure.gpu_id("Some Future GPU", 80 * gib), "")


if __name__ == "__main__":
    unittest.main()
