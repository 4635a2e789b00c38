"""cuda_bn_batch_stats: train-mode BatchNorm for a CUDA answer that normalises with the running statistics.

Real answers (fact `cuda_reads_running_stats`) hand `bn.running_mean`, `bn.running_var` from forward
to an extension function whose kernel normalises with them (eval mode) while KernelBench runs the
model in train mode. The fix, in the answer's own extension (the load_inline whose `functions=[...]`
binds the function forward calls):
- the CUDA source gains `bn_batch_stats_train_partials_kernel` (blocks over slices of each channel's values:
  their sums and squared deviations, in double) and `bn_batch_stats_train_kernel` (one thread per channel
  combines them: the batch's mean and biased variance; the running statistics updated in place with the
  unbiased variance and the module's momentum, none when it is negative) and their host function
  `bn_batch_stats_train(x, running_mean, running_var, momentum)`;
- cpp_sources gains its declaration and `functions=` its name, so the answer's own binding exports it;
- forward computes `_bn_mean, _bn_var` with it when `self.training` (through the extension object the
  call already uses; where the sites call several extensions, through the module-level name of the first
  one's load_inline) and passes them in place of the running statistics (debugger/recipes/batchnorm_train.py writes that side); eval mode is unchanged.
"""
from __future__ import annotations

import ast
from typing import Iterator

from debugger.lang.cuda.splice import UnitSplice, error_count
from debugger.lang.cuda.unit import identifiers
from debugger.recipes.base import Patch, Recipe
from debugger.recipes.batchnorm_train import MOMENTUM_HELPER, forward_edits, module_insert_point, stats_sites
from debugger.recipes.syntax import Source
from debugger.source.edits import Edit
from debugger.source.tree import walk
from debugger.source.tree import call_args, text, unparen

FN = "bn_batch_stats_train"
DECLARATION = (f"\nstd::vector<torch::Tensor> {FN}(torch::Tensor x, torch::Tensor running_mean, "
               f"torch::Tensor running_var, double momentum);\n")
