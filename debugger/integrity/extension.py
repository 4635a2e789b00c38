"""CUDA/C++ source handed to torch.utils.cpp_extension.load_inline: does its host code launch the
candidate's own kernels, or compute through ATen or a vendor library?

A lexical scan (comments and string literals removed first), not a C++ parser: calls into the
`torch::`/`at::` namespaces are judged against an allow-list of allocation, metadata and stream
helpers; tensor methods that compute (`a.matmul(b)`, `x.softmax(-1)`) and cuBLAS/cuDNN calls are
library compute, and so is arithmetic on tensors through C++ operators in host code (`x + 1`,
`a * b`, `-x`, `out += bias`: ATen's operator overloads, found on names the host code declares as
tensors, outside `__global__`/`__device__` bodies); a source with host functions but no `__global__`
kernel computes without one.
Each compute finding names its op (`op`), so the compute rule can weigh it under the policy like a
Python PyTorch call; a reduction of a buffer the host code allocated and handed to a kernel launch
(`block_sums.sum()`) is marked `finishing`: the last step of a reduction the kernel did.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from debugger.integrity.findings import REJECT, WARN
from debugger.lang.cuda.emulate.translate import blank_comments

# torch::/at:: calls that allocate, describe or schedule: harmless glue in an extension's host code.
ALLOWED = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "from_blob", "TensorOptions", "tensor", "scalar_tensor", "arange", "Device", "device", "dtype", "Scalar",
    "getCurrentCUDAStream", "getDefaultCUDAStream", "CUDAGuard", "OptionalCUDAGuard", "CUDAStreamGuard",
    "DeviceGuard", "OptionalDeviceGuard", "device_of", "getCurrentDeviceProperties", "get_num_threads",
    "globalContext", "typeMetaToScalarType", "elementSize", "toString", "IntArrayRef", "MemoryFormat",
    "ScalarType", "Tensor", "IntList", "kFloat", "kHalf", "kBFloat16", "kCUDA", "kCPU",
}
# torch::/at:: functions and tensor methods that compute an operator (or a large part of one).
COMPUTE = (
    "matmul|mm|bmm|addmm|addmv|addbmm|baddbmm|mv|dot|linear|bilinear|conv\\w*|einsum|tensordot|"
    "softmax|log_softmax|_softmax|layer_norm|native_layer_norm|batch_norm|group_norm|instance_norm|rms_norm|"
    "sum|mean|prod|max|min|amax|amin|argmax|argmin|logsumexp|cumsum|cumprod|cummax|norm|var|std|var_mean|"
    "relu|gelu|silu|sigmoid|tanh|exp|log|sqrt|rsqrt|pow|erf|softplus|elu|leaky_relu|hardswish|mish|"
    "add|sub|mul|div|addcmul|addcdiv|clamp|where|abs|neg|"
    "cross_entropy|nll_loss|mse_loss|l1_loss|smooth_l1_loss|binary_cross_entropy\\w*|kl_div|"
    "embedding\\w*|gather|scatter\\w*|index_select|index_add|topk|sort|"
    "max_pool\\w*|avg_pool\\w*|adaptive_\\w+|scaled_dot_product_attention|_scaled_dot_product\\w*|dropout"
)
_NAMESPACED = re.compile(r"\b(?:torch|at)::(?:\w+::)*(\w+)\s*(?:<[^<>;]*>)?\s*\(")
_METHOD = re.compile(r"[\w\)\]]\s*(?:\.|->)\s*(" + COMPUTE + r")\s*\(")
_VENDOR = re.compile(r"\b(cublas\w*|cublasLt\w*|cudnn\w*|cutlass::\w+)\s*\(")
_VENDOR_SOFT = re.compile(r"\b(thrust|cub)::(\w+)")
_KERNEL_DEF = re.compile(r"__global__")
_LAUNCH = re.compile(r"<<<|\bcudaLaunchKernel\w*\s*\(|\bcuLaunchKernel\s*\(|\blaunch_kernel\s*\(")
_HOST_FUNCTION = re.compile(r"\b(?:torch|at)::Tensor\s+\w+\s*\([^;{]*\)\s*\{")  # a definition, not a declaration
_COMPUTE_NAME = re.compile(r"^(?:" + COMPUTE + r")$")


_FINISHING = {"sum", "mean", "max", "min", "amax", "amin", "prod"}
_ALLOCATED = re.compile(r"\b(?:auto|torch::Tensor|at::Tensor)\s+(\w+)\s*=\s*(?:torch|at)::(?:empty|zeros|ones|full)\w*\s*\(")
_RECEIVER = re.compile(r"(\w+)\s*(?:\.|->)\s*$")
# Host-code names that hold tensors: parameters and locals declared torch::Tensor/at::Tensor, and
# `auto` locals initialised by a torch::/at:: call or by a tensor method that returns a tensor.
_TENSOR_DECL = re.compile(r"\b(?:torch|at)::Tensor\s*(?:const\s*)?&{0,2}\s*(\w+)\s*[,)=;{]")
_TENSOR_AUTO = re.compile(r"\bauto\s*&{0,2}\s*(\w+)\s*=\s*(?:(?:torch|at)::(?!(?:\w+::)*(?:numel|size|stride|"
                          r"elementSize|typeMetaToScalarType)\b)|\w+\s*\.\s*(?:contiguous|view|reshape|to|clone|"
                          r"permute|transpose|t|expand|narrow|select|flatten|unsqueeze|squeeze|float|half|"
                          r"type_as|detach|expand_as|view_as)\s*\()")
_AUTO = re.compile(r"\bauto\s*&{0,2}\s*(\w+)\s*=\s*([^;]*);")
_OPERATOR_OP = {"+": "add", "-": "sub", "*": "mul", "/": "div", "neg": "neg"}
_DEVICE_BODY = re.compile(r"__(?:global|device)__[^;{]*\{")
# Vendor calls that compute, and the op they stand for; handle and descriptor calls are set-up.
_VENDOR_OPS = (("gemm", "matmul"), ("gemv", "matmul"), ("ger", "matmul"), ("dot", "matmul"), ("matmul", "matmul"),
               ("Convolution", "conv2d"), ("Pooling", "max_pool2d"), ("Softmax", "softmax"),
               ("BatchNormalization", "batch_norm"), ("Activation", "relu"))


@dataclass(frozen=True)
class ExtensionFinding:
    severity: str
    message: str
    line_offset: int  # 0-based line within the scanned source
    op: str | None = None  # the op computed (an ATen name, or what a vendor call stands for); None: not compute
    finishing: bool = False  # a reduction of partial results a kernel of the same source wrote
    fallback: bool = False  # inside an if/else block of a source that also launches a kernel


def _vendor_op(name: str) -> str | None:
    bare = re.sub(r"^(cublasLt|cublas|cudnn)", "", name)
    return next((op for marker, op in _VENDOR_OPS if marker.lower() in bare.lower()), None)


def _in_conditional_block(src: str, pos: int) -> bool:
    """The position is inside a `{ ... }` block opened by an if/else (lexically: the nearest unclosed brace)."""
    depth = 0
    for i in range(pos - 1, -1, -1):
        if src[i] == "}":
            depth += 1
        elif src[i] == "{":
            if depth == 0:
                head = src[max(0, i - 200):i]
                head = head[max(head.rfind(";"), head.rfind("}"), head.rfind("{")) + 1:]
                return bool(re.search(r"\b(if|else)\b", head))
            depth -= 1
    return False


def _kernel_buffers(src: str, before: int) -> set[str]:
    """Buffers the host code allocated and passed to a kernel launch before position `before`."""
    allocated = set(_ALLOCATED.findall(src[:before]))
    launched = set()
    for m in re.finditer(r"<<<[^;]*?>>>\s*\(([^;]*)\)\s*;", src[:before], re.S):
        launched |= set(re.findall(r"\b(\w+)\b", m.group(1)))
    return allocated & launched


def _strip(code: str) -> str:
    """Comments and string/char literals blanked out, newlines kept (so offsets keep their lines)."""
    return blank_comments(code, literals=False)


def _line(code: str, pos: int) -> int:
    return code.count("\n", 0, pos)


def _device_spans(src: str) -> list[tuple[int, int]]:
    """(start, end) of every __global__/__device__ function body (braces matched on stripped text)."""
    spans = []
    for m in _DEVICE_BODY.finditer(src):
        depth, i = 0, m.end() - 1
        while i < len(src):
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            if depth == 0:
                break
            i += 1
        spans.append((m.start(), i + 1))
    return spans


def _operator_arithmetic(src: str) -> list[ExtensionFinding]:
    """ATen through C++ operator overloads in host code: a name declared as a tensor that is an
    operand of + - * / (or their compound assignments, or unary minus)."""
    chars = list(src)
    for start, end in _device_spans(src):
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "
    host = "".join(chars)
    names = set(_TENSOR_DECL.findall(host)) | set(_TENSOR_AUTO.findall(host))
    while names:  # `auto z = y + 1;`: a local computed from a tensor as a bare operand is one too
        bare = re.compile(r"(?<![\w.>:])(?:" + "|".join(map(re.escape, names)) + r")\b(?!\s*(?:\.|->|\[|\(|::))")
        more = {m.group(1) for m in _AUTO.finditer(host) if bare.search(m.group(2))} - names
        if not more:
            break
        names |= more
    if not names:
        return []
    alt = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    # the name itself (not x.size(0), x[0], x->y) on an operator's left: `x + 1`, `x += b`
    left = re.compile(r"(?<![\w.>:])(" + alt + r")\s*([-+*/])(?![-+>/*])")
    # the name on an operator's right, not followed by . -> [ ( :: : `2 * x`, `-x`
    right = re.compile(r"([-+*/])\s*(" + alt + r")\b(?!\s*(?:\.|->|\[|\(|::|[-+]{2}))")
    found = [(m.start(1), m.group(1), m.group(2)) for m in left.finditer(host)]
    for m in right.finditer(host):
        before = host[:m.start()].rstrip()
        if host[m.start() - 1:m.start() + 1] in ("++", "--", "->") or m.group(1) == "*" and (
                not before or before[-1] in "(,=;{&" or re.search(r"\b(?:return|const|auto)$", before)):
            continue  # ++/-- or a dereference, not arithmetic
        unary = m.group(1) == "-" and (not before or before[-1] in "(,=;{?:" or before.endswith("return"))
        found.append((m.start(2), m.group(2), "neg" if unary else m.group(1)))
    out, seen = [], set()
    for pos, name, sym in sorted(found):
        line = _line(host, pos)
        if (line, sym) in seen:
            continue
        seen.add((line, sym))
        op = _OPERATOR_OP[sym]
        written = "unary -" if sym == "neg" else sym
        out.append(ExtensionFinding(REJECT, f"extension host code computes with tensor {name} through the C++ "
                                            f"operator {written} ({op}): ATen computes it, not the candidate's kernel",
                                    line, op=op))
    return out


def scan(code: str) -> list[ExtensionFinding]:
    """Findings for one extension source (CUDA or C++)."""
    src = _strip(code)
    has_launch = bool(_LAUNCH.search(src))
    found: list[ExtensionFinding] = []
    for m in _NAMESPACED.finditer(src):
        name = m.group(1)
        if name in ALLOWED or name.startswith(("k", "check", "TORCH_", "AT_")):
            continue
        call = m.group(0).rstrip("( ")
        if _COMPUTE_NAME.match(name):
            fallback = has_launch and _in_conditional_block(src, m.start())
            found.append(ExtensionFinding(REJECT, f"extension host code calls {call}: ATen computes it, not the "
                                                  "candidate's kernel", _line(src, m.start()), op=name,
                                          fallback=fallback))
        else:
            found.append(ExtensionFinding(WARN, f"extension host code calls {call}: not an allocation or "
                                                "metadata helper; check by hand", _line(src, m.start())))
    for m in _METHOD.finditer(src):
        name = m.group(1)
        receiver = _RECEIVER.search(src[:m.start(1)])
        finishing = name in _FINISHING and receiver is not None and receiver.group(1) in _kernel_buffers(src, m.start())
        if finishing:
            found.append(ExtensionFinding(WARN, f"extension host code finishes a reduction with "
                                                f"{receiver.group(1)}.{name}() over partial results its kernel wrote",
                                          _line(src, m.start(1)), op=name, finishing=True))
        else:
            found.append(ExtensionFinding(REJECT, f"extension host code calls the tensor method .{name}(): "
                                                  "ATen computes it, not the candidate's kernel",
                                          _line(src, m.start(1)), op=name))
    for m in _VENDOR.finditer(src):
        op = _vendor_op(m.group(1))
        if op is None:
            continue  # cublasCreate, cudnnSetTensor4dDescriptor...: set-up around a computing call
        found.append(ExtensionFinding(REJECT, f"extension calls {m.group(1)}: a vendor library computes it, "
                                              "not the candidate's kernel", _line(src, m.start()), op=op,
                                      fallback=has_launch and _in_conditional_block(src, m.start())))
    found += _operator_arithmetic(src)
    for m in _VENDOR_SOFT.finditer(src):
        found.append(ExtensionFinding(WARN, f"extension uses {m.group(1)}::{m.group(2)}: a library primitive; "
                                            "check it is not the operator's main work", _line(src, m.start())))
    return found


def kernel_findings(codes: list[str]) -> list[tuple[int, ExtensionFinding]]:
    """Across all of a file's extension sources (index into `codes`, finding): host functions with no
    __global__ kernel anywhere compute without one; kernels that are never launched are suspicious."""
    stripped = [_strip(c) for c in codes]
    kernels = any(_KERNEL_DEF.search(s) for s in stripped)
    launches = any(_LAUNCH.search(s) for s in stripped)
    host = next(((i, m) for i, s in enumerate(stripped) if (m := _HOST_FUNCTION.search(s))), None)
    if host is None:
        return []
    i, m = host
    if not kernels:
        return [(i, ExtensionFinding(REJECT, "extension defines host functions but no __global__ kernel: the "
                                             "result is computed without a kernel of the candidate's own",
                                     _line(stripped[i], m.start())))]
    if not launches:
        return [(i, ExtensionFinding(WARN, "extension defines __global__ kernels but its host code never "
                                           "launches one", _line(stripped[i], m.start())))]
    return []
