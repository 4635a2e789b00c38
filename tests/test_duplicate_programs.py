"""Copies of programs on grid axes no program reads: the interpreter runs one copy when that leaves memory as
all copies would (debugger/lang/triton/duplicates.py, debugger/sandbox/duplicate_programs.py)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from debugger.lang.triton.duplicates import plan

KERNELS = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def add_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
        tl.store(out_ptr + offs, x + 1.0, mask=mask)


    @triton.jit
    def add_one_in_place(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


    @triton.jit
    def add_column(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.program_id(axis=1), mask=mask)


    @triton.jit
    def count_programs(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.atomic_add(out_ptr + offs, tl.load(x_ptr + offs), mask=offs < n)


    def host_scale():
        return 2.0


    @triton.jit
    def scaled(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * host_scale(), mask=mask)
''')


def test_plan_names_the_axes_no_program_reads_and_refuses_what_it_cannot_read_through():
    p = plan(KERNELS, "add_one")
    assert p is not None and p.unread_axes == {1, 2}
    assert "out_ptr" in p.stored and "x_ptr" in p.loaded and "x_ptr" not in p.stored
    assert plan(KERNELS, "add_column").unread_axes == {2}  # program_id(axis=1) is read
    assert plan(KERNELS, "count_programs") is None  # atomics: every copy adds
    assert plan(KERNELS, "scaled") is None  # a host function called from the kernel: not read through
    assert plan(KERNELS, "add_one_in_place") is not None  # store and load share x_ptr: the launch decides


LAUNCHES = textwrap.dedent('''
    import os, sys, importlib.util
    os.environ["TRITON_INTERPRET"] = "1"
    import torch
    from debugger.sandbox.hooks import LaunchRecorder
    spec = importlib.util.spec_from_file_location("kernels", sys.argv[1])
    k = importlib.util.module_from_spec(spec); spec.loader.exec_module(k)
    rec = LaunchRecorder(); rec.install(); rec.active = True
    x = torch.arange(8, dtype=torch.float32)

    def launch(kernel, grid, *tensors):
        kernel[grid](*tensors, 8, BLOCK=8)
        return rec.launches[-1].get("grid_given")

    out = torch.zeros(8)
    print("copies", launch(k.add_one, (1, 64), x, out), out.tolist())
    out = torch.zeros(8)
    print("callable", launch(k.add_one, lambda meta: (1, 16), x, out), out.tolist())
    out = torch.zeros(8)
    print("empty", launch(k.add_one, (0, 16), x, out), out.tolist())
    y = x.clone()
    print("in_place", launch(k.add_one_in_place, (1, 8), y), y.tolist())
    y = x.clone()
    print("aliased", launch(k.add_one, (1, 8), y, y), y.tolist())
    out = torch.zeros(8)
    print("reads_axis", launch(k.add_column, (1, 3, 5), x, out), out.tolist())
''')


def test_an_interpreted_launch_runs_one_copy_only_where_memory_ends_the_same(tmp_path):
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "launch.py").write_text(LAUNCHES)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    run = subprocess.run([sys.executable, str(tmp_path / "launch.py"), str(tmp_path / "kernels.py")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in run.stdout.splitlines()}
    plus_one = str([float(i + 1) for i in range(8)])
    assert lines["copies"] == f"(1, 64) {plus_one}"  # 64 copies of one program: one ran, same memory
    assert lines["callable"].endswith(plus_one) and lines["callable"] != f"None {plus_one}"
    assert lines["empty"] == f"(0, 16) {[0.0] * 8}"  # narrowed to (0, 1): an axis of no programs stays empty
    # every copy reads what the one before stored: all run, as on a GPU run one after another
    assert lines["in_place"] == f"None {[float(i + 8) for i in range(8)]}"
    assert lines["aliased"] == f"None {[float(i + 8) for i in range(8)]}"  # input and output share storage
    assert lines["reads_axis"] == f"(1, 3, 5) {[float(i + 2) for i in range(8)]}"  # axis 2 narrowed, 1 kept
