#!/usr/bin/env bash
# The GPU benchmark in two device commands of at most 10 minutes each.
#
#   OUT=/tmp/gpu [CASES_LIST="a b c"] [JOBS=16] [CASE_LIMIT_S=300] eval/gpu_parallel.sh repair
#       Repair every case at its case.toml [gpu] sizes with the kb backend (no retrieval, no write-back),
#       one `kdebug bench --no-timing` process per case, JOBS at a time on the one GPU; each repair is
#       verified on fresh inputs and through the integrity gate. A case that runs out of its time limit
#       is reported as such; the others keep their results. Writes OUT/merged.md and OUT/repairs.tar.gz
#       (per-case JSON and the repaired sources), and OUT/trace_summary.txt: where each case's time went
#       (KDEBUG_TRACE; eval/trace_summary.py).
#
#   OUT=/tmp/gpu REPAIRS=DIR [CASES_LIST="a b c"] eval/gpu_parallel.sh time
#       Time the reference, fixed.py and each repaired kernel (DIR/NAME.py, from repairs.tar.gz), one
#       case at a time so that no two measurements share the GPU (after a parallel compile warm-up).
#       Writes OUT/fixed_vs_reference.{json,md}.
#
#   OUT=/tmp/gpu CASES_LIST="a b c" eval/gpu_parallel.sh all
#       Both, in one command: the repairs in parallel, then the timing of what they repaired.
#
# Wheels for a bare GPU machine: eval/gpu_wheels.sh (carry .whl).
#
# Each case's repair compiles its kernels many times over (every check, experiment and hidden shape),
# so on one 16-core host about 10 cases in parallel finish in 3-5 minutes; the 60-case set needs
# several commands (CASES_LIST).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/bench-gpu-out}"
PY="${PYTHON:-python3}"
WORK="${WORK:-/tmp/kdebug-gpu-work}"  # per-case outputs and caches, outside OUT (only a few files come back)
export OUT WORK
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/device.txt" 2>&1

case "${1:-}" in
repair)
  # Fail in seconds, not per case, when the machine lacks a package the repair path imports.
  "$PY" -c "import graphs.repair, debugger.repair.run, debugger.bench.runner, debugger.integrity.gate, debugger.diagnose, langgraph.checkpoint.sqlite, langsmith, langgraph_sdk" \
    || { echo "missing packages: see the import error above" >&2; exit 3; }
  if [ -n "${CASES_LIST:-}" ]; then read -r -a CASES <<< "$CASES_LIST"
  else mapfile -t CASES < <(ls -d eval/cases/*/ | xargs -n1 basename); fi
  work="$WORK"; mkdir -p "$work"
  # A warm machine keeps WORK between commands: drop the previous batch's results (not its caches).
  rm -f "$work"/*.json "$work"/*.log "$work"/*.trace.jsonl
  find "$work" -mindepth 1 -maxdepth 1 -type d ! -name 'data-*' -exec rm -rf {} +
  printf '%s\n' "${CASES[@]}" | xargs -P "${JOBS:-16}" -I{} bash -c '
    c="$1"; KDEBUG_DATA_DIR="$2/data-$c" KDEBUG_TRACE="$2/$c.trace.jsonl" timeout "$3" "$4" -m debugger.cli bench eval/cases --backend kb \
      --device cuda --scale gpu --no-timing --no-retrieval --no-write-back --max-iters "$5" --json \
      --out "$2/$c" --cases "$c" > "$2/$c.json" 2> "$2/$c.log"
    rc=$?; echo "$c rc=$rc"; [ $rc -eq 0 ] || echo "{\"per_case\": [{\"name\": \"$c\", \"status\": \"no result (rc=$rc)\", \"seconds\": null}]}" > "$2/$c.json"
  ' _ {} "$work" "${CASE_LIMIT_S:-300}" "$PY" "${MAX_ITERS:-8}"
  mkdir -p "$work/repairs"
  cp "$work"/*/repairs/* "$work/repairs/" 2>/dev/null
  "$PY" eval/merge_bench.py "$work"/*.json > "$OUT/merged.md"
  "$PY" eval/trace_summary.py "$work"/*.trace.jsonl > "$OUT/trace_summary.txt" 2>&1
  tar -czf "$OUT/repairs.tar.gz" -C "$work" repairs $(cd "$work" && ls *.json *.log *.trace.jsonl)
  cat "$OUT/merged.md"
  ;;
time)
  only=(); [ -n "${CASES_LIST:-}" ] && { read -r -a names <<< "$CASES_LIST"; only=(--cases "${names[@]}"); }
  "$PY" -m debugger.bench.fixed_timing eval/cases --scale gpu --repairs "${REPAIRS:?REPAIRS=DIR of NAME.py}" \
    --warm-jobs "${JOBS:-12}" --out "$OUT" "${only[@]}" > /dev/null 2> "$OUT/time.log"
  cat "$OUT/fixed_vs_reference.md"
  ;;
all)
  bash "$0" repair && REPAIRS="$WORK/repairs" bash "$0" time
  ;;
*)
  echo "usage: eval/gpu_parallel.sh repair|time|all  (see the comment at the top)" >&2; exit 2 ;;
esac
