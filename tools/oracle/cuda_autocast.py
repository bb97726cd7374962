"""CUDA's autocast policy on the fake cpu device (amp_bf16 with fp32 weights).

The oracle's tensors are fake `cpu` tensors (docs/oracle.md "Route"), where `torch.autocast("cpu")` applies CPU's op
lists: it keeps softmax, the norms, pow, rsqrt, exp, sum and cumsum in bf16 where CUDA computes them in fp32
(test_autocast.py). `cuda_autocast_on_cpu()` replaces the AutocastCPU kernels with CUDA's policy:

- which ops autocast touches is read from the running build: every op with an AutocastCUDA kernel
  (`torch._C._dispatch_has_kernel_for_dispatch_key`); CPU-only ones (cross_entropy_loss, cat, stack, the fft and
  linalg ops) fall through, as they do on CUDA;
- each op's policy is CUDA's, from aten/src/ATen/autocast_mode.h (`AT_FORALL_LOWER_PRECISION_FP`, `AT_FORALL_FP32`,
  `AT_FORALL_FP32_SET_OPT_DTYPE`, `AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE`, `AT_FORALL_PROMOTE`) and the
  `WrapFunction_` specialisations there (torch v2.4.1 .. v2.15.0; rms_norm is on the fp32 list in the 2.13.0 and
  2.15.0 builds, not in 2.11.0 and earlier);
  an op the build has and the table lacks is an error, so a new torch cannot change the policy silently;
- casts go through autocast's weight-cast cache as `cached_cast` does (autocast_mode.cpp): a bf16 cast of a leaf
  fp32 tensor that requires grad is made once and kept until the outermost autocast region exits
  (`torch.clear_autocast_cache()`, called by `torch.autocast.__exit__` at nesting 0).
The kernels run above autograd (the Autocast keys precede Autograd), so autograd saves the cast copies as on a GPU.
"""
import contextlib
import warnings

import torch

LOWER = "lower_precision_fp"
FP32 = "fp32"
SET_OPT_DTYPE = "fp32_set_opt_dtype"
APPEND_DTYPE = "fp32_append_dtype"
PROMOTE = "promote"
BANNED = "banned"

_LOWER_OPS = """_convolution _convolution.deprecated conv1d conv2d conv3d conv_tbc conv_transpose1d
conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul einsum mm mv linalg_vecdot
linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell
rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention scaled_dot_product_attention cudnn_convolution
cudnn_convolution_transpose"""
_FP32_OPS = """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow.Tensor_Scalar
pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm group_norm frobenius_norm.dim nuclear_norm
nuclear_norm.dim cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss
kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss
triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d upsample_nearest3d
_upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d
upsample_bicubic2d _upsample_bicubic2d_aa rms_norm linalg_matrix_sqrth"""
_SET_OPT_DTYPE_OPS = """prod prod.dim_int prod.dim_Dimname softmax.int softmax.Dimname log_softmax.int
log_softmax.Dimname cumprod cumprod.dimname cumsum cumsum.dimname linalg_vector_norm linalg_matrix_norm
linalg_matrix_norm.str_ord sum sum.dim_IntList sum.dim_DimnameList"""
_PROMOTE_OPS = "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"
# fp32_append_dtype: the overload without a dtype redispatches to the one with it (autocast_mode.h)
APPEND_DTYPE_REDISPATCH = {"norm.Scalar": "norm.ScalarOpt_dtype", "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype",
                           "norm.names_ScalarOpt_dim": "norm.names_ScalarOpt_dim_dtype"}

CUDA_POLICY = {
    **{op: LOWER for op in _LOWER_OPS.split()}, **{op: FP32 for op in _FP32_OPS.split()},
    **{op: SET_OPT_DTYPE for op in _SET_OPT_DTYPE_OPS.split()}, **{op: PROMOTE for op in _PROMOTE_OPS.split()},
    **{op: APPEND_DTYPE for op in APPEND_DTYPE_REDISPATCH}, "binary_cross_entropy": BANNED,
}
# Registered by cudnn/AutocastRNN.cpp, not autocast_mode.cpp; no model here runs cuDNN's RNN.
OUTSIDE_POLICY = {"_cudnn_rnn"}


def ops_with_kernel(key):
    """Op names (`softmax.int`, `sum`) with a kernel registered for dispatch key `key` in this torch build."""
    out = set()
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(name, key):
            out.add(name[len("aten::"):])
    return out


