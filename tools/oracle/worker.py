"""Runs oracle cases inside one version set's virtual environment: JSON cases on stdin, one JSON record per line out.

Started by run.py as `<venv>/bin/python tools/oracle/worker.py`; importing torch and transformers once per batch.
"""
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def versions():
    import importlib.metadata as md
    out = {}
    for name in ("torch", "transformers", "peft", "accelerate", "bitsandbytes", "trl", "torchtune", "torchao", "litgpt",
                 "lightning"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def record(case, tracker, seconds):
    out = {
        "id": case["id"], "ok": True, "peak_bytes": tracker.peak_bytes, "where": tracker.peak_where,
        "breakdown_bytes": tracker.breakdown(), "largest": tracker.largest_at_peak(5), "ops": tracker.ops,
        "seconds": round(seconds, 2), "versions": versions(), "sdpa_calls": getattr(tracker, "sdpa_calls", {}),
        **({"trainer": tracker.trainer_settings} if hasattr(tracker, "trainer_settings") else {}),
    }
    if tracker.events is not None:
        from caching_allocator import replay_events
        for name, expandable in (("reserved_bytes", False), ("reserved_expandable_bytes", True)):
            out[name] = replay_events(tracker.events, expandable).max_reserved_bytes
    return out


def lazy(module, name):
    """A runner imported on first use (trl is not in every version set)."""
    def run(*args):
        import importlib
        return getattr(importlib.import_module(module), name)(*args)
    return run


def main():
    import transformers_loop
    runners = {"transformers_loop": transformers_loop.run_case, "hf_trainer": lazy("hf_trainers", "run_hf_trainer"),
               "trl": lazy("hf_trainers", "run_trl"), "fsdp2_loop": lazy("fsdp2_loop", "run_fsdp2"),
               "torchtune": lazy("torchtune_recipes", "run_case"),
               "litgpt": lazy("litgpt_recipes", "run_case"), "trl_ulysses": lazy("ulysses_sp", "run_trl_ulysses")}
    for line in sys.stdin:
        case = json.loads(line)
        start = time.time()
        try:
            tracker = runners[case["framework"]](case, case["config_path"])
            out = record(case, tracker, time.time() - start)
        except Exception as e:  # a case that cannot run is reported, not fatal to the batch
            out = {"id": case["id"], "ok": False, "error": f"{type(e).__name__}: {e}"[:600],
                   "trace": traceback.format_exc()[-1500:], "versions": versions()}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
