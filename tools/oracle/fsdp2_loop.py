"""Runner `fsdp2_loop`: the plain loop of transformers_loop.py with the model sharded by FSDP2 over a fake process group.

`fully_shard` on every decoder layer, then on the root (the embedding, final norm and output layer), as torchtitan's
`apply_fsdp` and accelerate's FSDP2 TRANSFORMER_BASED_WRAP do; the world is `case["dp"]` ranks of a fake process group
(torch.testing._internal.distributed.fake_pg: collectives return without moving data) on the cpu mesh, so the tracker
sees rank 0's shards, all-gather and reduce-scatter buffers. Pure bf16: no MixedPrecisionPolicy, gradients reduced in
bf16. With `case["cp"]` > 1 the world is dp x cp: FSDP2 shards over the flattened (dp, cp) mesh and each step runs
under torch's `context_parallel` on the cp dimension (ring attention, load-balanced causal sharding of the ids and
labels), as accelerate's `parallelism_config` with `cp_size` does. Frees happen at Python refcount zero, so FSDP2's stream-ordered buffer lifetimes on a GPU are not seen
(docs/oracle.md "What the oracle cannot see").
"""
import torch
import torch.distributed as dist

import transformers_loop


def quiet_sharding_propagation():
    """DTensor's sharding propagation builds global-shape tensors to infer output metadata; under the tracker they
    would count as allocations (pytorch/pytorch#140874; research oracle study P6): run it outside the modes."""
    from torch.distributed.tensor._sharding_prop import ShardingPropagator
    original = ShardingPropagator._propagate_tensor_meta_non_cached
    if getattr(original, "_oracle_quiet", False):
        return

    def quiet(self, op_schema):
        with torch.utils._python_dispatch._disable_current_modes():
            return original(self, op_schema)

    quiet._oracle_quiet = True
    ShardingPropagator._propagate_tensor_meta_non_cached = quiet


def run_fsdp2(case, config_path, steps=None):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    quiet_sharding_propagation()
    dp, cp = case["dp"], case.get("cp", 1)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=dp * cp)
    try:
        mesh = init_device_mesh("cpu", (dp, cp), mesh_dim_names=("dp", "cp"))
        shard_mesh = mesh[("dp", "cp")]._flatten("dp_cp") if cp > 1 else mesh["dp"]

        def shard(model):
            for layer in transformers_loop.decoder_layers(model):
                fully_shard(layer, mesh=shard_mesh)
            fully_shard(model, mesh=shard_mesh)

        step_context = None
        if cp > 1:
            from torch.distributed.tensor.experimental import context_parallel

            def step_context(buffers):
                return context_parallel(mesh["cp"], buffers=buffers, buffer_seq_dims=[1] * len(buffers))

        return transformers_loop.run_case(case, config_path, steps, shard=shard, step_context=step_context)
    finally:
        dist.destroy_process_group()
