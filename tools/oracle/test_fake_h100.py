"""The pinned SDPA kernels save what the H100's kernels save (out + fp32 logsumexp), never the S x S probabilities
that the math fallback would keep. Skipped where torch is not installed."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    import fake_h100
    import tracker as tr
except ImportError:
    torch = None

B, H, S, D = 1, 4, 256, 64


@unittest.skipIf(torch is None, "torch is not installed")
class PinnedSdpaTest(unittest.TestCase):
    def saved_after_forward(self, mask=None, enable_gqa=False, kv_heads=H):
        with FakeTensorMode(allow_non_fake_inputs=True), fake_h100.pin_h100_sdpa():
            q = torch.empty(B, H, S, D, dtype=torch.bfloat16, requires_grad=True)
            k = torch.empty(B, kv_heads, S, D, dtype=torch.bfloat16, requires_grad=True)
            v = torch.empty(B, kv_heads, S, D, dtype=torch.bfloat16, requires_grad=True)
            t = tr.LiveBytes()
            with t, tr.saved_tensor_marker(t):
                m = None if mask is None else torch.ones(S, S, dtype=torch.bool).tril()
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=mask is None,
                                                     enable_gqa=enable_gqa)
                saved = sorted(b.nbytes for b in t.live.values() if b.category == "activations")
            del out
            return dict(fake_h100.SDPA_CALLS), saved

    def test_no_mask_runs_flash_and_saves_out_and_logsumexp(self):
        calls, saved = self.saved_after_forward()
        self.assertEqual(calls, {"flash": 1, "efficient": 0, "math": 0})
        self.assertIn(B * H * S * D * 2, saved)  # out, bf16
        self.assertIn(B * H * S * 4, saved)  # logsumexp, fp32
        self.assertLess(max(saved), B * H * S * S * 2)  # no probabilities

    def test_grouped_query_heads_stay_unexpanded_in_flash(self):
        calls, saved = self.saved_after_forward(enable_gqa=True, kv_heads=1)
        self.assertEqual(calls["flash"], 1)
        self.assertLess(max(saved), B * H * S * S * 2)

    def test_a_mask_runs_the_memory_efficient_kernel(self):
        calls, saved = self.saved_after_forward(mask=True)
        self.assertEqual(calls, {"flash": 0, "efficient": 1, "math": 0})
        self.assertLessEqual(max(saved), S * S * 2)  # at most the additive bias, never H x S x S


    def test_under_autocast_the_kernel_gets_bf16_inputs(self):
        """CUDA's sdpa autocast kernel casts q, k, v (and a float mask) before choosing a kernel; so does the pin."""
        from cuda_autocast import cuda_autocast_on_cpu
        with FakeTensorMode(allow_non_fake_inputs=True), fake_h100.pin_h100_sdpa(), cuda_autocast_on_cpu():
            q = torch.empty(B, H, S, D, requires_grad=True)  # fp32, as a fp32 model's projections under no autocast
            t = tr.LiveBytes()
            with t, tr.saved_tensor_marker(t), torch.autocast("cpu", dtype=torch.bfloat16):
                out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
                saved = sorted(b.nbytes for b in t.live.values() if b.category == "activations")
            self.assertEqual(out.dtype, torch.bfloat16)
            del out
        self.assertEqual(fake_h100.SDPA_CALLS["flash"], 1)
        self.assertIn(B * H * S * D * 2, saved)  # the bf16 cast of q (a leaf: one cached cast serves k and v)
        self.assertNotIn(B * H * S * D * 4, saved)  # no fp32 q, k, v saved


@unittest.skipIf(torch is None, "torch is not installed")
class PinnedDropoutTest(unittest.TestCase):
    def test_training_dropout_saves_a_one_byte_mask(self):
        with FakeTensorMode(), fake_h100.pin_h100_sdpa():
            x = torch.empty(64, 1024, dtype=torch.bfloat16, requires_grad=True)
            t = tr.LiveBytes()
            with t, tr.saved_tensor_marker(t):
                y = torch.nn.Dropout(0.1)(x)
                saved = sorted(b.nbytes for b in t.live.values() if b.category == "activations")
            del y
        self.assertEqual(saved, [64 * 1024])  # bool mask; the cpu path would save a bf16 one (2 B per element)


if __name__ == "__main__":
    unittest.main()
