"""CUDA autocast on the fake cpu device (cuda_autocast.py) against CUDA autocast itself.

CUDA's policy is run on fake `cuda` tensors (PyPI's CUDA build: forward ops work on fake cuda without a GPU, only
backward does not) and the emulation on fake `cpu` tensors; for every op a Llama/Qwen/Gemma training step runs under
autocast, with fp32 parameters and bf16 or fp32 activations, both must give the same output dtype and make the same
casts (`_to_copy` ops and their dtypes). Plain CPU autocast is checked to differ (the reason for the emulation).
Skipped without torch or without a CUDA build.
"""
import contextlib
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from cuda_autocast import CUDA_POLICY, OUTSIDE_POLICY, cuda_autocast_on_cpu, ops_with_kernel
except ImportError:  # CI has no torch: the tests skip, the recorder below needs a base class
    torch = None
    TorchDispatchMode = object


def _labels(t):
    return torch.zeros(t.x.shape[0], dtype=torch.long, device=t.x.device)


# What the decoder layers, heads and losses in tests/oracle call. t.x: activations [4, 64] (bf16 or fp32), t.w: an fp32
# weight [32, 64], t.v: an fp32 vector [64] (norm weights), t.b: an fp32 bias [32], t.f: fp32 activations [4, 64].
OPS = {
    "linear": lambda t: F.linear(t.x, t.w),
    "linear_bias": lambda t: F.linear(t.x, t.w, t.b),
    "matmul": lambda t: t.x @ t.w.t(),
    "bmm": lambda t: torch.bmm(t.x.unsqueeze(0), t.w.t().unsqueeze(0)),
    "baddbmm": lambda t: torch.baddbmm(torch.zeros(1, 4, 32, dtype=t.x.dtype, device=t.x.device), t.x.unsqueeze(0),
                                       t.w.t().unsqueeze(0)),
    "einsum": lambda t: torch.einsum("ij,kj->ik", t.x, t.w),
    "softmax": lambda t: torch.softmax(t.x, -1),
    "softmax_fp32": lambda t: F.softmax(t.x, dim=-1, dtype=torch.float32),
    "log_softmax": lambda t: torch.log_softmax(t.x, -1),
    "layer_norm": lambda t: F.layer_norm(t.x, t.x.shape[-1:]),
    "layer_norm_affine": lambda t: F.layer_norm(t.x, t.x.shape[-1:], t.v, t.v),
    "rms_norm": lambda t: F.rms_norm(t.x, t.x.shape[-1:]),
    "rms_norm_weight": lambda t: F.rms_norm(t.x, t.x.shape[-1:], t.v),
    "llama_rms_norm": lambda t: t.v * (t.x.float() * torch.rsqrt(t.x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
                                       ).to(t.x.dtype),
    "gemma_rms_norm": lambda t: (t.x.float() * torch.rsqrt(t.x.float().pow(2).mean(-1, keepdim=True) + 1e-6)
                                 * (1.0 + t.v.float())).type_as(t.x),
    "cross_entropy": lambda t: F.cross_entropy(t.x, _labels(t)),
    "cross_entropy_float": lambda t: F.cross_entropy(t.x.float(), _labels(t)),
    "nll_loss": lambda t: F.nll_loss(t.x, _labels(t)),
    "sum": lambda t: t.x.sum(),
    "sum_dim": lambda t: t.x.sum(-1),
    "mean": lambda t: t.x.mean(-1),
    "exp": lambda t: t.x.exp(),
    "pow": lambda t: t.x.pow(2),
    "rsqrt": lambda t: t.x.rsqrt(),
    "reciprocal": lambda t: t.x.reciprocal(),
    "silu": lambda t: F.silu(t.x),
    "gelu": lambda t: F.gelu(t.x),
    "gelu_tanh": lambda t: F.gelu(t.x, approximate="tanh"),
    "tanh": lambda t: torch.tanh(t.x),
    "softcap": lambda t: torch.tanh(t.x / 30.0) * 30.0,
    "mul": lambda t: t.x * t.x,
    "mul_weight": lambda t: t.x * t.v,
    "add_fp32": lambda t: t.x + t.f,
    "div": lambda t: t.x / 3.0,
    "cat": lambda t: torch.cat([t.x, t.f], -1),
    "stack": lambda t: torch.stack([t.x, t.f]),
    "neg": lambda t: -t.x,
    "where": lambda t: torch.where(t.x > 0, t.x, 0.0),
    # the kernel fake_h100.pin_h100_sdpa calls (sdpa's math fallback upcasts on CUDA only; the oracle pins flash)
    "sdpa_flash": lambda t: torch.ops.aten._scaled_dot_product_flash_attention(*[t.x.view(1, 1, 4, 64)] * 3)[0],
    "embedding": lambda t: F.embedding(torch.zeros(3, dtype=torch.long, device=t.x.device), t.w),
    "cumsum": lambda t: t.x.cumsum(-1),
    "mse_loss": lambda t: F.mse_loss(t.x, t.x),
    "norm": lambda t: torch.norm(t.x),
    "vector_norm": lambda t: torch.linalg.vector_norm(t.x),
    "addcmul": lambda t: torch.addcmul(t.x, t.x, t.f),
    "to_float": lambda t: t.x.float(),
    "logsumexp": lambda t: torch.logsumexp(t.x, -1),
}


class Casts(TorchDispatchMode):
    """Records the dtype of every cast (`_to_copy`) the ops below autocast make."""

    def __init__(self):
        super().__init__()
        self.casts = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten._to_copy.default:
            self.casts.append(str(out.dtype))
        return out


def run_ops(device, activation_dtype, emulate):
    """{op: (output dtype, casts)} under autocast on `device` (CUDA's policy emulated on cpu when `emulate`)."""
    out = {}
    with FakeTensorMode(allow_non_fake_inputs=True):
        # fp32 weights that do not require grad: a cast of a fake cuda tensor that does builds an AccumulateGrad
        # node, which asks the real CUDA driver for a stream (the cast cache is checked on cpu below)
        t = types.SimpleNamespace(x=torch.empty(4, 64, dtype=activation_dtype, device=device),
                                  w=torch.empty(32, 64, device=device), v=torch.empty(64, device=device),
                                  b=torch.empty(32, device=device), f=torch.empty(4, 64, device=device))
        policy = cuda_autocast_on_cpu() if emulate else contextlib.nullcontext()
        with policy, autocast_region(device):
            for name, op in OPS.items():
                with Casts() as casts:
                    y = op(t)
                out[name] = (y.dtype, casts.casts)
    return out


@contextlib.contextmanager
def autocast_region(device):
    """torch.autocast(device, bf16) for cpu; for cuda its effect set by hand: torch.autocast("cuda") disables itself
    without a GPU (and pretending one is there sends fake indexing to the CUDA driver); the policy needs none."""
    if device == "cpu":
        with torch.autocast("cpu", dtype=torch.bfloat16):
            yield
        return
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", torch.bfloat16)
    try:
        yield
    finally:
        torch.set_autocast_enabled("cuda", False)
        torch.clear_autocast_cache()


@unittest.skipIf(torch is None or not torch.backends.cuda.is_built(), "needs torch's CUDA build")
class CudaAutocastOnCpuTest(unittest.TestCase):
    def test_every_cuda_autocast_op_of_this_build_has_a_policy(self):
        self.assertEqual(sorted(ops_with_kernel("AutocastCUDA") - OUTSIDE_POLICY - CUDA_POLICY.keys()), [])

    def test_emulation_gives_cuda_dtypes_and_casts(self):
        for activations in (torch.bfloat16, torch.float32):
            cuda = run_ops("cuda", activations, emulate=False)
            emulated = run_ops("cpu", activations, emulate=True)
            for name in OPS:
                self.assertEqual(cuda[name], emulated[name], f"{name} with {activations} activations")

    def test_plain_cpu_autocast_differs(self):
        cuda, cpu = run_ops("cuda", torch.bfloat16, False), run_ops("cpu", torch.bfloat16, False)
        for op in ("softmax", "log_softmax", "layer_norm", "rsqrt", "pow", "sum"):  # rms_norm too from torch 2.12
            self.assertEqual((cuda[op][0], cpu[op][0]), (torch.float32, torch.bfloat16), op)

    def test_weight_cast_cached_until_the_region_exits(self):
        with FakeTensorMode(allow_non_fake_inputs=True), cuda_autocast_on_cpu() as cache:
            w = torch.nn.Parameter(torch.empty(32, 64))
            x = torch.empty(4, 64)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                with Casts() as casts:
                    F.linear(x, w), F.linear(x, w)
                self.assertEqual(casts.casts, ["torch.bfloat16"] * 3)  # w once, x twice (not a leaf parameter)
                self.assertEqual(len(cache.casts), 1)
                with torch.autocast("cpu", dtype=torch.bfloat16):  # a nested region keeps the cache
                    pass
                self.assertEqual(len(cache.casts), 1)
            self.assertEqual(len(cache.casts), 0)

    def test_cpu_policy_restored_after_the_emulation(self):
        with FakeTensorMode(allow_non_fake_inputs=True):
            with cuda_autocast_on_cpu():
                pass
            with torch.autocast("cpu", dtype=torch.bfloat16):
                self.assertEqual(torch.softmax(torch.empty(4, 8, dtype=torch.bfloat16), -1).dtype, torch.bfloat16)


if __name__ == "__main__":
    unittest.main()
