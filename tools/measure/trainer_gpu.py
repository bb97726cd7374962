"""One training run of the HF Trainer or TRL's SFTTrainer, for real, on one GPU: its memory counters.

The run is what `trainer.train()` does, nothing replayed: the trainer's own optimizer, loss (TRL's entropy and
token-accuracy metrics included), checkpointing, logging and, with `layout` fsdp2, accelerate's FSDP2 plugin at
world size 1 over a real NCCL process group, or, with `layout` deepspeed, the DeepSpeed engine as `accelerate launch`
starts it from the TRL benchmark's accelerate config (zero_stage 2 or 3, no offload, zero3_init_flag, bf16). Models are built from a config.json with random bf16 weights on the
GPU (no network). Recorded: the caching allocator's peaks per step and over the run (setup included), the device's
used memory read through NVML every 5 ms from before CUDA starts to the end (the counter nvidia-smi and trackio
report), and the allocator's retry and segment statistics.

    python3 tools/measure/trainer_gpu.py '{"id": "TG-01", "trainer": "trl", ...}' --out DIR [--device cpu]

`--device cpu` is the dry run on a machine without a GPU (gloo instead of NCCL, no NVML): it checks that the
trainer, the dataset, the plugin and the callbacks are wired as on the GPU. Writes DIR/<id>.json.
"""
import argparse
import json
import os
import sys
import threading
import time

GIB = 1 << 30


class NvmlPeak:
    """The device's used memory (NVML), sampled on a thread: the peak and the value at named moments."""

    def __init__(self, period_s=0.005):
        self.period_s, self.peak_bytes, self.marks, self._stop = period_s, 0, {}, threading.Event()
        try:
            import pynvml
            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self._read = lambda: pynvml.nvmlDeviceGetMemoryInfo(self._handle).used
        except Exception:  # no GPU (dry run)
            self._read = lambda: 0
        self.baseline_bytes = self._read()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, self._read())
            time.sleep(self.period_s)

    def start(self):
        self._thread.start()
        return self

    def mark(self, name):
        used = self._read()
        self.peak_bytes = max(self.peak_bytes, used)
        self.marks[name] = used

    def stop(self):
        self._stop.set()
        self._thread.join()


def set_environment(case, device):
    """Before torch is imported: the allocator's settings and, for FSDP2, a one-rank process group."""
    os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    os.environ.pop("PYTORCH_ALLOC_CONF", None)
    if case.get("alloc_conf"):
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = case["alloc_conf"]
    if case["layout"] in ("fsdp2", "deepspeed"):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000), RANK="0",
                          LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
        if device == "cpu" and case["layout"] == "fsdp2":  # DeepSpeed's dry run runs its CPU accelerator instead
            os.environ["ACCELERATE_USE_CPU"] = "true"
    if case["layout"] == "deepspeed":
        os.environ.update(deepspeed_launch_environment(case))
        if device == "cpu":  # the dry run: DeepSpeed's CPU accelerator has no bf16 training path under the Trainer
            os.environ["ACCELERATE_MIXED_PRECISION"] = "no"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"


def deepspeed_launch_environment(case):
    """What `accelerate launch` exports for the TRL benchmark's benchmark/templates/accelerate/deepspeed_zero3.yaml.j2
    (trl @26ecea7ba; accelerate 1.13 utils/launch.py prepare_deepspeed_cmd_env): no DeepSpeed config file, so the
    engine runs DeepSpeed's own defaults for every bucket and threshold."""
    return {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": str(case.get("zero_stage", 3)),
            "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE": "none", "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE": "none",
            "ACCELERATE_DEEPSPEED_ZERO3_INIT": "true", "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL": "true",
            "ACCELERATE_MIXED_PRECISION": "bf16"}


def config_only(case):
    import transformers
    with open(case["config_path"]) as f:
        raw = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    raw.update(case.get("config_overrides", {}))
    return transformers.AutoConfig.for_model(raw.pop("model_type"), **raw)


def build_model(case, device):
    import torch
    import transformers
    config = config_only(case)
    config._attn_implementation = case["attention"]
    config.use_cache = False
    with torch.device(device):
        return transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16), config


def token_rows(case, vocab_size, rows):
    """Rows of random token ids (ids 3.. vocab), each `seq_len` long: packing fills every sequence."""
    import random
    rng = random.Random(0)
    return [[rng.randrange(3, vocab_size) for _ in range(case["seq_len"])] for _ in range(rows)]


def tiny_tokenizer():
    """The trainers want a tokenizer; the rows are token ids already (pad 0, eos 1)."""
    import tokenizers
    import transformers
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="<unk>"))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>",
                                                unk_token="<unk>")


