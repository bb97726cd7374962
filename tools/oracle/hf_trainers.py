"""Runners `hf_trainer` and `trl`: the HF Trainer's and TRL SFTTrainer's training step, under fake tensors.

Each builds the model as `transformers_loop` does (meta, training dtype, PEFT or freeze), hands it to the trainer
and replays what `Trainer._inner_training_loop` does per optimizer step, two steps:
    loss = trainer.training_step(model, inputs)          # compute_loss (the trainer's own), backward
    clip_grad_norm_(model.parameters(), max_grad_norm)   # accelerator.clip_grad_norm_ when max_grad_norm > 0
    trainer.optimizer.step(); model.zero_grad()          # the optimizer from trainer.create_optimizer()
so the trainer's own default optimizer, loss and checkpointing settings of the version set run. `train()` itself is
not called: its loss logging and token counting read values back to the host (`.item()`), which fake tensors cannot.
Precision is the case's: bf16 (bf16 weights, `bf16=False`) or amp_bf16 (fp32 weights, `bf16=True`: accelerate's
autocast with CUDA's policy emulated on the fake cpu device, cuda_autocast.py). The batch is what the collators
return for unpadded rows of equal length: `input_ids`, `attention_mask` of ones, `labels` equal to the ids.
"""
import contextlib
import dataclasses
import inspect
import os
import tempfile

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from cuda_autocast import cuda_autocast_on_cpu
from fake_h100 import SDPA_CALLS, pin_h100_sdpa
from tracker import LiveBytes, saved_tensor_marker
from transformers_loop import Hooks, build_model, load_config, unpacked_positions


def _kwargs_for(cls, wanted):
    """The subset of `wanted` that the dataclass `cls` of this version has (field names change between releases)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in wanted.items() if k in names}


def training_arguments(cls, case, out_dir, extra=None):
    ac = case["activation_checkpointing"] == "full"
    wanted = {
        "output_dir": out_dir, "per_device_train_batch_size": case["micro_batch"], "gradient_accumulation_steps": 1,
        "bf16": trainer_autocast(case), "fp16": False, "report_to": "none", "use_cpu": True,
        "save_strategy": "no",
        "gradient_checkpointing": ac, "activation_checkpointing": ac, "logging_strategy": "no",
    }
    if "checkpoint_use_reentrant" in case:
        wanted["gradient_checkpointing_kwargs"] = {"use_reentrant": case["checkpoint_use_reentrant"]}
    wanted.update(extra or {})
    return cls(**_kwargs_for(cls, wanted))


def trainer_autocast(case):
    """--bf16 (accelerate's autocast and fp32 outputs): amp_bf16 (fp32 weights), or bf16 weights with `trainer_bf16`
    (tools/measure/trainer_gpu.py loads bf16 and passes --bf16, as the TRL SFT benchmark does)."""
    return case["precision"] == "amp_bf16" or bool(case.get("trainer_bf16"))


def enable_checkpointing_as_the_trainer_does(trainer, model):
    """transformers < 5.2x enables checkpointing in `_inner_training_loop` (not run here); later in `__init__`."""
    args = trainer.args
    if not getattr(args, "gradient_checkpointing", False) or hasattr(args, "activation_checkpointing"):
        return
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs)


def unmasked_rows():
    """The batch's attention mask is all ones. On a GPU, transformers then drops it and SDPA runs causal flash
    (`masking_utils._ignore_causal_mask_sdpa`); it cannot read a fake mask's values and would keep it (and leave
    flash), so the fake mask is passed on as None. transformers < 4.53 reads it with `torch.all(mask == 1)`, which
    host_reads_of_fake_scalars answers."""
    try:
        from transformers import masking_utils
    except ImportError:
        return
    original = masking_utils._ignore_causal_mask_sdpa
    if getattr(original, "oracle_pinned", False):
        return

    def ignore(padding_mask, *args, **kwargs):
        return original(None if isinstance(padding_mask, FakeTensor) else padding_mask, *args, **kwargs)

    ignore.oracle_pinned = True
    masking_utils._ignore_causal_mask_sdpa = ignore


@contextlib.contextmanager
def triton_folds_in_place():
    """TRL >= 1.x scores the LM head in tiles (trl/kernels/chunked_logprob.py ChunkedLogProbFunction); on CUDA a Triton
    kernel folds each tile into the per-token statistics and writes the tile's gradient in place, allocating nothing.
    Without Triton (the fake cpu device) `_forward_tile` / `_backward_tile` do it with torch ops and fp32 temporaries
    the size of a tile, which a GPU never allocates: they become no-ops here (fake tensors carry no values).
    The GPU path also indexes the valid positions (`hidden_states[mask]`, data-dependent); with every label valid the
    cpu path's reshape copies the same [tokens, hidden] tensor."""
    try:
        from trl.kernels import chunked_logprob
    except ImportError:
        yield
        return
    saved = chunked_logprob._forward_tile, chunked_logprob._backward_tile, chunked_logprob._addmm_fp32
    chunked_logprob._forward_tile = chunked_logprob._backward_tile = lambda *args, **kwargs: None
    chunked_logprob._addmm_fp32 = lambda *args, **kwargs: None
    try:
        yield
    finally:
        chunked_logprob._forward_tile, chunked_logprob._backward_tile, chunked_logprob._addmm_fp32 = saved