KERNEL = f'''

// Train-mode BatchNorm (the train-mode fix): the batch's mean and biased variance of each channel over N and the
// spatial dimensions, in double. Blocks split each channel's n * s values into contiguous slices (grid c x parts,
// about a thousand blocks in all: one block per channel leaves most of a GPU idle when channels are few); each
// block sums its slice and the squared deviations from the slice's own mean, and one thread per channel combines
// the slices (Chan's formula) and updates the running statistics in place as PyTorch does (unbiased variance;
// momentum < 0: no update).
__global__ void {FN}_partials_kernel(
        const float* __restrict__ x, double* __restrict__ part_mean, double* __restrict__ part_m2, long long n,
        long long c, long long s, long long chunk, int parts) {{
    __shared__ double partial[256];
    const long long ch = blockIdx.x;
    const long long lo = (long long)blockIdx.y * chunk;
    const long long hi = lo + chunk < n * s ? lo + chunk : n * s;
    double sum = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {{
        const long long b = i / s;
        sum += (double)x[(b * c + ch) * s + (i - b * s)];
    }}
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {{
        if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }}
    const double mean = hi > lo ? partial[0] / (double)(hi - lo) : 0.0;
    __syncthreads();
    double sq = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {{
        const long long b = i / s;
        const double d = (double)x[(b * c + ch) * s + (i - b * s)] - mean;
        sq += d * d;
    }}
    partial[threadIdx.x] = sq;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {{
        if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }}
    if (threadIdx.x == 0) {{
        part_mean[ch * parts + blockIdx.y] = mean;
        part_m2[ch * parts + blockIdx.y] = partial[0];
    }}
}}

__global__ void {FN}_kernel(
        const double* __restrict__ part_mean, const double* __restrict__ part_m2, float* __restrict__ mean_out,
        float* __restrict__ var_out, float* __restrict__ running_mean, float* __restrict__ running_var, long long c,
        long long count, long long chunk, int parts, float momentum) {{
    const long long ch = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    double total = 0.0, mean = 0.0, m2 = 0.0;
    for (int p = 0; p < parts; ++p) {{
        const long long lo = (long long)p * chunk;
        if (lo >= count) break;
        const double m = (double)(lo + chunk < count ? chunk : count - lo);
        const double delta = part_mean[ch * parts + p] - mean;
        const double t = total + m;
        mean += delta * m / t;
        m2 += part_m2[ch * parts + p] + delta * delta * total * m / t;
        total = t;
    }}
    mean_out[ch] = (float)mean;
    var_out[ch] = (float)(count > 0 ? m2 / (double)count : 0.0);
    if (momentum >= 0.0f) {{
        const double unbiased = count > 1 ? m2 / (double)(count - 1) : m2;
        running_mean[ch] = (1.0f - momentum) * running_mean[ch] + momentum * (float)mean;
        running_var[ch] = (1.0f - momentum) * running_var[ch] + momentum * (float)unbiased;
    }}
}}

std::vector<torch::Tensor> {FN}(
        torch::Tensor x, torch::Tensor running_mean, torch::Tensor running_var, double momentum) {{
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat && x.dim() >= 2, "{FN}: float32 CUDA (N, C, ...)");
    auto xc = x.contiguous();
    const int64_t n = xc.size(0), c = xc.size(1);
    const int64_t s = n * c > 0 ? xc.numel() / (n * c) : 0;
    TORCH_CHECK(running_mean.numel() == c && running_var.numel() == c && running_mean.is_contiguous() &&
                running_var.is_contiguous() && running_mean.scalar_type() == torch::kFloat &&
                running_var.scalar_type() == torch::kFloat, "{FN}: running statistics of C float32 values");
    auto mean = torch::empty({{c}}, xc.options());
    auto var = torch::empty({{c}}, xc.options());
    if (c > 0) {{
        const int64_t count = n * s;
        // slices of at least 4096 values, at most 1024 per channel, about 1024 blocks in all
        int64_t parts = std::min<int64_t>((count + 4095) / 4096, std::max<int64_t>(1, (1024 + c - 1) / c));
        parts = std::max<int64_t>(1, std::min<int64_t>(parts, 1024));
        const int64_t chunk = count > 0 ? (count + parts - 1) / parts : 1;
        auto part_mean = torch::empty({{c * parts}}, xc.options().dtype(torch::kDouble));
        auto part_m2 = torch::empty({{c * parts}}, xc.options().dtype(torch::kDouble));
        {FN}_partials_kernel<<<dim3((unsigned int)c, (unsigned int)parts), 256>>>(
            xc.data_ptr<float>(), part_mean.data_ptr<double>(), part_m2.data_ptr<double>(), n, c, s, chunk,
            (int)parts);
        {FN}_kernel<<<(unsigned int)((c + 127) / 128), 128>>>(
            part_mean.data_ptr<double>(), part_m2.data_ptr<double>(), mean.data_ptr<float>(), var.data_ptr<float>(),
            running_mean.data_ptr<float>(), running_var.data_ptr<float>(), c, count, chunk, (int)parts,
            (float)momentum);
    }}
    return {{mean, var}};
}}
'''


def _bound(src: str) -> dict[str, tuple]:
    """Exported name -> (its load_inline call, that call's functions= node) for literal lists, tuples, strings."""
    from debugger.lang.cuda.sources import PythonFile

    out = {}
    for call in PythonFile(src).loader_calls:
        pos, kw = call_args(call)
        node = kw.get("functions", pos[3] if len(pos) > 3 else None)
        if node is None:
            continue
        node = unparen(node)
        items = node.named_children if node.type in ("list", "tuple") else [node]
        for item in items:
            if item.type == "string":
                out[text(item).strip("'\"")] = (call, node)
    return out


