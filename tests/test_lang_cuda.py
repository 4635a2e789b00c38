"""The CUDA language layer: sources found in load_inline arguments, lines mapped back to the Python
file, kernels/launches/bindings, each static fact on a small kernel of our own with the fault and
without it, the diagnosis wiring, and the package import graph."""
from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from debugger import lang
from debugger.lang.cuda import units
from debugger.lang.cuda.sources import find_sources

CUDA = lang.get("cuda")
REPO = Path(__file__).resolve().parents[1]

HEAD = '''import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

'''
TAIL = '''
cpp_src = "torch::Tensor run(torch::Tensor x);"
ext = load_inline(name="ext", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
'''


def candidate(cuda: str, tail: str = TAIL) -> str:
    """A candidate file whose CUDA source is a module-level triple-quoted constant."""
    return HEAD + 'cuda_src = """\n' + cuda + '"""\n' + tail


def tags(src: str) -> set[str]:
    return {f.tag for f in CUDA.static_facts(src)}


def fact(src: str, tag: str):
    found = [f for f in CUDA.static_facts(src) if f.tag == tag]
    assert found, f"no {tag} in {[(f.tag, f.line) for f in CUDA.static_facts(src)]}"
    return found[0]


def line_of(src: str, needle: str) -> int:
    return next(i for i, ln in enumerate(src.splitlines(), 1) if needle in ln)


HOST = '''
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    int threads = 256;
    int blocks = (n + threads - 1) / threads;
    scale<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
'''
GUARDED = '''
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = 2.0f * x[i];
    }
}
''' + HOST
UNGUARDED = '''
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[i];
}
''' + HOST
EARLY_RETURN = '''
__global__ void scale(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = 2.0f * x[i];
}
''' + HOST


# -- finding the sources -------------------------------------------------------------------------
def test_module_constant_source_is_found_with_its_bindings_and_lines():
    src = candidate(GUARDED)
    sources = find_sources(src)
    assert [s.kind for s in sources] == ["cuda", "cpp"]
    cuda = sources[0]
    assert cuda.functions == ("run",)
    assert cuda.loader_line == line_of(src, "ext = load_inline")
    assert CUDA.uses(src)
    assert [(k.name, k.line) for k in CUDA.kernels(src)] == [("scale", line_of(src, "__global__ void scale"))]
    (launch,) = CUDA.launches(src)
    assert (launch.kernel, launch.grid, launch.block, launch.host) == ("scale", "blocks", "threads", "run")
    assert launch.line == line_of(src, "scale<<<")
    assert CUDA.bound_functions(src) == {"run": "run"}


def test_every_cuda_line_maps_to_the_python_line_holding_it():
    src = candidate(GUARDED)
    cuda = find_sources(src)[0]
    py = src.splitlines()
    for row, text in enumerate(cuda.text.splitlines()):
        if text.strip():
            assert py[cuda.pyline(row) - 1] == text


def test_concatenation_escapes_and_a_list_argument():
    src = HEAD + (
        'header = "#include <torch/extension.h>\\n#define K 2\\n"\n'
        'body = r"""\n'
        '__global__ void twice(const float* x, float* y, int n) {\n'
        '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
        '    y[i] = K * x[i];\n'
        '}\n'
        '"""\n'
        'ext = load_inline(name="e", cpp_sources="", cuda_sources=[header + body], functions=["f"])\n')
    (cuda,) = find_sources(src)
    assert cuda.text.startswith("#include <torch/extension.h>\n#define K 2\n")
    rows = cuda.text.splitlines()
    assert cuda.pyline(rows.index("#define K 2")) == line_of(src, "header =")  # an escaped newline
    store = fact(src, "cuda_unguarded_store")
    assert store.line == line_of(src, "y[i] = K * x[i]")