def fsdp_arguments(case, config):
    """accelerate's FSDP2 plugin as the TRL benchmark's accelerate config sets it (fsdp_version 2, transformer-based
    wrap, reshard after forward); `cpu_ram_efficient_loading` off: the weights are built on the GPU already.
    `checkpoint_via` fsdp: the plugin's own activation checkpointing (torch's checkpoint_wrapper, non-reentrant)
    instead of the Trainer's gradient_checkpointing."""
    if case["layout"] != "fsdp2":
        return {}
    layer_cls = type(config).__name__.replace("Config", "DecoderLayer")
    return {"fsdp": "full_shard auto_wrap",
            "fsdp_config": {"fsdp_version": 2, "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                            "transformer_layer_cls_to_wrap": [layer_cls], "reshard_after_forward": True,
                            "state_dict_type": "SHARDED_STATE_DICT", "cpu_ram_efficient_loading": False,
                            "activation_checkpointing": case.get("checkpoint_via") == "fsdp"}}


def common_arguments(case, out_dir, device, config):
    args = {"output_dir": out_dir, "per_device_train_batch_size": case["micro_batch"],
            "gradient_accumulation_steps": 1, "max_steps": case["steps"], "bf16": device != "cpu" or case["layout"] != "deepspeed", "report_to": "none",
            "save_strategy": "no", "logging_steps": 1, "learning_rate": 1e-5, "dataloader_num_workers": 0,
            "gradient_checkpointing": case["activation_checkpointing"] == "full" and case.get("checkpoint_via") != "fsdp",
            "gradient_checkpointing_kwargs": {"use_reentrant": case.get("use_reentrant", True)},
            "use_cpu": device == "cpu" and case["layout"] != "deepspeed", "seed": 0}
    args.update(fsdp_arguments(case, config))
    return args


def make_arguments(case, out_dir, device, config):
    if case["trainer"] == "trl":
        import trl
        return trl.SFTConfig(**common_arguments(case, out_dir, device, config), max_length=case["seq_len"],
                             packing=True, packing_strategy="wrapped", dataset_num_proc=None)
    import transformers
    return transformers.TrainingArguments(**common_arguments(case, out_dir, device, config),
                                          remove_unused_columns=False)


def make_trainer(case, args, model, config, callback):
    rows = token_rows(case, config.vocab_size, case["steps"] * case["micro_batch"] + 2)
    if case["trainer"] == "trl":
        import datasets
        import trl
        data = datasets.Dataset.from_dict({"input_ids": rows})
        return trl.SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tiny_tokenizer(),
                              callbacks=[callback])
    import torch
    import transformers
    data = [{"input_ids": torch.tensor(r), "labels": torch.tensor(r)} for r in rows]  # no `datasets` needed
    return transformers.Trainer(model=model, args=args, train_dataset=data,
                                data_collator=transformers.default_data_collator, callbacks=[callback])


def deepspeed_settings(trainer):
    """The engine's resolved configuration (DeepSpeed's defaults filled in): what the buckets were."""
    engine = getattr(trainer, "deepspeed", None) or getattr(trainer.accelerator, "deepspeed_engine_wrapped", None)
    config = getattr(engine, "config", None) or getattr(getattr(engine, "engine", None), "config", None)
    zero = getattr(getattr(engine, "_config", None), "zero_config", None)
    if zero is None:
        zero = getattr(getattr(getattr(engine, "engine", None), "_config", None), "zero_config", None)
    return {"config": config, "zero": zero.model_dump() if hasattr(zero, "model_dump") else str(zero),
            "engine": type(engine).__name__}


def allocator(torch, device):
    if device == "cpu":
        return {"allocated": 0, "reserved": 0}
    return {"allocated": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved()}


