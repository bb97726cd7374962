"""Probe `prime_rl_sft`: what prime-rl's SFT loop keeps of the logits, executed on CPU with the live-bytes tracker.

A reduced copy of the loop of PrimeIntellect-ai/prime-rl @ 8718eb143 (2026-01-19), written here from its code (not
imported: prime-rl pins flash-attn, liger and vLLM): src/prime_rl/trainer/model.py setup_model (HF Qwen3ForCausalLM
in float32, inject_prime_lm_head's VanillaOutputLinear returning {"logits": ...}, checkpoint_wrapper on every block,
FSDP2 fully_shard per block and the root with MixedPrecisionPolicy(param bf16, reduce fp32)), model.py forward()
returning cast_float_and_contiguous(out) (the logits as fp32), and sft/train.py's micro-step: `out = forward(...)`,
`logits = out["logits"]`, CrossEntropyLoss(reduction="none") on them, a masked mean, `del logits`, backward; then
clip_grad_norm_, AdamW (foreach, as torch picks on CUDA), zero_grad. Variant `del_out` frees the output before the
backward, as sft/train.py does from 447cafede (2026-03-10, the micro-step's loss in a function ending `del out`).

Prints, per variant, the peak live bytes, where it falls, and the logits-sized blocks live there in units of
tokens x vocabulary bytes (fp32 = 4, bf16 = 2): the figures memfit's prime_rl profile models (src/memory/timeline.cpp
loss_bytes). Run: tools/oracle/.venvs/cur_2026_11/bin/python tools/oracle/prime_rl_sft_probe.py
"""
import json
import sys
import types

import torch
import torch.distributed as dist

import tracker as tr

VOCAB, HIDDEN, LAYERS, SEQ = 32768, 64, 2, 256  # logits dominate, as at 152k vocabulary and 8-64k tokens


def build(world):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=4 * HIDDEN, num_hidden_layers=LAYERS,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, tie_word_embeddings=True,
                      attn_implementation="sdpa", use_cache=False)
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(cfg).to(torch.float32)  # optimization_dtype float32

    # inject_prime_lm_head(chunk_size=None): the head returns a dict of bf16 logits.
    def new_forward(self, input_ids=None, position_ids=None, **kw):
        hidden = self.model(input_ids=input_ids, position_ids=position_ids).last_hidden_state
        return {"logits": torch.nn.functional.linear(hidden, self.lm_head.weight)}

    model.forward = types.MethodType(new_forward, model)
    for i, block in enumerate(model.model.layers):  # apply_ac (freq 1)
        model.model.layers.register_module(str(i), checkpoint_wrapper(block, preserve_rng_state=False))
    mesh = init_device_mesh("cpu", (world,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.model.layers:
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=True)
    return model


def run(variant, steps=2, micro=2):
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=1)
    try:
        model = build(1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-6, weight_decay=0.01, foreach=True)
        ce = torch.nn.CrossEntropyLoss(reduction="none")
        live = tr.LiveBytes()
        peaks = []
        with live:
            live.track_model(model)
            out = None
            for step in range(steps):
                live.peak_bytes = 0  # torch.cuda.reset_peak_memory_stats() at each step's start
                live.step = step
                for _ in range(micro):
                    ids = torch.randint(0, VOCAB, (1, SEQ))
                    pos = torch.arange(SEQ).unsqueeze(0)
                    live.phase = "forward"
                    out = model(input_ids=ids, position_ids=pos)
                    out = {"logits": out["logits"].float().contiguous()}  # cast_float_and_contiguous
                    logits = out["logits"]
                    B, L, V = logits.shape
                    loss = ce(logits.view(-1, V), ids.view(-1)).view(B, L)
                    loss = loss[torch.ones_like(ids, dtype=torch.bool)].mean()
                    del logits
                    if variant == "del_out":
                        del out
                        out = None
                    live.phase = "backward"
                    (loss / micro).backward()
                live.phase = "optimizer"
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                opt.zero_grad()
                peaks.append((live.peak_bytes, dict(live.peak_where), list(live.peak_blocks)))
        tv = SEQ * VOCAB
        peak_bytes, where, blocks = peaks[-1]
        big = sorted((b.nbytes for b in blocks if b.nbytes >= tv * 2), reverse=True)
        return {"variant": variant, "peak_bytes": peak_bytes, "where": where,
                "logit_blocks_tv": [round(n / tv, 3) for n in big], "logit_bytes_tv": round(sum(big) / tv, 3),
                "rest_bytes": peak_bytes - sum(big)}
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    variants = sys.argv[1:] or ["prime_rl_2026_01", "del_out"]
    print(json.dumps([run(v) for v in variants], indent=1, default=str))
