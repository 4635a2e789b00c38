"""Parameter initialisation of real answers, on the CPU: the host side of parameter_init, no kernel run.

    python eval/real_param_init.py PATH [--only mismatch|correct|all] [--match GLOB] [--timeout S]
                                   [--jsonl FILE] [--json]

PATH: ../shared/real/kernelbench-fork (or a KernelBench checkout with runs/). For each answer, in a
sandboxed subprocess (kdebug's worker guard: limits, no network, the pool unreadable), Model and
ModelNew are built as KernelBench builds them (each under seed 42, published init inputs), with
`load_inline`/`load` replaced by a stand-in whose functions cannot be called (no nvcc, no GPU: the
kernels are never built nor run). Then:
- the parameter correspondence (debugger/params.py) is made and each matched tensor's own initial value
  compared with Model's: an answer whose tensors all agree initialises as KernelBench expects; one
  with differing tensors has a parameter_init fault (whatever else is wrong with its kernels);
- where they differ, the parameter_init fix (debugger/recipes/parameter_init.py) is applied and the
  fixed ModelNew built again the same way: the fix is right on the host side when every matched
  tensor now equals Model's and nothing of Model's stayed unmatched.
What this cannot say: whether the kernels are right (that needs the GPU); an answer that builds or
calls CUDA in its constructor is reported `needs_cuda`.

On recorded-correct answers it calibrates the correspondence: KernelBench passed them, so a tensor
found differing there is either unused by forward or a fault of the correspondence; each is listed.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


# -- the worker (one answer, in its own sandboxed process) ------------------------------------------
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

    cand_module = _module(name, cand_src)
    spec = {"init_seed": inputs.KERNELBENCH_SEED}
    _, mapping = inputs.build_candidate(ref_module, cand_module, spec, "cpu")
    return mapping.to_dict()


def _floating_reference_names(ref_module) -> set[str]:
    """Model's floating-point tensors (an integer buffer such as num_batches_tracked holds no values
    a kernel computes with)."""
    from debugger import inputs, params

    model = inputs.build_reference(ref_module, {"init_seed": inputs.KERNELBENCH_SEED}, "cpu")
    return {t.name for t in params.named_tensors(model) if t.tensor.is_floating_point()}


def _diffs(mapping: dict) -> list[dict]:
    return [{"candidate": p["candidate"], "reference": p["reference"], "how": p.get("how"),
             "diff": p["own_init_diff"]} for p in mapping["pairs"] if (p.get("own_init_diff") or 0.0) > 0.0]


def worker() -> None:
    job = json.loads(sys.stdin.read())
    from debugger.sandbox import guard

    guard.apply_limits(12 << 30, "cpu")
    guard.isolate_network()
    guard.install_audit_hook(deny_read=job["deny_read"], allow_write=[job["scratch"]])
    import torch

    torch.set_num_threads(1)
    _stand_in_loaders()
    from debugger.recipes.parameter_init import parameter_init_patch

    out: dict = {}
    try:
        ref_module = _module("kdebug_reference", job["reference_src"])
        floating = _floating_reference_names(ref_module)
        mapping = _build(ref_module, job["candidate_src"], "kdebug_candidate")
        unheld = [n for n in mapping["unmatched_reference"] if n in floating]
        out.update(pairs=len(mapping["pairs"]), unmatched_reference=mapping["unmatched_reference"], unheld=unheld,
                   unmatched_candidate=mapping["unmatched_candidate"], differing=_diffs(mapping))
        if out["differing"]:
            patch = parameter_init_patch(job["candidate_src"], job["reference_src"], mapping)
            if patch is None:
                out["fix"] = "not_proposed"
            else:
                fixed = _build(ref_module, patch.new_src, "kdebug_fixed")
                left = _diffs(fixed)
                # right: every tensor ModelNew holds now starts as Model's; a Model tensor ModelNew does
                # not hold at all (a bias it drops) is another fault, of the kernel or the operator
                out.update(fix="wrong" if left else "right",
                           fixed_differing=left, fixed_unmatched_reference=fixed["unmatched_reference"])
        out["status"] = "ok"
    except Exception as e:  # noqa: BLE001 - the answer's own failure, reported
        text = f"{type(e).__name__}: {e}"
        cuda = "cuda" in text.lower() or "nvidia" in text.lower() or "not built on the cpu" in text
        memory = "can't allocate memory" in text or isinstance(e, MemoryError)
        out.update(status="needs_cuda" if cuda else "too_large" if memory else "error", error=text[:300])
    print(json.dumps(out))


# -- the driver ------------------------------------------------------------------------------------
def run_one(answer, pool: Path, timeout: float) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kdebug-param-init-") as scratch:
        job = {"reference_src": answer.reference_src, "candidate_src": answer.candidate_src,
               "deny_read": [str(pool.resolve())], "scratch": scratch}
        from debugger.sandbox.guard import scrubbed_env

        env = scrubbed_env(dict(os.environ))
        env.update(PYTHONPATH=str(REPO), TMPDIR=scratch, HOME=scratch, OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, __file__, "--worker"], input=json.dumps(job), text=True,
                               capture_output=True, timeout=timeout, env=env, cwd=scratch)
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            row = json.loads(lines[-1]) if lines else {"status": "error", "error": (p.stderr or "")[-300:]}
        except subprocess.TimeoutExpired:
            row = {"status": "timeout"}
    row.update(id=answer.id, recorded=answer.recorded, recorded_class=answer.recorded_class,
               seconds=round(time.time() - t0, 1))
    return row


def summary(rows: list[dict]) -> str:
    lines = ["| recorded | answers | built | own init = Model's | differs | fix right | fix wrong | not proposed | "
             "a Model tensor not held | needs CUDA | too large / error / timeout |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for recorded in sorted({r["recorded_class"] for r in rows}):
        rs = [r for r in rows if r["recorded_class"] == recorded]
        ok = [r for r in rs if r["status"] == "ok"]
        differs = [r for r in ok if r["differing"]]
        fixes = Counter(r.get("fix") for r in differs)
        lines.append(f"| {recorded} | {len(rs)} | {len(ok)} | {len(ok) - len(differs)} | {len(differs)} | "
                     f"{fixes['right']} | {fixes['wrong']} | {fixes['not_proposed']} | "
                     f"{sum(bool(r['unheld']) for r in ok)} | {sum(r['status'] == 'needs_cuda' for r in rs)} | "
                     f"{sum(r['status'] == 'too_large' for r in rs)} / {sum(r['status'] == 'error' for r in rs)} / "
                     f"{sum(r['status'] == 'timeout' for r in rs)} |")
    return "\n".join(lines)


def main() -> None:
    if "--worker" in sys.argv:
        worker()
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pool", type=Path)
    ap.add_argument("--only", choices=("mismatch", "correct", "all"), default="mismatch")
    ap.add_argument("--match", help="only answers whose id matches this glob")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--jsonl", type=Path, help="append a row per answer as it finishes")
    ap.add_argument("--json", action="store_true", help="print the rows as one JSON list")
    opts = ap.parse_args()
    if not opts.pool.is_dir():
        sys.exit(f"real_param_init: no such folder: {opts.pool}")
    from ingest.answers import read_pool

    answers, _ = read_pool(opts.pool)
    wanted = {"mismatch": ("numerical_mismatch",), "correct": ("correct",),
              "all": ("numerical_mismatch", "correct")}[opts.only]
    answers = [a for a in answers if a.recorded_class in wanted and a.reference_src and a.candidate_src
               and (not opts.match or fnmatch.fnmatch(a.id, opts.match))]
    rows = []
    for a in answers:
        row = run_one(a, opts.pool, opts.timeout)
        rows.append(row)
        if opts.jsonl:
            with opts.jsonl.open("a") as f:
                f.write(json.dumps(row) + "\n")
        print(f"{a.id}: {row['status']} {len(row.get('differing', []))} differing {row.get('fix', '')}",
              file=sys.stderr, flush=True)
    print(json.dumps(rows, indent=1) if opts.json else summary(rows))


if __name__ == "__main__":
    main()
