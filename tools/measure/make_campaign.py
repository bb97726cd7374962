#!/usr/bin/env python3
"""Generate the measurement campaign: tools/measure/campaign.csv.

    python3 tools/measure/make_campaign.py --configs /path/to/configs [--gpu H100-80GB] [--out FILE]

The campaign sweeps one knob at a time around a few base settings, per model, so each estimator
mechanism (sequence and batch scaling, dtype policy, optimizer states, recompute, attention
kernel, LoRA, freezing, FSDP2 sharding, tensor parallelism) has cases where it alone changes.
Cases that clearly cannot fit the GPU are dropped using a deliberately rough estimate below; it
only prunes hopeless cases, it is not memfit's estimator. Output is deterministic: same configs
and arguments, same bytes.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys

import cases as casefmt
import families

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))

# Memory the driver reports (GiB), which is what a run can fill; nominal GB would understate it.
GPU_CAPACITY_GIB = {"H100-80GB": 79.1, "H100-94GB": 93.1, "H200": 139.8, "A100-80GB": 79.2,
                    "A100-40GB": 39.4, "B200": 178.4, "MI300X": 191.5}
FIT_FRACTION = 0.85   # keep a case when the rough estimate is below this share of the GPU

MODELS = {
    "opt125m": "facebook/opt-125m",
    "bloom560m": "bigscience/bloomz-560m",
    "qwen2_05b": "Qwen/Qwen2-0.5B-Instruct",
    "gpt2l": "openai-community/gpt2-large",
    "llama1b": "meta-llama/Llama-3.2-1B-Instruct",
    "qwen3_17b": "Qwen/Qwen3-1.7B",
    "gemma2_2b": "google/gemma-2-2b",
    "phi2": "microsoft/phi-2",
    "t5base": "google-t5/t5-base",
    "qwen25_3b": "Qwen/Qwen2.5-3B",
    "llama3b": "meta-llama/Llama-3.2-3B",
    "qwen25_7b": "Qwen/Qwen2.5-7B",
    "llama8b": "meta-llama/Llama-3.1-8B",
    "qwen3_8b": "Qwen/Qwen3-8B",
    "mistral7b": "mistralai/Mistral-7B-v0.3",
    "qwen3_moe": "Qwen/Qwen3-30B-A3B",
}
SMALL = ["opt125m", "bloom560m", "qwen2_05b", "gpt2l", "llama1b", "qwen3_17b", "gemma2_2b",
         "phi2", "t5base"]
MID = ["qwen25_3b", "llama3b"]
BIG = ["qwen25_7b", "llama8b", "qwen3_8b", "mistral7b"]

BASE = {
    "n_gpus": 1, "dp": 1, "tp": 1, "pp": 1, "vpp": 1, "cp": 1, "ep": 1, "sequence_parallel": 0,
    "sharding": "none", "offload": "none", "method": "full", "lora_rank": "", "lora_targets": "",
    "base_quant": "none", "precision": "amp_bf16", "optimizer": "adamw",
    "optimizer_in_backward": 0, "micro_batch": 1, "grad_accum": 1, "seq_len": 1024, "packed": 1,
    "activation_checkpointing": "none", "attention": "sdpa", "loss": "standard", "compile": 0,
    "framework": "transformers_loop", "optimizer_impl": "foreach",
}
SETTING_KEYS = ["model"] + list(BASE)


# ---------------------------------------------------------------------------------------------
# The campaign, one group per mechanism


# The campaign sets the optimizer implementation; allocator options and memory history stay default.
CAMPAIGN_COLUMNS = casefmt.FORMAT_COLUMNS + ["optimizer_impl"]


def sweep(group: str, models, **axes):
    """Every combination of the listed values (a scalar is a one-value axis) for each model."""
    names = list(axes)
    values = [v if isinstance(v, list) else [v] for v in axes.values()]
    for model in models:
        for combo in itertools.product(*values):
            yield group, model, dict(zip(names, combo))


def all_short_targets(config: dict) -> str:
    """Every projection the family has, as short names: the explicit-list twin of all-linear."""
    table = families.family_modules(config)
    return ",".join(t for t in families.SHORT_TARGETS if t in table)


def single_gpu_groups(configs: dict):
    ckpt = {"activation_checkpointing": "full"}
    yield from sweep("seq_sweep", SMALL, seq_len=[256, 512, 1024, 2048, 4096, 8192])
    yield from sweep("seq_sweep_ckpt", SMALL, seq_len=[2048, 8192], micro_batch=2, **ckpt)
    yield from sweep("batch_sweep", SMALL, seq_len=512, micro_batch=[1, 2, 4, 8])
    yield from sweep("batch_sweep_ckpt", ["qwen2_05b", "llama1b", "qwen3_17b", "gemma2_2b"],
                     seq_len=2048, micro_batch=[2, 4, 8], **ckpt)
    yield from sweep("precision", SMALL, precision=["fp32", "amp_bf16", "bf16"], micro_batch=2)
    optimizers = [("adamw", "fused"), ("adamw", "forloop"), ("sgd_momentum", "foreach"),
                  ("sgd_momentum", "fused"), ("sgd", "foreach"), ("adafactor", "")]
    for group, model, axes in sweep("optimizer", ["qwen2_05b", "llama1b", "gpt2l"],
                                    opt=optimizers, micro_batch=2):
        name, impl = axes.pop("opt")
        yield group, model, {**axes, "optimizer": name, "optimizer_impl": impl}
    for group, model, axes in sweep("optimizer_bf16", ["llama1b"],
                                    opt=optimizers, precision="bf16", micro_batch=2):
        name, impl = axes.pop("opt")
        yield group, model, {**axes, "optimizer": name, "optimizer_impl": impl}
    yield from sweep("attention_eager", ["opt125m", "qwen2_05b", "gpt2l", "llama1b", "qwen3_17b",
                                         "gemma2_2b", "phi2"],
                     attention="eager", seq_len=[512, 2048])
    yield from sweep("attention_eager_ckpt", ["qwen2_05b", "llama1b", "gemma2_2b"],
                     attention="eager", seq_len=4096, **ckpt)
    yield from sweep("grad_accum", ["opt125m", "qwen2_05b", "llama1b"], grad_accum=[2, 4],
                     micro_batch=2)
    # Compiling takes a minute per case, so fewer of them.
    yield from sweep("compile", ["opt125m", "qwen2_05b", "llama1b", "gpt2l"], compile=1,
                     precision=["amp_bf16", "bf16"])
    yield from sweep("compile", ["qwen2_05b", "llama1b"], compile=1, seq_len=4096)
    # Full fine-tuning of 3B-8B models: pure bf16 (AdamW states in bf16) with recompute is how
    # they fit one 80 GB GPU; amp only for the 3B models.
    yield from sweep("full_large_bf16", MID + BIG, precision="bf16", optimizer_impl=["foreach", "fused"],
                     seq_len=[512, 2048, 4096], **ckpt)
    yield from sweep("full_large_bf16", MID + BIG, precision="bf16", optimizer_impl="fused",
                     seq_len=2048, micro_batch=2, grad_accum=[1, 2], **ckpt)
    yield from sweep("full_mid_amp", MID, optimizer_impl="fused", seq_len=[1024, 2048], **ckpt)
    for group, model, axes in sweep("full_large_opt", BIG, opt=[("sgd_momentum", "foreach"),
                                                               ("adafactor", "")],
                                    precision="bf16", seq_len=2048, **ckpt):
        name, impl = axes.pop("opt")
        yield group, model, {**axes, "optimizer": name, "optimizer_impl": impl}
    yield from sweep("full_large_no_ckpt", ["llama3b", "llama8b"], precision="bf16",
                     optimizer_impl="fused", seq_len=[512, 1024])
    # LoRA: targets and rank on every model; base in amp for small models, in bf16 for 3B+.
    for model in SMALL + MID + BIG:
        big = model not in SMALL
        base = {"method": "lora", "micro_batch": 2,
                **({"precision": "bf16", **ckpt} if big else {})}
        every = all_short_targets(configs[model])
        variants = [(16, "q,v"), (16, "q,k,v,o"), (16, "all-linear"), (8, every)]
        if model in ("qwen2_05b", "llama1b", "gpt2l", "t5base", "llama3b", "llama8b", "mistral7b"):
            variants.append((64, "all-linear"))
        for rank, targets in variants:
            # Name what really gets adapted: on fused-qkv families q,v also adapts k.
            if targets != "all-linear":
                targets = ",".join(families.covered_short_targets(configs[model], targets))
            yield "lora", model, {**base, "lora_rank": rank, "lora_targets": targets}
        yield "lora_long", model, {**base, "micro_batch": 1, "seq_len": 4096, "lora_rank": 16,
                                   "lora_targets": "all-linear", **ckpt}
    yield from sweep("lora_moe", ["qwen3_moe"], method="lora", lora_rank=16, lora_targets="q,k,v,o",
                     precision="bf16", seq_len=[512, 1024, 2048], micro_batch=[1, 2], **ckpt)
    yield from sweep("freeze", ["qwen2_05b", "llama1b", "qwen3_17b", "phi2", "gpt2l", "t5base"],
                     method="freeze", micro_batch=2)
    yield from sweep("freeze", ["qwen25_7b", "llama8b"], method="freeze", precision="bf16",
                     seq_len=2048)


def multi_gpu_groups(configs: dict):
    fsdp_models = ["llama1b", "qwen25_3b", "llama8b", "qwen3_8b", "mistral7b"]
    for ws in (2, 4, 8):
        fsdp = {"n_gpus": ws, "dp": ws, "sharding": "zero3", "optimizer_impl": "fused"}
        ckpt = {"activation_checkpointing": "full"}
        yield from sweep("fsdp2_zero3", fsdp_models, **fsdp, precision=["amp_bf16", "bf16"],
                         seq_len=2048, **ckpt)
        yield from sweep("fsdp2_zero3_no_ckpt", ["llama1b"], **fsdp, seq_len=1024, micro_batch=2)
        yield from sweep("fsdp2_zero2", ["llama1b", "llama8b"], **{**fsdp, "sharding": "zero2"},
                         precision="bf16", seq_len=2048, **ckpt)
        yield from sweep("fsdp2_lora", ["llama8b"], **fsdp, method="lora", lora_rank=16,
                         lora_targets="all-linear", precision="bf16", seq_len=2048, **ckpt)
        tp = {"n_gpus": ws, "tp": ws, "optimizer_impl": "foreach"}
        tp_models = [m for m in ["llama1b", "qwen25_3b", "llama8b", "qwen3_8b", "mistral7b"]
                     if not families.tp_problems(configs[m], ws)]
        yield from sweep("tp", tp_models, **tp, precision="bf16", seq_len=2048, **ckpt)
        yield from sweep("tp_no_ckpt", ["llama1b"], **tp, precision=["amp_bf16", "bf16"],
                         seq_len=1024)


# ---------------------------------------------------------------------------------------------
# Rough fit estimate: prunes cases that cannot fit, nothing more


def estimate_gib(s: dict, d: families.Dims) -> float:
    total, block = families.param_counts(d)
    embed = total - d.layers * block
    ws_dp, ws_tp = s["dp"], s["tp"]
    act_b = 4 if s["precision"] == "fp32" else 2
    weight_b = 2 if s["precision"] == "bf16" else 4
    if s["method"] == "lora":
        width = 8 * d.hidden + 3 * (d.hidden + d.intermediate)  # all-linear in + out widths
        trainable, state_b = s["lora_rank"] * d.layers * width, 4  # PEFT keeps adapters in fp32
    elif s["method"] == "freeze":
        trainable, state_b = 2 * block, weight_b
    else:
        trainable, state_b = total, weight_b
    per_state = {"adamw": 2, "sgd_momentum": 1, "sgd": 0, "adafactor": 0.05}[s["optimizer"]]
    transient = 0.5 if s["optimizer_impl"] in ("foreach", "") else 0.05
    states = trainable * state_b * (1 + per_state + transient * max(per_state, 1))
    weights = total * weight_b
    if s["precision"] == "amp_bf16" and ws_dp == 1:
        weights += total * 2  # autocast keeps a bf16 copy of every weight until forward ends
    if ws_dp > 1:
        shard = 1 / ws_dp
        gathered = (embed + 2 * block) * 2  # compute copies of the root unit and two blocks
        if s["sharding"] == "zero2":
            gathered = total * 2  # parameters stay unsharded from forward to backward
        weights, states = weights * shard + gathered, states * shard
    if ws_tp > 1:
        split = (embed + d.layers * block / ws_tp) / total
        weights, states = weights * split, states * split
    tokens = s["micro_batch"] * s["seq_len"]
    inner = d.intermediate * (d.experts_per_token or 1) * (4 if d.gated_mlp else 2)
    per_layer = tokens * act_b * (12 * d.hidden + inner / ws_tp)
    if s["attention"] == "eager":
        per_layer += s["micro_batch"] * d.heads / ws_tp * s["seq_len"] ** 2 * (2 * act_b + 4)
    if s["method"] == "freeze":
        acts = 2 * per_layer
    elif s["activation_checkpointing"] == "full":
        acts = d.layers * tokens * d.hidden * act_b + per_layer
    else:
        acts = d.layers * per_layer
    logits = tokens * d.vocab * (2 * act_b + 8)  # logits, fp32 upcast, their gradients
    # States are counted as they are; the activation terms are the uncertain part, so only they
    # get a margin. 1 GiB for the CUDA context and library workspaces.
    return (weights + states + (acts + logits) * 1.2) / 2 ** 30 + 1.0


def setup_fits(s: dict, d: families.Dims, capacity: float) -> bool:
    """The worker builds the whole model on the GPU before sharding it: that must fit too."""
    total, _ = families.param_counts(d)
    build_b = 2 if s["precision"] == "bf16" else 4
    ranks = s["dp"] * s["tp"]
    copies = 1 + (1 / ranks if ranks > 1 else 0)  # the full model and, briefly, its shards
    return total * build_b * copies / 2 ** 30 < FIT_FRACTION * capacity


# ---------------------------------------------------------------------------------------------


def build(configs: dict, gpu: str) -> tuple[list[dict], list[dict]]:
    capacity = GPU_CAPACITY_GIB[gpu]
    seen = set()
    out = {"S": [], "M": []}
    for kind, groups in (("S", single_gpu_groups(configs)), ("M", multi_gpu_groups(configs))):
        for group, short, axes in groups:
            s = {**BASE, **axes, "model": MODELS[short]}
            config = configs[short]
            d = families.dims(config)
            if s["attention"] == "sdpa" and d.model_type in families.EAGER_ONLY:
                s["attention"] = "eager"
            if d.max_positions and s["seq_len"] > d.max_positions:
                continue  # past the trained context: not a fine-tuning anyone runs
            if s["optimizer"] == "adafactor":
                s["optimizer_impl"] = ""
            key = tuple(str(s[k]) for k in SETTING_KEYS)
            if key in seen:
                continue
            seen.add(key)
            estimate = estimate_gib(s, d)
            if estimate > FIT_FRACTION * capacity or not setup_fits(s, d, capacity):
                continue
            s["notes"] = f"group={group}; rough_estimate_gib={estimate:.0f}"
            out[kind].append(s)
    return out["S"], out["M"]


def to_rows(single: list[dict], multi: list[dict], gpu: str) -> list[dict]:
    rows = []
    for prefix, cases in (("MFM-S", single), ("MFM-M", multi)):
        for i, s in enumerate(cases, 1):
            row = {c: "" for c in CAMPAIGN_COLUMNS}
            row.update({k: str(v) for k, v in s.items()})
            row.update(id=f"{prefix}-{i:03d}", gpu=gpu,
                       source="memfit measurement campaign (tools/measure/make_campaign.py)")
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--configs", default=os.path.join(REPO_ROOT, "tests", "validation", "configs"),
                   help="folder of <org>__<name>.json configs (default: tests/validation/configs)")
    p.add_argument("--gpu", default="H100-80GB", choices=sorted(GPU_CAPACITY_GIB),
                   help="gpu column, and the memory the fit filter assumes")
    p.add_argument("--out", default=os.path.join(HERE, "campaign.csv"))
    args = p.parse_args(argv)

    configs = {}
    for short, model in MODELS.items():
        config, problem = casefmt.load_config(args.configs, model)
        if config is None:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        configs[short] = config
    single, multi = build(configs, args.gpu)
    rows = to_rows(single, multi, args.gpu)
    with open(args.out, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=CAMPAIGN_COLUMNS,
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{args.out}: {len(single)} single-GPU + {len(multi)} simulated multi-GPU cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