def test_inline_string_and_fstring_without_substitutions():
    src = HEAD + (
        'ext = load_inline(\n'
        '    name="e",\n'
        '    cpp_sources="torch::Tensor f(torch::Tensor x);",\n'
        '    cuda_sources=f"""\n'
        '__global__ void k(float* y, int n) {{\n'
        '    int i = threadIdx.x;\n'
        '    y[i] = 0.0f;\n'
        '}}\n'
        '""",\n'
        '    functions=["f"])\n')
    cuda = find_sources(src)[0]
    assert "__global__ void k(float* y, int n) {" in cuda.text
    assert fact(src, "cuda_unguarded_store").line == line_of(src, "y[i] = 0.0f")


def test_a_kernel_string_no_loader_reaches_is_still_read():
    src = HEAD + 'KERNEL = """\n' + UNGUARDED + '"""\n\ndef build(code):\n    return load_inline("e", "", code)\n'
    (cuda,) = find_sources(src)
    assert cuda.loader_line is None
    assert "cuda_unguarded_store" in tags(src)


def test_pybind_module_exports():
    cuda = GUARDED + '''
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("scale_forward", &run, "scale");
}
'''
    src = HEAD + 'cuda_src = """' + cuda + '"""\next = load_inline("e", "", cuda_src)\n'
    assert CUDA.bound_functions(src) == {"scale_forward": "run"}
    assert [f.name for u in units(src) for f in u.hosts] == ["run"]


def test_a_triton_or_pytorch_file_is_not_cuda():
    src = "import torch\nimport triton\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    assert not CUDA.uses(src)
    assert lang.static_facts(src) == []
    assert lang.used_by(candidate(GUARDED)) == [CUDA]


# -- bounds checks -------------------------------------------------------------------------------
def test_unguarded_load_and_store():
    src = candidate(UNGUARDED)
    assert fact(src, "cuda_unguarded_store").line == line_of(src, "y[i] = 2.0f * x[i]")
    assert "cuda_unguarded_load" in tags(src)
    for fixed in (GUARDED, EARLY_RETURN):
        assert not tags(candidate(fixed)) & {"cuda_unguarded_store", "cuda_unguarded_load"}


def test_a_literal_bound_on_the_thread_index_does_not_bound_the_global_index():
    src = candidate(UNGUARDED.replace("    y[i] = 2.0f * x[i];", "    if (threadIdx.x < 32) y[i] = 2.0f * x[i];"))
    assert "cuda_unguarded_store" in tags(src)


def test_grid_stride_loop_and_ternary_are_guards():
    looped = UNGUARDED.replace("    y[i] = 2.0f * x[i];",
                               "    for (; i < n; i += blockDim.x * gridDim.x) y[i] = 2.0f * x[i];")
    ternary = UNGUARDED.replace("    y[i] = 2.0f * x[i];", "    float v = i < n ? x[i] : 0.0f;")
    assert not tags(candidate(looped)) & {"cuda_unguarded_store", "cuda_unguarded_load"}
    assert "cuda_unguarded_load" not in tags(candidate(ternary))


# -- grid and block arithmetic -------------------------------------------------------------------
def test_floor_division_grid():
    src = candidate(GUARDED.replace("(n + threads - 1) / threads", "n / threads"))
    f = fact(src, "cuda_floor_div_grid")
    assert f.line == line_of(src, "int blocks = n / threads")
    assert "cuda_floor_div_grid" not in tags(candidate(GUARDED))


def test_floor_division_in_a_dim3_grid_against_a_define():
    tiled = '''
#define TILE 16
__global__ void fill(float* y, int h, int w) {
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    if (r < h && c < w) y[r * w + c] = 1.0f;
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int h = x.size(0), w = x.size(1);
    dim3 block(TILE, TILE);
    dim3 grid(w / TILE, h / TILE);
    fill<<<grid, block>>>(y.data_ptr<float>(), h, w);
    return y;
}
'''
    src = candidate(tiled)
    assert fact(src, "cuda_floor_div_grid").line == line_of(src, "dim3 grid(w / TILE")
    fixed = tiled.replace("dim3 grid(w / TILE, h / TILE)", "dim3 grid((w + TILE - 1) / TILE, (h + TILE - 1) / TILE)")
    assert "cuda_floor_div_grid" not in tags(candidate(fixed))


