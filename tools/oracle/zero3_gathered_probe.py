"""Which parameters DeepSpeed ZeRO-3 leaves gathered after the forward (real tensors, cpu accelerator, one gloo rank).

A Qwen3-shaped model under `deepspeed.zero.Init`, reentrant checkpointing, three steps; prints per step the decoder
layers (and embedding) whose parameters (>= 1e5 elements: smaller ones persist, stage3_param_persistence_threshold)
are still AVAILABLE after the forward, i.e. at the loss backward. Env: LAYERS, VOCAB, LIVE
(stage3_max_live_parameters), REUSE (stage3_max_reuse_distance), PREFETCH (stage3_prefetch_bucket_size), GC (1/0),
PORT. Needs deepspeed and einops on PYTHONPATH (docs/oracle.md, runner trl_ulysses).
"""
import json
import os

import torch

os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                  MASTER_PORT=os.environ.get("PORT", "29611"))


def main():
    import deepspeed
    from deepspeed.runtime.zero.partition_parameters import ZeroParamStatus
    from transformers import Qwen3Config, Qwen3ForCausalLM
    env = lambda k, d: int(os.environ.get(k, d))
    deepspeed.init_distributed(dist_backend="gloo")
    cfg = Qwen3Config(hidden_size=512, intermediate_size=1024, num_hidden_layers=env("LAYERS", 6), num_attention_heads=8,
                      num_key_value_heads=2, head_dim=64, vocab_size=env("VOCAB", 4096), tie_word_embeddings=True,
                      attn_implementation="sdpa")
    ds = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": True},
          "zero_optimization": {"stage": 3, "stage3_max_live_parameters": env("LIVE", 10**9),
                                "stage3_max_reuse_distance": env("REUSE", 10**9),
                                "stage3_prefetch_bucket_size": env("PREFETCH", 5 * 10**7)},
          "optimizer": {"type": "AdamW", "params": {"lr": 1e-5, "torch_adam": True}}}
    with deepspeed.zero.Init(config_dict_or_path=ds):
        model = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
    if env("GC", 1):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
        model.enable_input_require_grads()
    engine, _, _, _ = deepspeed.initialize(model=model, config=ds, model_parameters=model.parameters())
    for step in range(3):
        ids = torch.randint(0, cfg.vocab_size, (1, 32))
        out = engine(input_ids=ids, labels=ids)
        big = [n for n, p in model.named_parameters()
               if p.ds_status == ZeroParamStatus.AVAILABLE and p.ds_numel >= 100_000]
        units = sorted({n.split(".")[2] if n.startswith("model.layers.") else n for n in big}, key=lambda x: (len(x), x))
        print(json.dumps({"step": step, "gathered_elements": sum(model.get_parameter(n).ds_numel for n in big),
                          "units": units}), flush=True)
        engine.backward(out.loss)
        engine.step()


if __name__ == "__main__":
    main()
