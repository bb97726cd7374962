"""The device bytes DeepSpeed's offloaded ZeRO-2 spends checking one gradient (real tensors on the CPU, live-bytes tracker).

Runs the `_has_inf_or_nan` of the `stage_1_and_2.py` given (DeepSpeed's own function body, read from that file, so any
release's copy can be compared) and `set_norm_for_param_grad_in_gpu`'s `accumulated_grad.data.double().norm(2)` on a
16-bit gradient, and prints what each allocates at its peak beyond the gradient, per element (the model's
DistributedBehaviour::zero_offload_grad_check_bytes_per_element). Measured: v0.12.6 4 and 8, v0.14.2 and v0.19.5 11
and 8. v0.19.6 calls runtime/utils.py has_inf_or_nan, which reduces without a copy (not executed here).
Usage: python deepspeed_offload_check_probe.py <deepspeed>/runtime/zero/stage_1_and_2.py
"""
import ast
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracker import LiveBytes  # noqa: E402

ELEMENTS = 1 << 20


def load_has_inf_or_nan(path):
    """DeepSpeed's `_has_inf_or_nan` staticmethod body as a plain function."""
    tree = ast.parse(open(path).read())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_has_inf_or_nan")
    fn.decorator_list = []
    namespace = {"torch": torch}
    exec(compile(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])), path, "exec"), namespace)
    return namespace["_has_inf_or_nan"]


def bytes_per_element(check):
    """Peak bytes `check` allocates beyond a 16-bit gradient of ELEMENTS, per element."""
    tracker = LiveBytes()
    with tracker:
        grad = torch.randn(ELEMENTS).half()
        before = tracker.total_bytes
        check(grad)
    return (tracker.peak_bytes - before) / ELEMENTS


def main():
    has_inf_or_nan = load_has_inf_or_nan(sys.argv[1])
    print(f"_has_inf_or_nan: {bytes_per_element(has_inf_or_nan):.2f} bytes per element")
    print(f"set_norm_for_param_grad_in_gpu (.double().norm(2)): "
          f"{bytes_per_element(lambda g: g.data.double().norm(2)):.2f} bytes per element")


if __name__ == "__main__":
    main()
