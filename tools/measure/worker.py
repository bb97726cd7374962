#!/usr/bin/env python3
"""Run one case on the GPU and write its JSON log. Started by measure.py, one process per case:

    python3 tools/measure/worker.py SPEC.json

SPEC.json holds {"row": the case row, "config_path", "steps", "log_path"}. A fresh process per case
means a fresh CUDA context and an empty caching allocator, so no case inherits another's cached
segments. Needs torch and transformers (and peft for LoRA); nothing is downloaded: the model is
built from its config with random weights, directly on the GPU in the training dtype.
"""

from __future__ import annotations

import contextlib
import datetime
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import torch

import cases as casefmt
import families
import snapshots

SEED = 0
FREEZE_TRAINABLE_LAYERS = 2   # method=freeze trains the last blocks, as LLaMA-Factory's default does
LORA_ALPHA_PER_RANK = 2       # alpha does not change memory; fixed so the log states it
LEARNING_RATE = 1e-5          # values are irrelevant to memory; fixed for reproducibility
# QLoRA loads a bf16 checkpoint quantised (as users do); the random one is written here once.
QLORA_CACHE = os.environ.get("MEMFIT_QLORA_CACHE", os.path.join(tempfile.gettempdir(), "memfit-qlora"))
# Memory-history recording: the ring buffer's length (events beyond it drop the oldest) and the
# Python-only stacks (C++ frames would multiply the snapshot's size for no memory insight).
HISTORY_MAX_ENTRIES = 100_000
SNAPSHOT_CAP_BYTES = 15 * 2 ** 20   # under the device tool's 16 MiB per returned file


def _version(module_name: str) -> str:
    try:
        return __import__(module_name).__version__
    except Exception:  # a missing optional package is recorded, not fatal
        return ""


def _nvidia_smi(*query: str) -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", *query, "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return [line.strip() for line in out.stdout.splitlines() if line.strip()]
    except (OSError, subprocess.SubprocessError):
        return []


def environment() -> dict:
    props = torch.cuda.get_device_properties(0)
    driver = _nvidia_smi("--query-gpu=driver_version")
    return {
        "gpu_name": props.name,
        "gpu_total_bytes": props.total_memory,
        "driver": driver[0] if driver else "",
        "torch": torch.__version__,
        "cuda": torch.version.cuda or "",
        "cudnn": str(torch.backends.cudnn.version() or ""),
        "transformers": _version("transformers"),
        "peft": _version("peft"),
        "bitsandbytes": _version("bitsandbytes") if "bitsandbytes" in sys.modules else "",
        "accelerate": _version("accelerate"),
        "safetensors": _version("safetensors"),
        "triton": _version("triton"),
        "python": platform.python_version(),
        "allocator_backend": torch.cuda.memory.get_allocator_backend(),
        # Both change what reserved and nvidia-smi show; they must travel with the numbers.
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING", ""),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
    }


def device_used() -> int:
    """What nvidia-smi would show for this device: everything allocated on it, context included."""
    free, total = torch.cuda.mem_get_info()
    return total - free


def memory_snapshot() -> dict:
    reserved, used = torch.cuda.memory_reserved(), device_used()
    # Outside the caching allocator: CUDA context, lazily loaded kernels, cuBLAS/cuDNN handles.
    return {"allocated": torch.cuda.memory_allocated(), "reserved": reserved, "device_used": used,
            "outside_allocator": used - reserved}


def expandable_segments_seen() -> bool | None:
    """Whether the allocator really mapped expandable segments (None: torch does not say)."""
    try:
        segments = torch.cuda.memory._snapshot()["segments"]
    except Exception:  # a private API: its absence is recorded, not fatal
        return None
    flags = [seg["is_expandable"] for seg in segments if "is_expandable" in seg]
    return any(flags) if flags else None


# ---------------------------------------------------------------------------------------------
# Building the model exactly as the case says


def load_config(path: str) -> tuple[dict, object]:
    """The raw dict (for families.*) and the transformers config object built from it."""
    from transformers import CONFIG_MAPPING
    with open(path, encoding="utf-8") as f:
        raw = json.load(f)
    # auto_map points at remote code; the native class for model_type is what we want, offline.
    cleaned = {k: v for k, v in raw.items() if k != "auto_map"}
    config = CONFIG_MAPPING[raw["model_type"]].from_dict(cleaned)
    config.use_cache = False  # a KV cache is inference state; training never keeps one
    return raw, config


