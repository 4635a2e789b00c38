"""CUDA source -> host C++ that compiles against kdebug's CPU runtime (include/kdebug_cuda_cpu.h).

The rewrite is textual and keeps every line where it was (compiler messages name the candidate's own
lines): comments blanked, CUDA-only includes dropped (the runtime header stands in for them), kernel
launches `k<<<grid, block, smem, stream>>>(args)` made calls of `::kdcpu::launch`, `extern __shared__`
arrays pointed at the launch's dynamic shared memory, and tests for a CUDA device made tests for the
CPU (`x.is_cuda()`, `torch::kCUDA`), since the tensors live there. What the runtime cannot stand in
for (inline PTX, tensor-core fragments, cuBLAS, CUB beyond its block-wide reduce and scan, Thrust,
textures) is named by `blocker`, so the caller says so in one line instead of reporting a compile error
the candidate does not have.
"""
from __future__ import annotations

import re

# (pattern, what it is): a unit matching any of these is not emulated.
BLOCKERS = [
    (re.compile(r"\basm\s*(?:volatile\s*)?\("), "inline PTX assembly"),
    (re.compile(r"\bwmma::|#\s*include\s*<mma\.h>"), "tensor-core fragments (wmma)"),
    # cuBLAS: the runtime stands in for handles and the single-precision GEMMs (cublasSgemm*), not the rest
    (re.compile(r"\bcublasLt\w*|\bcublas(?!Create|Destroy|SetStream|SetMathMode|GetStream|Sgemm\b|"
                r"SgemmStridedBatched\b|Status_t|Handle_t|Operation_t)\w+\s*\("), "cuBLAS beyond cublasSgemm"),
    (re.compile(r"#\s*include\s*<cudnn|\bcudnn\w*\s*\("), "cuDNN"),
    # CUB: the runtime stands in for the block-wide reduce and scan and the reduction functors, not the rest
    (re.compile(r"\bcub::(?!(?:BlockReduce|BlockScan|Sum|Max|Min|BLOCK_REDUCE_\w+|BLOCK_SCAN_\w+)\b)\w+"),
     "CUB beyond BlockReduce and BlockScan"),
    (re.compile(r"#\s*include\s*<thrust/|\bthrust::"), "Thrust"),
    (re.compile(r"#\s*include\s*<(?:cutlass|cute)/|\bcutlass::|\bcute::"), "CUTLASS"),
    (re.compile(r"#\s*include\s*<(?:curand|cufft|cusparse|cusolver)"), "a CUDA math library"),
    (re.compile(r"\btex[123]D\w*\s*[<(]|\bcudaTextureObject_t|\bsurf[123]D"), "textures"),
    (re.compile(r"\bcooperative_groups\b|\bcg::"), "cooperative groups"),
    (re.compile(r"#\s*include\s*<cuda/|\bcuda::(?:std|pipeline|barrier|memcpy_async)"), "libcu++"),
    (re.compile(r"\b__pipeline_\w+|\bcp\.async|\b__cluster_dims__"), "asynchronous copies or clusters"),
]
# Headers the runtime header replaces (CUDA's own and PyTorch's CUDA parts, absent from a CPU build).
CUDA_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"](?:cuda[\w.]*\.h(?:pp)?|cuda_runtime[\w.]*|device_\w+\.h|math_constants\.h|'
    r'vector_types\.h|vector_functions\.h|sm_\d+\w*\.h|driver_types\.h|crt/[\w./]+|'
    r'(?:ATen|c10)/cuda/[\w./]+|THC/[\w./]+|helper_cuda\.h|helper_math\.h|cublas_v2\.h|cublas_api\.h|cublas\.h|cub/[\w./]+)[>"][^\n]*$',
    re.M)
SYNC = re.compile(r"\b(?:__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__any_sync|__all_sync|__reduce_\w+_sync|"
                  r"cub::Block(?:Reduce|Scan))\b")
EXTERN_SHARED = re.compile(
    r"\bextern\s+__shared__\s+((?:(?:__align__|alignas)\s*\(\s*\w+\s*\)\s*|volatile\s+|const\s+)*)"
    r"([A-Za-z_][\w:]*(?:\s*<[^;<>]*>)?(?:\s*\*)*)\s*((?:(?:__align__|alignas)\s*\(\s*\w+\s*\)\s*)*)"
    r"(\w+)\s*\[\s*\]\s*;")
