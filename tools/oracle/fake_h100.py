"""Fake execution on the `cpu` device with the choices an H100 would make pinned by hand.

Why `cpu` and not a fake `cuda` device (docs/oracle.md "Route"): PyPI's torch is the CUDA build, and under
FakeTensorMode it creates CUDA tensors and runs forward ops, but `backward()` fails in the autograd engine
(`hasPrimaryContext expects a valid device index`, torch 2.15.0+cu132 with no GPU) and `torch.autocast("cuda")`
disables itself when `torch.cuda.is_available()` is false. So tensors live on a fake `cpu` device, and:
- SDPA: without a GPU the backend chooser (a DispatchStub, invisible to dispatch modes) takes the MATH kernel, which
  saves the B*H*S^2 probabilities; an H100 runs flash (out + fp32 logsumexp). `pin_flash_sdpa` routes causal, unmasked
  SDPA calls to `aten._scaled_dot_product_flash_attention`, whose meta kernel has the CUDA output shapes.
- 512-byte block rounding is applied by the tracker (tracker.py) whatever the device.
- Optimizer defaults: `_default_to_fused_or_foreach` returns (False, False) for FakeTensor params, so the runner passes
  foreach/fused explicitly, as torch on CUDA would default to foreach.
"""
import contextlib

import torch
import torch.nn.functional as F

_ORIGINAL_SDPA = F.scaled_dot_product_attention


def _flash_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The flash kernel where an H100 picks it (no explicit mask, head dim <= 256); else torch's own choice."""
    if attn_mask is not None or query.shape[-1] > 256 or query.shape[-1] != value.shape[-1]:
        return _ORIGINAL_SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                              scale=scale, enable_gqa=enable_gqa)
    if key.shape[1] != query.shape[1] and not enable_gqa:
        raise ValueError("SDPA with fewer key heads than query heads needs enable_gqa")
    return torch.ops.aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
                                                              scale=scale)[0]


@contextlib.contextmanager
def pin_flash_sdpa():
    """Routes F.scaled_dot_product_attention (looked up at call time by transformers) to the flash op."""
    F.scaled_dot_product_attention = _flash_sdpa
    torch.nn.functional.scaled_dot_product_attention = _flash_sdpa
    try:
        yield
    finally:
        F.scaled_dot_product_attention = _ORIGINAL_SDPA