def _dtype_kw() -> str:
    """transformers 4.56 renamed torch_dtype to dtype; older versions pass unknown kwargs to the
    model constructor, which fails, so pick by version rather than by trial."""
    import transformers
    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


ATTN_IMPLEMENTATION = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}


def build_model(case: casefmt.Case, raw: dict, config, settings: dict):
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    dtype = torch.bfloat16 if case["precision"] == "bf16" else torch.float32
    attn = ATTN_IMPLEMENTATION[case["attention"]]
    auto = AutoModelForSeq2SeqLM if raw["model_type"] in families.ENCODER_DECODER else AutoModelForCausalLM
    dtype_kw = _dtype_kw()
    torch.manual_seed(SEED)
    # Building under the device context puts every parameter straight on the GPU in its final
    # dtype: no fp32 CPU copy (a 30B model would not fit the host) and no host->device transfer.
    with torch.device("cuda"):
        model = auto.from_config(config, attn_implementation=attn, **{dtype_kw: dtype})
    settings.update(model_class=type(model).__name__, attn_implementation=attn,
                    model_dtype=str(dtype).replace("torch.", ""))
    return model


def build_quantized(case: casefmt.Case, raw: dict, config, settings: dict):
    """QLoRA's base: the random bf16 model saved once, loaded back through bitsandbytes NF4.

    NF4 with double-quantised absmax and bf16 compute, as the QLoRA paper and PEFT's guide set it;
    the output head and embeddings stay bf16 (transformers skips lm_head). No
    prepare_model_for_kbit_training: its fp32 upcast of every other weight is a recipe's choice.
    """
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig
    folder = os.path.join(QLORA_CACHE, casefmt.config_filename(case["model"])[:-len(".json")])
    if not os.path.isfile(os.path.join(folder, "config.json")):
        model = build_model(case, raw, config, {})
        partial = folder + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        model.save_pretrained(partial)
        del model
        gc.collect()
        torch.cuda.empty_cache()
        os.replace(partial, folder)
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                               bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(
        folder, quantization_config=quant, attn_implementation=ATTN_IMPLEMENTATION[case["attention"]],
        device_map={"": 0}, **{_dtype_kw(): torch.bfloat16})
    model.config.use_cache = False
    settings.update(model_class=type(model).__name__,
                    attn_implementation=ATTN_IMPLEMENTATION[case["attention"]], model_dtype="bfloat16",
                    quantization="bitsandbytes nf4, double quant, compute bf16, storage uint8; "
                                 "no prepare_model_for_kbit_training",
                    params_note="4-bit weights count as packed uint8 elements (2 weights each)")
    return model


def block_lists(model, raw: dict) -> list[tuple[str, torch.nn.ModuleList]]:
    """The stacks of repeated transformer blocks (decoder; encoder and decoder for T5).

    Found by length rather than by attribute name so one rule serves every family and still works
    after PEFT has wrapped the model; MoE expert lists have other lengths.
    """
    lengths = families.layer_count_keys(raw)
    found: list[tuple[str, torch.nn.ModuleList]] = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) in lengths:
            if not any(name.startswith(outer + ".") for outer, _ in found):
                found.append((name, module))
    if not found:
        raise RuntimeError(f"no block list of length {lengths} found in {type(model).__name__}")
    return found


