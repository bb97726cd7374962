"""Runner `litgpt`: LitGPT's single-device fine-tuning loops, finetune/full.py, lora.py, adapter.py and adapter_v2.py,
under fake tensors.

The model is litgpt's own `GPT` (`litgpt.model`, or `litgpt.lora` with the LoRA fields set) from its named `Config`
(`Config.from_name`, checked against the case's Hugging Face config) at the case's layer count, built as `main()`
does: `with fabric.init_module(): model = GPT(config)` on the (fake) device, `mark_only_lora_as_trainable` for LoRA,
`fabric.setup(model)`, `instantiate_torch_optimizer("AdamW", model.parameters())` and `fabric.setup_optimizers`;
`fit()` then sets `model.max_seq_length` to the longest sequence, which rebuilds the rope cache at that length.
Adapter and adapter v2 (`litgpt.adapter`, `litgpt.adapter_v2`, `mark_only_adapter(_v2)_as_trainable`, the named
Config's defaults adapter_prompt_length 10, adapter_start_layer 2): `fit()` first runs `validate` (the sanity check,
`@torch.no_grad()`, eval mode), whose forward fills each adapted layer's `adapter_kv_cache` with the prefix's keys and
values; training reuses that cache (adapter.py: `if self.adapter_kv_cache is not None`), so the runner runs one
no-grad eval forward first, as `fit()` does.
Fabric is Lightning's own, single device, precision "bf16-true" (`HalfPrecision`): its forward context, input and
output conversion (`convert_output` casts the logits to the default dtype, fp32), `fabric.backward` and the wrapped
optimizer's step all run. Each step is the loop body of the recipe's `fit()`, two iterations:
    full.py:  logits = model(input_ids); loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:])
    lora.py, adapter.py, adapter_v2.py:
              logits = model(input_ids, lm_head_chunk_size=128); logits[-1] = logits[-1][..., :-1, :]
              loss = chunked_cross_entropy(logits, targets[..., 1:])
    both:     fabric.backward(loss / accumulation); optimizer.step(); optimizer.zero_grad()
`logits` and `loss` stay bound through the step and the next forward (until its return rebinds them), as in the
loop. Checkpointing: the single-device recipes have none; the "full" cases wrap every `Block` in
`checkpoint_wrapper(preserve_rng_state=False)` as lora.py's multi-device `parallelize_fn` does (full.py's
FSDPStrategy applies the same wrapper per Block).
Not run: the scheduler and `RunningMean` (host scalars and a window of loss values), validation and generation.
"""
import contextlib
import json

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from fake_h100 import SDPA_CALLS, pin_h100_sdpa
from tracker import LiveBytes, saved_tensor_marker
from transformers_loop import Hooks

PRECISIONS = {"bf16": "bf16-true", "fp32": "32-true"}
# family -> litgpt's Config name of the model the family's Hugging Face config describes
LITGPT_NAMES = {"llama3_gqa": "Llama-3.1-8B", "llama32_tied": "Llama-3.2-1B", "qwen25_bias": "Qwen2.5-7B",
                "llama2_mha": "Llama-2-7b-hf", "mistral_swa": "Mistral-7B-v0.1", "qwen3_qknorm": "Qwen3-8B"}
LM_HEAD_CHUNK_TOKENS = 128  # lora.py / adapter.py: model(input_ids, lm_head_chunk_size=128)
# case LoRA targets -> litgpt.lora.Config switches (the fused qkv takes q, k, v separately)
LORA_SWITCHES = {"q": "lora_query", "k": "lora_key", "v": "lora_value", "o": "lora_projection", "gate": "lora_mlp",
                 "up": "lora_mlp", "down": "lora_mlp"}
ALL_LINEAR = "q,k,v,o,gate,up,down"


def lora_kwargs(case):
    targets = case["lora_targets"]
    targets = ALL_LINEAR if targets == "all-linear" else targets
    switches = {LORA_SWITCHES[t] for t in targets.split(",")}
    if "lora_mlp" in switches and not {"gate", "up", "down"} <= set(targets.split(",")):
        raise ValueError("litgpt adapts the whole MLP (lora_mlp) or none of it")
    kwargs = {name: name in switches for name in set(LORA_SWITCHES.values())}
    return {**kwargs, "lora_head": False, "lora_r": case["lora_rank"], "lora_alpha": 2 * case["lora_rank"],
            "lora_dropout": 0.0}


