#!/usr/bin/env bash
# The GPU tests of the CUDA recipes on a machine without a package index (the H200): each recipe's two
# kernels of tests/test_cuda_recipes.py compiled with load_inline before and after the patch (before
# disagrees with the torch reference, after agrees), and the CUDA kb patterns' examples evaluated by
# kdebug on the GPU (tests/test_kb_patterns.py: before fails, after passes, the recipe repairs it).
#
#   here, once:        bash eval/gpu_cuda_recipes.sh wheels     # pytest + xdist wheels into .whl/test/
#   on the GPU:        OUT=$OUT [K="pytest -k expression"] bash eval/gpu_cuda_recipes.sh   # carry .whl; log in $OUT/cuda_recipes.log
#
# kdebug's own dependencies come from .whl/*.whl (eval/gpu_wheels.sh), installed beside the machine's
# torch into /tmp/site as eval/gpu_real_pool.sh does; the checkout itself is on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
TEST_WHEELS="pytest==9.2.0 iniconfig==2.3.1 pygments==2.21.0 pytest-xdist==3.8.0 execnet==2.1.2"
if [ "${1:-}" = wheels ]; then
  mkdir -p .whl/test
  # shellcheck disable=SC2086
  exec python3 -m pip download -q --no-deps -d .whl/test $TEST_WHEELS
fi
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
LOG="$OUT/cuda_recipes.log"
if [ -z "${KDEBUG_SITE_READY:-}" ]; then  # eval/gpu_session.sh installed them already
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  $(ls .whl/*.whl .whl/test/*.whl 2>/dev/null | grep -v '/kdebug-') > "$LOG" 2>&1 || { cat "$LOG"; exit 3; }
fi
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-/tmp/kdebug_torch_extensions}" MAX_JOBS="${MAX_JOBS:-4}"
export KDEBUG_TIMEOUT="${KDEBUG_TIMEOUT:-240}" KDEBUG_FAILURE_LOG="${KDEBUG_FAILURE_LOG:-$OUT/failures.txt}"  # failures as they happen (tests/conftest.py)
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc; nvcc --version | tail -1
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } >> "$LOG" 2>&1
PARALLEL=()
python3 -c "import xdist" 2>/dev/null && PARALLEL=(-n "${WORKERS:-6}")
timeout "${DEADLINE:-570}" python3 -m pytest -v -rA --tb=short -p no:cacheprovider -m gpu "${PARALLEL[@]}" \
  tests/test_cuda_recipes.py tests/test_kb_patterns.py -k "${K:-cuda}" >> "$LOG" 2>&1
rc=$?
tail -c 4000 "$LOG"
exit $rc