def apply_method(model, case: casefmt.Case, raw: dict, settings: dict):
    if case["activation_checkpointing"] == "full":
        # Non-reentrant: what current trainers use, and it needs no enable_input_require_grads
        # hack when the embeddings are frozen (LoRA, freeze).
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    method = case["method"]
    if method in casefmt.LORA_METHODS:
        from peft import LoraConfig, TaskType, get_peft_model
        modules = families.lora_target_modules(raw, case["lora_targets"])
        rank = case.num("lora_rank")
        task = TaskType.SEQ_2_SEQ_LM if raw["model_type"] in families.ENCODER_DECODER else TaskType.CAUSAL_LM
        lora = LoraConfig(r=rank, lora_alpha=LORA_ALPHA_PER_RANK * rank, lora_dropout=0.0,
                          target_modules=modules, task_type=task)
        model = get_peft_model(model, lora)
        adapter = next(p for n, p in model.named_parameters() if "lora_" in n)
        settings.update(lora_alpha=LORA_ALPHA_PER_RANK * rank, lora_dropout=0.0,
                        lora_modules=modules if isinstance(modules, str) else list(modules),
                        adapter_dtype=str(adapter.dtype).replace("torch.", ""))
        note = families.fused_target_note(raw, case["lora_targets"])
        if note:
            settings["lora_target_note"] = note
    elif method == "freeze":
        for p in model.parameters():
            p.requires_grad_(False)
        _, blocks = block_lists(model, raw)[-1]  # the decoder for encoder-decoder models
        for block in blocks[-FREEZE_TRAINABLE_LAYERS:]:
            for p in block.parameters():
                p.requires_grad_(True)
        settings["freeze_trainable_layers"] = FREEZE_TRAINABLE_LAYERS
    return model


# ---------------------------------------------------------------------------------------------
# Simulated ranks: one real GPU plays rank 0 of a world whose collectives do nothing


def fake_world(world_size: int):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    # Importing this module registers the "fake" backend with torch.distributed.
    from torch.testing._internal.distributed.fake_pg import FakeStore
    dist.init_process_group(backend="fake", store=FakeStore(), rank=0, world_size=world_size)
    return init_device_mesh("cuda", (world_size,))


def shard_fsdp2(model, case: casefmt.Case, raw: dict, settings: dict):
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except ImportError:  # torch < 2.6 kept FSDP2 under _composable
        from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
    mesh = fake_world(case.num("dp"))
    kwargs = {"mesh": mesh, "reshard_after_forward": case["sharding"] == "zero3"}
    mixed_dtypes = len({p.dtype for p in model.parameters()}) > 1
    if case["precision"] == "amp_bf16" or mixed_dtypes:
        # FSDP2's own mixed precision (bf16 all-gathered compute copies, fp32 sharded masters and
        # fp32 gradient reduction) is how FSDP2 users train in amp; autocast is not layered on top.
        # A bf16 base with PEFT's fp32 adapters needs it too: one all-gather wants one dtype.
        kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        settings["fsdp_mixed_precision"] = "param bf16, reduce fp32" + (
            " (bf16 base with fp32 adapters)" if case["precision"] != "amp_bf16" else "")
    else:
        settings["fsdp_mixed_precision"] = f"none (all-gather and reduce in {case['precision']})"
    for _, blocks in block_lists(model, raw):
        for block in blocks:
            fully_shard(block, **kwargs)
    fully_shard(model, **kwargs)
    settings["fsdp_units"] = "one per block + root (embeddings, final norm, head)"
    return model