def cuda_autocast_ops():
    """This build's CUDA autocast ops with their policies; raises on an op without a known policy."""
    ops = ops_with_kernel("AutocastCUDA") - OUTSIDE_POLICY
    unknown = sorted(ops - CUDA_POLICY.keys())
    if unknown:
        raise RuntimeError(f"CUDA autocast ops without a policy in cuda_autocast.CUDA_POLICY: {unknown}")
    return {op: CUDA_POLICY[op] for op in ops}


def _overload(name):
    packet, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, packet), overload or "default")


class CastCache:
    """autocast's cached_cast: bf16 casts of leaf fp32 tensors that require grad, kept for the autocast region."""

    def __init__(self):
        self.casts = {}  # id(source) -> (source, cast)

    def cast(self, to_type, t):
        if not isinstance(t, torch.Tensor) or not _eligible(t) or t.dtype == to_type:
            return t
        lower = torch.get_autocast_dtype("cpu")
        if (to_type == lower and t.dtype == torch.float32 and t.requires_grad and t.is_leaf and not t._is_view()
                and torch.is_autocast_cache_enabled()):
            hit = self.casts.get(id(t))
            if hit is not None and hit[0] is t:
                return hit[1]
            cast = t.to(to_type)
            self.casts[id(t)] = (t, cast)
            return cast
        return t.to(to_type)

    def cast_arg(self, to_type, a):
        if isinstance(a, (list, tuple)) and any(isinstance(x, torch.Tensor) for x in a):
            return type(a)(self.cast(to_type, x) for x in a)
        return self.cast(to_type, a)

    def clear(self):
        self.casts.clear()


def _eligible(t):
    """is_eligible for the emulated device: a floating tensor that is not fp64 (autocast_mode.h)."""
    return t.is_floating_point() and t.dtype != torch.float64


def _tensors(a):
    if isinstance(a, torch.Tensor):
        return [a]
    if isinstance(a, (list, tuple)):
        return [x for x in a if isinstance(x, torch.Tensor)]
    return []


def _promote_type(args, kwargs):
    """autocast's promote_type: fp32 if any eligible floating argument is fp32, else the lower precision."""
    to_type = torch.get_autocast_dtype("cpu")
    for a in (*args, *kwargs.values()):
        for t in _tensors(a):
            if _eligible(t) and t.dtype == torch.float32:
                to_type = torch.float32
    return to_type


def _with_dtype(op, args, kwargs, dtype):
    """args/kwargs with the schema's `dtype` argument set to `dtype` unless the caller set it."""
    names = [a.name for a in op._schema.arguments]
    index = names.index("dtype")
    if index < len(args):
        if args[index] is not None:
            return args, kwargs
        return (*args[:index], dtype, *args[index + 1:]), kwargs
    if kwargs.get("dtype") is not None:
        return args, kwargs
    return args, {**kwargs, "dtype": dtype}


_NO_AUTOCAST = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)


def make_kernel(name, policy, cache):
    op = _overload(name)

    def kernel(*args, **kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_NO_AUTOCAST):
            if policy == BANNED:
                raise RuntimeError("binary_cross_entropy is unsafe to autocast (autocast_mode.cpp)")
            if policy == SET_OPT_DTYPE:
                if isinstance(args[0], torch.Tensor) and _eligible(args[0]):
                    args, kwargs = _with_dtype(op, args, kwargs, torch.float32)
                return op(*args, **kwargs)
            if policy == APPEND_DTYPE:
                x = args[0]
                dtype = torch.float32 if _eligible(x) else x.dtype
                return _overload(APPEND_DTYPE_REDISPATCH[name])(*args, **kwargs, dtype=dtype)
            to_type = {LOWER: torch.get_autocast_dtype("cpu"), FP32: torch.float32}.get(policy)
            if to_type is None:
                to_type = _promote_type(args, kwargs)
            args = tuple(cache.cast_arg(to_type, a) for a in args)
            kwargs = {k: cache.cast_arg(to_type, v) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return kernel


@contextlib.contextmanager
def cuda_autocast_on_cpu():
    """While active, `torch.autocast("cpu", dtype=torch.bfloat16)` applies CUDA's autocast policy."""
    cache = CastCache()
    policies = cuda_autocast_ops()
    lib = torch.library.Library("aten", "IMPL")
    clear = torch.clear_autocast_cache

    def clear_both():
        clear()
        cache.clear()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel" for CPU's own list
        for name, policy in policies.items():
            lib.impl(name, make_kernel(name, policy, cache), "AutocastCPU")
        for name in ops_with_kernel("AutocastCPU") - policies.keys():
            lib.impl(name, torch.library.fallthrough_kernel, "AutocastCPU")  # not on CUDA's lists
    torch.clear_autocast_cache = clear_both
    try:
        yield cache
    finally:
        torch.clear_autocast_cache = clear
        cache.clear()
        lib._destroy()