def test_grid_capped_without_a_grid_stride_loop():
    capped = GUARDED.replace("int blocks = (n + threads - 1) / threads;",
                             "int blocks = std::min((n + threads - 1) / threads, 65535);")
    src = candidate(capped)
    assert fact(src, "cuda_grid_capped").line == line_of(src, "std::min(")
    looped = capped.replace("    if (i < n) {\n        y[i] = 2.0f * x[i];\n    }",
                            "    for (; i < n; i += blockDim.x * gridDim.x) {\n        y[i] = 2.0f * x[i];\n    }")
    assert looped != capped
    assert "cuda_grid_capped" not in tags(candidate(looped))


ROW_SUM = '''
__global__ void row_sum(const float* x, float* y, int cols) {
    int row = blockIdx.x;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) acc += x[row * cols + j];
    atomicAdd(&y[row], acc);
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::zeros({x.size(0)}, x.options());
    int cols = x.size(1);
    int threads = std::min(cols, 1024);
    row_sum<<<x.size(0), threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
'''


def test_block_capped_without_a_block_stride_loop():
    capped = ROW_SUM.replace("for (int j = threadIdx.x; j < cols; j += blockDim.x) acc += x[row * cols + j];",
                             "int j = threadIdx.x; if (j < cols) acc = x[row * cols + j];")
    src = candidate(capped)
    assert fact(src, "cuda_block_capped").line == line_of(src, "std::min(cols, 1024)")
    assert "cuda_block_capped" not in tags(candidate(ROW_SUM))


# -- index decoding ------------------------------------------------------------------------------
DECODE = '''
__global__ void bias_add(const float* x, const float* b, float* y, int C, int HW, int total) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total) return;
    int rest = idx;
    int hw = rest % HW;
    rest /= HW;
    int c = rest % C;
    y[idx] = x[idx] + b[c] + 0.0f * hw;
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int total = x.numel();
    bias_add<<<(total + 255) / 256, 256>>>(x.data_ptr<float>(), x.data_ptr<float>(), y.data_ptr<float>(),
                                          x.size(1), x.size(2) * x.size(3), total);
    return y;
}
'''


def test_index_divided_in_place_then_used_as_the_store_offset():
    faulty = DECODE.replace("    int rest = idx;\n", "").replace("rest", "idx")
    src = candidate(faulty)
    f = fact(src, "cuda_index_divided_in_place")
    assert f.line == line_of(src, "y[idx] = x[idx]")
    assert "idx /= HW" in f.message
    assert "cuda_index_divided_in_place" not in tags(candidate(DECODE))


def test_a_divided_index_recomposed_with_its_strides_is_not_the_fault():
    recomposed = DECODE.replace("    int rest = idx;\n", "").replace("rest", "idx").replace(
        "y[idx] = x[idx]", "y[idx * HW + hw] = x[idx * HW + hw]")
    assert "cuda_index_divided_in_place" not in tags(candidate(recomposed))


# -- shared memory and block reductions ----------------------------------------------------------
BLOCK_SUM = '''
__global__ void block_sum(const float* x, float* partial, int n) {
    __shared__ float s[256];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
    if (tid == 0) partial[blockIdx.x] = s[0];
}
torch::Tensor run(torch::Tensor x) {
    int n = x.numel();
    int blocks = (n + 255) / 256;
    auto partial = torch::empty({blocks}, x.options());
    block_sum<<<blocks, 256>>>(x.data_ptr<float>(), partial.data_ptr<float>(), n);
    return partial.sum();
}
'''


def test_shared_memory_read_with_no_sync_after_the_write():
    src = candidate(BLOCK_SUM.replace("    __syncthreads();\n    for", "    for", 1))
    f = fact(src, "cuda_shared_no_sync")
    assert f.line == line_of(src, "if (tid < k) s[tid] += s[tid + k]")
    assert "cuda_shared_no_sync" not in tags(candidate(BLOCK_SUM))


