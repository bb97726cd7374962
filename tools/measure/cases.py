"""The case file: FORMAT.md's columns, their values, and what this harness can actually run.

Standard library only: the dry run must work on a laptop or in CI without torch.
A case is a validation row whose measured columns are still empty; validation answers two
questions in turn: is the row a well-formed FORMAT row, and can the transformers loop reproduce it.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field

import families

# Column order of tests/validation/*.csv (FORMAT.md). Output rows keep exactly these.
FORMAT_COLUMNS = [
    "id", "source", "date", "grade", "model", "gpu", "n_gpus", "dp", "tp", "pp", "vpp", "cp", "ep",
    "sequence_parallel", "sharding", "offload", "method", "lora_rank", "lora_targets", "base_quant",
    "precision", "optimizer", "optimizer_in_backward", "micro_batch", "grad_accum", "seq_len",
    "packed", "activation_checkpointing", "attention", "loss", "compile", "framework",
    "measured_gib", "measured_kind", "measured_scope", "notes",
]

# Harness-only columns a case file may add after the FORMAT ones. They never reach the output CSV;
# their values are written into notes as key=value instead. alloc_conf is the worker's
# PYTORCH_CUDA_ALLOC_CONF (empty = inherited); record_history=1 keeps a memory-history snapshot of
# the first optimizer step (torch.cuda.memory._record_memory_history), record_history=all of every step.
EXTRA_COLUMNS = ["optimizer_impl", "alloc_conf", "record_history"]

GPU_IDS = [
    "V100-16GB", "V100-32GB", "T4", "A10G", "L4", "L40S", "RTX-3090", "RTX-4090", "RTX-A6000",
    "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200", "H20", "B200", "MI300X",
]

# Every enumerated FORMAT column and its allowed values.
ENUMS = {
    "grade": ["A", "B", "C"],
    "gpu": GPU_IDS,
    "sequence_parallel": ["0", "1"],
    "sharding": ["none", "zero1", "zero2", "zero3"],
    "offload": ["none", "optimizer", "params_optimizer", "activations"],
    "method": ["full", "lora", "qlora", "dora", "freeze", "other_peft"],
    "base_quant": ["none", "nf4", "int8", "gptq4"],
    "precision": ["fp32", "amp_bf16", "amp_fp16", "bf16", "fp16", "fp8"],
    "optimizer": ["adamw", "adamw_8bit", "paged_adamw_8bit", "paged_adamw_32bit", "adamw_4bit",
                  "sgd", "sgd_momentum", "adafactor", "lion", "muon"],
    "optimizer_in_backward": ["0", "1"],
    "packed": ["0", "1"],
    "activation_checkpointing": ["none", "full", "selective"],
    "attention": ["eager", "sdpa", "flash"],
    "loss": ["standard", "chunked", "fused"],
    "compile": ["0", "1"],
    "framework": ["hf_trainer", "transformers_loop", "peft_bench", "torchtune", "torchtitan",
                  "megatron", "deepspeed", "litgpt", "fsdp_qlora", "colossalai", "other"],
    "measured_kind": ["max_allocated", "max_reserved", "peak_active", "nvidia_smi", "unknown",
                      "activations", "model_states"],
    "measured_scope": ["per_gpu", "total"],
}
INT_COLUMNS = ["n_gpus", "dp", "tp", "pp", "vpp", "cp", "ep", "lora_rank", "micro_batch",
               "grad_accum", "seq_len"]

# What the transformers loop can reproduce: a FORMAT-valid value outside these sets is rejected
# with "not supported by this harness" rather than silently run as something else.
SUPPORTED = {
    "method": ["full", "lora", "qlora", "freeze"],
    "precision": ["fp32", "amp_bf16", "bf16"],
    "optimizer": ["adamw", "sgd", "sgd_momentum", "adafactor"],
    "sharding": ["none", "zero2", "zero3"],
    "offload": ["none"],
    "base_quant": ["none", "nf4"],
    "activation_checkpointing": ["none", "full"],
    "loss": ["standard"],
    "optimizer_in_backward": ["0"],
    "packed": ["1"],
    "sequence_parallel": ["0"],
    "framework": ["transformers_loop"],
}
OPTIMIZER_IMPLS = {  # optimizer -> implementations torch offers for it ("" = the only one)
    "adamw": ["foreach", "fused", "forloop"],
    "sgd": ["foreach", "fused", "forloop"],
    "sgd_momentum": ["foreach", "fused", "forloop"],
    "adafactor": [""],
}
# Settings the worker must be told explicitly; "empty = default" would leave the run undefined.
REQUIRED = ["id", "model", "gpu", "n_gpus", "dp", "tp", "pp", "cp", "sharding", "method",
            "precision", "optimizer", "micro_batch", "grad_accum", "seq_len",
            "activation_checkpointing", "attention", "compile"]
MEASURED = ["measured_gib", "measured_kind"]

DEFAULT_OPTIMIZER_IMPL = {"adamw": "foreach", "sgd": "foreach", "sgd_momentum": "foreach",
                          "adafactor": ""}

# The caching allocator's PYTORCH_CUDA_ALLOC_CONF options (c10/cuda/CUDAAllocatorConfig.cpp).
ALLOC_CONF_KEYS = ["expandable_segments", "max_split_size_mb", "garbage_collection_threshold",
                   "roundup_power2_divisions", "backend", "pinned_use_cuda_host_register",
                   "release_lock_on_cudamalloc"]
LORA_METHODS = ("lora", "qlora")

# Rough device time of one case on an H100, for a campaign's time budget (not a measurement):
# a fresh process imports torch + transformers, creates a CUDA context and builds the model.
PROCESS_OVERHEAD_S = 20.0
BUILD_BYTES_PER_S = 4e9            # random initialisation on the GPU plus the first kernels' loading
QLORA_RELOAD_BYTES_PER_S = 1e9     # QLoRA saves the random bf16 model once and reloads it quantised
EFFECTIVE_FLOPS = 150e12           # bf16 training throughput of an HF eager loop on small models


def config_filename(model: str) -> str:
    """HF repo id -> configs file name, as FORMAT.md names them."""
    return model.replace("/", "__") + ".json"


@dataclass
class Case:
    """One row of the case file, as read, plus where it came from (for messages)."""
    row: dict[str, str]
    line: int

    def __getitem__(self, column: str) -> str:
        return (self.row.get(column) or "").strip()

    def num(self, column: str, default: int = 1) -> int:
        value = self[column]
        return int(value) if value else default

    @property
    def id(self) -> str:
        return self["id"]

    @property
    def optimizer_impl(self) -> str:
        return self["optimizer_impl"] or DEFAULT_OPTIMIZER_IMPL.get(self["optimizer"], "")

    @property
    def layout(self) -> str:
        """How the simulated ranks split the model: single, fsdp2 (zero2/zero3) or tp."""
        if self.num("tp") > 1:
            return "tp"
        if self.num("dp") > 1:
            return "fsdp2"
        return "single"


@dataclass
class Report:
    """Problems found, each already phrased for a person: where, which case, what, what to do."""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")


def read_cases(path: str, report: Report) -> list[Case]:
    """Read the case CSV; header problems go to report (rows are still returned where possible)."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        missing = [c for c in FORMAT_COLUMNS if c not in header]
        if missing:
            report.error(path, f"missing column(s): {', '.join(missing)} "
                               "(every FORMAT.md column must be present, empty where unknown)")
        unknown = [c for c in header if c not in FORMAT_COLUMNS and c not in EXTRA_COLUMNS]
        if unknown:
            report.error(path, f"unknown column(s): {', '.join(unknown)} "
                               f"(allowed beyond FORMAT.md: {', '.join(EXTRA_COLUMNS)})")
        cases = []
        for row in reader:
            if None in row:  # more fields than header names: a quoting problem in that line
                report.error(f"{path}:{reader.line_num}", "more fields than columns in the header")
                row.pop(None)
            cases.append(Case(row, reader.line_num))
    if not cases:
        report.error(path, "no cases")
    return cases


