"""cuda_exact_gelu: GELU written as its tanh approximation where the reference's GELU is exact (45 of the
real answers in ../shared/real/kernelbench-fork do it: inside KernelBench's 1e-2, outside kdebug's
kernel tolerance), and the repair graph's `harden` step that applies it to a KernelBench repair. Kernels of
the tests' own (tests/test_cuda_recipes.py runs two more on a GPU)."""
from debugger import lang
from debugger.lang.cuda import units
from debugger.lang.cuda.formulas import tanh_gelus
from debugger.recipes import RECIPES
from tests.test_cuda_recipes import GELU_DEVICE, GELU_INLINE, candidate
from tests.test_real_param_init import AS_MODEL, CANDIDATE, REFERENCE

CUDA = lang.get("cuda")

# the approximation through a #define and a temporary, the way several real answers write it
GELU_DEFINE = '''
#define GELU_COEF 0.044715f
__global__ void gelu_rows(const float* x, const float* w, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float val = x[i];
    float cube = val * val * val;
    float tanh_arg = 0.7978845608f * (val + GELU_COEF * cube);
    float cdf = 0.5f * (1.0f + tanhf(tanh_arg));
    y[i] = val * cdf;
}

torch::Tensor run(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    gelu_rows<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), w.data_ptr<float>(), y.data_ptr<float>(),
                                                x.numel());
    return y;
}
'''


def functions(src: str):
    return [fn for u in units(src) for fn in u.functions if fn.kind != "host"]


def test_the_approximation_is_found_by_its_coefficient_and_replaced_by_erf():
    inline = RECIPES["cuda_exact_gelu"].propose(candidate(GELU_INLINE))[0].new_src
    assert "y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));" in inline
    device = RECIPES["cuda_exact_gelu"].propose(candidate(GELU_DEVICE))[0].new_src
    assert "return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }" in device
    define = RECIPES["cuda_exact_gelu"].propose(candidate(GELU_DEFINE))[0].new_src
    assert "float cdf = 0.5f * (1.0f + erff(val * 0.70710678118654752f));" in define
    for src in (inline, device, define):
        assert "cuda_tanh_gelu" not in {f.tag for f in CUDA.static_facts(src)}


def test_the_fact_names_the_call_and_is_descriptive():
    fact, = [f for f in CUDA.static_facts(candidate(GELU_DEFINE)) if f.tag == "cuda_tanh_gelu"]
    assert "gelu_rows computes GELU by its tanh approximation (tanhf(tanh_arg))" in fact.message
    from debugger.diagnose import ranking

    assert not any("cuda_tanh_gelu" in ws for ws in ranking.WEIGHTS.values())  # the reference decides


def test_tanh_without_the_coefficient_and_a_variable_reassigned_after_are_read_right():
    plain_tanh = GELU_INLINE.replace("0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))",
                                     "tanhf(v)")
    assert not any(tanh_gelus(fn) for fn in functions(candidate(plain_tanh)))
    assert not RECIPES["cuda_exact_gelu"].propose(candidate(plain_tanh))
    # `val = val * cdf` after the approximation does not make val the coefficient (a real answer's shape)
    reassigned = GELU_DEFINE.replace("y[i] = val * cdf;", "val = val * cdf;\n    y[i] = val;")
    g, = [g for fn in functions(candidate(reassigned)) for g in tanh_gelus(fn)]
    assert g.replacement == "erff(val * 0.70710678118654752f)"


GELU_REFERENCE = REFERENCE.replace("return self.gemm(x) * self.scale",
                                   "return torch.nn.functional.gelu(self.gemm(x) * self.scale)")


def test_harden_makes_a_kernelbench_pass_exact_and_dense(monkeypatch, tmp_path):
    """A GEMM + GELU answer KernelBench passes (Model's parameters, drawn as Model draws them) whose kernel
    verdict fails twice over: it reads x as dense (the layout checks) and writes GELU by its tanh
    approximation (values beyond kdebug's tolerance, inside KernelBench's). The repair graph's `harden`
    node, on real evaluations (the CPU's CUDA emulation), keeps both stages and the kernel verdict then
    passes."""
    from types import SimpleNamespace

    from debugger.case import case_from_sources
    from debugger.evaluate import repair_checks, run_evaluation
    from debugger.repair import nodes
    from debugger.repair.state import Limits, RunContext

    monkeypatch.setenv("KDEBUG_DATA_DIR", str(tmp_path / "data"))
    src = CANDIDATE.replace("INIT", AS_MODEL).replace(
        "y[r * o + c] = acc * s[c];",
        "float v = acc * s[c];\n"
        "        y[r * o + c] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));")
    case = case_from_sources(GELU_REFERENCE, src)
    report = run_evaluation(case, "cpu", checks=repair_checks("kernelbench"), semantics="kernelbench").report
    assert report.passed and report.verdicts["kernel"]["status"] == "mismatch", report.verdicts
    ctx = RunContext(device="cpu", limits=Limits(), kb_backend=None, model_backend=None, knowledge=None,
                     ledger=None, run_id="t", semantics="kernelbench")
    state = {"case_name": case.name, "reference_src": GELU_REFERENCE, "candidate_src": src, "best_src": src,
             "verify": nodes._verify_entry(report), "history": [], "iteration": 1}
    out = nodes.harden(state, SimpleNamespace(context=ctx))
    # the layouts first: not kept, since the layout checks also fail on the approximation's values; then exact
    # GELU, kept; then the layouts again, kept
    assert [(h["recipe"], h["outcome"]) for h in out["history"]] == \
        [("cuda_exact_gelu", "hardened"), ("cuda_contiguous_inputs", "hardened")], out["history"]
    assert out["verify"]["passed"] and out["verify"]["report"]["verdicts"]["kernel"]["status"] == "pass"
    assert "erff(v * 0.70710678118654752f)" in out["candidate_src"] and "x = x.contiguous()" in out["candidate_src"]