DEVICE_TESTS = [
    (re.compile(r"\.\s*is_cuda\s*\(\s*\)"), ".is_cpu()"),
    (re.compile(r"\bkCUDA\b"), "kCPU"),
    (re.compile(r"\bDeviceType::CUDA\b"), "DeviceType::CPU"),
    (re.compile(r"\.\s*cuda\s*\(\s*\)"), ".cpu()"),
    (re.compile(r'"cuda(?::\d+)?"'), '"cpu"'),
]
PRELUDE = '#include "kdebug_cuda_cpu.h"'


class Untranslatable(ValueError):
    """The unit uses something the CPU runtime does not stand in for."""


def blocker(code: str) -> str | None:
    """What in this CUDA code the CPU runtime cannot run, or None."""
    bare = blank_comments(code)
    return next((what for pattern, what in BLOCKERS if pattern.search(bare)), None)


def blank_comments(code: str, literals: bool = True) -> str:
    """Comments replaced by spaces (newlines kept, so offsets keep their lines); string and character
    literals kept, or with `literals=False` blanked between their quotes."""
    out, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if c in "\"'":
            j = i + 1
            while j < n and code[j] != c and code[j] != "\n":
                j += 2 if code[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(code[i:j] if literals else c + " " * max(0, j - i - 2) + (c if j - i >= 2 else ""))
            i = j
        elif code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", code[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _balanced(code: str, start: int, open_: str, close: str) -> int:
    """Index just past the bracket closing the one at `start`."""
    depth, i = 0, start
    while i < len(code):
        c = code[i]
        if c in "\"'":
            j = i + 1
            while j < len(code) and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            i = j + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Untranslatable(f"unbalanced {open_}{close} in a kernel launch")


def _callee_start(code: str, end: int) -> int:
    """Start of the kernel expression that ends at `end` (a name, maybe qualified, maybe with template
    arguments: `k`, `ns::k`, `k<float, 4>`)."""
    i = end
    while i > 0 and code[i - 1].isspace():
        i -= 1
    if i > 0 and code[i - 1] == ">":  # template arguments: walk back to the matching '<'
        depth = 0
        while i > 0:
            i -= 1
            if code[i] == ">":
                depth += 1
            elif code[i] == "<":
                depth -= 1
                if depth == 0:
                    break
        while i > 0 and code[i - 1].isspace():
            i -= 1
    while i > 0 and (code[i - 1].isalnum() or code[i - 1] in "_:"):
        i -= 1
    return i


def _launches(code: str) -> str:
    out, pos = [], 0
    while True:
        at = code.find("<<<", pos)
        if at < 0:
            out.append(code[pos:])
            return "".join(out)
        start = _callee_start(code, at)
        callee = code[start:at].strip()
        if not callee:
            raise Untranslatable("a kernel launch without a kernel name")
        close = code.find(">>>", at)
        if close < 0:
            raise Untranslatable("a kernel launch without its closing >>>")
        config = code[at + 3:close]
        paren = close + 3
        while paren < len(code) and code[paren].isspace():
            paren += 1
        if paren >= len(code) or code[paren] != "(":
            raise Untranslatable(f"the launch of {callee} has no argument list")
        end = _balanced(code, paren, "(", ")")
        args = code[paren + 1:end - 1]
        sep = ", " if args.strip() else ""
        out.append(code[pos:start])
        out.append(f"::kdcpu::launch(::kdcpu::cfg({config}), [&](auto&&... kd_a) {{ {callee}(kd_a...); }}{sep}{args})")
        pos = end


def _extern_shared(m: re.Match) -> str:
    qualifiers = re.sub(r"(?:__align__|alignas)\s*\(\s*\w+\s*\)", "", m.group(1)).strip()
    type_ = f"{qualifiers} {m.group(2).strip()}".strip()
    return f"{type_}* {m.group(4)} = reinterpret_cast<{type_}*>(::kdcpu::dynamic_smem());"


STATIC_SHARED = re.compile(r"\b__shared__\b[^;{}]*?\b(\w+)\s*\[")
VOLATILE_POINTER = re.compile(r"\bvolatile\s+[\w:]+\s*\*\s*(?:__restrict__\s+)?(\w+)")
POINTER_FROM = re.compile(r"\*\s*(?:__restrict__\s+|const\s+)*(\w+)\s*=\s*([^;]*);")
ASSIGNMENT = re.compile(r"\s*(?:(?:<<|>>|[-+*/%&|^])?=(?!=)|\+\+|--)")
STORE_STEP = "::kdcpu::StoreStep{}, "


def _shared_names(text: str, extern: list[str]) -> set[str]:
    """Names that address shared memory: `__shared__` arrays, `extern __shared__` ones, volatile pointers
    (the warp-synchronous idiom), and pointers set from any of these (`float* s_sq = &sdata[n];`)."""
    names = set(extern) | set(STATIC_SHARED.findall(text)) | set(VOLATILE_POINTER.findall(text))
    while names:
        more = {m.group(1) for m in POINTER_FROM.finditer(text)
                if m.group(1) not in names and re.search(r"\b(?:%s)\b" % "|".join(map(re.escape, names)), m.group(2))}
        if not more:
            break
        names |= more
    return names


def _starts_statement_part(text: str, start: int) -> bool:
    """Whether an lvalue at `start` begins an expression (after `;`, `{`, `(`, `=`, `else`...), not a
    declaration (`float s[4]`) or a member (`p->s[i]`, `a.s[i]`)."""
    i = start - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    if i < 0 or text[i] in ";{}(),=?:&|!":
        return True
    word = re.search(r"\b(\w+)$", text[max(0, i - 8):i + 1])
    return bool(word) and word.group(1) in ("else", "do", "return")


def _shared_stores(text: str, names: set[str]) -> str:
    """Each store into shared memory becomes `(::kdcpu::StoreStep{}, s[i]) = v`: the step's constructor (after
    the right side is read, C++17) and destructor (after the store) let the block's other threads run, so
    threads take their turns store by store, as a GPU's threads run side by side, instead of one thread
    running from barrier to barrier before the next starts. Without it, `m = s[0]; s[t] = e;` (every thread
    reads s[0], thread 0 then overwrites it: a race a GPU's timing hides) and warp-synchronous reductions
    without barriers compute what no GPU does."""
    if not names:
        return text
    out, pos = [], 0
    for m in re.finditer(r"\b(?:%s)\s*\[" % "|".join(map(re.escape, sorted(names))), text):
        start = m.start()
        if start < pos or not _starts_statement_part(text, start):
            continue
        end = _balanced(text, m.end() - 1, "[", "]")
        while nxt := re.match(r"\s*\[", text[end:]):
            end = _balanced(text, end + nxt.end() - 1, "[", "]")
        end += re.match(r"(?:\s*\.\s*\w+)*", text[end:]).end()
        if not ASSIGNMENT.match(text, end):
            continue
        out.append(text[pos:start])
        out.append(f"({STORE_STEP}{text[start:end]})")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _stepped(text: str) -> str:
    """`text` (comments blanked) with its shared-memory stores stepped."""
    extern = [m.group(4) for m in EXTERN_SHARED.finditer(text)]
    return _shared_stores(text, _shared_names(text, extern))


def translate(code: str) -> str:
    """Host C++ for one CUDA unit (raises Untranslatable for what the runtime cannot run)."""
    what = blocker(code)
    if what:
        raise Untranslatable(f"uses {what}, which kdebug's CPU emulation of CUDA does not run")
    text = blank_comments(code)
    text = CUDA_INCLUDE.sub("", text)
    text = _stepped(text)
    text = EXTERN_SHARED.sub(_extern_shared, text)
    text = _launches(text)
    for pattern, repl in DEVICE_TESTS:
        text = pattern.sub(repl, text)
    return text


def unit_prelude(translated: list[str]) -> str:
    """The lines that open the combined unit (`translated`: translate()'s output for each source): the
    runtime, with fibers where any code synchronises or stores into shared memory (threads then take
    turns store by store)."""
    fibers = any(SYNC.search(t) or STORE_STEP in t for t in translated)
    return f"#define KDCPU_FIBERS {int(fibers)}\n{PRELUDE}\n"