def load_config(configs_dir: str, model: str) -> tuple[dict | None, str]:
    """(config, problem): the JSON config for a model, or why it cannot be used."""
    path = os.path.join(configs_dir, config_filename(model))
    if not os.path.isfile(path):
        return None, f"config not found: {path}"
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, json.JSONDecodeError) as exc:
        return None, f"config {path} is not valid JSON: {exc}"
    if not isinstance(config, dict) or not config.get("model_type"):
        return None, f"config {path} has no model_type"
    return config, ""


def _check_format(case: Case, where: str, report: Report) -> bool:
    """FORMAT.md rules alone. Returns False when later checks would only repeat the same fault."""
    ok = True
    for column in REQUIRED:
        if not case[column]:
            report.error(where, f"{column} is empty (the harness needs every setting explicit)")
            ok = False
    for column, allowed in ENUMS.items():
        value = case[column]
        if value and value not in allowed:
            report.error(where, f"{column}={value!r} is not one of {', '.join(allowed)}")
            ok = False
    for column in INT_COLUMNS:
        value = case[column]
        if value and not (value.isdigit() and int(value) > 0):
            report.error(where, f"{column}={value!r} must be a positive integer")
            ok = False
    if case["date"] and not re.fullmatch(r"\d{4}-\d{2}", case["date"]):
        report.error(where, f"date={case['date']!r} must be YYYY-MM")
    if not ok:
        return False
    product = case.num("dp") * case.num("tp") * case.num("pp") * case.num("cp")
    if product != case.num("n_gpus"):
        report.error(where, f"dp*tp*pp*cp = {product} but n_gpus = {case.num('n_gpus')}")
        ok = False
    method = case["method"]
    if method in ("lora", "qlora", "dora"):
        for column in ("lora_rank", "lora_targets"):
            if not case[column]:
                report.error(where, f"{column} is empty but method is {method}")
                ok = False
    elif case["lora_rank"] or case["lora_targets"]:
        report.error(where, f"lora_rank/lora_targets given but method is {method}")
        ok = False
    for column in MEASURED:
        if case[column]:
            report.error(where, f"{column} must be empty in a case file (the harness fills it)")
            ok = False
    return ok


