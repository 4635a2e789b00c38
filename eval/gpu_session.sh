#!/usr/bin/env bash
# Several GPU jobs side by side in one device command (the H200 lends 10-minute commands and returns at
# most 8 files): each job of JOBFILE runs in the background with OUT set to a folder of its own, every job
# is cut at DEADLINE seconds, and what they wrote comes back packed in one file, OUT/results.tgz (the
# case folders and scratch data left out), with OUT/summary.txt holding each job's exit status and the
# tail of its output.
#
#   OUT=$OUT [DEADLINE=560] bash eval/gpu_session.sh JOBFILE
#
# JOBFILE: one job a line, `NAME: COMMAND` (blank lines and lines starting with # ignored); COMMAND runs
# in the checkout's root under bash with OUT=$OUT/work/NAME, e.g.
#   pi: POOL=.pool/kernelbench-fork ONLY=mismatch EXTRA="--repair" bash eval/gpu_real_pool.sh
#   cuda_tests: bash eval/gpu_cuda_recipes.sh
set -uo pipefail
cd "$(dirname "$0")/.."
JOBFILE="${1:?usage: OUT=DIR bash eval/gpu_session.sh JOBFILE}"
[ -r "$JOBFILE" ] || { echo "gpu_session: cannot read $JOBFILE" >&2; exit 2; }
OUT="$(realpath -m "${OUT:?set OUT}")"
WORKDIR="$OUT/work"
mkdir -p "$WORKDIR"
start=$(date +%s)
# The carried wheels go in once, before the jobs start (two pip installs into one target would race);
# gpu_real_pool.sh and gpu_cuda_recipes.sh skip their own install when KDEBUG_SITE_READY is set.
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $(ls .whl/*.whl .whl/test/*.whl 2>/dev/null | grep -v '/kdebug-') > "$OUT/install.log" 2>&1 \
    || { cat "$OUT/install.log"; exit 3; }
  export KDEBUG_SITE_READY=1  # a job that imports kdebug from the checkout sets PYTHONPATH="$PWD:/tmp/site"
  # itself: set here, it would shadow the installed wheel gpu_parallel.sh checks it runs
fi
names=()
while IFS= read -r line; do
  [[ -z "${line// }" || "$line" == \#* ]] && continue
  name="${line%%:*}"; cmd="${line#*:}"
  [[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "gpu_session: bad job name '$name'" >&2; exit 2; }
  names+=("$name")
  mkdir -p "$WORKDIR/$name"
  ( OUT="$WORKDIR/$name" timeout --kill-after=10 "${DEADLINE:-560}" bash -c "$cmd" \
      > "$WORKDIR/$name/job.log" 2>&1; echo $? > "$WORKDIR/$name/job.rc" ) &
done < "$JOBFILE"
wait
{
  for name in "${names[@]}"; do
    echo "== $name: rc=$(cat "$WORKDIR/$name/job.rc" 2>/dev/null || echo '?')"
    tail -c 2500 "$WORKDIR/$name/job.log"
    echo
  done
  echo "gpu_session: $(( $(date +%s) - start )) s"
} > "$OUT/summary.txt"
find "$WORKDIR" -mindepth 2 -maxdepth 3 -type d \( -name cases -o -name data \) -prune \
  -exec rm -rf {} + 2>/dev/null
tar -czf "$OUT/results.tgz" -C "$WORKDIR" .
rm -rf "$WORKDIR"
cat "$OUT/summary.txt"
