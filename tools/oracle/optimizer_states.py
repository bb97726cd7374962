"""Optimizer state bytes of GaLore, APOLLO and Adam-mini after one real step, on the CPU.

Builds a small Llama (real tensors, random weights) in the case's dtype, runs one forward and
backward on random tokens and one optimizer step, and sums the bytes of every tensor the
optimizer keeps (its `state`, GaLore's / APOLLO's projector matrices included). The block
linears (attention and MLP) form the projected group, as transformers' optim_target_modules
["attn", "mlp"] picks them; the rest steps with the same class unprojected. Prints one JSON line
per case; tests/oracle/optimizer_states.json holds memfit's frozen predictions and the results.

  tools/oracle/.venvs/opt_2026_11/bin/python tools/oracle/optimizer_states.py > out.jsonl
"""
import json
import sys

import torch
from transformers import LlamaConfig, LlamaForCausalLM

CONFIG = dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, vocab_size=1024, max_position_embeddings=512, tie_word_embeddings=False)
CASES = [  # (id, optimizer, rank, dtype)
    ("galore_r8_fp32", "galore_adamw", 8, torch.float32),
    ("galore_r32_bf16", "galore_adamw", 32, torch.bfloat16),
    ("galore_r512_fp32", "galore_adamw", 512, torch.float32),
    ("apollo_r8_fp32", "apollo_adamw", 8, torch.float32),
    ("apollo_r32_bf16", "apollo_adamw", 32, torch.bfloat16),
    ("apollo_mini_fp32", "apollo_mini", 1, torch.float32),
    ("adam_mini_fp32", "adam_mini", 0, torch.float32),
    ("adam_mini_bf16", "adam_mini", 0, torch.bfloat16),
]


def tensors_in(value, seen):
    """Every tensor reachable from an optimizer state value (projector objects included)."""
    if torch.is_tensor(value):
        if value.data_ptr() not in seen:
            seen.add(value.data_ptr())
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from tensors_in(v, seen)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from tensors_in(v, seen)
    elif hasattr(value, "__dict__"):
        for v in vars(value).values():
            yield from tensors_in(v, seen)


def build_optimizer(model, optimizer, rank):
    named = list(model.named_parameters())
    projected = [p for n, p in named if p.dim() == 2 and (".self_attn." in n or ".mlp." in n)]
    other = [p for n, p in named if not any(p is q for q in projected)]
    if optimizer == "galore_adamw":
        from galore_torch import GaLoreAdamW
        return GaLoreAdamW([{"params": other}, {"params": projected, "rank": rank, "update_proj_gap": 200,
                                                 "scale": 0.25, "proj_type": "std"}], lr=1e-3)
    if optimizer in ("apollo_adamw", "apollo_mini"):
        from apollo_torch import APOLLOAdamW
        group = {"params": projected, "rank": rank, "proj": "random", "update_proj_gap": 200, "proj_type": "std",
                 "scale_type": "tensor" if optimizer == "apollo_mini" else "channel", "scale": 1.0}
        return APOLLOAdamW([{"params": other}, group], lr=1e-3)
    from adam_mini import Adam_mini
    return Adam_mini(named_parameters=model.named_parameters(), lr=1e-3, dim=CONFIG["hidden_size"],
                     n_heads=CONFIG["num_attention_heads"], n_kv_heads=CONFIG["num_key_value_heads"])


def run(case_id, optimizer, rank, dtype):
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**CONFIG)).to(dtype)
    opt = build_optimizer(model, optimizer, rank)
    ids = torch.randint(0, CONFIG["vocab_size"], (1, 64))
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    seen = set()
    state = sum(t.numel() * t.element_size() for s in opt.state.values() for t in tensors_in(s, seen))
    return {"id": case_id, "optimizer": optimizer, "rank": rank, "dtype": str(dtype).split(".")[-1],
            "optimizer_state_bytes": state, "params": sum(p.numel() for p in model.parameters())}


if __name__ == "__main__":
    for case in CASES:
        print(json.dumps(run(*case)), flush=True)
    sys.exit(0)
