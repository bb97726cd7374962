"""The GPU cross-check's case selection and mapping (standard library only; runs in CI)."""
import csv
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_check  # noqa: E402


class SelectionTest(unittest.TestCase):
    def setUp(self):
        self.rows = {r["id"]: r for r in gpu_check.read_rows(gpu_check.CASES)}

    def test_left_out_for_a_reason(self):
        self.assertIn("autocast", gpu_check.why_not_runnable(self.rows["GC-01"]))
        self.assertIn("bitsandbytes", gpu_check.why_not_runnable(self.rows["GC-10"]))
        self.assertIsNone(gpu_check.why_not_runnable(self.rows["GC-08"]))

    def test_runs_the_seven_bf16_cases(self):
        runnable = sorted(i for i, r in self.rows.items() if gpu_check.why_not_runnable(r) is None)
        self.assertEqual(runnable, ["GC-06", "GC-07", "GC-08", "GC-09", "GC-12", "GC-13", "GC-16"])

    def test_case_follows_the_measured_loop(self):
        c = gpu_check.oracle_case(self.rows["GC-09"])
        self.assertEqual((c["method"], c["lora_rank"], c["lora_targets"]), ("lora", 16, "q,k,v,o,gate,up,down"))
        self.assertEqual((c["micro_batch"], c["seq_len"], c["activation_checkpointing"]), (4, 1024, "full"))
        self.assertTrue(c["release_outputs"])
        self.assertFalse(c["checkpoint_use_reentrant"])
        self.assertEqual(c["steps"], gpu_check.MEASURED_STEPS)
        self.assertTrue(os.path.exists(c["config_path"]))

    def test_committed_records_cover_the_runnable_cases(self):
        import json
        with open(gpu_check.ALLOCATED) as f:
            allocated = json.load(f)
        runnable = {i for i, r in self.rows.items() if gpu_check.why_not_runnable(r) is None}
        self.assertEqual(set(allocated), runnable)
        self.assertTrue(all(v > 0 for v in allocated.values()))


if __name__ == "__main__":
    unittest.main()
