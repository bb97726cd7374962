"""Probe: what torchtune's QLoRA model initialisation of 2024-03 to 2024-06 leaves in the CUDA caching allocator.

torchtune's `lora_finetune_single_device._setup_model` (@fef3ed10d) builds the model on the GPU
(`with utils.set_default_dtype(bf16), self._device: model = config.instantiate(cfg_model)`): every quantised
`LoRALinear` makes an `nn.Linear` there and keeps `to_nf4(linear.weight)` (`torchtune/modules/peft/lora.py`
`_create_weight_and_bias`). `model.load_state_dict(...)` then copies each checkpoint weight into its NF4 weight through
torchtune's `copy_` override (`torchtune/utils/_register_nf4_dispatch_ops.py` `inplace_copy`:
`to_nf4(incoming.to(device))`, the new pieces replacing the old). torchtune pinned torchao 0.1 (2024-04-04 #632, a
nightly before it) until c1c9f308a (2024-06-26, torchao 0.3); 0.1's `NF4Tensor.quantize_tensor_nearest` compares every
element with the 16 NF4 codes at once (`(value.unsqueeze(-1) - nf4).abs()`, bf16), where 0.2.0 on quantises in chunks
of 2^20 elements (`CHUNK_SIZE`). The recipe then logs "Memory Stats after model init" and resets the peaks
(`memory_stats_log(reset_stats=True)`), but the allocator keeps its segments: the reserved counter of the training
windows starts from what initialisation reserved.

Runs torchao 0.1's `nf4tensor.py` (from the wheel, path given) on fake tensors under the oracle's tracker, over a
model of the given shape, and prints the live bytes after initialisation, the peak live bytes during it and the
reserved bytes (caching_allocator.py replay), in JSON.

    tools/oracle/.venvs/tt_2025_06/bin/python tools/oracle/torchtune_qlora_init_probe.py AO01/torchao/dtypes/nf4tensor.py
"""
import importlib.util
import json
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from caching_allocator import replay_events  # noqa: E402
from tracker import LiveBytes  # noqa: E402

# Llama-2-7B (meta-llama/Llama-2-7b-hf config.json) and llama2/7B_qlora_single_device.yaml @fef3ed10d: LoRA r8 on
# q, k, v, output_proj and the MLP, NF4 base.
HIDDEN, INTERMEDIATE, LAYERS, VOCAB, RANK = 4096, 11008, 32, 32000, 8


def load_nf4(path):
    spec = importlib.util.spec_from_file_location("nf4tensor_dated", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nf4_pieces(t):
    names, _ = t.__tensor_flatten__()
    return [getattr(t, n) for n in names]


def run(nf4_path, layers=LAYERS):
    nf4 = load_nf4(nf4_path)
    tracker = LiveBytes()
    tracker.events = []
    kept = []  # what the model holds: bf16 embeddings, norms, output, adapters and NF4 pieces
    shapes = [(HIDDEN, HIDDEN)] * 4 + [(INTERMEDIATE, HIDDEN)] * 2 + [(HIDDEN, INTERMEDIATE)]
    with FakeTensorMode(allow_non_fake_inputs=True), tracker:
        tracker.phase = "build"
        kept.append(torch.nn.Embedding(VOCAB, HIDDEN, dtype=torch.bfloat16).weight)
        quantised = []
        for _ in range(layers):
            for out_dim, in_dim in shapes:
                linear = torch.nn.Linear(in_dim, out_dim, bias=False, dtype=torch.bfloat16)
                quantised.append(nf4.to_nf4(linear.weight.detach()))
                del linear
                kept.append(torch.zeros(RANK, in_dim, dtype=torch.bfloat16))   # lora_a
                kept.append(torch.zeros(out_dim, RANK, dtype=torch.bfloat16))  # lora_b
            kept.append(torch.ones(HIDDEN, dtype=torch.bfloat16))
            kept.append(torch.ones(HIDDEN, dtype=torch.bfloat16))
        kept.append(torch.ones(HIDDEN, dtype=torch.bfloat16))
        kept.append(torch.nn.Linear(HIDDEN, VOCAB, bias=False, dtype=torch.bfloat16).weight)
        built_peak = tracker.peak_bytes
        tracker.phase = "load_state_dict"
        for i, old in enumerate(quantised):  # inplace_copy: to_nf4(incoming.to(device)), then the fields replaced
            incoming = torch.empty(old.shape, dtype=torch.bfloat16)
            new = nf4.to_nf4(incoming)
            del incoming
            quantised[i] = new
            del old, new
        live = tracker.total_bytes
        peak = tracker.peak_bytes
    reserved = replay_events(tracker.events).max_reserved_bytes
    return {"layers": layers, "live_after_init_bytes": live, "peak_during_build_bytes": built_peak,
            "peak_during_init_bytes": peak, "reserved_after_init_bytes": reserved,
            "largest_linear_params": INTERMEDIATE * HIDDEN,
            "transient_per_param_bytes": round((peak - live) / (INTERMEDIATE * HIDDEN), 2)}


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else LAYERS)))
