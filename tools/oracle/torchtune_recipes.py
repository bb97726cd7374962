"""Runner `torchtune`: torchtune's single-device recipes, full_finetune_single_device and lora_finetune_single_device,
under fake tensors.

The model comes from torchtune's own component builders (`llama3_2`, `llama3_1`, `qwen2` and their `lora_*` forms,
the functions its named builders such as `llama3_2_1b` call) with the case config's sizes, built as the recipe's
`_setup_model` does: under `training.set_default_dtype(dtype)` on the device, `set_trainable_params` to the adapters
for LoRA, `training.set_activation_checkpointing(model, auto_wrap_policy={TransformerSelfAttentionLayer})`.
The optimizer is the recipes' configs' `torch.optim.AdamW(fused=True)` (the case's `optimizer_impl`: `foreach` for
the configs before torchtune #1575, 2024-09, which name AdamW bare), through the recipe's `_setup_optimizer`
(with `optimizer_in_bwd`: one optimizer per parameter stepped in its post-accumulate-grad hook,
`training.register_optim_in_bwd_hooks`). The loss is `CEWithChunkedOutputLoss` (8 chunks, `model.set_num_output_chunks`)
or `torch.nn.CrossEntropyLoss`. Each step runs the recipe's own `_loss_step` (forward, shifted labels, loss,
`del logits`) and then what its `train()` does per optimizer step:
    current_loss = self._loss_step(batch) * current_num_tokens; running_loss += current_loss; current_loss.backward()
    training.scale_grads(model, 1 / num_tokens); optimizer.step(); optimizer.zero_grad(set_to_none=True)
`train()` itself is not run: it needs the dataloader and reads the loss back (`running_loss.item()`).
Not run: activation offloading (`OffloadActivations` takes `torch.cuda.default_stream()` and CUDA streams at
construction and moves tensors with `.to("cuda")`; the recipe refuses it on a non-CUDA device) and `compile`.
"""
import contextlib
import json

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from fake_h100 import SDPA_CALLS, pin_h100_sdpa
from tracker import LiveBytes, saved_tensor_marker
from transformers_loop import Hooks

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
ATTENTION_NAMES = {"q": "q_proj", "k": "k_proj", "v": "v_proj", "o": "output_proj"}
MLP_NAMES = {"gate", "up", "down"}
IGNORE_INDEX = -100  # CEWithChunkedOutputLoss / CrossEntropyLoss default, the recipes' ignore_labels_cache


def builder_kwargs(config):
    """(builder name, kwargs) of torchtune's component builder for a Hugging Face config of the same model."""
    common = dict(vocab_size=config["vocab_size"], num_layers=config["num_hidden_layers"],
                  num_heads=config["num_attention_heads"], num_kv_heads=config["num_key_value_heads"],
                  embed_dim=config["hidden_size"], intermediate_dim=config["intermediate_size"],
                  max_seq_len=config["max_position_embeddings"], norm_eps=config["rms_norm_eps"],
                  rope_base=config["rope_theta"])
    if config["model_type"] == "qwen2":
        return "qwen2", {**common, "tie_word_embeddings": bool(config.get("tie_word_embeddings"))}
    if config["model_type"] == "llama":
        scale = int(config["rope_scaling"]["factor"])
        if config.get("tie_word_embeddings"):  # Llama 3.2: tied, scale factor 32
            return "llama3_2", {**common, "scale_factor": scale, "tie_word_embeddings": True}
        return "llama3_1", {**common, "scale_factor": scale}  # Llama 3.1: untied
    raise ValueError(f"model_type {config['model_type']} has no torchtune builder in this runner")


def lora_kwargs(case):
    targets = case["lora_targets"].split(",")
    return dict(lora_attn_modules=[ATTENTION_NAMES[t] for t in targets if t in ATTENTION_NAMES],
                apply_lora_to_mlp=bool(MLP_NAMES & set(targets)), apply_lora_to_output=False,
                lora_rank=case["lora_rank"], lora_alpha=2 * case["lora_rank"], lora_dropout=0.0,
                use_dora=case["method"] == "dora", quantize_base=case["method"] == "qlora")


