"""Why the oracle does not run amp_bf16 yet: its tensors are on a fake cpu device, where CPU autocast applies, and CPU
autocast does not give every op the output dtype CUDA autocast gives it. CUDA's policy is read by running the ops on
fake `cuda` tensors (PyPI's CUDA build: forward ops work on fake cuda without a GPU, only backward does not).
When this test fails, the two policies agree on these ops and amp_bf16 can go back into cases.PRECISIONS.
Skipped without torch or without a CUDA build."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import torch
    import torch.nn.functional as F
    from torch._subclasses.fake_tensor import FakeTensorMode
except ImportError:
    torch = None

# The ops of the models in tests/oracle (transformers' decoder layers, losses and norms).
OPS = {
    "linear": lambda x, w: F.linear(x, w),
    "matmul": lambda x, w: x @ w.t(),
    "bmm": lambda x, w: torch.bmm(x.unsqueeze(0), w.t().unsqueeze(0)),
    "baddbmm": lambda x, w: torch.baddbmm(torch.zeros(1, x.shape[0], w.shape[0], dtype=x.dtype, device=x.device),
                                          x.unsqueeze(0), w.t().unsqueeze(0)),
    "softmax": lambda x, w: torch.softmax(x, -1),
    "log_softmax": lambda x, w: torch.log_softmax(x, -1),
    "layer_norm": lambda x, w: F.layer_norm(x, x.shape[-1:]),
    "rms_norm": lambda x, w: F.rms_norm(x, x.shape[-1:]),
    "cross_entropy": lambda x, w: F.cross_entropy(x, torch.zeros(x.shape[0], dtype=torch.long, device=x.device)),
    "sum": lambda x, w: x.sum(),
    "exp": lambda x, w: x.exp(),
    "pow": lambda x, w: x.pow(2),
    "rsqrt": lambda x, w: x.rsqrt(),
    "silu": lambda x, w: F.silu(x),
    "gelu": lambda x, w: F.gelu(x),
    "tanh": lambda x, w: torch.tanh(x),
    "mul": lambda x, w: x * x,
    "sdpa": lambda x, w: F.scaled_dot_product_attention(x[None, None], x[None, None], x[None, None]),
    "embedding": lambda x, w: F.embedding(torch.zeros(3, dtype=torch.long, device=x.device), w),
    "cumsum": lambda x, w: x.cumsum(-1),
    "mse_loss": lambda x, w: F.mse_loss(x, x),
}


def output_dtypes(device, input_dtype):
    out = {}
    with FakeTensorMode(allow_non_fake_inputs=True):
        x = torch.empty(4, 64, dtype=input_dtype, device=device)
        w = torch.empty(32, 64, dtype=input_dtype, device=device)
        torch.set_autocast_enabled(device, True)
        torch.set_autocast_dtype(device, torch.bfloat16)
        try:
            for name, op in OPS.items():
                out[name] = op(x, w).dtype
        finally:
            torch.set_autocast_enabled(device, False)
    return out


@unittest.skipIf(torch is None or not torch.backends.cuda.is_built(), "needs torch's CUDA build")
class AutocastPolicyTest(unittest.TestCase):
    def test_cpu_autocast_keeps_bf16_where_cuda_autocast_computes_in_fp32(self):
        cuda, cpu = output_dtypes("cuda", torch.bfloat16), output_dtypes("cpu", torch.bfloat16)
        self.assertEqual(cuda["linear"], cpu["linear"])  # both lower matmuls to bf16
        for op in ("softmax", "log_softmax", "layer_norm", "rms_norm", "rsqrt", "pow", "sum"):
            self.assertEqual((cuda[op], cpu[op]), (torch.float32, torch.bfloat16), op)


if __name__ == "__main__":
    unittest.main()
