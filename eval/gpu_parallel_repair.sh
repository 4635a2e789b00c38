#!/usr/bin/env bash
# Repair several cases at GPU sizes in parallel (one process per case) and time the repaired kernels
# against fixed.py and the PyTorch reference. One JSON line per case in $OUT/gpu_repairs.jsonl.
#
#   OUT=/tmp/gpu eval/gpu_parallel_repair.sh CASE... 
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-gpu-out}"
LIMIT_S="${LIMIT_S:-150}"
mkdir -p "$OUT"
for c in "$@"; do
  ( KDEBUG_DATA_DIR="$OUT/data-$c" timeout "$LIMIT_S" "${PYTHON:-python3}" eval/gpu_repair_timing.py "eval/cases/$c" \
      > "$OUT/$c.json" 2> "$OUT/$c.log" || echo "{\"case\": \"$c\", \"status\": \"no result (rc=$?)\"}" > "$OUT/$c.json" ) &
done
wait
cat "$OUT"/*.json > "$OUT/gpu_repairs.jsonl"
cat "$OUT/gpu_repairs.jsonl"
