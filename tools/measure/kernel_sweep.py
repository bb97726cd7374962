#!/usr/bin/env python3
"""Kernel speeds the step-time model assumes, measured on the GPU at hand: bf16 GEMMs of transformer linears as
the token dimension grows, flash attention by sequence length, the cost of one kernel launch, and AdamW's step on
the host (CPU offload).

    python3 tools/measure/kernel_sweep.py --out DIR            # on a GPU machine (about a minute on an H100)
    python3 tools/measure/kernel_sweep.py --out DIR --dry-run  # tiny shapes on the CPU: checks the script only

Writes DIR/kernel_sweep.csv (kind, name, m, n, k, seconds, tflops, gbps, notes) and DIR/kernel_sweep_env.json.
GEMM shapes: each linear of Llama-3.1-8B and -70B (hidden, q/kv width, MLP width from their config.json) at
tensor-parallel degrees 1 and 8, forward (tokens x in -> out), input gradient and weight gradient (reduction
over tokens); Megatron's eager attention GEMMs (scores, context) by head dim. Times are the median of
CUDA-event-timed repeats after warm-ups.
"""
import argparse
import csv
import json
import os
import platform
import statistics
import time

import torch

# (name, hidden, q width, kv width, mlp width): tests/validation/configs/meta-llama__Llama-3.1-{8B,70B}.json
MODELS = [("llama3.1-8b", 4096, 4096, 1024, 14336), ("llama3.1-70b", 8192, 8192, 1024, 28672)]
TOKENS = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
SEQS = [1024, 2048, 4096, 8192, 16384, 32768]
ADAM_PARAMS = 200_000_000  # host AdamW: fp32 params, grads, two states = 3.2 GB
# Eager attention's head dims: Llama's 64/128, GPT 1.7B's 96, BLOOM-shape 224; 108 (13824 / 128 heads) and 150
# (14400 / 96) are not multiples of 8 and ran ~30 % slower in BigScience's BLOOM tuning (docs/search_validation.md).
HEAD_DIMS = [64, 96, 108, 128, 150, 224]