# case method -> litgpt's module of the model (GPT, Config) and its recipe
METHOD_MODULES = {"full": "litgpt.model", "lora": "litgpt.lora", "adapter": "litgpt.adapter",
                  "adapter_v2": "litgpt.adapter_v2"}
RECIPES = {"full": "finetune/full.py", "lora": "finetune/lora.py", "adapter": "finetune/adapter.py",
           "adapter_v2": "finetune/adapter_v2.py"}
# the functions `main()` of each PEFT recipe calls to freeze the base model
MARK_TRAINABLE = {"lora": ("litgpt.lora", "mark_only_lora_as_trainable"),
                  "adapter": ("litgpt.adapter", "mark_only_adapter_as_trainable"),
                  "adapter_v2": ("litgpt.adapter_v2", "mark_only_adapter_v2_as_trainable")}


def litgpt_module(case):
    import importlib
    return importlib.import_module(METHOD_MODULES[case["method"]])


def litgpt_config(case, hf_config):
    """litgpt's named Config for the family at the case's layer count, with the LoRA fields for LoRA."""
    Config = litgpt_module(case).Config
    extra = lora_kwargs(case) if case["method"] == "lora" else {}
    config = Config.from_name(LITGPT_NAMES[case["family"]], n_layer=hf_config["num_hidden_layers"], **extra)
    expected = {"n_embd": hf_config["hidden_size"], "intermediate_size": hf_config["intermediate_size"],
                "n_head": hf_config["num_attention_heads"], "n_query_groups": hf_config["num_key_value_heads"],
                "padded_vocab_size": hf_config["vocab_size"]}
    got = {k: getattr(config, k) for k in expected}
    if got != expected:
        raise ValueError(f"litgpt's {config.name} differs from the case's config: {got} vs {expected}")
    return config


@contextlib.contextmanager
def fabric_setup_on_fake_tensors():
    """`fabric.setup` runs `HalfPrecision.convert_module` (`module.to(dtype)`) and `SingleDeviceStrategy.
    module_to_device` (`module.to(device)`), whose `nn.Module._apply` swaps every FakeTensor parameter and fails
    ("Couldn't swap", research/oracle.md P1). The same conversion without the swap: each floating parameter or buffer
    not yet in the precision's dtype is replaced by its `.to(dtype)` copy (the parameters are built in that dtype
    under `init_module`; the rope cache buffers are fp32); the model is on the device already."""
    from lightning.fabric.plugins.precision.half import HalfPrecision
    from lightning.fabric.strategies import SingleDeviceStrategy

    def convert_module(self, module):
        dtype = self._desired_input_dtype
        for m in module.modules():
            for key, p in m._parameters.items():
                if p is not None and torch.is_floating_point(p) and p.dtype != dtype:
                    m._parameters[key] = torch.nn.Parameter(p.to(dtype), requires_grad=p.requires_grad)
            for key, b in m._buffers.items():
                if b is not None and torch.is_floating_point(b) and b.dtype != dtype:
                    m._buffers[key] = b.to(dtype)
        return module

    saved = HalfPrecision.convert_module, SingleDeviceStrategy.module_to_device
    HalfPrecision.convert_module = convert_module
    SingleDeviceStrategy.module_to_device = lambda self, module: None
    try:
        yield
    finally:
        HalfPrecision.convert_module, SingleDeviceStrategy.module_to_device = saved


