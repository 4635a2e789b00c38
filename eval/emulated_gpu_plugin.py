"""Run the suite's GPU tests of CUDA kernels on the CPU, through kdebug's CUDA emulation.

    python -m pytest -p eval.emulated_gpu_plugin -m gpu tests/test_cuda_recipes.py tests/test_cuda_recipes_sync.py

The tests that build a CUDA kernel with load_inline in the test process and run it (the recipes' before
fails / after passes) run as written: load_inline builds for kdebug's CPU runtime, `device="cuda"` and
`.cuda()` give the CPU, and `torch.cuda.is_available()` says True so that their skip conditions let them
run. Kernels run under the runtime's by-warps schedule (KDCPU_SCHEDULE=warps: each warp alone until it
waits at a barrier), where a race between warps (a missing __syncthreads) shows on every run; timing
faults within a warp do not show: a test of such a fault reports 'the faulty kernel agrees with the
reference', which is the emulation's limit, not the recipe's. Tests that run their kernels in another process (kdebug's sandbox
on `--device cuda`, tests/test_batchnorm_train_recipe.py's subprocess) are out of this plugin's reach.
2026-12-05: the 18 before/after pairs of those two files passed here (35 min on 2 busy cores), before
threads took turns at shared-memory stores (f3d6702); see eval/RESULTS.md for the run since.
"""
from __future__ import annotations

import os

import torch

from debugger.lang.cuda import emulate

emulate.install()
torch.cuda.is_available = lambda: True
os.environ["KDCPU_SCHEDULE"] = "warps"
