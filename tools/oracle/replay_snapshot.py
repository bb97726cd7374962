#!/usr/bin/env python3
"""Replays a torch.cuda.memory._snapshot() trace through caching_allocator.py (standard library only).

    python3 tools/oracle/replay_snapshot.py tests/validation/measured_h200/GF-04.snapshot.pickle.gz [...]

A snapshot recorded with record_history holds every alloc, free and segment_alloc since recording began, and
the segments at its end. The replay rebuilds the state when recording began (segments mapped before it, and the
blocks freed before being allocated in the trace or still allocated at the end without an event), then feeds the
trace's requests to the model and reports its peak reserved bytes, how many requests landed at another address
than the GPU's allocator chose and how many segments it mapped; the measured JSON beside the snapshot gives
the GPU's max_reserved. Pass --expandable to replay the same requests with expandable segments.
"""
import argparse
import gzip
import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from caching_allocator import SMALL_SIZE, CachingAllocator, round_size  # noqa: E402


def load(path):
    with gzip.open(path) if path.endswith(".gz") else open(path, "rb") as f:
        return pickle.load(f)


def initial_blocks(snapshot, trace):
    """Blocks allocated when recording began: [(addr, size)]."""
    live, first_free = set(), {}
    touched = set()
    for e in trace:
        a = e["addr"]
        if e["action"] == "alloc":
            live.add(a)
            touched.add(a)
        elif e["action"] == "free_completed":
            if a not in live and a not in first_free:
                first_free[a] = round_size(e["size"])
            live.discard(a)
            touched.add(a)
    at_start = dict(first_free)
    for seg in snapshot["segments"]:
        for b in seg_blocks(seg):
            if b["state"] == "active_allocated" and b["address"] not in touched:
                at_start[b["address"]] = b["size"]
    return sorted(at_start.items())


def seg_blocks(seg):
    return seg["blocks"]


def replay(snapshot, expandable=False):
    trace = snapshot["device_traces"][0]
    traced_segments = {e["addr"] for e in trace if e["action"] in ("segment_alloc", "segment_map")}
    pending = []  # segment addresses the GPU mapped, in order
    result = {"mismatched_addresses": 0, "segments_gpu": len(traced_segments), "segments_model": 0,
              "segments_unmatched": 0}

    def segment_address(size):
        result["segments_model"] += 1
        if pending and not expandable:
            return pending.pop(0)
        result["segments_unmatched"] += 1
        segment_address.fresh += size + (2 << 20)
        return segment_address.fresh
    segment_address.fresh = 1 << 60

    model = CachingAllocator(expandable_segments=expandable, segment_address=segment_address)
    for seg in snapshot["segments"]:
        if seg["address"] not in traced_segments:
            model.add_segment(seg["address"], seg["total_size"], seg["segment_type"] == "small", seg["stream"])
    for addr, size in initial_blocks(snapshot, trace):
        model.allocate_at(addr, size)
    model.max_reserved_bytes = model.reserved_bytes
    model.max_allocated_bytes = model.allocated_bytes
    result["reserved_at_start"] = model.reserved_bytes
    to_model = {}  # the GPU's address -> the model's
    for e in trace:
        act = e["action"]
        if act in ("segment_alloc", "segment_map"):
            pending.append(e["addr"])
        elif act == "alloc":
            got = model.alloc(e["size"], e["stream"])
            if got != e["addr"]:
                result["mismatched_addresses"] += 1
            to_model[e["addr"]] = got
        elif act == "free_completed":
            model.free(to_model.pop(e["addr"], e["addr"]))
    result["max_reserved"] = model.max_reserved_bytes
    result["max_allocated"] = model.max_allocated_bytes
    result["requests"] = sum(1 for e in trace if e["action"] == "alloc")
    return result


def measured_max_reserved(snapshot_path):
    """max_reserved of the last step the snapshot covers, from the measurement JSON beside it."""
    case = os.path.basename(snapshot_path).split(".")[0]
    with open(os.path.join(os.path.dirname(snapshot_path), case + ".json")) as f:
        record = json.load(f)
    last = record.get("memory_history", {}).get("last_step") or record["steps"][0]["step"]
    return case, next(s["max_reserved"] for s in record["steps"] if s["step"] == last), last


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshots", nargs="+")
    ap.add_argument("--expandable", action="store_true")
    args = ap.parse_args()
    gib = float(1 << 30)
    print("case  steps  requests  measured_GiB  model_GiB  diff_MiB  moved  segments_gpu/model  (small<=%d B)"
          % SMALL_SIZE)
    for path in args.snapshots:
        case, measured, last = measured_max_reserved(path)
        r = replay(load(path), args.expandable)
        print(f"{case}  1-{last}  {r['requests']}  {measured / gib:.3f}  {r['max_reserved'] / gib:.3f}  "
              f"{(r['max_reserved'] - measured) / 2**20:+.0f}  {r['mismatched_addresses']}  "
              f"{r['segments_gpu']}/{r['segments_model']}")


if __name__ == "__main__":
    main()