def test_shared_memory_no_sync_between_loop_iterations():
    src = candidate(BLOCK_SUM.replace("        __syncthreads();\n    }", "    }"))
    assert "cuda_shared_no_sync" in tags(src)


def test_a_helper_that_syncs_is_a_barrier():
    helper = '''
__device__ void reduce(float* s) {
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
}
'''
    body = BLOCK_SUM.replace('''    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];
        __syncthreads();
    }
''', "    __syncthreads();\n    reduce(s);\n")
    assert "reduce(s)" in body
    assert "cuda_shared_no_sync" not in tags(candidate(helper + body))


def test_partials_never_combined():
    src = candidate(BLOCK_SUM.replace("return partial.sum();", "return partial;"))
    assert fact(src, "cuda_partials_not_combined").line == line_of(src, "partial[blockIdx.x] = s[0]")
    assert "cuda_partials_not_combined" not in tags(candidate(BLOCK_SUM))


def test_partials_combined_on_the_python_side_or_by_a_second_launch():
    tail = TAIL.replace("return ext.run(x)", "return ext.run(x).sum()")
    assert "cuda_partials_not_combined" not in tags(candidate(BLOCK_SUM.replace("return partial.sum();",
                                                                                "return partial;"), tail))
    second = BLOCK_SUM.replace("    return partial.sum();", '''    auto out = torch::empty({1}, x.options());
    block_sum<<<1, 256>>>(partial.data_ptr<float>(), out.data_ptr<float>(), blocks);
    return out;''')
    assert "cuda_partials_not_combined" not in tags(candidate(second))


def test_every_block_writing_one_element_without_atomics():
    src = candidate(BLOCK_SUM.replace("partial[blockIdx.x] = s[0]", "partial[0] = s[0]"))
    assert fact(src, "cuda_block_partials_race").line == line_of(src, "partial[0] = s[0]")
    atomic = BLOCK_SUM.replace("partial[blockIdx.x] = s[0]", "atomicAdd(&partial[0], s[0])")
    assert "cuda_block_partials_race" not in tags(candidate(atomic))
    assert "cuda_uses_atomics" in tags(candidate(atomic))


ROW_MAX = '''
__global__ void row_max(const float* x, float* y, int cols) {
    __shared__ float s[1024];
    int tid = threadIdx.x;
    int row = blockIdx.x;
    s[tid] = tid < cols ? x[row * cols + tid] : -INFINITY;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] = fmaxf(s[tid], s[tid + k]);
        __syncthreads();
    }
    if (tid == 0) y[row] = s[0];
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty({x.size(0)}, x.options());
    row_max<<<x.size(0), 1024>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1));
    return y;
}
'''


def test_one_element_per_thread_of_a_row_reduction():
    src = candidate(ROW_MAX)
    assert fact(src, "cuda_block_smaller_than_row").line == line_of(src, "y[row] = s[0]")
    looped = ROW_MAX.replace("s[tid] = tid < cols ? x[row * cols + tid] : -INFINITY;", '''float m = -INFINITY;
    for (int j = tid; j < cols; j += blockDim.x) m = fmaxf(m, x[row * cols + j]);
    s[tid] = m;''')
    assert "cuda_block_smaller_than_row" not in tags(candidate(looped))


# -- atomics, accumulators, index types ----------------------------------------------------------
def test_atomics_into_an_output_that_is_never_zeroed():
    src = candidate(ROW_SUM.replace("torch::zeros(", "torch::empty("))
    assert fact(src, "cuda_atomic_uninitialised_output").line == line_of(src, "torch::empty(")
    assert "cuda_atomic_uninitialised_output" not in tags(candidate(ROW_SUM))
    zeroed = ROW_SUM.replace("torch::zeros({x.size(0)}, x.options());", "torch::empty({x.size(0)}, x.options());\n"
                                                                        "    y.zero_();")
    assert "cuda_atomic_uninitialised_output" not in tags(candidate(zeroed))


