#!/usr/bin/env bash
# The GPU benchmark within one 10-minute command: the case set split over parallel `kdebug bench`
# processes on one GPU (each repairs its cases at the case.toml [gpu] sizes with the kb backend, verifies
# them on fresh inputs and through the integrity gate, and times repaired / fixed.py / reference), then
# merged into one table.
#
#   OUT=/tmp/gpu [CASES_LIST="a b c"] eval/gpu_parallel.sh [GROUPS] [PER_PROCESS_TIMEOUT_S]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-gpu-out}"
GROUPS_N="${1:-15}"
LIMIT_S="${2:-420}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/device.txt" 2>&1
if [ -n "${CASES_LIST:-}" ]; then read -r -a CASES <<< "$CASES_LIST"; else mapfile -t CASES < <(ls -d eval/cases/*/ | xargs -n1 basename); fi
for g in $(seq 0 $((GROUPS_N - 1))); do
  names=()
  for i in "${!CASES[@]}"; do [ $((i % GROUPS_N)) -eq "$g" ] && names+=("${CASES[$i]}"); done
  [ ${#names[@]} -eq 0 ] && continue
  ( KDEBUG_DATA_DIR="$OUT/data$g" timeout "$LIMIT_S" "$PY" -m debugger.cli bench eval/cases --backend kb --device cuda \
      --scale gpu --no-retrieval --no-write-back --max-iters 8 --json --out "$OUT/g$g" --cases "${names[@]}" \
      > "$OUT/g$g.json" 2> "$OUT/g$g.log"; echo "group $g rc=$?" ) &
done
wait
"$PY" eval/merge_bench.py "$OUT"/g*.json > "$OUT/merged.md"
cat "$OUT/merged.md"