def build(case, config, fabric):
    """`main()` of the recipe: the model under `fabric.init_module`, LoRA marking, checkpointing, `fabric.setup`."""
    import importlib
    from litgpt.utils import instantiate_torch_optimizer
    adapted = case["method"] != "full"
    with fabric.init_module(empty_init=False):
        model = litgpt_module(case).GPT(config)
    if adapted:
        module, name = MARK_TRAINABLE[case["method"]]
        getattr(importlib.import_module(module), name)(model)
    if case["activation_checkpointing"] == "full":  # lora.py parallelize_fn's wrapper, on one device
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        model.transformer.h = torch.nn.ModuleList(
            [checkpoint_wrapper(block, preserve_rng_state=False) for block in model.transformer.h])
    with fabric_setup_on_fake_tensors():
        wrapped = fabric.setup(model) if not adapted else fabric.setup_module(model)
    optimizer = instantiate_torch_optimizer("AdamW", wrapped.parameters())
    for group in optimizer.param_groups:
        group["foreach"] = True  # torch's CUDA default; fake parameters would take the for-loop
    optimizer = fabric.setup_optimizers(optimizer)
    model.max_seq_length = case["seq_len"]  # fit(): min(longest_seq_length, train.max_seq_length)
    return model, wrapped, optimizer


class HeadHooks(Hooks):
    """The loss region ends at the gradient of the head's whole input: with `lm_head_chunk_size` the head sees
    splits of it, whose gradients arrive one by one before `split`'s backward joins them."""

    def _head_exit(self, module, args, out):
        x = args[0] if args else None
        if isinstance(x, torch.Tensor) and x.requires_grad:
            (x._base if x._base is not None else x).register_hook(self._head_input_grad)


def run_case(case, config_path, steps=None, config=None):
    """Runs `steps` iterations of the recipe's loop; `config` (a litgpt Config) replaces the named one (tests)."""
    import lightning as L
    from litgpt.utils import chunked_cross_entropy
    steps = steps or case.get("steps", 2)
    if config is None:
        with open(config_path) as f:
            config = litgpt_config(case, json.load(f))
    fabric = L.Fabric(accelerator="cpu", devices=1, precision=PRECISIONS[case["precision"]])
    tracker = LiveBytes()
    tracker.optimizer_scalars_on_host = True  # foreach AdamW keeps step counts on the host
    with FakeTensorMode(allow_non_fake_inputs=True), pin_h100_sdpa():
        model, wrapped, optimizer = build(case, config, fabric)
        tracker.track_model(model)
        model.get_output_embeddings = lambda: model.lm_head
        hooks = HeadHooks(model, tracker)
        b, s = case["micro_batch"], case["seq_len"]
        with tracker, saved_tensor_marker(tracker):
            tracker.phase = "inputs"
            input_ids = torch.randint(0, config.padded_vocab_size, (b, s))
            targets = input_ids.clone()
            tracker.mark(input_ids, "inputs")
            tracker.mark(targets, "inputs")
            logits = loss = None
            if case["method"].startswith("adapter"):  # fit()'s validate sanity check fills adapter_kv_cache
                tracker.phase = "validate"
                model.eval()
                with torch.no_grad():
                    wrapped(input_ids)
                model.train()
            for step in range(steps):
                tracker.step = step
                tracker.phase, tracker.region = "forward", "body"
                # `logits` is rebound as the forward returns, before the loss: the last step's are freed there
                if case["method"] != "full":
                    logits = wrapped(input_ids, lm_head_chunk_size=LM_HEAD_CHUNK_TOKENS)
                    logits[-1] = logits[-1][..., :-1, :]
                    loss = chunked_cross_entropy(logits, targets[..., 1:])
                else:
                    logits = wrapped(input_ids)
                    loss = chunked_cross_entropy(logits[..., :-1, :], targets[..., 1:])
                tracker.phase = "backward"
                fabric.backward(loss / 1)  # train.gradient_accumulation_iters = 1
                tracker.phase, tracker.module = "optimizer", "optimizer"
                optimizer.step()
                for state in optimizer.state.values():
                    for v in state.values():
                        if isinstance(v, torch.Tensor) and tracker.block_of(v) is not None:
                            tracker.mark(v, "optimizer")
                optimizer.zero_grad()
            del logits, loss
        hooks.remove()
    tracker.sdpa_calls = dict(SDPA_CALLS)
    tracker.trainer_settings = {"recipe": RECIPES[case["method"]],
                                "precision": fabric.strategy.precision.precision, "config": config.name,
                                "optimizer": "torch.optim.AdamW (foreach)",
                                "lm_head_chunk_size": LM_HEAD_CHUNK_TOKENS if case["method"] != "full" else 0}
    return tracker