def linears(hidden, q, kv, mlp, tp):
    """(name, in, out) of one decoder layer's linears on one tensor-parallel rank (column then row parallel)."""
    return [("qkv", hidden, (q + 2 * kv) // tp), ("o", q // tp, hidden), ("gate_up", hidden, 2 * mlp // tp),
            ("down", mlp // tp, hidden)]


class Timer:
    def __init__(self, device, repeats):
        self.device, self.repeats = device, repeats

    def __call__(self, fn):
        for _ in range(3):
            fn()
        samples = []
        for _ in range(self.repeats):
            if self.device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                samples.append(start.elapsed_time(end) / 1e3)
            else:
                t = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - t)
        return statistics.median(samples)


def gemm_rows(timer, device, dry):
    rows = []
    tokens = TOKENS[:2] if dry else TOKENS
    models = [(n, *(d // 64 if dry else d for d in dims)) for n, *dims in MODELS]
    for name, hidden, q, kv, mlp in models:
        for tp in (1, 8):
            for lin, k_in, n_out in linears(hidden, q, kv, mlp, tp):
                w = torch.randn(n_out, k_in, device=device, dtype=torch.bfloat16)
                for m in tokens:
                    x = torch.randn(m, k_in, device=device, dtype=torch.bfloat16)
                    dy = torch.randn(m, n_out, device=device, dtype=torch.bfloat16)
                    flops = 2 * m * n_out * k_in
                    for phase, fn in (("forward", lambda: x @ w.t()), ("input_grad", lambda: dy @ w),
                                      ("weight_grad", lambda: dy.t() @ x)):
                        s = timer(fn)
                        rows.append({"kind": "gemm", "name": f"{name}/tp{tp}/{lin}/{phase}", "m": m, "n": n_out,
                                     "k": k_in, "seconds": s, "tflops": flops / s / 1e12, "gbps": "", "notes": ""})
                    del x, dy
    return rows


def attention_rows(timer, device, dry):
    rows = []
    heads, kv_heads, head_dim = (4, 1, 16) if dry else (32, 8, 128)  # Llama-3.1-8B
    for s in SEQS[:2] if dry else SEQS:
        q = torch.randn(1, heads, s, head_dim, device=device, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, kv_heads, s, head_dim, device=device, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(1, kv_heads, s, head_dim, device=device, dtype=torch.bfloat16, requires_grad=True)
        kr, vr = (t.repeat_interleave(heads // kv_heads, dim=1).detach().requires_grad_() for t in (k, v))
        flops = 4 * heads * s * s * head_dim / 2  # causal: half the score matrix
        fwd = lambda: torch.nn.functional.scaled_dot_product_attention(q, kr, vr, is_causal=True)  # noqa: E731
        out = fwd()
        grad = torch.randn_like(out)

        def fwd_bwd():
            y = fwd()
            y.backward(grad)
        for phase, fn, mult in (("forward", fwd, 1.0), ("forward_backward", fwd_bwd, 3.5)):
            sec = timer(fn)
            rows.append({"kind": "attention", "name": f"sdpa_causal/{phase}", "m": s, "n": heads, "k": head_dim,
                         "seconds": sec, "tflops": mult * flops / sec / 1e12, "gbps": "",
                         "notes": "flops counted as 4*h*s^2*d/2 forward, 2.5x that backward"})
        del q, k, v, kr, vr, out, grad
    return rows


def eager_attention_rows(timer, device, dry):
    """Megatron-LM's eager attention GEMMs by head dim (fp16): torch.baddbmm for the scores (s x s over the head
    dim) and torch.bmm for the context (s x head dim over s), batched over micro-batch x heads."""
    rows = []
    s, batch, dtype = (64, 2, torch.float32) if dry else (2048, 16, torch.float16)
    for d in HEAD_DIMS[:2] if dry else HEAD_DIMS:
        q, k = torch.randn(batch, s, d, device=device, dtype=dtype), torch.randn(batch, d, s, device=device, dtype=dtype)
        p, v = torch.randn(batch, s, s, device=device, dtype=dtype), torch.randn(batch, s, d, device=device, dtype=dtype)
        bias = torch.zeros(batch, s, s, device=device, dtype=dtype)
        for name, fn, (m, n, kk) in (("scores", lambda: torch.baddbmm(bias, q, k, beta=0.0), (s, s, d)),
                                     ("context", lambda: torch.bmm(p, v), (s, d, s))):
            sec = timer(fn)
            rows.append({"kind": "eager_attention", "name": f"{name}/head_dim{d}", "m": m, "n": n, "k": kk,
                         "seconds": sec, "tflops": 2 * batch * m * n * kk / sec / 1e12, "gbps": "",
                         "notes": f"batch {batch}, {str(dtype).replace('torch.', '')}"})
        del q, k, p, v, bias
    return rows


def launch_rows(device):
    """Wall time per small kernel when many are queued back to back (the launch-bound floor)."""
    x = torch.zeros(1, device=device)
    n = 2000
    for _ in range(100):
        x.add_(1)
    if device == "cuda":
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    if device == "cuda":
        torch.cuda.synchronize()
    s = (time.perf_counter() - t) / n
    return [{"kind": "launch", "name": "add_/1-element", "m": n, "n": 1, "k": 1, "seconds": s, "tflops": "",
             "gbps": "", "notes": "eager PyTorch, wall time per op"}]


def host_adam_rows(dry):
    rows = []
    n = 1_000_000 if dry else ADAM_PARAMS
    p = torch.zeros(n, dtype=torch.float32, requires_grad=True)
    p.grad = torch.zeros_like(p)
    threads = torch.get_num_threads()
    for impl in ("foreach", "fused"):
        try:
            opt = torch.optim.AdamW([p], lr=1e-4, **{impl: True})
            opt.step()  # creates the states
            t = time.perf_counter()
            steps = 3
            for _ in range(steps):
                opt.step()
            s = (time.perf_counter() - t) / steps
        except (RuntimeError, TypeError) as e:  # an implementation this torch lacks on the CPU
            rows.append({"kind": "host_adamw", "name": impl, "m": n, "n": threads, "k": 1, "seconds": "",
                         "tflops": "", "gbps": "", "notes": f"failed: {e}"[:200]})
            continue
        # bytes touched per step: read p, grad, m, v; write p, m, v (fp32)
        rows.append({"kind": "host_adamw", "name": impl, "m": n, "n": threads, "k": 1, "seconds": s, "tflops": "",
                     "gbps": 7 * 4 * n / s / 1e9, "notes": f"{n} fp32 params, {threads} threads"})
        del opt
    return rows


def environment(device):
    env = {"torch": torch.__version__, "python": platform.python_version(), "cpu": platform.processor(),
           "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads()}
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu_model"] = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, sm_count=props.multi_processor_count, gpu_total_bytes=props.total_memory,
                   cuda=torch.version.cuda)
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dry-run", action="store_true", help="tiny shapes on the CPU")
    args = ap.parse_args()
    device = "cpu" if args.dry_run else "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    timer = Timer(device, 3 if args.dry_run else 10)
    os.makedirs(args.out, exist_ok=True)
    started = time.perf_counter()
    rows = []
    for part in (lambda: gemm_rows(timer, device, args.dry_run), lambda: attention_rows(timer, device, args.dry_run),
                 lambda: eager_attention_rows(timer, device, args.dry_run), lambda: launch_rows(device),
                 lambda: host_adam_rows(args.dry_run)):
        rows += part()
        print(f"kernel_sweep: {len(rows)} rows after {time.perf_counter() - started:.1f} s", flush=True)
    with open(os.path.join(args.out, "kernel_sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["kind", "name", "m", "n", "k", "seconds", "tflops", "gbps", "notes"],
                           lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    with open(os.path.join(args.out, "kernel_sweep_env.json"), "w") as f:
        json.dump(environment(device), f, indent=1)
    print(f"kernel_sweep: done in {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
