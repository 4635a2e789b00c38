"""The openai backend: any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp servers).

The prompt carries the diagnosis, the probe results, the retrieved patterns and the closest reference
kernel, and the current kernel (Triton, or CUDA inside load_inline strings); not the history. The
model answers with search/replace edits. This is the one-shot path; debugger/backends/openai_tools.py
puts a tool-calling loop over it and falls back to it where an endpoint takes no tools.
Transient errors are retried with backoff; authentication and unknown-model errors stop with one
clear line.
"""
from __future__ import annotations

import time

from debugger.backends import kernel_lang
from debugger.backends.base import BackendError, Proposal
from debugger.backends.edits import parse_edits

SYSTEM = """You repair GPU kernels written in Triton. The kernel below compiles and runs but computes wrong \
values. Fix the root cause with the smallest change. Keep the computation in Triton kernels: never call \
PyTorch to compute the operator, never special-case shapes or inputs, never read the reference, never lower \
the precision. Answer only with one or more edit blocks of this exact form:

<<<<<<< SEARCH
exact lines copied from the current kernel
=======
the replacement lines
>>>>>>> REPLACE
"""

SYSTEM_CUDA = """You repair GPU kernels written in CUDA C++, compiled with torch.utils.cpp_extension.load_inline \
from string literals in the Python file below. The kernel compiles and runs but computes wrong values. Fix the \
root cause with the smallest change, editing the CUDA code inside its string. Keep the computation in your own \
__global__ kernels and the extension's binding as it is: never call PyTorch or ATen to compute the operator, \
never special-case shapes or inputs, never read the reference, never lower the precision. Answer only with one \
or more edit blocks of this exact form:

<<<<<<< SEARCH
exact lines copied from the current file
=======
the replacement lines
>>>>>>> REPLACE
"""

RETRYABLE = ("APIConnectionError", "APITimeoutError", "RateLimitError", "InternalServerError", "ServiceUnavailableError")
FATAL = {"AuthenticationError": "authentication failed: check OPENAI_API_KEY",
         "PermissionDeniedError": "the endpoint refused access: check OPENAI_API_KEY",
         "NotFoundError": "model or endpoint not found: check --model and OPENAI_BASE_URL"}


def build_prompt(candidate_src: str, reference_src: str, diagnosis: dict, retrieved: dict,
                 feedback: str | None = None) -> list[dict]:
    """Chat messages for one repair attempt."""
    parts = ["## Reference (PyTorch, the ground truth)", "```python", reference_src.strip(), "```",
             "## Current kernel", "```python", candidate_src.strip(), "```", "## Diagnosis",
             diagnosis.get("prompt_text") or diagnosis.get("summary", "")]
    parts += kernel_lang.cuda_context(candidate_src, diagnosis)
    for hit in kernel_lang.for_language(candidate_src, retrieved.get("patterns") or [])[:3]:
        parts += [f"## Known failure pattern: {hit.get('title', hit.get('id'))} ({hit.get('bug_class')})",
                  hit.get("text", "")[:1500]]
    ref_kernel = retrieved.get("reference_kernel")
    if ref_kernel and ref_kernel.get("source"):
        parts += [f"## A correct kernel for a similar operator ({ref_kernel.get('id')})", "```python",
                  ref_kernel["source"][:4000], "```"]
    if feedback:
        parts += ["## Your previous attempt", feedback]
    parts.append("Answer with SEARCH/REPLACE blocks only.")
    system = SYSTEM_CUDA if kernel_lang.language(candidate_src) == "cuda" else SYSTEM
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]


class ToolsUnsupported(BackendError):
    """The endpoint refused the request's `tools` (no tool-calling support configured)."""


