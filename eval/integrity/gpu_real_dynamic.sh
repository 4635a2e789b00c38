#!/usr/bin/env bash
# The integrity gate's dynamic calibration on real answers, in one device command of under 9 minutes
# (the H200: 16 cores, a CUDA answer's load_inline build takes about a minute): installs the carried
# wheels beside the machine's own torch (as eval/gpu_real_pool.sh does), then runs
# eval/integrity/real_static.py --dynamic on one interleaved shard of the pool, JOBS answers side by
# side, every answer ending by DEADLINE seconds after this script started. Rows land in
# $OUT/dynamic.jsonl as each answer finishes (a run cut short keeps them); $OUT/dynamic.md is the table.
#
#   OUT=$OUT [SHARD=1/5] [JOBS=12] [DEADLINE=480] [POLICY=kernelbench] [SIZES=small] [MATCH=GLOB] \
#     [SKIP="A.jsonl B.jsonl"] [POOL=.pool] [DEVICE=cuda] bash eval/integrity/gpu_real_dynamic.sh
#
# SKIP: rows of earlier runs (copied into the checkout, carried): the answers they judged are left out,
# so a shard the deadline cut is finished by running it again with its rows.
# POOL holds kernelbench-fork/ and tritonbench-t-dev/, a git-ignored copy of ../shared/real inside the
# checkout carried with the command (with .whl); nothing of it is committed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
start=$(date +%s)
if [ -z "${KDEBUG_SITE_READY:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    $(ls .whl/*.whl | grep -v '/kdebug-') > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 3; }
fi
# The checkout's code over the installed wheels (gpu_session.sh installs them once and exports nothing).
export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 KDEBUG_MEMORY_LIMIT_GB="${KDEBUG_MEMORY_LIMIT_GB:-64}"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null; nproc
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  git log --oneline -1 2>/dev/null; } > "$OUT/device.txt" 2>&1
left=$(( ${DEADLINE:-480} - ($(date +%s) - start) ))
timeout -k 10 $(( left + 20 )) python3 eval/integrity/real_static.py "${POOL:-.pool}" --dynamic \
  --device "${DEVICE:-cuda}" --policy "${POLICY:-kernelbench}" --jobs "${JOBS:-12}" --deadline "$left" \
  --shard "${SHARD:-1/5}" --sizes "${SIZES:-small}" --timeout 240 ${MATCH:+--match "$MATCH"} \
  ${SKIP:+--skip-judged $SKIP} \
  --jsonl "$OUT/dynamic.jsonl" > "$OUT/dynamic.md" 2> "$OUT/dynamic.log"
rc=$?
tail -c 4000 "$OUT/dynamic.md"
echo "rows: $(wc -l < "$OUT/dynamic.jsonl" 2>/dev/null || echo 0), exit $rc, $(( $(date +%s) - start )) s"
exit $rc
