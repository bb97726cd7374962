"""Fake execution on the `cpu` device with the choices an H100 would make pinned by hand.

Why `cpu` and not a fake `cuda` device (docs/oracle.md "Route"): PyPI's torch is the CUDA build, and under
FakeTensorMode it creates CUDA tensors and runs forward ops, but `backward()` fails in the autograd engine
(`hasPrimaryContext expects a valid device index`, torch 2.15.0+cu132 with no GPU) and `torch.autocast("cuda")`
disables itself when `torch.cuda.is_available()` is false. So tensors live on a fake `cpu` device, and:
- SDPA: without a GPU the backend chooser (a DispatchStub, invisible to dispatch modes) takes the MATH kernel, which
  saves the B*H*S^2 probabilities; an H100 runs flash (out + fp32 logsumexp) and, where an explicit mask rules flash
  out, the memory-efficient kernel with the mask as an additive bias (torch's sdp_utils.cpp order: flash, efficient,
  math; cuDNN only with cuDNN > 9.15, research/oracle.md §2.2). `pin_h100_sdpa` routes the calls to
  `aten._scaled_dot_product_flash_attention` / `_scaled_dot_product_efficient_attention`, whose meta kernels have the
  CUDA output shapes, and counts which kernel each call took.
- Dropout: on cpu, `F.dropout` multiplies by a Bernoulli mask in the input's dtype (`_dropout_impl`: the fused kernel
  is taken only on cuda/xpu/lazy/privateuse1 tensors, aten/src/ATen/native/Dropout.cpp `is_fused_kernel_acceptable`);
  on CUDA it runs `native_dropout`, whose saved mask is 1-byte bool. `pin_h100_sdpa` routes training-mode dropout to
  `aten.native_dropout`.
- 512-byte block rounding is applied by the tracker (tracker.py) whatever the device.
- Optimizer defaults: `_default_to_fused_or_foreach` returns (False, False) for FakeTensor params, so the runner passes
  foreach/fused explicitly, as torch on CUDA would default to foreach.
"""
import contextlib

import torch
import torch.nn.functional as F

_ORIGINAL_SDPA = F.scaled_dot_product_attention
_ORIGINAL_DROPOUT = F.dropout


def _cuda_dropout(input, p=0.5, training=True, inplace=False):
    """CUDA's fused dropout (bool mask) where torch takes it on a GPU."""
    if not training or p == 0.0 or p == 1.0 or inplace:
        return _ORIGINAL_DROPOUT(input, p, training, inplace)
    return torch.ops.aten.native_dropout(input, p, True)[0]


def _autocast_inputs(*tensors):
    """CUDA autocast's lower_precision_fp policy for scaled_dot_product_attention (cuda_autocast.py): every floating
    input cast to the autocast dtype (the pinned kernels are called directly, below sdpa's own autocast kernel)."""
    dtype = torch.get_autocast_dtype("cpu")
    return [t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in tensors]


SDPA_CALLS = {"flash": 0, "efficient": 0, "math": 0}


def _needs_logsumexp(*tensors):
    """sdpa's should_compute_logsumexp: the backward needs it."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def _h100_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """The kernel an H100 picks: flash without a mask (head dim <= 256), efficient with one, else math."""
    if torch.is_autocast_enabled("cpu"):  # amp: sdpa's autocast kernel casts q, k, v and a float mask first
        query, key, value, attn_mask = _autocast_inputs(query, key, value, attn_mask)
    same_heads = key.shape[1] == query.shape[1]
    if query.shape[-1] <= 256 and query.shape[-1] == value.shape[-1] and (same_heads or enable_gqa):
        if attn_mask is None:
            SDPA_CALLS["flash"] += 1
            return torch.ops.aten._scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal,
                                                                      scale=scale)[0]
        if same_heads:
            SDPA_CALLS["efficient"] += 1
            if attn_mask.dtype == torch.bool:  # sdpa's convert_boolean_attn_mask: -inf where masked
                attn_mask = torch.where(attn_mask.logical_not(), float("-inf"), 0.0).to(query.dtype)
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                query, key, value, attn_mask, _needs_logsumexp(query, key, value), dropout_p, is_causal, scale=scale)[0]
    SDPA_CALLS["math"] += 1
    return _ORIGINAL_SDPA(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                          scale=scale, enable_gqa=enable_gqa)


@contextlib.contextmanager
def pin_h100_sdpa():
    """Routes F.scaled_dot_product_attention (looked up at call time by transformers) to the H100's kernels."""
    for k in SDPA_CALLS:
        SDPA_CALLS[k] = 0
    F.scaled_dot_product_attention = _h100_sdpa
    F.dropout = _cuda_dropout
    try:
        yield
    finally:
        F.scaled_dot_product_attention = _ORIGINAL_SDPA
        F.dropout = _ORIGINAL_DROPOUT