def _check_supported(case: Case, config: dict, where: str, report: Report) -> None:
    """What the transformers loop (with fake process groups for several GPUs) can reproduce."""
    for column, allowed in SUPPORTED.items():
        value = case[column]
        if value and value not in allowed:
            report.error(where, f"{column}={value} is not supported by this harness "
                                f"(supported: {', '.join(allowed)})")
    for column in ("pp", "vpp", "cp", "ep"):
        if case.num(column) != 1:
            report.error(where, f"{column}={case[column]} is not supported by this harness (only 1)")
    if case["grade"] not in ("", "A"):
        report.error(where, "grade must be empty or A (the harness measures every field)")

    impl = case["optimizer_impl"]
    allowed_impls = OPTIMIZER_IMPLS.get(case["optimizer"], [])
    if impl and impl not in allowed_impls:
        report.error(where, f"optimizer_impl={impl!r} is not available for {case['optimizer']} "
                            f"(choose from {', '.join(i for i in allowed_impls if i) or 'nothing'})")

    d = families.dims(config)
    model_type = d.model_type
    if case["attention"] == "sdpa" and model_type in families.EAGER_ONLY:
        report.error(where, f"attention=sdpa: transformers has only eager attention for {model_type}")
    if model_type in families.LEARNED_POSITIONS and d.max_positions:
        if case.num("seq_len") > d.max_positions:
            report.error(where, f"seq_len={case['seq_len']} exceeds the learned position table "
                                f"({families.LEARNED_POSITIONS[model_type]}={d.max_positions})")

    if case["method"] in LORA_METHODS:
        try:
            families.lora_target_modules(config, case["lora_targets"])
        except families.TargetError as exc:
            report.error(where, f"lora_targets={case['lora_targets']!r}: {exc}")
    _check_qlora(case, where, report)
    _check_extras(case, where, report)

    layout, dp, tp = case.layout, case.num("dp"), case.num("tp")
    if dp > 1 and tp > 1:
        report.error(where, "dp>1 together with tp>1 is not supported (one simulated axis at a time)")
    if dp > 1 and case["sharding"] not in ("zero2", "zero3"):
        report.error(where, f"dp={dp} needs sharding zero2 or zero3 (FSDP2); got {case['sharding']}")
    if dp == 1 and case["sharding"] in ("zero2", "zero3"):
        report.error(where, f"sharding={case['sharding']} needs dp>1")
    if layout == "tp":
        for problem in families.tp_problems(config, tp):
            report.error(where, problem)
        if case["method"] != "full":
            report.error(where, "tensor parallel runs method=full only")
    if layout != "single":
        if case["compile"] == "1":
            report.error(where, "compile=1 is supported on a single GPU only")
        if case["optimizer"] == "adafactor":
            report.error(where, "adafactor does not accept sharded (DTensor) parameters")


def _check_qlora(case: Case, where: str, report: Report) -> None:
    """QLoRA = bitsandbytes NF4 base (double-quantised) with bf16 compute, on one GPU."""
    qlora, nf4 = case["method"] == "qlora", case["base_quant"] == "nf4"
    if qlora != nf4:
        report.error(where, "method=qlora and base_quant=nf4 go together "
                            f"(got method={case['method']}, base_quant={case['base_quant'] or 'empty'})")
    if qlora and case["precision"] != "bf16":
        report.error(where, f"method=qlora runs precision=bf16 (the NF4 compute dtype); "
                            f"got {case['precision']}")
    if qlora and case.layout != "single":
        report.error(where, "method=qlora is supported on a single GPU only")


