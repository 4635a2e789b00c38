#!/usr/bin/env bash
# The GPU benchmark in two device commands of at most 10 minutes each, run by an installed kdebug.
#
#   [VENV=/tmp/kdebug-venv] eval/gpu_parallel.sh install
#       Install the carried wheels (.whl/, from eval/gpu_wheels.sh: the kdebug wheel and its core
#       dependencies) with `pip install --no-index --find-links .whl` into a virtual environment that
#       sees the machine's own Python packages (--system-site-packages): the machine's torch and triton
#       are used, never replaced (checked: same version, same file, before and after). The commands
#       below do this first (a few seconds once installed) and run `kdebug` from that environment,
#       in WORK, outside the checkout, so the installed package is what runs.
#
#   OUT=/tmp/gpu eval/gpu_parallel.sh example
#       The README's repair by the installed kdebug, on the GPU: a copy of examples/softmax repaired
#       from WORK (outside the checkout) with a fresh data folder; then checks that the learned pattern
#       went there and that `git status` of the checkout did not change. Writes OUT/example.{json,log}.
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
# Wheels for a bare GPU machine: eval/gpu_wheels.sh (carry .whl); no PYTHONPATH needed.
#
# Each case's repair compiles its kernels many times over (every check, experiment and hidden shape),
# so on one 16-core host about 10 cases in parallel finish in 3-5 minutes; the 60-case set needs
# several commands (CASES_LIST).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
OUT="$(realpath -m "${OUT:-$PWD/bench-gpu-out}")"
PY="${PYTHON:-python3}"  # the machine's Python, with its torch and triton
VENV="$(realpath -m "${VENV:-/tmp/kdebug-venv}")"
VPY="$VENV/bin/python"
KDEBUG="$VENV/bin/kdebug"
WORK="$(realpath -m "${WORK:-/tmp/kdebug-gpu-work}")"  # per-case outputs and caches, outside OUT (only a few files come back)
export OUT WORK
mkdir -p "$OUT" "$WORK"