def _normalises_its_input(all_units, site) -> bool:
    """The host function the site calls hands its first argument and the running mean to one call (a
    launch or a helper): the statistics are those of the tensor forward passes, not of one the host
    computes first (a GEMM's output). True when the host function is not found (nothing to judge by)."""
    host = next((f for u in all_units for f in u.hosts if f.name == site.call.func.attr), None)
    index = next(i for i, a in enumerate(site.call.args) if a is site.mean)
    if host is None or host.body is None or len(host.params) <= index:
        return True
    x, mean = host.params[0].name, host.params[index].name
    return any(n.type == "call_expression" and {x, mean} <= identifiers(n.child_by_field_name("arguments"))
               for n in walk(host.body))


def _module_name(call) -> str | None:
    """`ext` of a module-level `ext = load_inline(...)`."""
    assign = call.parent
    if assign is None or assign.type != "assignment" or assign.parent is None or \
            assign.parent.type != "expression_statement" or assign.parent.parent is None or \
            assign.parent.parent.type != "module":
        return None
    left = assign.child_by_field_name("left")
    return text(left) if left is not None and left.type == "identifier" else None


def _functions_edit(node) -> Edit | None:
    """`functions=` with the new name added (a list or tuple gains an item; a lone string becomes a list)."""
    if node.type == "string":
        return Edit(node.start_byte, node.end_byte, f'[{text(node)}, "{FN}"]')
    items = [c for c in node.named_children if c.type != "comment"]
    if node.type not in ("list", "tuple") or not items:
        return None
    return Edit.insert(items[-1].end_byte, f', "{FN}"')


class CudaBatchNormBatchStats(Recipe):
    """Batch statistics from a reduction kernel in the answer's own extension, in train mode."""

    id = "cuda_bn_batch_stats"
    bug_classes = ("train_eval_mode",)
    symptoms = ("cuda_reads_running_stats", "passes_in_eval_mode", "all_wrong", "whole_cols_wrong")
    description = "normalise with the batch's statistics in train mode (a CUDA reduction), update the running ones"

    def _propose(self, s: Source, hints: dict) -> Iterator[Patch | None]:
        from debugger.lang.cuda import units

        if "load_inline" not in s.src or FN in s.src:
            return
        bound = _bound(s.src)

        def extension_call(call: ast.Call) -> bool:
            return isinstance(call.func, ast.Attribute) and call.func.attr in bound

        cuda_units = units(s.src)
        sites = [site for site in stats_sites(s.src, extension_call) if _normalises_its_input(cuda_units, site)]
        if not sites:
            return
        call, functions = bound[sites[0].call.func.attr]  # one extension gains the statistics function
        if len({bound[site.call.func.attr][0].start_byte for site in sites}) == 1:
            def callee(site):  # through the object each call already uses
                return f"{ast.unparse(site.call.func.value)}.{FN}"
        else:  # sites of several extensions: the first one's, through its module-level name
            name = _module_name(call)
            if name is None:
                return

            def callee(site):
                return f"{name}.{FN}"
        at = module_insert_point(s.src)
        py_edits = forward_edits(s.src, sites, callee)
        names = _functions_edit(functions)
        if at is None or not py_edits or names is None:
            return
        before = cuda_units
        mine = {u.source.kind: u for u in before if u.source.loader_line == call.start_point[0] + 1}
        if set(mine) != {"cuda", "cpp"}:
            return
        edits = [Edit.insert(at, MOMENTUM_HELPER), names] + py_edits
        for kind, added in (("cuda", KERNEL), ("cpp", DECLARATION)):
            end = len(mine[kind].source.text.encode())
            mapped = UnitSplice(s.src, mine[kind]).edits([(end, end, added)])
            if not mapped:
                return
            edits += mapped
        patch = self.patch(s, edits, f"train mode: normalise with the batch's statistics of "
                                     f"{', '.join(dict.fromkeys(site.owner for site in sites))} (a CUDA reduction "
                                     f"exported as {FN}), running statistics updated")
        if patch is not None and error_count(units(patch.new_src)) <= error_count(before):
            yield patch
