#!/usr/bin/env bash
# The benchmark's GPU-only cases (case.toml `needs = "cuda"`: faults Triton's interpreter cannot show,
# which `kdebug bench --device cpu` skips) repaired on the GPU at their [gpu] sizes with the kb backend,
# in one device command: eval/gpu_parallel.sh's `repair` mode on just those cases (it installs the
# carried kdebug wheel from .whl/ first: build it with eval/gpu_wheels.sh, carry .whl).
#
#   OUT=/tmp/gpu [CASE_LIMIT_S=420] [FIXED_LIMIT_S=150] eval/gpu_only_cases.sh   (defaults: one 10-minute command)
#
# Writes what `repair` writes (OUT/merged.md, OUT/repairs.tar.gz, OUT/trace_summary.txt) and
# OUT/gpu_only.md: per case the diagnosed class against the true one, the fixing recipe, and the
# verdict of the independent verification on fresh inputs (bench's verify, with the integrity gate).
# Beside the repairs (FIXED_LIMIT_S > 0), OUT/fixed_checks.md: each case's own fixed.py on every check a
# repair is judged on at the [gpu] sizes (eval/gpu_fixed_checks.py), one process per case: a case whose
# own fix fails there cannot be repaired, and the table says which check and why.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="$(realpath -m "${OUT:-$PWD/bench-gpu-out}")"
WORK="$(realpath -m "${WORK:-/tmp/kdebug-gpu-work}")"
mapfile -t CASES < <(grep -l '^needs *= *"cuda"' eval/cases/*/case.toml | xargs -n1 dirname | xargs -n1 basename)
[ "${#CASES[@]}" -gt 0 ] || { echo "no case.toml with needs = \"cuda\" under eval/cases" >&2; exit 2; }
echo "GPU-only cases: ${CASES[*]}"
mkdir -p "$OUT"
# Install once (the repairs and the fixed.py checks share the venv), then run both side by side.
OUT="$OUT" bash eval/gpu_parallel.sh install > "$OUT/install.txt" 2>&1 || { cat "$OUT/install.txt" >&2; exit 3; }
export KDEBUG_INSTALLED=1
FIXED="$WORK.fixed"  # not inside WORK: the repair step clears WORK's logs when it starts
rm -rf "$FIXED" && mkdir -p "$FIXED"
fixed_pid=
if [ "${FIXED_LIMIT_S:-150}" -gt 0 ]; then
  VPY="$(realpath -m "${VENV:-/tmp/kdebug-venv}")/bin/python"
  printf '%s\n' "${CASES[@]}" | xargs -P "${#CASES[@]}" -I{} bash -c \
    'cd "$1" && timeout "$2" "$3" "$4/eval/gpu_fixed_checks.py" "$4/eval/cases" "$5" > "$1/$5.fixed.md" 2> "$1/$5.fixed.log";
     echo "fixed.py of $5: rc=$?"' _ "$FIXED" "${FIXED_LIMIT_S:-150}" "$VPY" "$PWD" {} > "$FIXED/progress.txt" 2>&1 &
  fixed_pid=$!
fi
OUT="$OUT" WORK="$WORK" CASES_LIST="${CASES[*]}" JOBS="${JOBS:-${#CASES[@]}}" CASE_LIMIT_S="${CASE_LIMIT_S:-420}" \
  bash eval/gpu_parallel.sh repair
rc=$?
"${PYTHON:-python3}" - "$WORK" "${CASES[@]}" > "$OUT/gpu_only.md" <<'PY'
import json
import sys
from pathlib import Path

work, names = Path(sys.argv[1]), sys.argv[2:]
print("| case | status | true class | diagnosed | recipe | iterations | verified on fresh inputs | seconds | attempts |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for name in names:
    try:
        rec = json.loads((work / f"{name}.json").read_text())["per_case"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"| {name} | no result ({type(e).__name__}) | | | | | | | |")
        continue
    v = rec.get("verification") or {}
    skipped = ", ".join(v.get("skipped") or {})
    print(f"| {name} | {rec.get('status')} | {rec.get('true_class')} | {rec.get('diagnosed_class')} | "
          f"{rec.get('recipe') or '-'} | {rec.get('iterations')} | {v.get('correct')} (gate {v.get('gate')})"
          f"{'; not run: ' + skipped if skipped else ''} | {rec.get('seconds')} | "
          + "; ".join(f"{a['recipe']} ({a['bug_class']}): {a['outcome']}" for a in rec.get("attempts") or []) + " |")
PY
cat "$OUT/gpu_only.md"
if [ -n "$fixed_pid" ]; then
  wait "$fixed_pid"; cat "$FIXED/progress.txt"
  { echo "| case | check | status | wrong | max abs err | message |"; echo "| --- | --- | --- | --- | --- | --- |"
    for c in "${CASES[@]}"; do tail -n +3 "$FIXED/$c.fixed.md";
      [ -s "$FIXED/$c.fixed.md" ] || echo "| $c | fixed.py | no result: $(tail -1 "$FIXED/$c.fixed.log" | cut -c1-200) | | | |"; done
  } > "$OUT/fixed_checks.md"
  cp "$FIXED"/*.fixed.log "$OUT/" 2>/dev/null
  cat "$OUT/fixed_checks.md"
fi
exit $rc
