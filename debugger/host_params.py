"""The host side of a CUDA candidate on a machine that cannot build it: its parameter initialisation.

A load_inline candidate needs nvcc and a GPU; without them its kernels cannot run, but its constructor
can. Here Model and ModelNew are built as KernelBench builds them (each under seed 42, the published
init inputs) in a sandboxed worker (`python -m debugger.host_params`: kdebug's guard, limits, no
network, the case folders unreadable) with `load_inline`/`load` replaced by a stand-in whose
functions raise when called. The parameter correspondence (debugger/params.py) then says which
tensors ModelNew starts with differently from Model: a parameter_init fault KernelBench's verdict
fails on whatever the kernels do. Where they differ, the parameter_init fix
(recipes/parameter_init.py) is applied and the fixed ModelNew built again: `fix` is `right` when every
tensor ModelNew holds then starts as Model's.

Used by `kdebug diagnose --device cpu` on a CUDA candidate and by eval/real_param_init.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

MEMORY_BYTES = 12 << 30


class _StandInExtension:
    """What load_inline returns here: any function of it raises when called."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)

        def call(*args, **kwargs):
            raise RuntimeError(f"extension {self._name}.{attr} is not built on the CPU")
        return call


def _stand_in_loaders() -> None:
    from torch.utils import cpp_extension

    def load_inline(*args, name: str = "ext", **kwargs):
        return _StandInExtension(name)

    cpp_extension.load_inline = load_inline
    cpp_extension.load = load_inline


def _module(name: str, src: str):
    import types

    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    sys.modules[name] = module
    exec(compile(src, f"<{name}>", "exec"), module.__dict__)
    return module


def _build(ref_module, cand_src: str, name: str) -> dict:
    from debugger import inputs

    _, mapping = inputs.build_candidate(ref_module, _module(name, cand_src),
                                        {"init_seed": inputs.KERNELBENCH_SEED}, "cpu")
    return mapping.to_dict()


def _floating_reference_names(ref_module) -> set[str]:
    """Model's floating-point tensors (an integer buffer such as num_batches_tracked holds no values a
    kernel computes with)."""
    from debugger import inputs, params

    model = inputs.build_reference(ref_module, {"init_seed": inputs.KERNELBENCH_SEED}, "cpu")
    return {t.name for t in params.named_tensors(model) if t.tensor.is_floating_point()}


def _differing(mapping: dict) -> list[dict]:
    return [p for p in mapping["pairs"] if (p.get("own_init_diff") or 0.0) > 0.0]


def inspect(reference_src: str, candidate_src: str) -> dict:
    """In the worker: {status, pairs, parameter_map, differing, unheld[, fix, fixed_differing]}."""
    import torch

    torch.set_num_threads(1)
    _stand_in_loaders()
    from debugger.recipes.parameter_init import parameter_init_patch

    out: dict = {}
    try:
        ref_module = _module("kdebug_reference", reference_src)
        mapping = _build(ref_module, candidate_src, "kdebug_candidate")
        unmatched = mapping["unmatched_reference"]
        # Model is built once more only to tell its floating tensors from integer buffers, when any is unmatched
        floating = _floating_reference_names(ref_module) if unmatched else set()
        out.update(pairs=len(mapping["pairs"]), parameter_map=mapping, differing=_differing(mapping),
                   unmatched_reference=unmatched, unheld=[n for n in unmatched if n in floating])
        if out["differing"]:
            patch = parameter_init_patch(candidate_src, reference_src, mapping)
            if patch is None:
                out["fix"] = "not_proposed"
            else:
                left = _differing(_build(ref_module, patch.new_src, "kdebug_fixed"))
                # right: every tensor ModelNew holds now starts as Model's; a Model tensor ModelNew does not
                # hold at all (a bias it drops) is another fault, of the kernel or of the operator
                out.update(fix="wrong" if left else "right", fixed_differing=left, fixed_src=patch.new_src)
        out["status"] = "ok"
    except Exception as e:  # noqa: BLE001 - the candidate's own failure, reported
        text = f"{type(e).__name__}: {e}"
        cuda = "cuda" in text.lower() or "nvidia" in text.lower() or "not built on the cpu" in text
        memory = "can't allocate memory" in text or isinstance(e, MemoryError)
        out.update(status="needs_cuda" if cuda else "too_large" if memory else "error", error=text[:300])
    return out


def check(reference_src: str, candidate_src: str, *, deny_read: list[str], timeout: float = 120.0) -> dict:
    """`inspect` in a sandboxed subprocess, with `seconds`; status `timeout` when it did not finish."""
    from debugger.sandbox.guard import scrubbed_env

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory(prefix="kdebug-host-params-") as scratch:
        job = {"reference_src": reference_src, "candidate_src": candidate_src, "deny_read": deny_read,
               "scratch": scratch}
        env = scrubbed_env(dict(os.environ))
        env.update(PYTHONPATH=root + os.pathsep + env.get("PYTHONPATH", ""), TMPDIR=scratch, HOME=scratch,
                   OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, "-m", "debugger.host_params"], input=json.dumps(job), text=True,
                               capture_output=True, timeout=timeout, env=env, cwd=scratch)
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            row = json.loads(lines[-1]) if lines else {"status": "error", "error": (p.stderr or "")[-300:]}
        except subprocess.TimeoutExpired:
            row = {"status": "timeout"}
    row["seconds"] = round(time.time() - t0, 1)
    return row


def _worker() -> None:
    job = json.loads(sys.stdin.read())
    from debugger.sandbox import guard

    guard.apply_limits(MEMORY_BYTES, "cpu")
    guard.isolate_network()
    guard.install_audit_hook(deny_read=job["deny_read"], allow_write=[job["scratch"]])
    print(json.dumps(inspect(job["reference_src"], job["candidate_src"])))


if __name__ == "__main__":
    _worker()
