#!/usr/bin/env python3
"""Where the first step's reserved memory above its allocated peak comes from: a trainer case's allocations and frees
(the oracle's, on fake tensors) replayed through caching_allocator.py, each large request labelled with its op.

    tools/oracle/.venvs/y2026_05/bin/python tools/oracle/loss_fragmentation.py CASE_JSON [--layers N] [--min-mib M]

CASE_JSON is one oracle case (tools/oracle/cases.py's keys, `framework` trl or hf_trainer). Prints, per step, the
peak allocated and the reserved bytes at the step's end, and every request of at least --min-mib MiB (default 512):
its op, module, phase, whether it mapped a new segment or split a cached block, and the segment it landed in.
`--layers` runs the model at fewer decoder layers (a copy of the config), to show a mechanism quickly.
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from caching_allocator import CachingAllocator  # noqa: E402

GIB = float(1 << 30)


def run_case(case, layers=None):
    """Runs the case with every allocation labelled: returns [(kind, serial, bytes, label)]."""
    import hf_trainers
    import tracker as tracker_module
    labelled = []
    allocate = tracker_module.LiveBytes._allocate

    def labelled_allocate(self, storage, nbytes, category, op):
        block = allocate(self, storage, nbytes, category, op)
        if self.events is not None:
            labelled.append((len(self.events) - 1, f"{self.phase}{self.step} {op} {self.module}"))
        return block

    tracker_module.LiveBytes._allocate = labelled_allocate
    config_path = case["config_path"]
    with tempfile.TemporaryDirectory() as tmp:
        if layers:
            with open(config_path) as f:
                raw = json.load(f)
            raw["num_hidden_layers"] = layers
            config_path = os.path.join(tmp, "config.json")
            with open(config_path, "w") as f:
                json.dump(raw, f)
        runner = hf_trainers.run_trl if case["framework"] == "trl" else hf_trainers.run_hf_trainer
        tr = runner(dict(case, record_allocations=True), config_path)
    labels = dict(labelled)
    return [(e[0], e[1], e[2] if e[0] == "alloc" else None, labels.get(i, "")) for i, e in enumerate(tr.events)]


def replay(events, min_bytes):
    """Feeds the events to the allocator model; prints large requests and per-step reserved; returns per-step rows."""
    model = CachingAllocator()
    where, label_of, steps, seen_head = {}, {}, [], {}
    current = None
    for kind, serial, nbytes, label in events:
        if kind == "alloc":
            step = label.split(" ")[0]
            step_no = "".join(ch for ch in step if ch.isdigit())
            if step_no != current and step.startswith("forward"):
                if current is not None:
                    steps.append((current, model.max_allocated_bytes, model.reserved_bytes))
                model.max_allocated_bytes = model.allocated_bytes
                current = step_no
            if nbytes >= min_bytes and step.startswith("forward") and not seen_head.get(step):
                seen_head[step] = True  # the first large request of a forward: the output layer's logits
                print(f"{step} before its first large request: allocated {model.allocated_bytes / GIB:.3f} GiB, its "
                      f"peak so far {model.max_allocated_bytes / GIB:.3f}, reserved {model.reserved_bytes / GIB:.3f}")
            segments_before = len(model.segments)
            cached = model._best_fit(-(-nbytes // 512) * 512, nbytes <= (1 << 20), 0)
            host = (cached.segment.addr, cached.size) if cached is not None else None
            addr = model.alloc(nbytes)
            where[serial] = addr
            seg = model.blocks[addr].segment
            label_of[serial] = label
            if nbytes >= min_bytes:
                how = (f"new segment {seg.size / GIB:.3f}" if len(model.segments) > segments_before
                       else f"split cached {host[1] / GIB:.3f} of segment {seg.size / GIB:.3f} @{seg.addr >> 21 & 0xffff}")
                print(f"  alloc {nbytes / GIB:7.3f} GiB  {label:60s} {how}  reserved {model.reserved_bytes / GIB:.2f}"
                      f"  allocated {model.allocated_bytes / GIB:.2f}")
        elif serial in where:
            b = model.blocks[where[serial]]
            if b.size >= min_bytes:
                print(f"  free  {b.size / GIB:7.3f} GiB  {label_of[serial]:60s} (seg @{b.segment.addr >> 21 & 0xffff})")
            model.free(where.pop(serial))
    steps.append((current, model.max_allocated_bytes, model.reserved_bytes))
    for step, peak, reserved in steps:
        print(f"step {int(step) + 1}: allocated peak {peak / GIB:.3f} GiB, reserved at its end {reserved / GIB:.3f} GiB")
    large = sorted((s.size for s in model.segments if s.size >= min_bytes), reverse=True)
    print("segments >= min:", [round(x / GIB, 3) for x in large])
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--min-mib", type=float, default=512)
    args = ap.parse_args()
    case = json.loads(args.case)
    events = run_case(case, args.layers)
    replay(events, int(args.min_mib * (1 << 20)))


if __name__ == "__main__":
    main()
