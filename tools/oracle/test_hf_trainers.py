"""Tests of the trainer runners' pins (hf_trainers.py). Skipped where torch or transformers is not installed (CI)."""
import dataclasses
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import transformers  # noqa: F401  (hf_trainers imports the loop runner, which needs it)
    from torch._subclasses.fake_tensor import FakeTensorMode
    import hf_trainers
except ImportError:  # CI has no torch
    torch = None


@unittest.skipIf(torch is None, "torch or transformers is not installed")
class PinTest(unittest.TestCase):
    def test_an_optimizer_without_flags_gets_cudas_foreach(self):
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(4))])
        self.assertIsNone(opt.param_groups[0]["foreach"])
        hf_trainers.pin_cuda_foreach(opt)
        self.assertTrue(opt.param_groups[0]["foreach"])
        self.assertEqual(hf_trainers.optimizer_impl(opt), "foreach")

    def test_a_fused_optimizer_stays_fused(self):
        opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(4))], fused=True)
        hf_trainers.pin_cuda_foreach(opt)
        self.assertFalse(opt.param_groups[0]["foreach"])
        self.assertEqual(hf_trainers.optimizer_impl(opt), "fused")

    def test_host_reads_of_fake_scalars_return_one_and_real_ones_their_value(self):
        with FakeTensorMode(), hf_trainers.host_reads_of_fake_scalars():
            n = torch.ones(3).sum()
            self.assertEqual(n.item(), 1.0)
            self.assertTrue(bool(n > 0))
        self.assertEqual(torch.tensor(3.0).item(), 3.0)  # restored outside
        with self.assertRaises(Exception):
            with FakeTensorMode():
                torch.ones(3).sum().item()

    def test_only_the_fields_a_version_has_are_passed(self):
        @dataclasses.dataclass
        class Args:
            output_dir: str = ""
            gradient_checkpointing: bool = False

        kwargs = hf_trainers._kwargs_for(Args, {"output_dir": "x", "activation_checkpointing": True})
        self.assertEqual(kwargs, {"output_dir": "x"})


if __name__ == "__main__":
    unittest.main()
