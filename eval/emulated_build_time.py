"""How long one emulated CUDA build takes, with and without the precompiled torch/extension.h.

    python eval/emulated_build_time.py [--rounds 2]

Builds an add-one kernel through kdebug's CPU emulation (`emulate.make_load_inline`) into fresh build
folders, alternating without and with the precompiled header (emulate/pch.py, built first if the
extensions cache has none: that time is printed apart), and prints each build's seconds. Nothing is
written outside a temporary folder (the header's cache included: TORCH_EXTENSIONS_DIR points there),
which is removed at the end.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

KERNEL = r'''
#include <torch/extension.h>
__global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
torch::Tensor add_one_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    add_one<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    opts = ap.parse_args()
    root = tempfile.mkdtemp(prefix="kdebug-build-time-")
    os.environ["TORCH_EXTENSIONS_DIR"] = root
    try:
        _measure(opts.rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _measure(rounds: int) -> None:
    import torch
    from torch.utils import cpp_extension

    from debugger.lang.cuda import emulate

    root = os.environ["TORCH_EXTENSIONS_DIR"]
    t = time.perf_counter()
    pch = emulate.header_pch()
    print(f"precompiled header: {pch or 'none'} ({time.perf_counter() - t:.1f} s)")
    for r in range(rounds):
        for label, folder in (("without", None), ("with", pch)):
            if label == "with" and folder is None:
                continue
            load_inline = emulate.make_load_inline(cpp_extension.load_inline, folder)
            t = time.perf_counter()
            ext = load_inline(name=f"build_time_{label}_{r}", cuda_sources=KERNEL, functions=["add_one_cuda"],
                              cpp_sources="torch::Tensor add_one_cuda(torch::Tensor x);",
                              build_directory=tempfile.mkdtemp(dir=root))
            seconds = time.perf_counter() - t
            assert torch.equal(ext.add_one_cuda(torch.zeros(5)), torch.ones(5))
            print(f"round {r}: {label} the precompiled header: {seconds:.1f} s")


if __name__ == "__main__":
    main()