def fake_batch(tracker, case, vocab_size):
    b, s = case["micro_batch"], case["seq_len"]
    ids = torch.randint(0, vocab_size, (b, s))
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
    for t in batch.values():
        tracker.mark(t, "inputs")
    return batch


@contextlib.contextmanager
def host_reads_of_fake_scalars():
    """Metric code reads scalars back to the host (`.item()`, `if num_valid > 0`); a fake tensor has no value, so these
    reads return 1 (only logged metrics depend on them)."""
    item, as_bool = torch.Tensor.item, torch.Tensor.__bool__

    def fake_item(self):
        if isinstance(self, FakeTensor):
            return 1 if not self.is_floating_point() else 1.0
        return item(self)

    def fake_bool(self):
        return True if isinstance(self, FakeTensor) else as_bool(self)

    torch.Tensor.item, torch.Tensor.__bool__ = fake_item, fake_bool
    try:
        yield
    finally:
        torch.Tensor.item, torch.Tensor.__bool__ = item, as_bool


@contextlib.contextmanager
def model_already_on_device():
    """The model is on the fake cpu device, the trainer's device, already. `Trainer._move_model_to_device` would be a
    no-op on real tensors; `nn.Module.to` on fake parameters fails (research/oracle.md P1), so it is skipped."""
    import transformers
    move = transformers.Trainer._move_model_to_device
    transformers.Trainer._move_model_to_device = lambda self, model, device: None
    try:
        yield
    finally:
        transformers.Trainer._move_model_to_device = move


def make_hf_trainer(model, case, out_dir, tokenizer):
    import transformers
    args = training_arguments(transformers.TrainingArguments, case, out_dir)
    return transformers.Trainer(model=model, args=args)


def make_sft_trainer(model, case, out_dir, tokenizer):
    import datasets
    import trl
    extra = {"max_seq_length": case["seq_len"], "max_length": case["seq_len"], "packing": False,
             "dataset_kwargs": {"skip_prepare_dataset": True}, "dataset_text_field": "text"}
    args = training_arguments(trl.SFTConfig, case, out_dir, extra)
    dataset = datasets.Dataset.from_dict({"input_ids": [[1] * case["seq_len"]] * 2})
    params = inspect.signature(trl.SFTTrainer.__init__).parameters
    tok_key = "processing_class" if "processing_class" in params else "tokenizer"
    return trl.SFTTrainer(model=model, args=args, train_dataset=dataset, **{tok_key: tokenizer})


def tiny_tokenizer():
    """A word-level tokenizer with pad/eos/unk only: the trainers want one, the oracle feeds token ids directly."""
    import tokenizers
    import transformers
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                                unk_token="<unk>")