def make_callback(torch, nvml, device, record, case):
    import transformers

    class Counters(transformers.TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            record["setup_peak"] = allocator(torch, device)
            nvml.mark("train_begin")
            opt = kw.get("optimizer")
            record["optimizer"] = type(opt).__name__ if opt is not None else None
            model = kw.get("model")
            params = list(model.parameters()) if model is not None else []
            record["param_dtypes"] = sorted({str(p.dtype) for p in params})
            record["params_sharded"] = any(type(p).__name__ == "DTensor" for p in params)

        def on_step_begin(self, args, state, control, **kw):
            if device != "cpu":
                torch.cuda.reset_peak_memory_stats()

        def on_step_end(self, args, state, control, **kw):
            nvml.mark(f"step{state.global_step}")
            record["steps"].append({"step": state.global_step, **allocator(torch, device),
                                    "nvml_now": nvml.marks[f"step{state.global_step}"],
                                    "current_allocated": torch.cuda.memory_allocated() if device != "cpu" else 0})
            if device != "cpu" and state.global_step == 1 and record.get("history") and not case.get("history_from_start"):
                stacks = case.get("history_stacks", False)  # Python frames of every allocation (diagnosis)
                torch.cuda.memory._record_memory_history(context="alloc" if stacks else None,
                                                         stacks="python" if stacks else "all", max_entries=150000)

        def on_log(self, args, state, control, logs=None, **kw):
            record["logs"].append(dict(logs or {}))

    return Counters()


def optimizer_state_dtypes(trainer):
    opt = getattr(trainer, "optimizer", None)
    seen = set()
    for state in getattr(opt, "state", {}).values():
        seen.update(str(v.dtype) for v in state.values() if hasattr(v, "dtype") and v.dim() > 0)
    return sorted(seen)


def run(case, out_dir, device):
    set_environment(case, device)
    nvml = NvmlPeak().start()
    import torch
    import accelerate
    import transformers
    record = {"case": case, "steps": [], "logs": [], "device": device,
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                           "accelerate": accelerate.__version__, "python": sys.version.split()[0]}}
    try:
        import trl
        record["versions"]["trl"] = trl.__version__
    except ImportError:
        pass
    if device == "cuda":
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        nvml.mark("cuda_init")
        record["gpu"] = torch.cuda.get_device_name(0)
        if case.get("history") and case.get("history_from_start"):  # from before the model exists (diagnosis)
            torch.cuda.memory._record_memory_history(context="alloc", stacks="python", max_entries=400000)
    started = time.time()
    # zero.Init (zero3_init_flag) covers a model built after the arguments, as trl/scripts/sft.py orders them
    args = make_arguments(case, out_dir, device, config_only(case)) if case["layout"] == "deepspeed" else None
    model, config = build_model(case, device)
    nvml.mark("model_built")
    args = args or make_arguments(case, out_dir, device, config)
    trainer = make_trainer(case, args, model, config, make_callback(torch, nvml, device, record, case))
    if device == "cuda" and case.get("history"):
        record["history"] = True
    trainer.train()
    nvml.mark("train_end")
    record["wall_s"] = round(time.time() - started, 1)
    record["optimizer_state_dtypes"] = optimizer_state_dtypes(trainer)
    record["distributed_type"] = str(trainer.accelerator.distributed_type)
    if case["layout"] == "deepspeed":
        record["deepspeed"] = deepspeed_settings(trainer)
        import deepspeed
        record["versions"]["deepspeed"] = deepspeed.__version__
    record["params_sharded_after"] = any(type(p).__name__ == "DTensor" for p in trainer.model_wrapped.parameters())
    if device == "cuda":
        stats = torch.cuda.memory_stats()
        record["allocator_stats"] = {k: stats.get(k) for k in (
            "num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free",
            "allocated_bytes.all.peak", "reserved_bytes.all.peak", "inactive_split_bytes.all.peak",
            "segment.all.peak", "requested_bytes.all.peak")}
        record["run_peak"] = {"allocated": max(s["allocated"] for s in record["steps"] + [record["setup_peak"]]),
                              "reserved": max(s["reserved"] for s in record["steps"] + [record["setup_peak"]])}
        if case.get("history"):
            torch.cuda.memory._dump_snapshot(os.path.join(out_dir, f"{case['id']}.snapshot.pickle"))
            torch.cuda.memory._record_memory_history(enabled=None)
    nvml.stop()
    record["nvml"] = {"baseline": nvml.baseline_bytes, "peak": nvml.peak_bytes, "marks": nvml.marks}
    return record


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("case", help="the case as one JSON object")
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    args = parser.parse_args()
    case = json.loads(args.case)
    os.makedirs(args.out, exist_ok=True)
    try:
        record = run(case, args.out, args.device)
        record["status"] = "ok"
    except Exception as error:  # the log says how it failed; the driver goes on with the next case
        import traceback
        record = {"case": case, "status": "failed", "error": repr(error), "traceback": traceback.format_exc()}
        if "out of memory" in repr(error).lower():
            record["status"] = "oom"
    with open(os.path.join(args.out, f"{case['id']}.json"), "w") as f:
        json.dump(record, f, indent=1, default=str)
    print(json.dumps({k: record.get(k) for k in ("status", "run_peak", "nvml", "wall_s", "error")}, default=str))
    return 0 if record["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