def shard_tp(model, case: casefmt.Case, raw: dict, settings: dict):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    tp = case.num("tp")
    mesh = fake_world(tp)
    table = families.family_modules(raw)
    colwise = {table[s] for s in ("q", "k", "v", "gate", "up")}
    rowwise = {table[s] for s in ("o", "down")}
    for _, blocks in block_lists(model, raw):
        for block in blocks:
            plan = {}
            for name, _module in block.named_modules():
                leaf = name.rsplit(".", 1)[-1]
                if leaf in colwise:
                    plan[name] = ColwiseParallel()
                elif leaf in rowwise:
                    plan[name] = RowwiseParallel()
            parallelize_module(block, mesh, plan)
            # Older attention code reshapes with self.num_heads etc.; make those local too.
            # Current code derives heads from the tensor (-1), for which this is a no-op.
            for module in block.modules():
                if hasattr(module, table["q"]):
                    for attr in ("num_heads", "num_key_value_heads", "hidden_size"):
                        if isinstance(getattr(module, attr, None), int):
                            setattr(module, attr, getattr(module, attr) // tp)
    settings["tp_plan"] = ("q,k,v,gate,up colwise; o,down rowwise; embeddings, norms and "
                           "lm_head replicated; no sequence parallel; no loss parallel")
    return model


def _dtensor_type():
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        from torch.distributed._tensor import DTensor
    return DTensor


def make_optimizer(model, case: casefmt.Case, settings: dict):
    params = [p for p in model.parameters() if p.requires_grad]
    if case.layout == "tp":
        # TP leaves norms and embeddings as plain tensors next to DTensor weights; foreach/fused
        # kernels refuse a mix inside one call, and torch calls them once per param group.
        dtensor = _dtensor_type()
        groups = [{"params": [p for p in params if isinstance(p, dtensor)]},
                  {"params": [p for p in params if not isinstance(p, dtensor)]}]
        params = [g for g in groups if g["params"]]
    impl = case.optimizer_impl
    impl_kwargs = {"foreach": {"foreach": True}, "fused": {"fused": True},
                   "forloop": {"foreach": False}, "": {}}[impl]
    name = case["optimizer"]
    if name == "adamw":
        opt = torch.optim.AdamW(params, lr=LEARNING_RATE, weight_decay=0.0, **impl_kwargs)
    elif name in ("sgd", "sgd_momentum"):
        momentum = 0.9 if name == "sgd_momentum" else 0.0
        opt = torch.optim.SGD(params, lr=LEARNING_RATE, momentum=momentum, **impl_kwargs)
    elif name == "adafactor":
        from transformers.optimization import Adafactor
        # The HF Trainer's adafactor arguments: fixed lr, no parameter scaling.
        opt = Adafactor(params, lr=LEARNING_RATE, scale_parameter=False, relative_step=False,
                        warmup_init=False)
    else:  # the dry run rejects anything else; keep the worker honest if called directly
        raise ValueError(f"optimizer {name} not supported")
    settings.update(optimizer_class=type(opt).__name__, optimizer_kwargs={
        k: v for k, v in opt.defaults.items() if isinstance(v, (int, float, str, bool, type(None)))})
    return opt


def count_params(model) -> dict:
    """Global counts, and what rank 0 holds (differs for sharded DTensor parameters)."""
    total = trainable = local = 0
    for p in model.parameters():
        n = p.numel()
        total += n
        trainable += n if p.requires_grad else 0
        local += p.to_local().numel() if hasattr(p, "to_local") else n
    return {"params": total, "trainable_params": trainable, "params_local": local}


# ---------------------------------------------------------------------------------------------
# The measured loop


def start_history() -> None:
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python",
                                             max_entries=HISTORY_MAX_ENTRIES)


def stop_history(path: str, log: dict, last_step: int = 1) -> None:
    """Keep the recorded step as a capped, gzipped pickle and stop recording."""
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    kept = snapshots.write_capped(snapshot, path, SNAPSHOT_CAP_BYTES)
    kept.update(step=1, last_step=last_step, max_entries=HISTORY_MAX_ENTRIES, stacks="python")
    log["memory_history"] = kept


def train(model, optimizer, case: casefmt.Case, vocab: int, steps: int, log: dict,
          history_path: str = "", history_steps: int = 1) -> None:
    mb, seq, accum = case.num("micro_batch"), case.num("seq_len"), case.num("grad_accum")
    if case["precision"] == "amp_bf16" and case.layout != "fsdp2":
        autocast = lambda: torch.autocast("cuda", dtype=torch.bfloat16)  # noqa: E731
    else:
        autocast = contextlib.nullcontext
    generator = torch.Generator(device="cuda")
    generator.manual_seed(SEED)
    model.train()
    for step in range(1, steps + 1):
        # Step 1's peak counts from the end of setup (reset there); every later step is measured
        # on its own so steady state is not masked by step 1's optimizer-state allocation.
        if step > 1:
            torch.cuda.reset_peak_memory_stats()
        log["current_step"] = step
        if step == 1 and history_path:
            start_history()  # host-side bookkeeping only: the device counters are unaffected
        started = time.perf_counter()
        used = 0
        for _ in range(accum):
            # Random ids of exactly seq_len (labels = inputs): every token counts in the loss,
            # as in packed training; the values do not affect memory.
            ids = torch.randint(0, vocab, (mb, seq), device="cuda", generator=generator)
            with autocast():
                out = model(input_ids=ids, labels=ids, use_cache=False)
            (out.loss / accum).backward()
            loss = out.loss.detach()
            del out, ids
            used = max(used, device_used())
        optimizer.step()
        used = max(used, device_used())
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        stats = torch.cuda.memory_stats()
        log["steps"].append({
            "step": step,
            "max_allocated": torch.cuda.max_memory_allocated(),
            "max_reserved": torch.cuda.max_memory_reserved(),
            "device_used": used,
            "allocated_end": torch.cuda.memory_allocated(),
            "reserved_end": torch.cuda.memory_reserved(),
            # Retries mean the allocator emptied its cache to satisfy a request: reserved and
            # device figures of that step are then below what a roomier GPU would show.
            "num_alloc_retries": stats.get("num_alloc_retries", 0),
            "seconds": round(time.perf_counter() - started, 4),
            "loss": float(loss),
        })
        if step == min(history_steps, steps) and history_path:
            stop_history(history_path, log, step)


