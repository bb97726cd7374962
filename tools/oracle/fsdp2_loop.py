"""Runner `fsdp2_loop`: the plain loop of transformers_loop.py with the model sharded by FSDP2 over a fake process group.

`fully_shard` on every decoder layer, then on the root (the embedding, final norm and output layer), as torchtitan's
`apply_fsdp` and accelerate's FSDP2 TRANSFORMER_BASED_WRAP do; the world is `case["dp"]` ranks of a fake process group
(torch.testing._internal.distributed.fake_pg: collectives return without moving data) on the cpu mesh, so the tracker
sees rank 0's shards, all-gather and reduce-scatter buffers. Pure bf16: no MixedPrecisionPolicy, gradients reduced in
bf16. Frees happen at Python refcount zero, so FSDP2's stream-ordered buffer lifetimes on a GPU are not seen
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
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=case["dp"])
    try:
        mesh = init_device_mesh("cpu", (case["dp"],))

        def shard(model):
            for layer in transformers_loop.decoder_layers(model):
                fully_shard(layer, mesh=mesh)
            fully_shard(model, mesh=mesh)

        return transformers_loop.run_case(case, config_path, steps, shard=shard)
    finally:
        dist.destroy_process_group()