def run_trainer(case, config_path, make_trainer, steps=None, make_batch=fake_batch, prepare=None):
    """`make_batch(tracker, case, vocab_size)` gives the step's inputs; `prepare(trainer, model)`, when given, sets the
    trainer up further once it is made (ulysses_sp.py: DeepSpeed's sequence parallelism)."""
    steps = steps or case.get("steps", 2)
    unpacked_positions()
    unmasked_rows()
    config = load_config(config_path, case)
    model = build_model(config, case)
    tracker = LiveBytes()
    if case.get("record_allocations"):
        tracker.events = []
    tokenizer = tiny_tokenizer()
    amp = trainer_autocast(case)
    with tempfile.TemporaryDirectory() as out_dir, FakeTensorMode(allow_non_fake_inputs=True), pin_h100_sdpa(), \
            host_reads_of_fake_scalars(), model_already_on_device(), triton_folds_in_place(), \
            cuda_autocast_on_cpu() if amp else contextlib.nullcontext():
        model.to_empty(device="cpu")
        if getattr(config, "tie_word_embeddings", False):
            model.get_output_embeddings().weight = model.get_input_embeddings().weight  # to_empty unties them
        trainer = make_trainer(model, case, out_dir, tokenizer)
        model = trainer.model
        if prepare:
            prepare(trainer, model)
        if amp:
            model = autocast_as_on_a_gpu(trainer, model)
        enable_checkpointing_as_the_trainer_does(trainer, model)
        trainer.current_gradient_accumulation_steps = 1  # set by _inner_training_loop (transformers >= 4.48)
        opt = trainer.create_optimizer()
        pin_cuda_foreach(opt)
        tracker.optimizer_scalars_on_host = not opt.defaults.get("fused", False)
        backward = trainer.accelerator.backward

        def backward_phase(loss, **kwargs):
            tracker.phase = "backward"
            return backward(loss, **kwargs)

        trainer.accelerator.backward = backward_phase
        for p in model.parameters():
            tracker.track(p, "weights")
        for b in model.buffers():
            tracker.track(b, "weights")
        for p in model.parameters():
            if p.requires_grad:
                p.register_post_accumulate_grad_hook(lambda q: tracker.mark(q.grad, "gradients"))
        hooks = Hooks(model, tracker)
        step_params = inspect.signature(trainer.training_step).parameters
        with tracker, saved_tensor_marker(tracker):
            tracker.phase = "inputs"
            batch = make_batch(tracker, case, config.vocab_size)
            model.zero_grad()
            for step in range(steps):
                tracker.step = step
                tracker.phase, tracker.region = "forward", "body"  # training_step: compute_loss, then backward
                kwargs = {"num_items_in_batch": None} if "num_items_in_batch" in step_params else {}
                trainer.training_step(model, dict(batch), **kwargs)
                tracker.phase, tracker.module = "optimizer", "optimizer"
                if trainer.args.max_grad_norm and trainer.args.max_grad_norm > 0:
                    trainer.accelerator.clip_grad_norm_(model.parameters(), trainer.args.max_grad_norm)
                opt.step()
                for state in opt.state.values():
                    for v in state.values():
                        if isinstance(v, torch.Tensor) and tracker.block_of(v) is not None:
                            tracker.mark(v, "optimizer")
                model.zero_grad()
        hooks.remove()
    tracker.sdpa_calls = dict(SDPA_CALLS)
    tracker.trainer_settings = {"optim": str(trainer.args.optim), "optimizer_impl": optimizer_impl(opt),
                                "max_grad_norm": trainer.args.max_grad_norm,
                                "gradient_checkpointing_kwargs": getattr(trainer.args, "gradient_checkpointing_kwargs",
                                                                         None),
                                "loss_type": getattr(trainer.args, "loss_type", None)}
    return tracker


def autocast_as_on_a_gpu(trainer, model):
    """bf16=True on a GPU: `_inner_training_loop` runs `accelerator.prepare(model)`, whose `prepare_model` wraps
    `model.forward` in autocast and `convert_outputs_to_fp32` (an fp32 copy of the bf16 logits in the outputs).
    The Trainer's own CPU autocast (`use_cpu_amp`, transformers < 5, set because the device is cpu) is not what a GPU
    runs: it is turned off. `device_placement=False`: the model is on its (fake) device already."""
    if hasattr(trainer, "use_cpu_amp"):
        trainer.use_cpu_amp = False
    return trainer.accelerator.prepare_model(model, device_placement=False)


def pin_cuda_foreach(opt):
    """A torch optimizer given neither flag takes foreach on CUDA tensors, the for-loop on fake cpu ones
    (`_default_to_fused_or_foreach`); the oracle pins CUDA's choice, as transformers_loop does."""
    if opt.defaults.get("fused") or opt.defaults.get("foreach") is not None or "foreach" not in opt.defaults:
        return
    opt.defaults["foreach"] = True
    for group in opt.param_groups:
        group["foreach"] = True


def optimizer_impl(opt):
    d = opt.defaults
    return "fused" if d.get("fused") else "foreach" if d.get("foreach") else "default"


def run_hf_trainer(case, config_path, steps=None):
    return run_trainer(case, config_path, make_hf_trainer, steps)


def run_trl(case, config_path, steps=None):
    return run_trainer(case, config_path, make_sft_trainer, steps)
