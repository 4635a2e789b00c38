"""The regenerate baseline: a model writes a whole new ModelNew file from the reference alone.

This is what a pipeline does without a debugger: throw the near-miss away and sample again. The
prompt never shows the candidate, the diagnosis or the knowledge base; each sample is scored by
the same evaluation and integrity gate as a repair (debugger.bench.verify).
"""
from __future__ import annotations

import inspect
import re

from debugger.case import top_level_names

SYSTEM = """You write GPU kernels in Triton. Given a PyTorch reference module, write a complete Python file \
that defines `class ModelNew(torch.nn.Module)`, taking the same constructor arguments as `Model`, whose \
forward returns the same outputs as `Model.forward`, computed by your own Triton kernels (`@triton.jit`). \
Use PyTorch only to allocate outputs, make views and launch kernels: never call PyTorch to compute the \
operator, never special-case shapes or inputs, never lower the precision. Handle sizes that are not \
multiples of your block sizes. Answer with exactly one ```python code block holding the whole file."""

FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def build_messages(reference_src: str) -> list[dict]:
    """Chat messages asking for a new kernel file for this reference."""
    user = "\n".join(["## Reference (PyTorch)", "```python", reference_src.strip(), "```",
                      "Write the complete file defining ModelNew, with its Triton kernels and imports."])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def extract_code(text: str) -> str | None:
    """The Python file in a model answer: the last fenced block defining ModelNew, else the longest
    fenced block, else the whole answer when it defines ModelNew; None when there is no code."""
    blocks = [b.strip("\n") + "\n" for b in FENCE.findall(text or "")]
    defining = [b for b in blocks if "class ModelNew" in b]
    if defining:
        return defining[-1]
    if blocks:
        return max(blocks, key=len)
    if text and "class ModelNew" in text:
        return text.strip("\n") + "\n"
    return None


def defines_model_new(src: str) -> bool:
    """True when the source parses and binds ModelNew at module level."""
    try:
        return "ModelNew" in top_level_names(src)
    except SyntaxError:
        return True  # a syntax error is a compile failure, scored by the evaluation


def complete(backend, messages: list[dict], temperature: float | None = None) -> tuple[str, int, int]:
    """One completion: (text, prompt tokens, completion tokens); a temperature where the backend takes one."""
    if temperature is not None and "temperature" in inspect.signature(backend.complete).parameters:
        return backend.complete(messages, temperature=temperature)
    return backend.complete(messages)