@contextlib.contextmanager
def rope_scaling_without_values():
    """`Llama3ScaledRoPE.apply_scaling` branches in Python on each frequency's value (`if wavelen < ...`), which a
    fake tensor cannot answer; the scaled frequencies have the input's shape and dtype, so they are that (values only
    enter the cos/sin cache, whose size does not depend on them)."""
    from torchtune.models.llama3_1 import _position_embeddings as rope
    original = rope.Llama3ScaledRoPE.apply_scaling
    rope.Llama3ScaledRoPE.apply_scaling = lambda self, freqs, *args: freqs.clone()
    try:
        yield
    finally:
        rope.Llama3ScaledRoPE.apply_scaling = original


def build_model(config, case):
    """torchtune's builder, called as the recipe's `_setup_model` does (on the current fake device)."""
    import importlib
    from torchtune import modules, training
    from torchtune.modules.peft import get_adapter_params, set_trainable_params
    name, kwargs = builder_kwargs(config)
    family = {"qwen2": "qwen2", "llama3_2": "llama3_2", "llama3_1": "llama3_1"}[name]
    builders = importlib.import_module(f"torchtune.models.{family}._component_builders")
    adapted = case["method"] in ("lora", "qlora", "dora")
    if adapted:
        kwargs = {**kwargs, **lora_kwargs(case)}
        if name == "llama3_1":
            kwargs.pop("tie_word_embeddings", None)
    with training.set_default_dtype(DTYPES[case["precision"]]), torch.device("cpu"), rope_scaling_without_values():
        model = getattr(builders, f"lora_{name}" if adapted else name)(**kwargs)
    if adapted:
        set_trainable_params(model, get_adapter_params(model))
        if case["method"] == "dora":
            for m in model.modules():
                if hasattr(m, "initialize_dora_magnitude"):
                    m.initialize_dora_magnitude()
    if case["activation_checkpointing"] == "full":
        training.set_activation_checkpointing(model, auto_wrap_policy={modules.TransformerSelfAttentionLayer})
    return model


