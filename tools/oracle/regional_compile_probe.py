"""Which modules accelerate's regional compilation compiles, on a 2-layer Qwen3-MoE built from a small config (cpu).

accelerate's TorchDynamoPlugin `use_regional_compilation` calls `compile_regions` (torch.compile per repeated block
and per leaf child; `accelerator.prepare` for FSDP2 / DDP) or `compile_regions_deepspeed` (in-place `module.compile()`
on the same modules; the DeepSpeed engine). The probe prints, for both, whether the causal LM itself, its base model,
each decoder layer and `lm_head` are compiled, and whether the causal LM's forward (where transformers computes the
loss, `self.loss_function`) is the eager one. Nothing is compiled until a call, so it runs in a second.

    PYTHONPATH=<accelerate 1.13.0 wheel unpacked> tools/oracle/.venvs/cur_2026_11/bin/python tools/oracle/regional_compile_probe.py
"""
import inspect

import accelerate
import torch
from accelerate.utils import compile_regions
from accelerate.utils.other import compile_regions_deepspeed
from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM


def tiny_model():
    cfg = Qwen3MoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_experts=4,
                         num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         head_dim=16)
    return Qwen3MoeForCausalLM(cfg)


def main():
    optimized = torch._dynamo.eval_frame.OptimizedModule
    c = compile_regions(tiny_model())
    print("accelerate", accelerate.__version__)
    print("compile_regions: causal LM", isinstance(c, optimized), "| base model", isinstance(c.model, optimized),
          "| layers", [isinstance(layer, optimized) for layer in c.model.layers], "| lm_head",
          isinstance(c.lm_head, optimized), "| causal LM forward eager", type(c).forward is Qwen3MoeForCausalLM.forward)
    m = tiny_model()
    compile_regions_deepspeed(m)
    compiled = lambda mod: getattr(mod, "_compiled_call_impl", None) is not None  # noqa: E731
    print("compile_regions_deepspeed: causal LM", compiled(m), "| base model", compiled(m.model), "| layers",
          [compiled(layer) for layer in m.model.layers], "| lm_head", compiled(m.lm_head))
    print("loss computed in the causal LM's forward:", "self.loss_function" in inspect.getsource(Qwen3MoeForCausalLM.forward))


if __name__ == "__main__":
    main()
