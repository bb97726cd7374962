#!/usr/bin/env python3
"""What torch FSDP1's wrapping leaves reserved on the rank that loaded the model (standard library only).

    python3 tools/oracle/fsdp1_wrap.py [--model llama2_7b] [--method qlora|lora] [--world 2] [--strategy full_shard]

Answer.AI's fsdp_qlora (train.py @ 4cd6923, the script of benchmarks_03_2024.md) loads the model on rank 0's CPU
(`low_memory=True`; QLoRA weights quantised on the GPU, then moved to the CPU with their quant states left on the
GPU, `load_and_quantize`, then `torch.cuda.empty_cache()`), adds PEFT's LoRA, and wraps it with FSDP1
(`sync_module_states=True`, `device_id` set, the llama-recipes policy: every LoRA linear and every decoder layer a
unit, the root last). For each unit, in the auto-wrap's post-order, torch FSDP1 (`_init_utils.py`
`_init_param_handle_from_module`, the same from 2.2 to 2.7) does on the GPU:

1. `_move_module_to_device`: each of the unit's own parameters copied to the device (`param.data = param.to(dev)`),
2. `_sync_module_params_and_buffers`: `dist._broadcast_coalesced` in buckets of `PARAM_BROADCAST_BUCKET_SIZE`
   (250 MiB): a bucket of more than one tensor is flattened into a new buffer (`torch/csrc/utils/tensor_flatten.cpp`
   `take_tensors`: a bucket closes once it reaches the limit; `flatten_dense_tensors` is a view for one tensor),
3. `FlatParamHandle.__init__`: `torch.cat` of the parameters into the unsharded flat parameter,
4. `FlatParamHandle.shard`: the rank's chunk cloned (`_get_shard`), the unsharded storage resized to 0
   (NO_SHARD keeps the flat parameter whole), and on return the moved parameters are freed.

Nothing calls `empty_cache()` after the wrap, so every segment those transients mapped stays reserved, and
train.py's `torch.cuda.reset_peak_memory_stats()` before the first step sets the reserved peak to it. The blog text
of benchmarks_03_2024.md reads `reserved_after_model_wrap` about 3.72 GiB for QLoRA Llama-2-7B on two GPUs.
The requests go through caching_allocator.py (the allocator's rules) on one stream.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from caching_allocator import CachingAllocator  # noqa: E402

BUCKET = 250 * 1024 * 1024  # torch/distributed/fsdp/_init_utils.py PARAM_BROADCAST_BUCKET_SIZE
MODELS = {
    # hidden, intermediate, layers, vocab, kv heads x head dim
    "llama2_7b": (4096, 11008, 32, 32000, 4096),
    "llama2_70b": (8192, 28672, 80, 32000, 1024),
    "yi_34b": (7168, 20480, 60, 64000, 1024),
    "mistral_7b": (4096, 14336, 32, 32000, 1024),
}
LINEARS = ("q", "k", "v", "o", "gate", "up", "down")


def linear_shapes(h, i, kv):
    return {"q": (h, h), "k": (kv, h), "v": (kv, h), "o": (h, h), "gate": (i, h), "up": (i, h), "down": (h, i)}


def units(model, method, rank):
    """[(unit name, [parameter bytes in registration order])] in FSDP1's auto-wrap order (post-order)."""
    h, i, n_layers, vocab, kv = MODELS[model]
    shapes = linear_shapes(h, i, kv)
    out = []
    for _ in range(n_layers):
        layer = []
        for name in LINEARS:
            o, n = shapes[name]
            if method in ("lora", "qlora"):
                out.append(("lora_A", [rank * n * 2]))  # PEFT adapters in the base layer's dtype (bf16)
                out.append(("lora_B", [o * rank * 2]))
            # QLoRA: bnb Params4bit with quant_storage bf16 holds o*n/2 bytes
            layer.append(o * n // 2 if method == "qlora" else o * n * 2)
        layer += [h * 2, h * 2]  # the two RMSNorm weights
        out.append(("layer", layer))
    out.append(("root", [vocab * h * 2, h * 2, vocab * h * 2]))  # embed_tokens, norm, lm_head
    return out


def broadcast_buckets(sizes):
    """take_tensors: buckets closed once they reach BUCKET bytes; returns the bytes of each flattened bucket."""
    flat, cur, count = [], 0, 0
    for s in sizes:
        cur += s
        count += 1
        if cur >= BUCKET:
            if count > 1:
                flat.append(cur)
            cur, count = 0, 0
    if count > 1:
        flat.append(cur)
    return flat


def wrap(model, method, world, strategy="full_shard", rank=64, offload=False, preloaded=0):
    a = CachingAllocator()
    if preloaded:
        a.alloc(preloaded)  # what loading left on the GPU (QLoRA quant states), modelled as one block
    for _, params in units(model, method, rank):
        moved = [a.alloc(p) for p in params]
        in_flight = []
        for b in broadcast_buckets(params):  # at most two buckets in flight (comm.cpp broadcast_coalesced)
            in_flight.append(a.alloc(b))
            if len(in_flight) > 2:
                a.free(in_flight.pop(0))
        for x in in_flight:
            a.free(x)
        total = sum(params)
        flat = a.alloc(total)
        if strategy == "no_shard":
            kept = flat
        else:
            kept = a.alloc(-(-total // world))
            a.free(flat)
        for m in moved:
            a.free(m)
        if offload:
            a.free(kept)
    return a


def quant_state_bytes(model):
    """bnb 0.43 Params4bit (compress_statistics=True): uint8 absmax per 64 weights, fp32 absmax per 256 of those."""
    h, i, n_layers, _, kv = MODELS[model]
    n = sum(o * k for o, k in linear_shapes(h, i, kv).values()) * n_layers
    return n // 64 + n // 64 // 256 * 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama2_7b", choices=sorted(MODELS))
    ap.add_argument("--method", default="qlora", choices=["qlora", "lora"])
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--strategy", default="full_shard", choices=["full_shard", "no_shard"])
    ap.add_argument("--offload", action="store_true")
    args = ap.parse_args()
    pre = quant_state_bytes(args.model) if args.method == "qlora" else 0
    a = wrap(args.model, args.method, args.world, args.strategy, offload=args.offload, preloaded=pre)
    gib = 2 ** 30
    print(f"{args.model} {args.method} world {args.world} {args.strategy}{' offload' if args.offload else ''}: "
          f"allocated after wrap {a.allocated_bytes / gib:.2f} GiB, reserved {a.reserved_bytes / gib:.2f} GiB "
          f"(cached {(a.reserved_bytes - a.allocated_bytes) / gib:.2f}), peak reserved {a.max_reserved_bytes / gib:.2f}")


if __name__ == "__main__":
    main()
