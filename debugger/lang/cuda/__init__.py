"""CUDA inside `load_inline`: the sources (sources.py), their tree-sitter model (unit.py), static facts
(facts.py for kernel bodies, host_facts.py for launches and host code), fix recipes over the CUDA text
(recipes/, written back into the Python file by splice.py), behind the language interface.

    from debugger.lang import get
    cuda = get("cuda")
    cuda.uses(src); cuda.kernels(src); cuda.launches(src); cuda.static_facts(src); cuda.bound_functions(src)
"""
from __future__ import annotations

from functools import lru_cache

from debugger.lang import Fact, Kernel, Launch
from debugger.lang.cuda.facts import kernel_facts
from debugger.lang.cuda.formulas import tanh_gelu_facts
from debugger.lang.cuda.host_facts import combines, launch_facts
from debugger.lang.cuda.recipes import RECIPES
from debugger.lang.cuda.sources import find_sources, python_code
from debugger.lang.cuda.unit import Function, Unit
from debugger.recipes import register
from debugger.source.tree import text


@lru_cache(maxsize=32)
def units(src: str) -> tuple[Unit, ...]:
    """The parsed CUDA/C++ units of a candidate file."""
    return tuple(Unit(s) for s in find_sources(src))


def _kernel(all_units: tuple[Unit, ...], name: str) -> Function | None:
    return next((f for u in all_units for f in u.kernels if f.name == name), None)


class Cuda:
    """The CUDA language: kernels compiled from the candidate's own load_inline sources."""

    name = "cuda"

    def uses(self, src: str) -> bool:
        return ("load_inline" in src or "__global__" in src) and any(u.kernels or u.hosts for u in units(src))

    def kernels(self, src: str) -> list[Kernel]:
        return [Kernel(k.name, k.line, self.name) for u in units(src) for k in u.kernels]

    def launches(self, src: str) -> list[Launch]:
        return [Launch(ln.kernel, u.pyline(ln.node), text(ln.grid), text(ln.block), ln.host.name, self.name)
                for u in units(src) for ln in u.launches]

    def bound_functions(self, src: str) -> dict[str, str]:
        """Exported name -> host function, from the loaders' functions=[...] and pybind11 m.def."""
        out: dict[str, str] = {}
        for u in units(src):
            for name in u.source.functions:
                if any(f.name == name for v in units(src) for f in v.hosts):
                    out[name] = name
            out.update(u.pybind_exports)
        return out

    def recipes(self) -> list:
        """The CUDA fix recipes (debugger/lang/cuda/recipes)."""
        return list(RECIPES)

    def static_facts(self, src: str) -> list[Fact]:
        all_units = units(src)
        facts: list[Fact] = []
        python = python_code(src)
        for u in all_units:
            for k in u.kernels:
                facts += kernel_facts(k, lambda fn, ptr, _u=u: combines(_u, fn, ptr, python), python)
            for fn in u.functions:
                if fn.kind != "host":
                    facts += tanh_gelu_facts(fn)
            for ln in u.launches:
                facts += launch_facts(u, ln, _kernel(all_units, ln.kernel))
        if not any(f.tag == "cuda_reads_running_stats" for f in facts):
            facts += _running_stats_from_python(src, python)
        facts += _dense_inputs_from_python(src)
        seen, out = set(), []
        for f in facts:
            if (f.tag, f.line) not in seen:
                seen.add((f.tag, f.line))
                out.append(f)
        return out


def _running_stats_from_python(src: str, python: str) -> list[Fact]:
    """forward hands a BatchNorm's running_mean/running_var to a call (the extension) with no
    `self.training` branch anywhere: the kernel normalises with eval-mode statistics."""
    import re

    from debugger.lang.cuda.sources import PythonFile
    from debugger.source.tree import enclosing, walk as pywalk

    if re.search(r"\btraining\b", python):
        return []
    for n in pywalk(PythonFile(src).root):
        if n.type == "attribute" and text(n.child_by_field_name("attribute")) in ("running_mean", "running_var") \
                and n.parent is not None and n.parent.type == "argument_list":
            fn = enclosing(n, "function_definition")
            if fn is not None and text(fn.child_by_field_name("name")) == "forward":
                return [Fact("cuda_reads_running_stats", f"forward hands {text(n)} to the extension with no "
                                                         f"self.training branch: eval-mode statistics in a train-mode "
                                                         f"run", n.start_point[0] + 1, "cuda")]
    return []


def _dense_inputs_from_python(src: str) -> list[Fact]:
    """Tensors handed to the extension's `torch::Tensor` parameters as they come (no `.contiguous()` on
    either side, no strides read): its kernels read them as dense, so a strided view is read wrongly or
    refused. A description, not evidence: most real answers do this and are right on the task's inputs
    (only the layout checks tell), so the ranking gives it no weight."""
    from debugger.lang.cuda.recipes.contiguous import dense_inputs
    from debugger.recipes.base import source_of

    s = source_of(src)  # the parse the recipes share
    if not s.ok:
        return []
    at_top, relaid = dense_inputs(s)
    facts = [Fact("cuda_input_assumed_dense", f"{text(host.child_by_field_name('name'))} hands "
                  f"{', '.join(names)} to the extension as given: its kernels read them as dense",
                  host.start_point[0] + 1, "cuda") for host, names in at_top.values()]
    facts += [Fact("cuda_input_assumed_dense", f"{text(arg)} (a re-laid view) is handed to the extension as it is: "
                   "its kernels read it as dense", arg.start_point[0] + 1, "cuda") for arg in relaid]
    return facts


LANGUAGE = Cuda()
register(*RECIPES)
