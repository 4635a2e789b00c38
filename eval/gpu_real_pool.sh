#!/usr/bin/env bash
# The real-pool benchmark on a GPU machine without a package index (the H200), in device commands
# of at most 10 minutes: installs the carried wheels (eval/gpu_wheels.sh fills .whl) beside the
# machine's own torch, then runs eval/real_pool.py on one slice of the pool.
#
#   POOL=.pool/kernelbench-fork SHARD=1/2 OUT=$OUT/pool1 [ONLY=all] [JOBS=12] [DEADLINE=470] \
#     [EXTRA="--checks kernelbench --semantics kernelbench"] bash eval/gpu_real_pool.sh
#
# POOL is a copy of ../shared/real/... inside the checkout, git-ignored and carried with the command
# (the ../shared beside the checkout does not travel); nothing of it is committed.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${KDEBUG_SITE_READY:-}" ]; then  # eval/gpu_session.sh installed them already
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  $(ls .whl/*.whl | grep -v '/kdebug-') || exit 3
fi
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
# published KernelBench inputs reach 16 GB, drawn on the host as KernelBench draws them
export KDEBUG_MEMORY_LIMIT_GB="${KDEBUG_MEMORY_LIMIT_GB:-64}" KDEBUG_TIMEOUT="${KDEBUG_TIMEOUT:-240}"
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/device.txt" 2>&1
# shellcheck disable=SC2086
python3 eval/real_pool.py "${POOL:?set POOL}" --device cuda --only "${ONLY:-all}" --jobs "${JOBS:-12}" \
  --shard "${SHARD:-1/1}" --deadline "${DEADLINE:-470}" --timeout "${ANSWER_TIMEOUT:-240}" \
  ${LIMIT:+--limit "$LIMIT"} --out "$OUT" ${EXTRA:-} > "$OUT/real_pool.log" 2>&1
rc=$?
tail -c 3000 "$OUT/real_pool.log"
rm -rf "$OUT/cases" "$OUT/data"  # only rows, table and logs come back (8 files at most)
exit $rc