def usage_of(resp) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of a response; 0 where the server reports none."""
    usage = getattr(resp, "usage", None)
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


class OpenAIBackend:
    """Calls a chat-completions endpoint; one proposal per call."""

    name = "openai"
    max_nudges = 2  # answers without usable edits sent back with the reason before propose gives up

    def __init__(self, *, base_url: str | None, api_key: str | None, model: str | None, timeout: float = 120.0,
                 retries: int = 3, backoff: float = 1.0):
        import openai

        if not model:
            raise BackendError("no model configured for the openai backend: pass --model or set KDEBUG_MODEL")
        self.model = model
        self.stopped: dict | None = None  # why the last propose proposed nothing
        self.retries = retries
        self.backoff = backoff
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout,
                                    max_retries=0)

    def create(self, messages: list[dict], temperature: float = 0.0, tools: list[dict] | None = None):
        """One chat completion (the SDK's response), with retries on transient errors. With `tools`, an
        endpoint that refuses them raises ToolsUnsupported (the caller falls back to plain edits)."""
        extra = {"tools": tools, "tool_choice": "auto"} if tools else {}
        last = None
        for attempt in range(self.retries + 1):
            try:
                return self.client.chat.completions.create(model=self.model, messages=messages,
                                                           temperature=temperature, **extra)
            except Exception as e:  # noqa: BLE001 - classified below
                kind = type(e).__name__
                if kind in FATAL:
                    raise BackendError(f"openai backend: {FATAL[kind]} ({e.__class__.__name__})") from None
                status = getattr(e, "status_code", 0)
                # vLLM without --enable-auto-tool-choice (400), llama.cpp without --jinja (500), Ollama
                # models without a tool template (400): each names tools in its message.
                if tools and status in (400, 422, 500, 501) and "tool" in str(e).lower():
                    raise ToolsUnsupported(f"the endpoint does not take tools ({status}: {str(e)[:200]})") from None
                if kind in RETRYABLE or status in (429, 500, 502, 503, 504):
                    last = e
                    time.sleep(self.backoff * (2 ** attempt))
                    continue
                raise BackendError(f"openai backend: {kind}: {str(e)[:200]}") from None
        raise BackendError(f"openai backend: endpoint unavailable after {self.retries + 1} attempts "
                           f"({type(last).__name__})")

    def complete(self, messages: list[dict], temperature: float = 0.0) -> tuple[str, int, int]:
        """(text, prompt tokens, completion tokens), with retries on transient errors."""
        resp = self.create(messages, temperature)
        text = resp.choices[0].message.content or ""
        return (text, *usage_of(resp))

    def propose(self, candidate_src: str, diagnosis: dict, retrieved: dict, context: dict) -> list[Proposal]:
        """One proposal; an answer without edit blocks, or whose edits cannot be applied (or leave a file
        that does not parse, or has lost its CUDA kernels), is answered with the reason and asked again
        (`max_nudges` times), then the call proposes nothing and `stopped` says why."""
        from debugger.backends.tools import ToolError, checked

        self.stopped = None
        messages = build_prompt(candidate_src, context["reference_src"], diagnosis, retrieved, context.get("feedback"))
        p_tok = c_tok = 0
        for attempt in range(self.max_nudges + 1):
            text, p, c = self.complete(messages)
            p_tok, c_tok = p_tok + p, c_tok + c
            edits = parse_edits(text)
            if not edits:
                reason, why = "model_never_proposed", "the answer has no SEARCH/REPLACE block"
            else:
                try:
                    checked(candidate_src, edits)
                    break
                except ToolError as e:
                    reason, why = "edits_do_not_apply", str(e)
            messages = [*messages, {"role": "assistant", "content": text},
                        {"role": "user", "content": f"Not applied: {why}. Answer with SEARCH/REPLACE blocks only."}]
        else:
            self.stopped = {"reason": reason, "message": f"{attempt + 1} answers; the last: {why}",
                            "prompt_tokens": p_tok, "completion_tokens": c_tok}
            return []
        hyps = diagnosis.get("hypotheses") or []
        return [Proposal(origin="model", description=f"{self.model}: {len(edits)} edit(s)", edits=edits,
                         bug_class=hyps[0]["bug_class"] if hyps else None, prompt_tokens=p_tok,
                         completion_tokens=c_tok)]
