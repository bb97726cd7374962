"""FORMAT rows (tests/validation/FORMAT.md) for the trainer runs: three counters per case.

    python3 tools/measure/trainer_gpu_rows.py predict > rows.csv     # measured_gib 1 (placeholder): for memfit's
                                                                    #   predictions before the run
    python3 tools/measure/trainer_gpu_rows.py measured SUMMARY.json > tests/validation/measured_h200_trainers.csv
"""
import csv
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1 << 30
COLUMNS = ("id,source,date,grade,model,gpu,n_gpus,dp,tp,pp,vpp,cp,ep,sequence_parallel,sharding,offload,method,"
           "lora_rank,lora_targets,base_quant,precision,optimizer,optimizer_in_backward,micro_batch,grad_accum,seq_len,"
           "packed,activation_checkpointing,attention,loss,compile,framework,measured_gib,measured_kind,measured_scope,"
           "notes").split(",")
COUNTERS = (("alloc", "max_allocated"), ("reserved", "max_reserved"), ("smi", "nvidia_smi"))
SETUPS = {
    "benchmark": "trl 1.4.0, accelerate 1.13.0, transformers 5.8.0, datasets 5.2.0 (the TRL SFT benchmark's versions), "
                 "framework_version=2026-04 (the date of those versions), torch 2.11.0+cu130; Qwen3-4B from its config.json with random bf16 weights built on the GPU (dtype "
                 "bfloat16) and --bf16 (accelerate autocast; accelerate 1.13 keeps the bf16 parameters and AdamW states)",
    "device": "accelerate 1.15.0, transformers 5.17.0 (the GPU image's), torch 2.11.0+cu130; random bf16 weights built "
              "on the GPU from the config (dtype bfloat16) and --bf16 (accelerate autocast; under FSDP2 accelerate 1.15 "
              "upcasts the sharded parameters to fp32, so AdamW states and gradients are fp32)",
}
DEEPSPEED_SETUP = ("trl 1.4.0, accelerate 1.13.0, transformers 5.8.0, datasets 5.2.0 (the TRL SFT benchmark's versions), "
                   "framework_version=2026-04 (the date of those versions), deepspeed 0.19.8, torch 2.11.0+cu130; random bf16 weights built on the GPU from the config under "
                   "zero.Init (dtype bfloat16) and --bf16: DeepSpeed keeps fp32 master partitions and fp32 AdamW states")
COMMON = "Trainer default optimizer; per_device_train_batch_size 1"


def precision(case):
    """What the run keeps: accelerate >= 1.14 upcasts FSDP2's sharded parameters to fp32 (amp_bf16); otherwise the
    bf16-loaded parameters, gradients and states stay bf16."""
    if case["layout"] == "deepspeed":  # DeepSpeed's bf16 ZeRO keeps fp32 master partitions and fp32 AdamW states
        return "amp_bf16"
    return "amp_bf16" if case.get("versions") == "device" and case["layout"] == "fsdp2" else "bf16"


def layout_note(case):
    if case["layout"] == "deepspeed":
        return (f"backend=deepspeed: DeepSpeed ZeRO-{case.get('zero_stage', 3)} as accelerate launch starts it from the "
                "TRL benchmark's deepspeed_zero3.yaml.j2 (no config file: DeepSpeed's default buckets; zero3_init_flag, "
                "bf16, no offload) at world size 1 over NCCL")
    if case["layout"] == "fsdp2":
        return "accelerate FSDP2 plugin (fsdp_version 2, TRANSFORMER_BASED_WRAP, reshard_after_forward) at world size 1 over NCCL"
    return "no FSDP, no process group"


def sharding(case):
    if case["layout"] == "deepspeed":
        return f"zero{case.get('zero_stage', 3)}"
    return "zero3" if case["layout"] == "fsdp2" else "none"


def checkpointing_note(case):
    if case.get("checkpoint_via") == "fsdp":
        return "activation checkpointing by the FSDP plugin (fsdp_config activation_checkpointing: checkpoint_wrapper)"
    return f"gradient_checkpointing true (use_reentrant {str(case.get('use_reentrant', True)).lower()})"


def cases():
    with open(os.path.join(HERE, "trainer_gpu_cases.jsonl")) as f:
        return [c for c in (json.loads(line) for line in f if line.strip()) if not c.get("diagnostic")]


def row(case, suffix, counter, measured_gib, extra_notes):
    trl = case["trainer"] == "trl"
    notes = [f"why: {case['why']}", DEEPSPEED_SETUP if case["layout"] == "deepspeed" else SETUPS[case.get("versions", "benchmark")], COMMON, checkpointing_note(case),
             "TRL SFTTrainer, packing wrapped (every row filled to max_length), loss_type nll" if trl
             else "HF Trainer, rows of seq_len token ids, default_data_collator",
             layout_note(case),
             f"alloc_conf={case.get('alloc_conf', 'default')}"] + extra_notes
    values = {"id": f"{case['id']}-{suffix}", "source": "memfit tools/measure/trainer_gpu.sh; log "
              f"tests/validation/measured_h200_trainers/{case['id']}.json", "date": "2026-11", "grade": "A",
              "model": case.get("model", "Qwen/Qwen3-4B"), "gpu": "H200", "n_gpus": 1, "dp": 1, "tp": 1, "pp": 1, "vpp": 1, "cp": 1,
              "ep": 1, "sequence_parallel": 0, "sharding": sharding(case), "offload": "none",
              "method": "full", "lora_rank": "", "lora_targets": "", "base_quant": "none", "precision": precision(case),
              "optimizer": "adamw", "optimizer_in_backward": 0, "micro_batch": 1, "grad_accum": 1,
              "seq_len": case["seq_len"], "packed": 1, "activation_checkpointing": "full", "attention": "sdpa",
              "loss": "standard", "compile": 0, "framework": "trl" if trl else "hf_trainer",
              "measured_gib": measured_gib, "measured_kind": counter, "measured_scope": "per_gpu",
              "notes": "; ".join(notes)}
    return [values[c] for c in COLUMNS]


def main():
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(COLUMNS)
    if sys.argv[1] == "predict":
        for case in cases():
            for suffix, counter in COUNTERS:
                out.writerow(row(case, suffix, counter, 1, []))
        return
    measured = {r["case"]["id"]: r for r in json.load(open(sys.argv[2])) if r["status"] == "ok"}
    for case in cases():
        r = measured.get(case["id"])
        if r is None:
            continue
        values = {"max_allocated": r["run_peak"]["allocated"], "max_reserved": r["run_peak"]["reserved"],
                  "nvidia_smi": r["nvml"]["peak"]}
        extra = [f"value=peak over the run (setup and {len(r['steps'])} steps); NVML sampled every 5 ms",
                 f"cuda_context={r['nvml']['marks'].get('cuda_init', 0) / GIB:.3f} GiB",
                 f"optimizer_state_dtypes={'/'.join(r['optimizer_state_dtypes'])}",
                 f"env: gpu_name={r['gpu']}; torch={r['versions']['torch']}"]
        for suffix, counter in COUNTERS:
            out.writerow(row(case, suffix, counter, round(values[counter] / GIB, 3), extra))


if __name__ == "__main__":
    main()
