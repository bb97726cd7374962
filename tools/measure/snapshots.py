"""Writing a torch.cuda.memory._snapshot() under a size cap, without importing torch.

A snapshot is plain dicts and lists (torch/cuda/memory.py `_snapshot`): 'segments' (each with its
'blocks') and 'device_traces' (one list of alloc/free events per device), where blocks and events
carry 'frames', the Python stack of the allocation. The stacks are most of the bytes, so when the
gzipped pickle is over the cap the stacks go first, from small allocations before large ones, and
only then the small events themselves. `torch.cuda.memory._snapshot` output written this way loads
in https://pytorch.org/memory_viz after `gunzip`.
"""

from __future__ import annotations

import copy
import gzip
import os
import pickle

MIB = 2 ** 20
LARGE_BYTES = MIB   # an allocation of at least this size keeps its stack longest


def _blocks_and_events(snapshot: dict):
    for segment in snapshot.get("segments", []):
        yield from segment.get("blocks", [])
    for trace in snapshot.get("device_traces", []):
        yield from trace


def _drop_frames(snapshot: dict, below_bytes: float) -> None:
    for item in _blocks_and_events(snapshot):
        if item.get("size", 0) < below_bytes:
            item["frames"] = []


def _drop_small_events(snapshot: dict) -> None:
    snapshot["device_traces"] = [[e for e in trace if e.get("size", 0) >= LARGE_BYTES]
                                 for trace in snapshot.get("device_traces", [])]


# Each level is applied to a fresh copy, so a level's result does not depend on the one before.
LEVELS = [
    ("full", lambda s: None),
    ("stacks kept for allocations >= 1 MiB", lambda s: _drop_frames(s, LARGE_BYTES)),
    ("no stacks", lambda s: _drop_frames(s, float("inf"))),
    ("no stacks, trace events < 1 MiB dropped",
     lambda s: (_drop_frames(s, float("inf")), _drop_small_events(s))),
]


def _gzipped_pickle(snapshot: dict) -> bytes:
    return gzip.compress(pickle.dumps(snapshot, protocol=4), compresslevel=6)


def write_capped(snapshot: dict, path: str, cap_bytes: int) -> dict:
    """Write snapshot as a gzipped pickle of at most cap_bytes; returns what was kept.

    {'path', 'bytes', 'level', 'trace_events'} or, when even the last level is too large,
    {'path': None, 'level': 'too large', 'bytes': size of the smallest attempt}: nothing written.
    """
    data = b""
    for level, shrink in LEVELS:
        trimmed = copy.deepcopy(snapshot) if level != "full" else snapshot
        shrink(trimmed)
        data = _gzipped_pickle(trimmed)
        if len(data) <= cap_bytes:
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            events = sum(len(t) for t in trimmed.get("device_traces", []))
            return {"path": path, "bytes": len(data), "level": level, "trace_events": events}
    return {"path": None, "bytes": len(data), "level": "too large"}
