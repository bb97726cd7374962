"""Writing a torch.cuda.memory._snapshot() under a size cap, without importing torch.

A snapshot is plain dicts and lists (torch/cuda/memory.py `_snapshot`): 'segments' (each with its
'blocks') and 'device_traces' (one list of alloc/free events per device), where blocks and events
carry 'frames', the Python stack of the allocation. The stacks are most of the bytes, so when the
gzipped pickle is over the cap the stacks go first, from small allocations before large ones, and
only then the small events themselves. `torch.cuda.memory._snapshot` output written this way loads
in https://pytorch.org/memory_viz after `gunzip`.
"""

from __future__ import annotations

import gzip
import os
import pickle

MIB = 2 ** 20
LARGE_BYTES = MIB   # an allocation of at least this size keeps its stack longest


def _trimmed(snapshot: dict, keep_frames, keep_event) -> dict:
    """A new snapshot (the input untouched, unchanged parts shared) with the stacks of items that
    fail keep_frames(size) emptied and the trace events that fail keep_event(size) left out."""
    def item(d: dict) -> dict:
        return d if keep_frames(d.get("size", 0)) else {**d, "frames": []}
    segments = [{**seg, "blocks": [item(b) for b in seg.get("blocks", [])]}
                for seg in snapshot.get("segments", [])]
    traces = [[item(e) for e in trace if keep_event(e.get("size", 0))]
              for trace in snapshot.get("device_traces", [])]
    return {**snapshot, "segments": segments, "device_traces": traces}


def _everything(size: int) -> bool:
    return True


def _nothing(size: int) -> bool:
    return False


def _large(size: int) -> bool:
    return size >= LARGE_BYTES


# From the whole snapshot to the least that still shows where the large allocations happened.
LEVELS = [
    ("full", lambda s: s),
    ("stacks kept for allocations >= 1 MiB", lambda s: _trimmed(s, _large, _everything)),
    ("no stacks", lambda s: _trimmed(s, _nothing, _everything)),
    ("no stacks, trace events < 1 MiB dropped", lambda s: _trimmed(s, _nothing, _large)),
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
        trimmed = shrink(snapshot)
        data = _gzipped_pickle(trimmed)
        if len(data) <= cap_bytes:
            tmp = path + ".tmp"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
            events = sum(len(t) for t in trimmed.get("device_traces", []))
            return {"path": path, "bytes": len(data), "level": level, "trace_events": events}
    return {"path": None, "bytes": len(data), "level": "too large"}
