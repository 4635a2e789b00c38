#!/usr/bin/env bash
# Reproduce the GPU benchmark: the whole case set at GPU-sized shapes on a CUDA GPU (an H200 for
# eval/RESULTS.md), real Triton compilation, and the repaired kernels' speed against fixed.py and
# against the PyTorch reference.
#
#   OUT=/tmp/gpu-run eval/bench_gpu.sh            # PYTHON=... to pick the interpreter
#
# Assumes torch and triton are installed and the repo is installed (pip install -e . --no-deps plus
# its pure-Python dependencies). Writes under $OUT:
#   device.txt                        GPU, driver, torch and triton versions
#   bench/bench.{json,md,png}         kdebug bench --device cuda --scale gpu (repairs, verification, timing)
#   bench/repairs/                    the repaired sources and their diffs
#   fixed/fixed_vs_reference.{json,md}  fixed.py vs the reference for every case (no repair involved)
#   bench.log, fixed.log              progress
set -euo pipefail

cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-gpu-out}"
PY="${PYTHON:-python}"
mkdir -p "$OUT/bench" "$OUT/fixed"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__)"
  git rev-parse HEAD 2>/dev/null || true
} > "$OUT/device.txt"
cat "$OUT/device.txt"

# 1. Repair every case at GPU sizes with the kb backend (no model), verify each repair
#    independently, and time repaired / fixed.py / reference (median of do_bench, peak memory,
#    roofline against the measured copy bandwidth and matmul throughput).
"$PY" -m debugger.cli bench eval/cases --backend kb --device cuda --scale gpu --json --out "$OUT/bench" \
  > "$OUT/bench/bench.stdout.json" 2> "$OUT/bench.log" || { tail -20 "$OUT/bench.log"; exit 1; }

# 2. fixed.py against the PyTorch reference for every case, at the same sizes.
"$PY" -m debugger.bench.fixed_timing eval/cases --scale gpu --out "$OUT/fixed" \
  > /dev/null 2> "$OUT/fixed.log" || { tail -20 "$OUT/fixed.log"; exit 1; }

cat "$OUT/bench/bench.md"
cat "$OUT/fixed/fixed_vs_reference.md"