def recipe_module(name):
    """A recipe file of the torchtune wheel (`recipes/<name>.py`, beside the package; its `__init__` refuses imports)."""
    import importlib.util
    import os
    import torchtune
    path = os.path.join(os.path.dirname(os.path.dirname(torchtune.__file__)), "recipes", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"torchtune_recipe_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recipe_object(case, model):
    """The recipe class with the attributes its `_loss_step` and `_setup_optimizer` read (its `__init__` and
    `setup` load checkpoints, a tokenizer and a dataset)."""
    from omegaconf import OmegaConf
    from torchtune import config as tune_config
    adapted = case["method"] in ("lora", "qlora", "dora")
    module = recipe_module("lora_finetune_single_device" if adapted else "full_finetune_single_device")
    cls = module.LoRAFinetuneRecipeSingleDevice if adapted else module.FullFinetuneRecipeSingleDevice
    recipe = object.__new__(cls)
    recipe._model = model
    recipe._device = torch.device("cpu")
    recipe.activations_handling_ctx = contextlib.nullcontext()  # training.get_act_offloading_ctx_manager(model, False)
    loss = ({"_component_": "torchtune.modules.loss.CEWithChunkedOutputLoss"} if case["loss"] == "chunked"
            else {"_component_": "torch.nn.CrossEntropyLoss", "ignore_index": IGNORE_INDEX})
    recipe._loss_fn = tune_config.instantiate(OmegaConf.create(loss))
    if case["loss"] == "chunked":
        model.set_num_output_chunks(recipe._loss_fn.num_output_chunks)
    recipe.ignore_labels_cache = torch.full((case["micro_batch"], 1), IGNORE_INDEX, device="cpu")
    # The configs' AdamW: fused: True since torchtune cca50f02e (#1575, 2024-09-14); bare before it, which
    # torch resolves to foreach on CUDA (given explicitly here: the fake tensors would pick the for-loop).
    impl = case.get("optimizer_impl", "fused")
    optimizer = OmegaConf.create({"_component_": "torch.optim.AdamW", "lr": 2e-5, impl: True})
    if adapted:
        recipe._optimizer = recipe._setup_optimizer(optimizer)
    else:
        recipe._optimizer_in_bwd = bool(case.get("optimizer_in_backward"))
        recipe._optimizer = recipe._setup_optimizer(optimizer, optimizer_in_bwd=recipe._optimizer_in_bwd)
    return recipe


def output_layer(model):
    """The module whose forward makes the logits: `model.output`, or a TiedLinear's `linear`."""
    return model.output if isinstance(model.output, torch.nn.Module) else model.output.linear


def optimizers(recipe):
    if recipe._optimizer is not None:
        return [recipe._optimizer]
    return list(recipe._optim_ckpt_wrapper.optim_map.values())


def run_case(case, config_path, steps=None):
    from torchtune import training
    steps = steps or case.get("steps", 2)
    with open(config_path) as f:
        config = json.load(f)
    tracker = LiveBytes()
    tracker.optimizer_scalars_on_host = False  # fused AdamW keeps step counts on the device
    with FakeTensorMode(allow_non_fake_inputs=True), pin_h100_sdpa():
        model = build_model(config, case)
        for p in model.parameters():
            tracker.mark(p, "weights")  # an NF4 weight by its inner tensors
        for b in model.buffers():
            tracker.track(b, "weights")
        for p in model.parameters():
            if p.requires_grad:  # registered before the optimizer-in-backward hook, so marked before it steps
                p.register_post_accumulate_grad_hook(lambda q: tracker.mark(q.grad, "gradients"))
        tracker.phase = "setup"
        recipe = recipe_object(case, model)
        model.train()
        model.get_output_embeddings = lambda: output_layer(model)
        hooks = Hooks(model, tracker)
        b, s = case["micro_batch"], case["seq_len"]
        with tracker, saved_tensor_marker(tracker):
            tracker.phase = "inputs"
            tokens = torch.randint(0, config["vocab_size"], (b, s))
            tracker.mark(tokens, "inputs")
            in_backward = recipe._optimizer is None
            if not in_backward:
                recipe._optimizer.zero_grad()
            for step in range(steps):
                tracker.step = step
                tracker.phase, tracker.region = "forward", "body"
                batch = {"tokens": tokens, "labels": tokens.clone()}
                tracker.mark(batch["labels"], "inputs")
                num_tokens = (batch["labels"] != IGNORE_INDEX).sum()
                current_loss = recipe._loss_step(batch) * num_tokens
                running_loss = 0 + current_loss
                tracker.phase = "backward"
                current_loss.backward()
                tracker.phase, tracker.module = "optimizer", "optimizer"
                if not in_backward:
                    training.scale_grads(model, 1 / num_tokens)
                    recipe._optimizer.step()
                    recipe._optimizer.zero_grad(set_to_none=True)
                for opt in optimizers(recipe):
                    for state in opt.state.values():
                        for v in state.values():
                            if isinstance(v, torch.Tensor) and tracker.block_of(v) is not None:
                                tracker.mark(v, "optimizer")
                del current_loss, running_loss  # the recipe resets running_loss after logging
        hooks.remove()
    tracker.sdpa_calls = dict(SDPA_CALLS)
    tracker.trainer_settings = {"recipe": type(recipe).__name__, "loss": type(recipe._loss_fn).__name__,
                                "optimizer": f"torch.optim.AdamW({case.get('optimizer_impl', 'fused')}=True)",
                                "optimizer_in_bwd": recipe._optimizer is None}
    return tracker