def test_half_accumulator():
    half = ROW_SUM.replace("float acc = 0.0f;", "__half acc = __float2half(0.0f);").replace(
        "acc += x[row * cols + j];", "acc = __hadd(acc, __float2half(x[row * cols + j]));")
    src = candidate(half)
    assert fact(src, "cuda_half_accumulator").line == line_of(src, "__half acc")
    assert "cuda_half_accumulator" not in tags(candidate(ROW_SUM))


def test_numel_into_an_int_parameter():
    wide = GUARDED.replace("int n)", "int64_t n)").replace("int n = x.numel();", "int64_t n = x.numel();")
    narrow = wide.replace("x.data_ptr<float>(), y.data_ptr<float>(), n)", "x.data_ptr<float>(), y.data_ptr<float>(), "
                                                                           "x.numel())")
    narrow = narrow.replace("int64_t n)", "int n)")
    assert "cuda_int32_index" in tags(candidate(narrow))
    assert "cuda_int32_index" not in tags(candidate(wide.replace("y.data_ptr<float>(), n)",
                                                                 "y.data_ptr<float>(), x.numel())")))


def test_running_statistics_read_in_a_train_mode_forward():
    bn = '''
__global__ void bn(const float* x, const float* running_mean, const float* running_var, float* y, int C, int HW,
                   int total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int c = (i / HW) % C;
    y[i] = (x[i] - running_mean[c]) * rsqrtf(running_var[c] + 1e-5f);
}
'''
    src = candidate(bn)
    assert fact(src, "cuda_reads_running_stats").line == line_of(src, "running_mean[c]) * rsqrtf")
    branched = TAIL.replace("        return ext.run(x)", "        if self.training:\n            return x\n"
                                                        "        return ext.run(x)")
    assert "cuda_reads_running_stats" not in tags(candidate(bn, branched))


def test_clean_kernels_have_no_fault_facts():
    from debugger.diagnose.ranking import WEIGHTS

    weighed = {t for w in WEIGHTS.values() for t in w}  # descriptive facts (atomics used, inputs read as dense) weigh nothing
    assert "cuda_input_assumed_dense" in tags(candidate(GUARDED)) and "cuda_input_assumed_dense" not in weighed
    for clean in (GUARDED, EARLY_RETURN, BLOCK_SUM, ROW_SUM, DECODE):
        assert not {t for t in tags(candidate(clean)) if t in weighed}, clean


# -- diagnosis wiring ----------------------------------------------------------------------------
def test_every_fact_tag_is_new_and_weighted_onto_a_known_class():
    from debugger.diagnose import ranking, static
    from debugger.settings import bug_classes

    produced = {"cuda_unguarded_load", "cuda_unguarded_store", "cuda_floor_div_grid", "cuda_grid_capped",
                "cuda_block_capped", "cuda_index_divided_in_place", "cuda_shared_no_sync",
                "cuda_partials_not_combined", "cuda_block_partials_race", "cuda_block_smaller_than_row",
                "cuda_atomic_uninitialised_output", "cuda_half_accumulator", "cuda_int32_index",
                "cuda_reads_running_stats", "cuda_guard_on_fused_axis", "cuda_index_fixed_at_zero",
                "cuda_transposed_taps_flipped", "cuda_transposed_weight_out_major", "cuda_avgpool_counts_valid",
                "cuda_grid_axis_single", "cuda_block_scan_no_carry",
                "cuda_carry_in_one_thread"}
    triton_tags = set(static.RECIPE_TAGS.values()) | {"unmasked_load", "unmasked_store", "other_fill",
                                                      "uses_atomics", "floor_div_grid"}
    assert not produced & triton_tags
    weighted = {t: c for c, ws in ranking.WEIGHTS.items() for t in ws if t.startswith("cuda_")}
    assert set(weighted) == produced
    assert set(weighted.values()) <= set(bug_classes())
    assert weighted["cuda_index_divided_in_place"] == "unwritten_output"
    assert weighted["cuda_floor_div_grid"] == "grid_undercount"
    assert weighted["cuda_guard_on_fused_axis"] == "unwritten_output"
    assert weighted["cuda_index_fixed_at_zero"] == "grid_undercount"
    assert weighted["cuda_grid_axis_single"] == "grid_undercount"
    assert weighted["cuda_transposed_taps_flipped"] == weighted["cuda_transposed_weight_out_major"] == \
        "operator_misread"


