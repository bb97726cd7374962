"""Runner `trl_ulysses`: TRL SFTTrainer's step under DeepSpeed's Ulysses sequence parallelism, one rank of a fake world.

What accelerate's `parallelism_config` (sp_backend deepspeed, sp_size > 1) sets up around the HF Trainer, without the
DeepSpeed engine (no ZeRO: the model states are the plain trainer's):
- `UlyssesSPAttentionHF.register_with_transformers` (deepspeed/runtime/sequence_parallel/ulysses_sp.py) replaces the
  model's attention function with the Ulysses wrapper: q, k, v all-to-all from [seq/sp, heads] to [seq, heads/sp]
  around the core attention (SDPA pinned to the H100 flash op) and back;
- the rank's batch is what `UlyssesSPDataLoaderAdapter.refill` hands it: input_ids, position_ids and the pre-shifted
  `shift_labels`, each its seq/sp slice, no attention_mask (packed rows);
- the Trainer's `compute_loss` takes `deepspeed_sp_compute_loss` (transformers integrations/deepspeed.py): the model's
  loss on the shard, all-gathered over the sp group and weighted by valid tokens; TRL's compute_loss adds its entropy
  and token-accuracy metrics on `outputs.logits`.
The world is `sp` ranks of torch's fake process group (collectives return at once); the tracker sees rank 0.
Needs `deepspeed` and `einops` importable (PYTHONPATH; not in the version sets' requirements yet).
"""
import types

import torch
import torch.distributed as dist

import hf_trainers


def ulysses_batch(tracker, case, vocab_size):
    """Rank 0's shard: tokens seq_len / sp of one packed row (UlyssesSPDataLoaderAdapter.refill)."""
    b, local = case["micro_batch"], case["seq_len"] // case["cp"]
    ids = torch.randint(0, vocab_size, (b, local))
    shift_labels = ids.clone()
    batch = {"input_ids": ids, "position_ids": torch.arange(local).expand(b, -1).clone(),
             "shift_labels": shift_labels, "labels": shift_labels}
    for t in batch.values():
        tracker.mark(t, "inputs")
    return batch


def run_trl_ulysses(case, config_path, steps=None):
    from torch.testing._internal.distributed.fake_pg import FakeStore

    sp = case["cp"]
    world = sp * case.get("dp", 1)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        import deepspeed.comm
        from deepspeed.runtime.sequence_parallel.ulysses_sp import UlyssesSPAttentionHF
        from deepspeed.utils import groups
        deepspeed.comm.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)

        def prepare(trainer, model):
            mpu = UlyssesSPAttentionHF.register_with_transformers(
                model_name_or_path=model, core_attn_implementation=case["attention"], sequence_parallel_size=sp,
                micro_batch_size=case["micro_batch"], seq_length_is_variable=True)
            groups.mpu = mpu  # the engine's deepspeed.initialize(mpu=...) does this
            trainer.accelerator.state.parallelism_config = types.SimpleNamespace(
                sp_backend="deepspeed", sp_enabled=True, sp_size=sp, cp_enabled=False, cp_size=1,
                non_data_parallel_size=sp)

        return hf_trainers.run_trainer(case, config_path, hf_trainers.make_sft_trainer, steps,
                                       make_batch=ulysses_batch, prepare=prepare)
    finally:
        dist.destroy_process_group()