install_kdebug() {
  # The carried kdebug wheel and its dependencies into VENV, the machine's torch untouched.
  local whl torch_before torch_after
  whl="$(ls "$REPO"/.whl/kdebug-*.whl 2>/dev/null | tail -1)"
  [ -n "$whl" ] || { echo "no .whl/kdebug-*.whl: run eval/gpu_wheels.sh where an index is reachable, carry .whl" >&2; return 3; }
  torch_before="$("$PY" -c 'import torch; print(torch.__version__, torch.__file__)')" || return 3
  if [ ! -x "$VPY" ]; then
    "$PY" -m venv --system-site-packages "$VENV" 2>/dev/null \
      || "$PY" -m venv --system-site-packages --without-pip "$VENV" || return 3
  fi
  # The machine's Python may itself be a venv (the H200's: /opt/torch/.venv), whose packages
  # --system-site-packages does not reach (it reaches the base interpreter's): a .pth names them.
  "$PY" -c 'import site, sys; print("\n".join(p for p in site.getsitepackages() + [site.getusersitepackages()] if p))' \
    > "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine-site.pth" || return 3
  if "$VPY" -m pip --version > /dev/null 2>&1; then pip=("$VPY" -m pip); else pip=("$PY" -m pip --python "$VPY"); fi
  # The carried wheels are exactly kdebug's dependencies that the machine lacks (eval/gpu_wheels.sh), so
  # they go in with --no-deps: nothing can replace the machine's torch. Then kdebug itself afresh.
  echo "pip sees: $("${pip[@]}" list 2>/dev/null | grep -iE '^(torch|triton) ' | tr '\n' ' ')"
  "${pip[@]}" install -q --no-index --no-deps $(ls "$REPO"/.whl/*.whl | grep -v '/kdebug-') || return 3
  "${pip[@]}" install -q --no-index --no-deps --force-reinstall "$whl" || return 3
  torch_after="$("$VPY" -c 'import torch; print(torch.__version__, torch.__file__)')" || return 3
  [ "$torch_before" == "$torch_after" ] || { echo "torch changed: $torch_before -> $torch_after" >&2; return 3; }
  # Fail in seconds, not per case, when a package the repair path imports is missing; from outside the checkout.
  (cd "$WORK" && "$VPY" -c "import debugger, debugger.repair.graph, debugger.repair.run, debugger.bench.runner, debugger.integrity.gate, debugger.diagnose, langgraph.checkpoint.sqlite; from debugger import settings; assert str(settings.curated_kb_dir()).startswith('$VENV'), settings.curated_kb_dir(); print('kdebug', debugger.__file__, 'torch', '$torch_after')") \
    || { echo "the installed kdebug does not import: see the error above" >&2; return 3; }
}

if [ "${1:-}" != install ] && [ -z "${KDEBUG_INSTALLED:-}" ]; then
  install_kdebug > "$OUT/install.txt" 2>&1 || { cat "$OUT/install.txt" >&2; exit 3; }
  export KDEBUG_INSTALLED=1
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/device.txt" 2>&1

case "${1:-}" in
install)
  install_kdebug
  ;;
example)
  before="$(git -C "$REPO" status --porcelain 2>/dev/null)"
  rm -rf "$WORK/example" "$WORK/data-example"
  cp -r "$REPO/examples/softmax" "$WORK/example" && rm -f "$WORK"/example/*.repaired.*
  (cd "$WORK" && KDEBUG_DATA_DIR="$WORK/data-example" "$KDEBUG" repair "$WORK/example" --device cuda --backend kb --json) \
    > "$OUT/example.json" 2> "$OUT/example.log"
  rc=$?
  tail -5 "$OUT/example.log"; cat "$OUT/example.json"
  ls "$WORK"/data-example/kb/patterns/learned/*.md 2> /dev/null || { echo "no learned pattern in the data folder" >&2; rc=4; }
  [ "$before" == "$(git -C "$REPO" status --porcelain 2>/dev/null)" ] || { echo "the checkout changed" >&2; rc=4; }
  echo "example: rc=$rc"; exit $rc
  ;;
repair)
  if [ -n "${CASES_LIST:-}" ]; then read -r -a CASES <<< "$CASES_LIST"
  else mapfile -t CASES < <(ls -d "$REPO"/eval/cases/*/ | xargs -n1 basename); fi
  work="$WORK"; mkdir -p "$work"
  # A warm machine keeps WORK between commands: drop the previous batch's results (not its caches).
  rm -f "$work"/*.json "$work"/*.log "$work"/*.trace.jsonl
  find "$work" -mindepth 1 -maxdepth 1 -type d ! -name 'data-*' -exec rm -rf {} +
  printf '%s\n' "${CASES[@]}" | xargs -P "${JOBS:-16}" -I{} bash -c '
    c="$1"; cd "$2"; KDEBUG_DATA_DIR="$2/data-$c" KDEBUG_TRACE="$2/$c.trace.jsonl" timeout "$3" "$4" bench "$6/eval/cases" --backend kb \
      --device cuda --scale gpu --no-timing --no-retrieval --no-write-back --max-iters "$5" --json \
      --out "$2/$c" --cases "$c" > "$2/$c.json" 2> "$2/$c.log"
    rc=$?; echo "$c rc=$rc"; [ $rc -eq 0 ] || echo "{\"per_case\": [{\"name\": \"$c\", \"status\": \"no result (rc=$rc)\", \"seconds\": null}]}" > "$2/$c.json"
  ' _ {} "$work" "${CASE_LIMIT_S:-300}" "$KDEBUG" "${MAX_ITERS:-8}" "$REPO"
  mkdir -p "$work/repairs"
  cp "$work"/*/repairs/* "$work/repairs/" 2>/dev/null
  "$VPY" eval/merge_bench.py "$work"/*.json > "$OUT/merged.md"
  "$VPY" eval/trace_summary.py "$work"/*.trace.jsonl > "$OUT/trace_summary.txt" 2>&1
  tar -czf "$OUT/repairs.tar.gz" -C "$work" repairs $(cd "$work" && ls *.json *.log *.trace.jsonl)
  cat "$OUT/merged.md"
  ;;
time)
  only=(); [ -n "${CASES_LIST:-}" ] && { read -r -a names <<< "$CASES_LIST"; only=(--cases "${names[@]}"); }
  repairs="$(realpath -m "${REPAIRS:?REPAIRS=DIR of NAME.py}")"
  (cd "$WORK" && "$VPY" -m debugger.bench.fixed_timing "$REPO/eval/cases" --scale gpu --repairs "$repairs" \
    --warm-jobs "${JOBS:-12}" --out "$OUT" "${only[@]}" > /dev/null 2> "$OUT/time.log")
  cat "$OUT/fixed_vs_reference.md"
  ;;
all)
  bash "$0" repair && REPAIRS="$WORK/repairs" bash "$0" time
  ;;
*)
  echo "usage: eval/gpu_parallel.sh install|example|repair|time|all  (see the comment at the top)" >&2; exit 2 ;;
esac
