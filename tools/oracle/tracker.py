"""Live-bytes tracker: every storage an op allocates, while it lives, rounded as the CUDA caching allocator rounds.

A TorchDispatchMode sees each op's outputs; a new storage becomes a Block (bytes rounded up to 512, category, the op,
module and phase that made it) and a weakref on the storage removes it when it is freed. The total after each op is
the allocated counter; at each new maximum the live Blocks are remembered (by reference, so a Block that is later
recognised as a gradient or an optimizer state is counted as one at the peak too).
"""
import weakref
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode, is_traceable_wrapper_subclass
from torch.utils._pytree import tree_flatten

# CUDA caching allocator: every block is a multiple of kMinBlockSize = 512 bytes
# (c10/cuda/CUDACachingAllocator.cpp, round_size); a 0-byte request allocates nothing.
CUDA_BLOCK_ROUND_BYTES = 512

# A storage keeps the highest-priority category it is ever given.
CATEGORIES = ("weights", "gradients", "optimizer", "inputs", "logits_loss", "activations", "temporaries")
_PRIORITY = {name: len(CATEGORIES) - i for i, name in enumerate(CATEGORIES)}


def rounded_bytes(nbytes, round_bytes=CUDA_BLOCK_ROUND_BYTES):
    """Bytes the caching allocator hands out for a request of `nbytes`."""
    if nbytes <= 0:
        return 0
    return -(-nbytes // round_bytes) * round_bytes


def local_tensor(t):
    """A DTensor's shard on this rank (FSDP2, tensor parallelism): the wrapper's storage has the global shape, the
    device holds only `_local_tensor` (torch/distributed/tensor/_api.py). Anything else as it is."""
    local = getattr(t, "_local_tensor", None)
    return local if isinstance(local, torch.Tensor) else t


class Block:
    __slots__ = ("nbytes", "category", "op", "module", "phase", "serial", "__weakref__")

    def __init__(self, nbytes, category, op, module, phase):
        self.nbytes, self.category, self.op, self.module, self.phase = nbytes, category, op, module, phase

    def mark(self, category):
        if _PRIORITY[category] > _PRIORITY[self.category]:
            self.category = category


class LiveBytes(TorchDispatchMode):
    """Tracks allocated bytes per op. `phase`, `region` and `module` are set by the runner's hooks."""

    def __init__(self, round_bytes=CUDA_BLOCK_ROUND_BYTES):
        super().__init__()
        self.round_bytes = round_bytes
        self.live = {}  # StorageImpl address -> Block
        self.total_bytes = 0
        self.peak_bytes = 0
        self.peak_blocks = []
        self.peak_where = {}
        self.phase = "setup"
        self.step = 0
        self.region = "body"  # "head" between the output layer's forward and its input's gradient
        self.module = ""
        self.ops = 0
        # Non-fused torch optimizers keep each parameter's step count on the host (torch/optim/adam.py): scalars
        # made during the optimizer phase are not device memory.
        self.optimizer_scalars_on_host = True
        # A list to record every allocation and free in order, [("alloc", serial, bytes) | ("free", serial)],
        # for a replay through caching_allocator.py (reserved memory); None: not recorded.
        self.events = None
        self.serial = 0

    # -- storages -------------------------------------------------------------------------------------------------
    def block_of(self, tensor):
        return self.live.get(local_tensor(tensor).untyped_storage()._cdata)

    def track_model(self, model):
        """Counts the model's parameters and buffers as weights and each trainable parameter's gradient from the
        moment autograd stores it; returns the trainable parameters."""
        for p in model.parameters():
            self.track(p, "weights")
        for b in model.buffers():
            self.track(b, "weights")
        trainable = [p for p in model.parameters() if p.requires_grad]
        for p in trainable:
            p.register_post_accumulate_grad_hook(lambda q: self.mark(q.grad, "gradients"))
        return trainable

    def track(self, tensor, category, op="external"):
        """Registers `tensor`'s storage (if new) and gives it `category`; returns its Block."""
        storage = local_tensor(tensor).untyped_storage()
        block = self.live.get(storage._cdata)
        if block is None:
            block = self._allocate(storage, storage.nbytes(), category, op)
        else:
            block.mark(category)
        return block

    def _allocate(self, storage, nbytes, category, op):
        key = storage._cdata
        block = Block(rounded_bytes(nbytes, self.round_bytes), category, op, self.module, f"{self.phase}{self.step}")
        self.live[key] = block
        self.total_bytes += block.nbytes
        self.serial += 1
        block.serial = self.serial
        if self.events is not None:
            self.events.append(("alloc", block.serial, block.nbytes))
        weakref.finalize(storage, self._free, key, block)
        return block

    def resized(self, storage, nbytes, op="resize_"):
        """FSDP frees a gathered parameter by resizing its storage to 0 and gathers it again into the same storage
        (torch/distributed/fsdp/_fully_shard/_fsdp_param.py free_storage / alloc_storage): the old block is freed
        and, for a size above 0, a new one allocated (a gathered parameter: weights)."""
        old = self.live.get(storage._cdata)
        if old is not None:
            self._free(storage._cdata, old)
        if nbytes > 0:
            self._allocate(storage, nbytes, "weights", op)
            self._check_peak(op)

    def __enter__(self):
        tracker, resize = self, torch.UntypedStorage.resize_

        def tracked_resize(storage, nbytes):
            out = resize(storage, nbytes)
            tracker.resized(storage, nbytes)
            return out

        self._untracked_resize = resize
        torch.UntypedStorage.resize_ = tracked_resize
        return super().__enter__()

    def __exit__(self, *exc):
        torch.UntypedStorage.resize_ = self._untracked_resize
        return super().__exit__(*exc)

    def mark(self, tensor, category):
        if is_traceable_wrapper_subclass(tensor):  # e.g. torchao's NF4Tensor: its inner tensors hold the bytes
            names, _ = tensor.__tensor_flatten__()
            for name in names:
                self.mark(getattr(tensor, name), category)
        elif isinstance(tensor, torch.Tensor):
            self.track(tensor, category)

    def _free(self, key, block):
        if self.live.get(key) is block:
            del self.live[key]
            self.total_bytes -= block.nbytes
            if self.events is not None:
                self.events.append(("free", block.serial))

    # -- dispatch -------------------------------------------------------------------------------------------------
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        fresh = "logits_loss" if self.region == "head" and self.phase in ("forward", "backward") else "temporaries"
        flat, _ = tree_flatten(out)
        for t in map(local_tensor, flat):
            if is_traceable_wrapper_subclass(t):
                continue  # a wrapper's own storage is empty; the ops that made its inner tensors counted them
            if isinstance(t, torch.Tensor) and t.untyped_storage()._cdata not in self.live:
                if t.dim() == 0 and self.phase == "optimizer" and self.optimizer_scalars_on_host:
                    continue
                self.track(t, fresh, op=func.__name__)
        self._check_peak(func.__name__)
        return out

    def _check_peak(self, op):
        if self.total_bytes > self.peak_bytes:
            self.peak_bytes = self.total_bytes
            self.peak_blocks = list(self.live.values())
            node = torch._C._current_autograd_node()
            self.peak_where = {"phase": self.phase, "step": self.step, "op": op, "module": self.module,
                               "autograd_node": node.name() if node is not None else "", "op_index": self.ops}

    # -- results --------------------------------------------------------------------------------------------------
    def breakdown(self, blocks=None):
        """Bytes by category over `blocks` (default: the live ones at the peak)."""
        by = Counter({c: 0 for c in CATEGORIES})
        for b in self.peak_blocks if blocks is None else blocks:
            by[b.category] += b.nbytes
        return dict(by)

    def largest_at_peak(self, n=8):
        top = sorted(self.peak_blocks, key=lambda b: -b.nbytes)[:n]
        return [{"bytes": b.nbytes, "category": b.category, "op": b.op, "module": b.module, "phase": b.phase}
                for b in top]


def saved_tensor_marker(tracker):
    """saved_tensors_hooks that mark every tensor autograd saves as an activation (kept by reference)."""

    def pack(t):
        tracker.mark(t, "activations")
        return t

    return torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