def parse_alloc_conf(text: str) -> dict[str, str]:
    """'expandable_segments:True,max_split_size_mb:128' -> {key: value}; raises ValueError."""
    options = {}
    for item in text.split(","):
        key, sep, value = item.strip().partition(":")
        if not sep or not value.strip():
            raise ValueError(f"{item.strip()!r} is not key:value")
        if key not in ALLOC_CONF_KEYS:
            raise ValueError(f"unknown option {key!r} (known: {', '.join(ALLOC_CONF_KEYS)})")
        options[key] = value.strip()
    return options


def _check_extras(case: Case, where: str, report: Report) -> None:
    if case["alloc_conf"]:
        try:
            options = parse_alloc_conf(case["alloc_conf"])
        except ValueError as exc:
            report.error(where, f"alloc_conf={case['alloc_conf']!r}: {exc}")
        else:
            flag = options.get("expandable_segments")
            if flag is not None and flag not in ("True", "False"):
                report.error(where, f"alloc_conf: expandable_segments must be True or False, got {flag!r}")
    if case["record_history"] not in ("", "0", "1", "all"):
        report.error(where, f"record_history={case['record_history']!r} must be 0, 1, all or empty")


def estimated_seconds(case: Case, config: dict, steps: int) -> float:
    """Rough device time of one case (PROCESS_OVERHEAD_S and the rates above); for budgets only."""
    d = families.dims(config)
    params, _ = families.param_counts(d)
    weight_bytes = params * (2 if case["precision"] == "bf16" else 4)
    seconds = PROCESS_OVERHEAD_S + weight_bytes / BUILD_BYTES_PER_S
    if case["method"] == "qlora":
        seconds += 2 * params * 2 / QLORA_RELOAD_BYTES_PER_S  # bf16 written, then read
    tokens = case.num("micro_batch") * case.num("seq_len") * case.num("grad_accum")
    flops = 6 * params * tokens + 12 * d.layers * d.hidden * case.num("seq_len") * tokens
    if case["activation_checkpointing"] == "full":
        flops *= 4 / 3  # the forward again
    return seconds + steps * flops / EFFECTIVE_FLOPS


def validate(cases: list[Case], configs_dir: str, report: Report, path: str = "cases") -> None:
    """Check every case; fills report.errors. Each config file is read once."""
    seen: dict[str, int] = {}
    configs: dict[str, tuple[dict | None, str]] = {}
    unusable: dict[str, list[Case]] = {}  # model -> cases; reported once per model, not per case
    for case in cases:
        where = f"{path}:{case.line} ({case.id or 'no id'})"
        if case.id in seen:
            report.error(where, f"duplicate id, first used on line {seen[case.id]}")
        seen.setdefault(case.id, case.line)
        if not _check_format(case, where, report):
            continue
        model = case["model"]
        if model not in configs:
            configs[model] = load_config(configs_dir, model)
        config, problem = configs[model]
        if config is None:
            unusable.setdefault(model, []).append(case)
            continue
        _check_supported(case, config, where, report)
    for model, affected in unusable.items():
        first = affected[0]
        more = f" and {len(affected) - 1} more" if len(affected) > 1 else ""
        report.error(f"{path}:{first.line} ({first.id}{more})", configs[model][1])


def plan_line(case: Case) -> str:
    """One human-readable line per case, for --dry-run."""
    if case["method"] in LORA_METHODS:
        method = f"{case['method']} r{case['lora_rank']} {case['lora_targets']}"
    else:
        method = case["method"]
    optimizer = case["optimizer"] + (f"/{case.optimizer_impl}" if case.optimizer_impl else "")
    layout = {"single": "1 GPU",
              "fsdp2": f"FSDP2 {case['sharding']} ws={case['dp']} (simulated)",
              "tp": f"TP ws={case['tp']} (simulated)"}[case.layout]
    extras = []
    if case["activation_checkpointing"] == "full":
        extras.append("ckpt")
    if case["compile"] == "1":
        extras.append("compile")
    if case["alloc_conf"]:
        extras.append(case["alloc_conf"])
    if case["record_history"] in ("1", "all"):
        extras.append("history" if case["record_history"] == "1" else "history-all")
    return (f"{case.id:<12} {case['model']:<36} {method:<26} {case['precision']:<8} "
            f"{optimizer:<20} mb={case['micro_batch']:<2} seq={case['seq_len']:<5} "
            f"ga={case['grad_accum']:<2} {case['attention']:<5} {layout}"
            + (f" [{' '.join(extras)}]" if extras else ""))
