"""The large allocations of a memory history (at least `--min-mib`), in order, with their Python frames: a small
summary of a snapshot too large to carry back.

    python3 tools/measure/snapshot_large.py SNAPSHOT.pickle.gz OUT.json [--min-mib 256]
"""
import argparse
import gzip
import json
import pickle


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("snapshot")
    parser.add_argument("out")
    parser.add_argument("--min-mib", type=float, default=256)
    args = parser.parse_args()
    snapshot = pickle.load(gzip.open(args.snapshot))
    floor = args.min_mib * 2 ** 20
    events = []
    for index, e in enumerate(snapshot["device_traces"][0]):
        if e.get("size", 0) < floor and not e["action"].startswith("segment"):
            continue
        frames = [f"{f['filename'].split('site-packages/')[-1]}:{f['line']}:{f['name']}" for f in e.get("frames", [])
                  if "torch/nn/modules/module.py" not in f["filename"]][:14]
        events.append({"index": index, "action": e["action"], "bytes": e.get("size", 0), "addr": e.get("addr"),
                       "stream": e.get("stream"), "frames": frames})
    segments = [{"address": s["address"], "bytes": s["total_size"], "stream": s.get("stream"),
                 "blocks": [(b["size"], b["state"]) for b in s["blocks"] if b["size"] >= floor]}
                for s in snapshot["segments"]]
    json.dump({"events": events, "segments": segments}, open(args.out, "w"), indent=0)


if __name__ == "__main__":
    main()
