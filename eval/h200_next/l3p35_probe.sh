#!/usr/bin/env bash
# Why the gate rejects gemini level3/35 (LSTM + a kernel for fc(out[:, -1, :])) on the H100 for params_redrawn alone (run
# 47: 80% of 100 elements off, max 0.034; the other 16 checks pass; KernelBench recorded 5/5): three evaluations at the
# gate's sizes - the answer, the answer with `.contiguous()` on the LSTM's output before its kernel (its kernel reads it
# as a contiguous (B, S, H)), and the answer with PyTorch's fc in place of its kernel. Which of them fail params_redrawn
# says whether the layout the kernel assumes, or kdebug's re-drawn parameters, is at fault. The variants are written
# from the pool's copy at run time (nothing of the pool is committed).
#   cd .clean && OUT=$OUT [DEVICE=cuda] bash eval/h200_next/l3p35_probe.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:?set OUT}"; mkdir -p "$OUT/l3p35"
export PYTHONPATH="$PWD:/tmp/site" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
POOL=.pool/kernelbench-fork
ANSWER=$POOL/runs/gemini_level3_run/level_3_problem_35_sample_0_kernel.py
python3 - "$ANSWER" "$OUT/l3p35" <<'PY'
import sys
from pathlib import Path
src, out = Path(sys.argv[1]).read_text(), Path(sys.argv[2])
call = "out = self.slice_linear_op(out, self.fc.weight, self.fc.bias)"
assert call in src, "the answer's kernel call moved"
(out / "answer.py").write_text(src)
(out / "contiguous.py").write_text(src.replace(call, call.replace("op(out,", "op(out.contiguous(),")))
(out / "torch_fc.py").write_text(src.replace(call, "out = self.fc(out[:, -1, :])"))
PY
for v in answer contiguous torch_fc; do
  timeout 400 python3 -m debugger.cli eval "$OUT/l3p35/$v.py" --ref $POOL/KernelBench/level3/35_LSTM.py --device "${DEVICE:-cuda}" \
    --sizes small --json > "$OUT/l3p35/$v.json" 2> "$OUT/l3p35/$v.log" &
done
wait
for v in answer contiguous torch_fc; do
  python3 -c "
import json, sys
d = json.load(open('$OUT/l3p35/$v.json'))
print('$v', d['status'], '|', '; '.join(c['name'] + ' ' + c['status'] + (': ' + (c.get('message') or '')[:120] if c['status'] != 'pass' else '') for c in d['checks'] if c['status'] != 'pass' or c['name'] == 'params_redrawn'))
" 2>&1 || tail -5 "$OUT/l3p35/$v.log"
done