def summarize(records: list[dict]) -> dict:
    keys = ("max_allocated", "max_reserved", "device_used")
    return {
        "first_step": {k: records[0][k] for k in keys},
        "steady_state": {k: max(r[k] for r in records[1:]) for k in keys},
        "all_steps": {k: max(r[k] for r in records) for k in keys},
    }


def run(spec: dict, log: dict) -> None:
    case = casefmt.Case(spec["row"], 0)
    settings = log["settings"]
    settings.update(row=spec["row"], steps=spec["steps"], seed=SEED, layout=case.layout,
                    optimizer_impl=case.optimizer_impl)
    log["other_gpu_processes"] = _nvidia_smi("--query-compute-apps=pid,used_memory")
    torch.cuda.init()
    # The first mem_get_info after init: CUDA context (plus anything else on the device).
    log["memory"] = {"context_bytes": device_used()}
    if case["method"] == "qlora":
        import bitsandbytes  # noqa: F401  (fail before building anything; its version is logged)
    log["env"] = environment()

    import transformers
    transformers.logging.set_verbosity_error()
    raw, config = load_config(spec["config_path"])
    if raw["model_type"] in families.ENCODER_DECODER:
        settings["t5_decoder_len"] = case.num("seq_len")  # labels = inputs: decoder as long as encoder
    started = time.perf_counter()
    if case["method"] == "qlora":
        model = build_quantized(case, raw, config, settings)
    else:
        model = build_model(case, raw, config, settings)
    model = apply_method(model, case, raw, settings)
    if case.layout == "fsdp2":
        model = shard_fsdp2(model, case, raw, settings)
    elif case.layout == "tp":
        model = shard_tp(model, case, raw, settings)
    settings.update(count_params(model))
    optimizer = make_optimizer(model, case, settings)
    if case["compile"] == "1":
        model = torch.compile(model)
        settings["compile_mode"] = "default"
    # Setup leaves cached blocks from initialisation (and the full-size copy the sharding replaced);
    # a loader that streams weights would not, so the measurement starts from a clean cache.
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    log["memory"]["after_setup"] = memory_snapshot()
    log["timings"] = {"setup_s": round(time.perf_counter() - started, 3)}

    train(model, optimizer, case, int(config.vocab_size), spec["steps"], log,
          spec.get("snapshot_path", ""), spec.get("history_steps", 1))
    log["memory"]["after_training"] = memory_snapshot()
    log["memory"]["expandable_segments_seen"] = expandable_segments_seen()
    log["summary"] = summarize(log["steps"])
    log["timings"]["steps_s"] = [r["seconds"] for r in log["steps"]]
    if case.layout != "single":
        import torch.distributed as dist
        dist.destroy_process_group()


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as f:
        spec = json.load(f)
    log = {"case_id": spec["row"].get("id", ""), "status": "error",
           "date": datetime.date.today().strftime("%Y-%m"), "settings": {}, "steps": []}
    started = time.perf_counter()
    code = 0
    try:
        run(spec, log)
        log["status"] = "ok"
    except torch.cuda.OutOfMemoryError as exc:
        # An OOM is a result too (the case does not fit this GPU); keep how far it got.
        log["status"] = "oom"
        log["error"] = str(exc).splitlines()[0]
        log["oom_peak_allocated"] = torch.cuda.max_memory_allocated()
        code = 3
    except Exception as exc:  # anything else is a harness or library problem: keep the traceback
        log["status"] = "error"
        log["error"] = f"{type(exc).__name__}: {exc}"
        log["traceback"] = traceback.format_exc()
        code = 1
    log.setdefault("timings", {})["total_s"] = round(time.perf_counter() - started, 3)
    with open(spec["log_path"], "w", encoding="utf-8") as f:
        json.dump(log, f, indent=1, default=str)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
