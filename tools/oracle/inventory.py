"""What is live at one case's peak, grouped by category, op, module (layer numbers folded) and phase: the view for
root-causing a disagreement. Run in a version set's environment:
    tools/oracle/.venvs/<set>/bin/python tools/oracle/inventory.py OR-<case id>
"""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
import transformers_loop  # noqa: E402


def main(case_id):
    case = next(c for c in cases.all_cases() if c["id"] == case_id)
    t = transformers_loop.run_case(case, cases.config_path(case["model"]))
    groups = collections.Counter()
    for b in t.peak_blocks:
        groups[(b.category, b.op, re.sub(r"\.\d+\.", ".N.", b.module), b.phase)] += b.nbytes
    print(f"peak {t.peak_bytes / 2**20:.2f} MiB at {t.peak_where}; sdpa {t.sdpa_calls}")
    for (category, op, module, phase), n in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"{n / 2**20:10.2f} MiB  {category:12} {op:40} {module} ({phase})")


if __name__ == "__main__":
    main(sys.argv[1])
