"""Peak memory of comparing one large output, whole against slice by slice: `python eval/compare_peak_memory.py [LOG2_ELEMENTS]`.

Each measurement runs in a fresh process on the CPU (peak resident memory from getrusage, less the process's
resident memory once the two float32 tensors exist): output_stats (kdebug's own checks), kernelbench_stats
(KernelBench's trials) and max_difference (the drift between two runs) on 2^N elements with a few wrong ones.
"Whole" sets debugger.compare.CHUNK_ELEMENTS past the tensor's size, which is how it compared before slicing.
"""
from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, resource, sys, torch
from debugger import compare
n, whole, what = int(sys.argv[1]), sys.argv[2] == "whole", sys.argv[3]
if whole:
    compare.CHUNK_ELEMENTS = 1 << 62
ref = torch.randn(1 << n)
cand = ref.clone()
cand[:: 1 << 20] += 1.0
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if what == "output_stats":
    compare.output_stats(0, cand, ref, torch.float32, 1e-4, 1e-4)
elif what == "kernelbench_stats":
    compare.kernelbench_stats(0, cand, ref, 1e-2)
else:
    compare.max_difference([cand], [ref])
print(json.dumps({"peak_extra_mib": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024}))
"""


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 27
    print(f"2^{n} float32 elements ({(4 << n) >> 20} MiB per tensor); extra peak resident memory, MiB")
    print("| comparison | whole | slice by slice |\n| --- | ---: | ---: |")
    for what in ("output_stats", "kernelbench_stats", "max_difference"):
        got = {}
        for mode in ("whole", "sliced"):
            out = subprocess.run([sys.executable, "-c", CHILD, str(n), mode, what], capture_output=True, text=True)
            got[mode] = json.loads(out.stdout.strip().splitlines()[-1])["peak_extra_mib"] if out.returncode == 0 \
                else f"failed: {out.stderr.strip().splitlines()[-1:]}"
        print(f"| {what} | {got['whole']:.0f} | {got['sliced']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
