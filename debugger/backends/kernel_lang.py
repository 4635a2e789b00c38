"""Which language a candidate's kernels are written in, and where they are, for the model's prompt and tools.

A Triton candidate's kernels are `@triton.jit` functions of the Python file; a CUDA candidate keeps
them in the strings it hands to `load_inline`, found and mapped to Python lines by the CUDA source
layer (debugger/lang/cuda). This module only asks the two and words the answer: for a CUDA candidate
also its host wrappers, its static CUDA facts and compute-sanitizer's findings (cuda_context), and
retrieved patterns of its own language first (for_language).
"""
from __future__ import annotations


def language(src: str) -> str:
    """'cuda' when the file builds an extension with CUDA kernels of its own, else 'triton'."""
    if "load_inline" not in src and "__global__" not in src:
        return "triton"
    from debugger.lang import get

    return "cuda" if get("cuda").uses(src) else "triton"


def kernels(src: str) -> dict[str, int | None]:
    """Kernel name -> the Python line it is defined on: @triton.jit functions, or the __global__
    functions of the CUDA strings."""
    if language(src) == "cuda":
        from debugger.lang import get

        return {k.name: k.line for k in get("cuda").kernels(src)}
    from debugger.lang.spans import kernel_lines

    return {name: span[0] for name, span in kernel_lines(src).items()}


def kernel_names(src: str) -> list[str]:
    return list(kernels(src))


def where(src: str) -> str:
    """One sentence for the prompt: the language, and each kernel with its line."""
    found = ", ".join(f"{k} (line {n})" if n else k for k, n in kernels(src).items()) or "none found"
    if language(src) == "cuda":
        from debugger.lang.cuda.sources import find_sources

        lines = sorted({s.pyline(0) for s in find_sources(src) if s.kind == "cuda"} - {None})
        start = f" (the CUDA source starts at line {', '.join(map(str, lines))})" if lines else ""
        return f"CUDA kernels inside the load_inline strings{start}: {found}."
    return f"Triton kernels: {found}."


def host_wrappers(src: str) -> str:
    """For a CUDA candidate, one line per host function of the load_inline strings: the Python name it is
    bound under, its line, and the kernels it launches with their configuration; '' for Triton."""
    if language(src) != "cuda":
        return ""
    from debugger.lang import get
    from debugger.lang.cuda import units
    from debugger.source.tree import text

    cuda = get("cuda")
    bound = {host: name for name, host in cuda.bound_functions(src).items()}
    lines = []
    for u in units(src):
        for h in u.hosts:
            launches = [f"{ln.kernel}<<<{', '.join(text(c) for c in ln.config)}>>> (line {u.pyline(ln.node)})"
                        for ln in u.launches if ln.host.node == h.node]
            if h.name not in bound and not launches:
                continue  # a declaration helper, not the wrapper
            name = f"{h.name} (bound to Python as {bound[h.name]!r})" if h.name in bound else h.name
            lines.append(f"- {name}, line {h.line}" + (f": launches {', '.join(launches)}" if launches else ""))
    return "\n".join(lines)


def cuda_context(src: str, diagnosis: dict | None = None) -> list[str]:
    """Prompt sections a CUDA candidate adds: its host wrappers, the CUDA facts with their lines in the
    file (those the diagnosis text does not already name) and compute-sanitizer's findings in the
    candidate's kernels. [] for Triton (whose facts the diagnosis text carries)."""
    if language(src) != "cuda":
        return []
    from debugger.lang import get

    diagnosis = diagnosis or {}
    said = f"{diagnosis.get('prompt_text') or ''}\n{diagnosis.get('summary') or ''}"
    parts = []
    hosts = host_wrappers(src)
    if hosts:
        parts += ["## Host wrapper (C++ in the load_inline strings; Python calls it through the extension)", hosts]
    facts = [f for f in get("cuda").static_facts(src) if f.message not in said]
    if facts:
        parts.append("## CUDA facts (static; lines of this file)")
        parts += [f"- line {f.line}" + (f" ({f.kernel})" if f.kernel else "") + f": {f.tag}: {f.message}"
                  for f in facts]
    findings = sanitizer_lines(diagnosis.get("sanitizer") or {})
    if findings:
        parts += ["## compute-sanitizer findings in the candidate's kernels", *findings]
    return parts


def sanitizer_lines(result: dict, limit: int = 8) -> list[str]:
    """compute-sanitizer's findings in the candidate's kernels (diagnose/sanitizer.py), one line each with
    its line of this file."""
    out = []
    for t in result.get("tools") or []:
        for f in t.get("findings") or []:
            if not f.get("in_candidate"):
                continue
            what = (f.get("kind") or "finding").replace("_", " ")
            if f.get("size"):
                what += f" of {f['size']} bytes"
            if f.get("space"):
                what += f" ({f['space']} memory)"
            where = f" in {f['kernel']}" if f.get("kernel") else ""
            where += f" at line {f['pyline']}" if f.get("pyline") else ""
            extra = []
            if f.get("oob_bytes") is not None and f.get("oob_side"):
                extra.append(f"{f['oob_bytes']} bytes {f['oob_side']} an allocation of {f.get('allocation_size')} bytes")
            if f.get("thread") or f.get("block"):
                extra.append(f"thread ({f.get('thread')}) block ({f.get('block')})")
            if (f.get("count") or 1) > 1:
                extra.append(f"{f['count']} times")
            out.append(f"- {t.get('tool')}: {what}{where}" + (f": {', '.join(extra)}" if extra else ""))
    return out[:limit]


def language_of_hit(hit: dict) -> str:
    """A retrieved pattern's language (its front matter's `language:`; triton where none is given)."""
    import re

    m = re.search(r"^language:\s*\"?(\w+)", hit.get("text") or "", re.M)
    return (hit.get("language") or (m.group(1) if m else "triton")).lower()


def for_language(src: str, hits: list[dict]) -> list[dict]:
    """Retrieved patterns with those of the candidate's language first (the order otherwise kept)."""
    lang = language(src)
    return sorted(hits, key=lambda h: language_of_hit(h) != lang)
