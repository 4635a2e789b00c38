"""The train-mode BatchNorm fix: batch statistics from a reduction kernel where the answer used running ones.

Real answers fold BatchNorm into its running statistics ("inference mode"): forward hands
`bn.running_mean` and `bn.running_var` (or buffers of its own, `self.running_mean`) straight to the
kernel that normalises. KernelBench runs both models in train mode, where BatchNorm normalises with
the batch's per-channel mean and biased variance. The fix, in the candidate's own language:
- a reduction kernel (one program per channel, over N and the spatial dimensions) returns the batch's
  mean and biased variance and updates the running statistics in place as PyTorch does
  (running = (1 - momentum) * running + momentum * batch statistic, the variance unbiased; momentum
  from the module, 0.1 where it has none; momentum=None, PyTorch's cumulative average, is not
  reproduced: the running statistics are then left as they are);
- before the call, `_bn_mean, _bn_var = (stats(x, ...) if self.training else (running_mean, running_var))`,
  and the call takes `_bn_mean, _bn_var` in place of the running statistics: the eval-mode path stays
  as the answer wrote it.

This module finds the sites and writes the Python side (`forward_edits`, `MOMENTUM_HELPER`); the
Triton recipe (`BatchNormBatchStats`) adds a Triton kernel, the CUDA one
(debugger/lang/cuda/recipes/batchnorm.py) a kernel in the answer's load_inline source.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Iterator

from debugger.recipes.base import Patch, Recipe
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit

RECIPE_ID = "bn_batch_stats"
MOMENTUM_FN = "_bn_momentum"
MOMENTUM_HELPER = f'''def {MOMENTUM_FN}(module):
    """BatchNorm's running-statistics factor: the module's momentum (PyTorch's 0.1 where it has none);
    -1 (no update) for momentum=None, PyTorch's cumulative average (train-mode BatchNorm fix)."""
    momentum = getattr(module, "momentum", 0.1)
    return -1.0 if momentum is None else float(momentum)


'''


@dataclass
class StatsSite:
    """A call in forward handed a module's running mean and variance."""

    forward: ast.FunctionDef
    call: ast.Call
    stmt: ast.stmt          # the statement holding the call (the fix goes on the lines before it)
    owner: str              # source of the object holding the statistics ("self.bn", "bn", "self")
    mean: ast.expr
    var: ast.expr
    x: ast.expr             # the normalised tensor: the call's first positional argument


def _is_stat(node: ast.expr, kind: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr.endswith(f"running_{kind}")


def _statements(fn: ast.FunctionDef) -> Iterator[ast.stmt]:
    for node in ast.walk(fn):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)) and \
                not hasattr(node, "body"):
            yield node


def _forwards(tree: ast.Module) -> list[ast.FunctionDef]:
    return [f for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
            for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "forward"]


def stats_sites(src: str, accept: Callable[[ast.Call], bool] = lambda call: True) -> list[StatsSite]:
    """Calls of every `forward` (whose code never tests `training`) that take a running mean and the
    matching running variance as arguments, at most one per statement; `accept` filters the calls."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return []
    out = []
    for fn in _forwards(tree):
        if not fn.args.args or any(isinstance(n, ast.Attribute) and n.attr == "training" for n in ast.walk(fn)):
            continue
        for stmt in sorted(_statements(fn), key=lambda n: (n.lineno, n.col_offset)):
            for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
                args = call.args
                means = [a for a in args if _is_stat(a, "mean")]
                if len(means) != 1 or not args or args[0] is means[0] or not accept(call):
                    continue
                mean = means[0]
                var_attr = mean.attr[: -len("mean")] + "var"
                owner = ast.unparse(mean.value)
                var = next((a for a in args if isinstance(a, ast.Attribute) and a.attr == var_attr
                            and ast.unparse(a.value) == owner), None)
                if var is not None and not any(isinstance(n, ast.Call) and n is not call and
                                               any(_is_stat(a, "mean") for a in n.args) for n in ast.walk(args[0])):
                    out.append(StatsSite(fn, call, stmt, owner, mean, var, args[0]))
                    break
    return out


def _line_offsets(data: bytes) -> list[int]:
    starts = [0]
    for i, b in enumerate(data):
        if b == 10:
            starts.append(i + 1)
    return starts


def forward_edits(src: str, sites: list[StatsSite], stats_call: Callable[[StatsSite], str]) -> list[Edit] | None:
    """The forward side of the fix for each site (`stats_call(site)`: the callee computing the batch
    statistics); None when a site's statement does not start its own line."""
    data = src.encode()
    starts = _line_offsets(data)

    def at(line: int, col: int) -> int:
        return starts[line - 1] + col

    edits: list[Edit] = []
    for k, site in enumerate(sites):
        line_start = starts[site.stmt.lineno - 1]
        if data[line_start:at(site.stmt.lineno, site.stmt.col_offset)].strip():
            return None  # `if a: x = f(...)` on one line
        indent = " " * site.stmt.col_offset
        suffix = "" if k == 0 else f"_{k + 1}"
        mean_name, var_name = f"_bn_mean{suffix}", f"_bn_var{suffix}"
        x_text = ast.get_source_segment(src, site.x)
        lines = ""
        if not isinstance(site.x, (ast.Name, ast.Attribute)):  # evaluated once, as the answer did
            x_name = f"_bn_input{suffix}"
            value = f"({x_text})" if "\n" in x_text else x_text  # a multi-line argument keeps its brackets
            lines += f"{indent}{x_name} = {value}\n"
            edits.append(Edit(at(site.x.lineno, site.x.col_offset), at(site.x.end_lineno, site.x.end_col_offset),
                              x_name))
            x_text = x_name
        mean, var = ast.get_source_segment(src, site.mean), ast.get_source_segment(src, site.var)
        self_name = site.forward.args.args[0].arg
        lines += (f"{indent}# train mode (KernelBench runs it so): the batch's statistics, running ones updated\n"
                  f"{indent}{mean_name}, {var_name} = (\n"
                  f"{indent}    {stats_call(site)}({x_text}, {mean}, {var}, {MOMENTUM_FN}({site.owner}))\n"
                  f"{indent}    if {self_name}.training else ({mean}, {var}))\n")
        edits.append(Edit.insert(line_start, lines))
        for node, name in ((site.mean, mean_name), (site.var, var_name)):
            edits.append(Edit(at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset), name))
    return edits


def module_insert_point(src: str) -> int | None:
    """Byte offset of the line of the first top-level class (helpers go before it)."""
    tree = ast.parse(src)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if cls is None:
        return None
    line = (cls.decorator_list[0].lineno if cls.decorator_list else cls.lineno)
    return _line_offsets(src.encode())[line - 1]


# -- Triton --------------------------------------------------------------------------------------------
STATS_FN = "_bn_batch_stats"

TRITON_STATS = '''@{triton}.jit
def {fn}_kernel(x_ptr, mean_ptr, var_ptr, rmean_ptr, rvar_ptr, n, c, s, momentum, BLOCK: {tl}.constexpr):
    """Train-mode BatchNorm: one program per channel reduces over N and the spatial dimensions to the
    batch's mean and biased variance, and updates the running statistics (unbiased variance)."""
    ch = {tl}.program_id(0).to({tl}.int64)
    count = n * s
    acc = {tl}.zeros([BLOCK], dtype={tl}.float32)
    for start in range(0, count, BLOCK):
        i = start + {tl}.arange(0, BLOCK).to({tl}.int64)
        b = i // s
        acc += {tl}.load(x_ptr + (b * c + ch) * s + (i - b * s), mask=i < count, other=0.0).to({tl}.float32)
    mean = {tl}.sum(acc, axis=0) / count
    acc = {tl}.zeros([BLOCK], dtype={tl}.float32)
    for start in range(0, count, BLOCK):
        i = start + {tl}.arange(0, BLOCK).to({tl}.int64)
        b = i // s
        v = {tl}.load(x_ptr + (b * c + ch) * s + (i - b * s), mask=i < count, other=0.0).to({tl}.float32)
        d = {tl}.where(i < count, v - mean, 0.0)
        acc += d * d
    m2 = {tl}.sum(acc, axis=0)
    {tl}.store(mean_ptr + ch, mean)
    {tl}.store(var_ptr + ch, m2 / count)
    if momentum >= 0:
        unbiased = m2 / {tl}.maximum(count - 1, 1)
        rm = {tl}.load(rmean_ptr + ch)
        rv = {tl}.load(rvar_ptr + ch)
        {tl}.store(rmean_ptr + ch, (1.0 - momentum) * rm + momentum * mean)
        {tl}.store(rvar_ptr + ch, (1.0 - momentum) * rv + momentum * unbiased)


def {fn}(x, running_mean, running_var, momentum):
    """The batch's per-channel mean and biased variance (the Triton reduction above); the running
    statistics updated in place as PyTorch does (train-mode BatchNorm fix)."""
    x = x.contiguous()
    n, c = x.shape[0], x.shape[1]
    s = x.numel() // max(n * c, 1)
    mean = torch.empty(c, device=x.device, dtype=torch.float32)
    var = torch.empty(c, device=x.device, dtype=torch.float32)
    {fn}_kernel[(c,)](x, mean, var, running_mean, running_var, n, c, s, momentum, BLOCK=1024)
    return mean, var


'''


class BatchNormBatchStats(Recipe):
    """Triton: a batch-statistics reduction kernel where forward hands running statistics to a kernel."""

    id = RECIPE_ID
    bug_classes = ("train_eval_mode",)
    symptoms = ("passes_in_eval_mode", "all_wrong", "whole_cols_wrong")
    description = "normalise with the batch's statistics in train mode (a Triton reduction), update the running ones"

    def _propose(self, s: Source, hints: dict) -> Iterator[Patch | None]:
        if "load_inline" in s.src or not s.kernels or STATS_FN in s.src:
            return
        sites = stats_sites(s.src)
        at = module_insert_point(s.src) if sites else None
        edits = forward_edits(s.src, sites, lambda site: STATS_FN) if at is not None else None
        if not edits:
            return
        triton = next((a for a, m in s.aliases.items() if m == "triton" and a in s.imported_names), None)
        if triton is None or "torch" not in s.imported_names:
            return
        helpers = TRITON_STATS.format(triton=triton, tl=s.tl, fn=STATS_FN) + MOMENTUM_HELPER
        owners = ", ".join(dict.fromkeys(site.owner for site in sites))
        yield self.patch(s, [Edit.insert(at, helpers)] + edits,
                         f"train mode: normalise with the batch's statistics of {owners} (Triton reduction), "
                         f"running statistics updated")
