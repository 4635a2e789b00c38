"""Every way kdebug finds a Triton kernel and its launches gives the same answer.

The finders: the Triton language (debugger.lang's `kernels`/`launches`), the recipes' syntax view
(recipes/syntax.py `Source.kernels`/`Source.launches`), the host model the integrity gate reads
(source/host.py `SourceModule.kernels` and the Triton launches of `SourceModule.launches(fn)` over every
function), the localisation spans (lang/spans.py `kernel_lines`, its Triton part) and the prompt's kernel
list (backends/kernel_lang.py `kernels`, for a Triton file). They must agree on the set of kernel names
and on the launch sites (kernel name, line) of every candidate file the repository holds, and of the
launch and definition forms written below, each with its expected answer.

A launch whose kernel is not known statically (a kernel passed in as a parameter, a variable naming one
of several kernels) has no kernel name: it is not a (kernel, line) site.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from debugger.backends import kernel_lang
from debugger.lang import get
from debugger.lang.spans import extension_spans, kernel_lines
from debugger.recipes.syntax import Source
from debugger.source.host import SourceModule
from debugger.source.tree import line

REPO = Path(__file__).resolve().parents[1]
PATTERNS = ("eval/cases/*/candidate.py", "eval/cases/*/fixed.py", "examples/*/candidate.py", "examples/*/fixed.py",
            "eval/integrity/cheats/*.py", "eval/integrity/honest/*.py", "tests/data/recipes/*/candidate.py",
            "tests/data/recipes/correct/*.py", "tests/data/kernels/*_kernel.py", "kb/reference_kernels/*/kernel.py")
CANDIDATES = sorted({str(p.relative_to(REPO)) for pattern in PATTERNS for p in REPO.glob(pattern)})


def kernel_names(src: str) -> dict[str, set[str]]:
    """Finder -> the kernel names it finds."""
    syntax = {k.name for k in Source(src).kernels}
    out = {
        "lang": {k.name for k in get("triton").kernels(src)},
        "syntax": syntax,
        "host": set(SourceModule(src).kernels),
        # an exported function of a CUDA extension is not a Triton kernel
        "spans": set(kernel_lines(src)) - (set(extension_spans(src)) - syntax),
    }
    if kernel_lang.language(src) == "triton":
        out["kernel_lang"] = set(kernel_lang.kernels(src))
    return out


def launch_sites(src: str) -> dict[str, set[tuple[str, int]]]:
    """Finder -> the (kernel, line) of each launch of a named kernel it finds."""
    module = SourceModule(src)
    host = {(ln.kernel, ln.line) for fn in module.functions.values() for ln in module.launches(fn)
            if ln.kind == "triton" and ln.kernel is not None}
    return {
        "lang": {(ln.kernel, ln.line) for ln in get("triton").launches(src)},
        "syntax": {(ln.kernel, line(ln.call)) for ln in Source(src).launches},
        "host": host,
    }


def assert_agree(found: dict[str, set]) -> set:
    answers = {frozenset(v) for v in found.values()}
    assert len(answers) == 1, {name: sorted(v, key=str) for name, v in found.items()}
    return set(next(iter(answers)))


def test_the_corpus_is_found():
    assert len(CANDIDATES) > 250
    assert any(p.startswith("eval/integrity/honest/") for p in CANDIDATES)
    assert any(p.startswith("kb/reference_kernels/") for p in CANDIDATES)


# Measured before the finders shared source/kernels.py (recipes/syntax.py and source/host.py each walked
# the tree themselves), one corpus file disagreed: eval/integrity/honest/relu_triton_op.py, whose
# wrap_triton(relu_kernel)[grid](...) only the host model saw.
@pytest.mark.parametrize("path", CANDIDATES)
def test_finders_agree_on_the_repository_s_candidates(path):
    src = (REPO / path).read_text()
    assert_agree(kernel_names(src))
    assert_agree(launch_sites(src))


HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
KERNEL = "@triton.jit\ndef add_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\n"
OTHER = "@triton.jit\ndef sub_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\n"

# form -> (source, kernel names, {(kernel, start of the launch line)}[, how the finders differed when
# each walked the tree itself, measured before they shared source/kernels.py])
FORMS = {
    "plain": (HEAD + KERNEL + "def run(x):\n    add_kernel[(1,)](x, 4, BLOCK=4)\n",
              {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")}),
    "lambda_grid": (HEAD + KERNEL + "def run(x):\n    add_kernel[lambda m: (1,)](x, 4, BLOCK=4)\n",
                    {"add_kernel"}, {("add_kernel", "add_kernel[lambda")}),
    "method_launch": (HEAD + KERNEL + "class M(torch.nn.Module):\n    def forward(self, x):\n"
                      "        add_kernel[(1,)](x, 4, BLOCK=4)\n        return x\n",
                      {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")}),
    "autotune": (HEAD + "@triton.autotune(configs=[], key=['n'])\n" + KERNEL + "def run(x):\n    add_kernel[(1,)](x, 4)\n",
                 {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")}),
    "from_import_jit": (HEAD + "from triton import jit\n\n\n" + KERNEL.replace("@triton.jit", "@jit")
                        + "def run(x):\n    add_kernel[(1,)](x, 4, BLOCK=4)\n",
                        {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")}),
    "aliased_triton": (HEAD + "import triton as tr\n\n\n" + KERNEL.replace("@triton.jit", "@tr.jit")
                       + "def run(x):\n    add_kernel[(1,)](x, 4, BLOCK=4)\n",
                       {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")},
                       "the syntax view matched decorators by their text: @tr.jit was no kernel there"),
    "wrap_triton": (HEAD + "from torch.library import wrap_triton\n\n\n" + KERNEL
                    + "def run(x):\n    wrap_triton(add_kernel)[(1,)](x, 4, BLOCK=4)\n",
                    {"add_kernel"}, {("add_kernel", "wrap_triton(add_kernel)[(1,)]")},
                    "only the host model resolved wrap_triton(kernel)[grid](...)"),
    "alias_variable": (HEAD + KERNEL + "def run(x):\n    k = add_kernel\n    k[(1,)](x, 4, BLOCK=4)\n",
                       {"add_kernel"}, {("add_kernel", "k[(1,)]")},
                       "only the host model followed a variable naming one kernel"),
    "self_attribute": (HEAD + KERNEL + "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       "        self.kernel = add_kernel\n\n    def forward(self, x):\n"
                       "        self.kernel[(1,)](x, 4, BLOCK=4)\n        return x\n",
                       {"add_kernel"}, {("add_kernel", "self.kernel[(1,)]")},
                       "only the host model followed self.kernel = add_kernel"),
    "kernel_table": (HEAD + KERNEL + "KERNELS = {'add': add_kernel}\n\n\n"
                     "def run(x):\n    KERNELS['add'][(1,)](x, 4, BLOCK=4)\n",
                     {"add_kernel"}, {("add_kernel", "KERNELS['add'][(1,)]")},
                     "only the host model followed a table of kernels"),
    "run_method": (HEAD + KERNEL + "def run(x):\n    add_kernel.run(x, 4, BLOCK=4, grid=(1,), warmup=False)\n",
                   {"add_kernel"}, {("add_kernel", "add_kernel.run(")},
                   "only the host model counted kernel.run(...) as a launch"),
    "jit_call": (HEAD + "def add(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n\nadd_kernel = triton.jit(add)\n\n\n"
                 "def run(x):\n    add_kernel[(1,)](x, 4, BLOCK=4)\n",
                 {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")},
                 "only the host model read k = triton.jit(fn) as a kernel"),
    "class_kernel": (HEAD + "class M(torch.nn.Module):\n    @staticmethod\n" + KERNEL.replace("@", "    @").replace(
                         "def", "    def").replace("    pass", "        pass").rstrip() + "\n\n    def forward(self, x):\n"
                     "        self.add_kernel[(1,)](x, 4, BLOCK=4)\n        return x\n",
                     {"add_kernel"}, {("add_kernel", "self.add_kernel[(1,)]")},
                     "the host model left class-level kernels out; the syntax view did not follow self.add_kernel"),
    "nested_kernel": (HEAD + "def run(x):\n    " + KERNEL.replace("\n", "\n    ").rstrip() + "\n"
                      "    add_kernel[(1,)](x, 4, BLOCK=4)\n",
                      {"add_kernel"}, {("add_kernel", "add_kernel[(1,)]")},
                      "the host model only read module- and class-level definitions"),
    # a launch whose kernel is one of two, or handed in: no named site
    "dispatch": (HEAD + KERNEL + OTHER + "def run(x, neg):\n    k = sub_kernel if neg else add_kernel\n"
                 "    k[(1,)](x, 4, BLOCK=4)\n", {"add_kernel", "sub_kernel"}, set()),
    "kernel_parameter": (HEAD + KERNEL + "def launch(kernel, x):\n    kernel[(1,)](x, 4, BLOCK=4)\n\n\n"
                         "def run(x):\n    launch(add_kernel, x)\n", {"add_kernel"}, set()),
    # a jit of another library is no Triton kernel; subscripting a tensor then calling it is no launch
    "numba_jit": ("from numba import jit\nimport triton\n\n\n@jit\ndef f(x):\n    return x\n\n\n"
                  "def run(x):\n    return f(x)\n", set(), set(),
                  "the syntax view matched a bare @jit of any library"),
}


@pytest.mark.parametrize("form", FORMS)
def test_finders_agree_on_each_form(form):
    src, names, sites = FORMS[form][:3]
    lines = src.splitlines()
    expected = {(k, next(i + 1 for i, ln in enumerate(lines) if ln.strip().startswith(start))) for k, start in sites}
    assert assert_agree(kernel_names(src)) == names
    assert assert_agree(launch_sites(src)) == expected


def test_a_launch_inside_a_kernel_body_is_no_launch():
    """Measured before source/kernels.py: the host model counted a subscript call in a kernel body."""
    src = HEAD + textwrap.dedent("""\
        @triton.jit
        def add_kernel(x_ptr, n, BLOCK: tl.constexpr):
            pass


        @triton.jit
        def outer_kernel(x_ptr, table_ptr, n, BLOCK: tl.constexpr):
            v = tl.load(table_ptr)
            add_kernel[v](x_ptr)


        def run(x):
            outer_kernel[(1,)](x, x, 4, BLOCK=4)
        """)
    launch = src.splitlines().index("    outer_kernel[(1,)](x, x, 4, BLOCK=4)") + 1
    assert assert_agree(launch_sites(src)) == {("outer_kernel", launch)}