def test_ranking_puts_the_fact_class_first_among_static_evidence():
    from debugger.diagnose import ranking

    src = candidate(DECODE.replace("    int rest = idx;\n", "").replace("rest", "idx"))
    facts = lang.static_facts(src)
    hyps = ranking.rank({f["tag"] for f in facts} | {"never_written"}, [], [])
    assert hyps[0]["bug_class"] == "unwritten_output"
    assert all(set(f) >= {"tag", "line", "message"} for f in facts)


def test_diagnose_adds_the_language_facts():
    text = (REPO / "debugger" / "diagnose" / "__init__.py").read_text()
    assert "lang.static_facts(case.candidate_src)" in text


# -- the import graph ----------------------------------------------------------------------------
def _unit(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "debugger" else parts[0]


def _module(f: Path) -> str:
    parts = f.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """unit -> units it imports (a unit: debugger.<package or module>, or ingest); imports
    inside functions and importlib.import_module("literal") calls count."""
    roots = ("debugger", "ingest")
    files = [f for r in roots for f in (REPO / r).rglob("*.py")]
    units_ = {_unit(_module(f)) for f in files}
    edges: dict[str, set[str]] = {u: set() for u in units_}
    for f in files:
        module = _module(f)
        package = module if f.name == "__init__.py" else module.rpartition(".")[0]
        names = []
        for n in ast.walk(ast.parse(f.read_text())):
            if isinstance(n, ast.Import):
                names += [a.name for a in n.names]
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    up = package.split(".")[:len(package.split(".")) - n.level + 1]
                    base = ".".join(up + ([n.module] if n.module else []))
                names += [base] + [f"{base}.{a.name}" for a in n.names]
            elif isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "import_module":
                names += [a.value for a in n.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            elif isinstance(n, ast.Tuple) and f.name == "cli.py":  # cli's registrations: a tuple of module names
                names += [e.value for e in n.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                          and e.value.split(".")[0] in roots and "." in e.value]
        me = _unit(module)
        for name in names:
            target = _unit(name)
            if name.split(".")[0] in roots and target in units_ and target != me:
                edges[me].add(target)
    return edges


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's components of more than one unit."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_sees_real_edges():
    edges = import_graph()
    assert "debugger.lang" in edges["debugger.diagnose"]
    assert "debugger.recipes" in edges["debugger.lang"]
    assert "debugger.diagnose" in edges["debugger.cli"]  # through cli's importlib registrations


def test_no_package_imports_one_that_imports_it_back():
    cycles = strongly_connected(import_graph())
    assert cycles == [], [sorted(c) for c in cycles]


@pytest.mark.parametrize("tag", ["cuda_unguarded_store"])
def test_facts_are_dicts_with_a_python_line(tag):
    src = candidate(UNGUARDED)
    (f,) = [f for f in lang.static_facts(src) if f["tag"] == tag]
    assert f["language"] == "cuda" and f["kernel"] == "scale" and isinstance(f["line"], int)


def test_running_statistics_handed_over_from_python():
    tail = TAIL.replace("    def forward(self, x):\n        return ext.run(x)",
                        "    def __init__(self):\n        super().__init__()\n        self.bn = nn.BatchNorm1d(8)\n\n"
                        "    def forward(self, x):\n        return ext.run(x, self.bn.running_mean)")
    src = candidate(GUARDED, tail)
    assert fact(src, "cuda_reads_running_stats").line == line_of(src, "ext.run(x, self.bn.running_mean)")
    branched = tail.replace("        return ext.run(x, self.bn.running_mean)",
                            "        if self.training:\n            return x\n        return ext.run(x, self.bn.running_mean)")
    assert "cuda_reads_running_stats" not in tags(candidate(GUARDED, branched))


def test_blocks_along_another_axis_storing_to_one_element():
    per_channel = ROW_MAX.replace("int row = blockIdx.x;", "int row = blockIdx.x * gridDim.y + blockIdx.y;").replace(
        "if (tid == 0) y[row] = s[0];", "if (tid == 0) y[blockIdx.x] = s[0];")
    src = candidate(per_channel)
    assert fact(src, "cuda_block_partials_race").line == line_of(src, "y[blockIdx.x] = s[0]")
    assert "cuda_block_partials_race" not in tags(candidate(ROW_MAX))


def test_build_key_follows_the_extension_not_the_host_code():
    from debugger.lang.cuda.sources import build_key

    base = '''
import torch
from torch.utils.cpp_extension import load_inline
src = """__global__ void k(float* x){ x[threadIdx.x] = 1; }
torch::Tensor f(torch::Tensor x){ return x; }"""
mod = load_inline(name="m", cpp_sources="torch::Tensor f(torch::Tensor x);", cuda_sources=src,
                  functions=["f"], verbose=False)
class ModelNew(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n))
'''
    host_fix = base.replace("torch.randn(n)", "torch.nn.Linear(n, n).weight")
    kernel_fix = base.replace("= 1;", "= 2;")
    flags = base.replace("verbose=False", "verbose=False, extra_cuda_cflags=['-O3']")
    assert build_key(base) == build_key(host_fix)
    assert len({build_key(base), build_key(kernel_fix), build_key(flags)}) == 3
    assert build_key("import torch\nclass ModelNew(torch.nn.Module): pass\n") is None


def test_extension_builds_are_keyed_under_the_users_extensions_dir(tmp_path, monkeypatch):
    from debugger.sandbox.roles import extension_build_dir

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.setenv("KDEBUG_TORCH_EXTENSIONS_BASE", "")  # set by the call: restored (unset) after
    src = '''
import torch
from torch.utils.cpp_extension import load_inline
src = """__global__ void k(float* x){ x[threadIdx.x] = 1; }"""
mod = load_inline(name="same_name", cpp_sources="", cuda_sources=src, functions=["f"])
'''
    dirs = []
    for candidate in (src, src.replace("= 1;", "= 2;"), src + "\nEXTRA = 1\n"):
        extension_build_dir({"candidate_src": candidate, "allow_write": [str(tmp_path / "cache")]})
        dirs.append(Path(os.environ["TORCH_EXTENSIONS_DIR"]))
    assert all(d.parent == tmp_path / "ext" for d in dirs)
    assert dirs[0] != dirs[1] and dirs[0] == dirs[2]  # a kernel change builds apart, a host change reuses


def test_both_languages_are_registered_and_triton_gives_its_facts():
    triton = lang.get("triton")
    src = '''
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        copy_kernel[(x.numel() // 64,)](x, y, x.numel(), BLOCK=64)
        return y
'''
    assert set(lang.REGISTRY) >= {"triton", "cuda"} and (REPO / "debugger" / "lang" / "triton").is_dir()
    assert lang.used_by(src) == [triton] and not CUDA.uses(src)
    assert [k.name for k in triton.kernels(src)] == ["copy_kernel"]
    (launch,) = triton.launches(src)
    assert launch.kernel == "copy_kernel" and launch.host == "forward" and launch.block == "BLOCK=64"
    tags = {f["tag"]: f for f in lang.static_facts(src)}
    assert {"unmasked_load", "unmasked_store", "floor_div_grid"} <= set(tags)
    assert tags["unmasked_store"]["language"] == "triton" and tags["unmasked_store"]["kernel"] == "copy_kernel"
    assert tags["floor_div_grid"]["line"] == src.splitlines().index(
        "        copy_kernel[(x.numel() // 64,)](x, y, x.numel(), BLOCK=64)") + 1
