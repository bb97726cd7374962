"""Tracker tests on hand-countable cases. Run: tools/oracle/.venvs/<set>/bin/python -m pytest tools/oracle
(or python -m unittest discover -s tools/oracle); skipped where torch is not installed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
    import tracker as tr
except ImportError:  # CI has no torch
    torch = None

F32 = 4


@unittest.skipIf(torch is None, "torch is not installed")
class RoundingTest(unittest.TestCase):
    def test_blocks_are_multiples_of_512(self):
        self.assertEqual([tr.rounded_bytes(n) for n in (0, 1, 512, 513, 4096)], [0, 512, 512, 1024, 4096])


@unittest.skipIf(torch is None, "torch is not installed")
class MlpTest(unittest.TestCase):
    """x[8,256] -> Linear(256,128) -> ReLU -> Linear(128,64) -> sum, fp32, AdamW foreach, two steps."""
    B, IN, HID, OUT = 8, 256, 128, 64

    def run_steps(self, optimizer_impl="foreach", steps=2, stop_after_forward=False):
        with FakeTensorMode():
            model = torch.nn.Sequential(torch.nn.Linear(self.IN, self.HID), torch.nn.ReLU(),
                                        torch.nn.Linear(self.HID, self.OUT))
            t = tr.LiveBytes()
            for p in model.parameters():
                t.track(p, "weights")
                p.register_post_accumulate_grad_hook(lambda q: t.mark(q.grad, "gradients"))
            opt = torch.optim.AdamW(model.parameters(), foreach=optimizer_impl == "foreach",
                                    fused=optimizer_impl == "fused")
            t.optimizer_scalars_on_host = optimizer_impl != "fused"
            with t, tr.saved_tensor_marker(t):
                x = torch.randn(self.B, self.IN)
                t.mark(x, "inputs")
                for step in range(steps):
                    t.step, t.phase = step, "forward"
                    y = model(x).sum()
                    if stop_after_forward:
                        return t, t.breakdown(list(t.live.values()))
                    t.phase = "backward"
                    y.backward()
                    t.phase = "optimizer"
                    opt.step()
                    for state in opt.state.values():
                        for v in state.values():
                            if t.block_of(v) is not None:
                                t.mark(v, "optimizer")
                    opt.zero_grad(set_to_none=True)
                    del y
                return t, t.breakdown(list(t.live.values()))

    def weight_bytes(self):
        return sum(tr.rounded_bytes(n * F32) for n in (self.IN * self.HID, self.HID, self.HID * self.OUT, self.OUT))

    def test_forward_saves_the_relu_output_once(self):
        t, live = self.run_steps(stop_after_forward=True)
        self.assertEqual(live["weights"], self.weight_bytes())
        self.assertEqual(live["inputs"], self.B * self.IN * F32)  # x, saved by the first linear, stays an input
        self.assertEqual(live["activations"], self.B * self.HID * F32)  # ReLU's output = the 2nd linear's input
        self.assertEqual(live["gradients"] + live["optimizer"], 0)

    def test_peak_is_the_foreach_adamw_step(self):
        t, _ = self.run_steps()
        w = self.weight_bytes()
        at_peak = t.breakdown()
        self.assertEqual(t.peak_where["phase"], "optimizer")
        self.assertEqual(at_peak["weights"], w)
        self.assertEqual(at_peak["gradients"], w)
        self.assertEqual(at_peak["optimizer"], 2 * w)  # exp_avg and exp_avg_sq; step counts on the host
        # foreach AdamW's sqrt(exp_avg_sq) list (torch/optim/adam.py _multi_tensor_adam) is the step's temporary,
        # beside the loss scalar the loop still holds
        self.assertEqual(at_peak["temporaries"], w + 512)
        self.assertEqual(t.peak_bytes, sum(at_peak.values()))

    def test_fused_adamw_keeps_step_counts_on_the_device(self):
        t, end = self.run_steps(optimizer_impl="fused")
        w = self.weight_bytes()
        self.assertEqual(end["optimizer"], 2 * w + 4 * 512)  # + one fp32 step scalar per parameter
        self.assertEqual(t.peak_where["phase"], "backward")  # no step temporaries: the peak is the 2nd backward

    def test_frees_return_to_the_model_states(self):
        t, end = self.run_steps()
        w = self.weight_bytes()
        self.assertEqual(sum(end.values()), w + 2 * w + self.B * self.IN * F32)  # weights, AdamW states, x


@unittest.skipIf(torch is None, "torch is not installed")
class StorageResizeTest(unittest.TestCase):
    """FSDP frees a gathered parameter with UntypedStorage.resize_(0) and gathers into the same storage again."""

    def test_resize_to_zero_frees_and_back_allocates(self):
        with FakeTensorMode():
            t = tr.LiveBytes()
            with t:
                x = torch.empty(1024, dtype=torch.float32)
                self.assertEqual(t.total_bytes, 4096)
                x.untyped_storage().resize_(0)
                self.assertEqual(t.total_bytes, 0)
                x.untyped_storage().resize_(8192)
                self.assertEqual(t.total_bytes, 8192)
                self.assertEqual(t.peak_bytes, 8192)
                self.assertEqual(t.block_of(x).category, "weights")
            self.assertIsNot(torch.UntypedStorage.resize_, None)
            del x
            self.assertEqual(t.total_bytes, 0)


if __name__ == "__main__":
    unittest.main()
