"""The openai backend as a debugger: a tool-calling loop over the chat-completions `tools` interface.

One conversation per run. Each call of `propose` lets the model gather evidence through the tools
(debugger/backends/tools.py) until it calls `propose_edit`; the edits go back to the repair graph as a
Proposal, which the graph applies, verifies and gates. The graph's outcome is the answer to that
propose_edit call, given at the next `propose` of the run, so the model continues from it.

Degrades cleanly: an endpoint that refuses `tools` falls back to the one-shot edits of
OpenAIBackend (for the rest of the run); edit blocks answered as plain text are taken as a proposal
once they apply (tools.checked); malformed or unknown tool calls, edits that do not apply and tool
failures go back to the model as errors; long tool outputs
are cut; a loop that ends without a proposal sets `stopped` ({reason, message, tokens}) and proposes
nothing: model_never_proposed, malformed_tool_calls, edits_do_not_apply (proposals whose edits do not
apply, or leave a file that no longer parses or has lost its CUDA kernels: tools.checked), tool_call_budget,
token_budget or wall_clock_budget. Every model call and tool call is a ledger row with its tokens (Ledger.tool_call).
"""
from __future__ import annotations

import json
import time

from debugger.backends import kernel_lang, tools
from debugger.backends.base import Proposal
from debugger.backends.edits import parse_edits
from debugger.backends.openai_compat import OpenAIBackend, ToolsUnsupported, usage_of

RULES = ("Fix the root cause with the smallest change. Never call PyTorch to compute the operator, never "
         "special-case shapes or inputs, never read the reference, never lower the precision.")

SYSTEM = {
    "triton": "You debug a GPU kernel written in Triton: it runs but computes wrong values. Gather evidence with "
              "the tools (evaluate, diagnose, probe a kernel on the interpreter, experiment with an edit, localise "
              "the departing launch, search_knowledge, read_reference_kernel), then call propose_edit with "
              "search/replace edits of the current file; kdebug applies and verifies them and tells you the "
              f"outcome. Keep the computation in your own @triton.jit kernels. {RULES}",
    "cuda": "You debug a GPU kernel written in CUDA C++, compiled with torch.utils.cpp_extension.load_inline from "
            "string literals in the Python file: it runs but computes wrong values. Gather evidence with the tools "
            "(evaluate, diagnose, experiment with an edit, localise the departing launch, search_knowledge, "
            "read_reference_kernel), then call propose_edit with search/replace edits of the current file: edit "
            "the CUDA code inside its string, SEARCH text copied exactly as it appears in the file; kdebug applies "
            "and verifies them and tells you the outcome. Keep the computation in your own __global__ kernels and "
            f"the extension's binding as it is. {RULES}",
}
NUDGE = ("Call a tool to gather evidence, or call propose_edit with your fix (search/replace edits of the "
         "current file).")


def _call_dict(call) -> dict:
    return {"id": call.id, "type": "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments or ""}}


def _parse_args(raw) -> dict:
    """A tool call's arguments; ValueError with the reason when they are not a JSON object."""
    if raw in (None, ""):
        return {}
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as e:
        raise ValueError(f"arguments are not valid JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(args, dict):
        raise ValueError(f"arguments must be a JSON object, not {type(args).__name__}")
    return args


def first_message(bench: tools.Workbench, retrieved: dict, available: list[tools.Tool]) -> str:
    """The task: reference, current kernel, the diagnosis so far, the retrieved patterns' titles."""
    src = bench.case.candidate_src
    parts = ["## Reference (PyTorch, the ground truth)", "```python", bench.case.reference_src.strip(), "```",
             "## Current kernel", "```python", src.strip(), "```"]
    parts.append(kernel_lang.where(src))
    parts += ["## Diagnosis", bench.diagnosis.get("prompt_text") or bench.diagnosis.get("summary", "")]
    parts += kernel_lang.cuda_context(src, bench.diagnosis)
    patterns = kernel_lang.for_language(src, retrieved.get("patterns") or [])
    titles = [f"- {h.get('id')}: {h.get('title')} ({h.get('bug_class')})" for h in patterns[:3]]
    if titles:
        parts += ["## Known failure patterns that may apply (search_knowledge reads them)", *titles]
    ref_kernel = retrieved.get("reference_kernel") or {}
    if ref_kernel.get("id"):
        parts.append(f"## The closest correct kernel in the knowledge base: {ref_kernel['id']} "
                     f"(read_reference_kernel reads it)")
    parts.append(f"Tools: {', '.join(t.name for t in available)}. Investigate, then call propose_edit.")
    return "\n".join(parts)


def outcome_text(context: dict, current_src: str, shown_src: str | None) -> str:
    """What became of the last proposal, from the graph's history entry, and the kernel now current."""
    last = context.get("last") or {}
    outcome, msg = last.get("outcome"), last.get("message") or context.get("feedback") or ""
    if outcome == "rejected":
        text = ("Applied: it passed the checks, but the integrity gate rejected it: "
                + "; ".join(last.get("reasons") or [msg]) + ". Fix it inside the kernel.")
    elif outcome == "skipped":
        text = f"Not applied: {msg}."
    elif outcome == "better":
        text = f"Applied and kept: better, not yet right ({msg}). It is now the current kernel."
    elif outcome:
        text = f"Applied, then reverted ({outcome}): {msg}."
    else:
        text = msg or "The previous proposal was not verified."
    if current_src != shown_src:
        text += f"\n## Current kernel\n```python\n{current_src.strip()}\n```"
    return text


class OpenAIToolBackend(OpenAIBackend):
    """The openai backend with tools; `tools=False` (or an endpoint without tools) is OpenAIBackend."""

    name = "openai"

    def __init__(self, *, tools: bool = True, max_tool_calls: int = 40, max_tool_chars: int = 8000,
                 max_nudges: int = 2, max_malformed: int = 3, **kw):
        super().__init__(**kw)
        self.use_tools = tools
        self.max_tool_calls = max_tool_calls
        self.max_tool_chars = max_tool_chars
        self.max_nudges = max_nudges
        self.max_malformed = max_malformed
        self.messages: list[dict] | None = None
        self.pending: str | None = None  # the propose_edit call awaiting the graph's outcome
        self.shown_src: str | None = None
        self.tool_calls = 0  # this run's, all proposals together
        self.stopped: dict | None = None
        self.fallback: str | None = None  # why the run went one-shot

    def propose(self, candidate_src: str, diagnosis: dict, retrieved: dict, context: dict) -> list[Proposal]:
        self.stopped = None
        if self.use_tools:
            try:
                return self._loop(candidate_src, diagnosis, retrieved, context)
            except ToolsUnsupported as e:
                self.use_tools, self.fallback = False, str(e)
                self._say(context, f"  {e}: one-shot edits from here on")
                self._record(context, {"kind": "fallback", "tool": None, "detail": str(e)})
        return super().propose(candidate_src, diagnosis, retrieved, context)

    # -- the loop ---------------------------------------------------------------------------------
    def _loop(self, candidate_src: str, diagnosis: dict, retrieved: dict, context: dict) -> list[Proposal]:
        bench = tools.Workbench.from_context(candidate_src, diagnosis, context)
        avail = tools.available(bench)
        by_name = {t.name: t for t in avail}
        schemas = [t.schema() for t in avail]
        if self.messages is None:
            self.messages = [{"role": "system", "content": SYSTEM[bench.language]},
                             {"role": "user", "content": first_message(bench, retrieved, avail)}]
        else:
            answer = outcome_text(context, candidate_src, self.shown_src)
            self.messages.append({"role": "tool", "tool_call_id": self.pending, "content": answer} if self.pending
                                 else {"role": "user", "content": answer})
        self.shown_src, self.pending = candidate_src, None
        run = context.get("run")
        spent = context.get("tokens") or {}
        budget = (run.limits.token_budget if run else 10**9) - spent.get("prompt", 0) - spent.get("completion", 0)
        deadline = (context.get("started_at") or time.time()) + (run.limits.wall_budget if run else 1e9)
        used = {"prompt": 0, "completion": 0}
        nudges = malformed = bad_edits = 0

        def stop(reason: str, message: str) -> list[Proposal]:
            self.stopped = {"reason": reason, "message": message, "prompt_tokens": used["prompt"],
                            "completion_tokens": used["completion"]}
            self._say(context, f"  model loop stopped: {reason}: {message}")
            self._record(context, {"kind": "stop", "tool": None, "detail": f"{reason}: {message}"})
            return []

        while True:
            if used["prompt"] + used["completion"] >= budget:
                return stop("token_budget", f"{used['prompt'] + used['completion']} tokens in this turn")
            if time.time() >= deadline:
                return stop("wall_clock_budget", "the run's wall-clock budget is spent")
            if self.tool_calls >= self.max_tool_calls:
                return stop("tool_call_budget", f"{self.tool_calls} tool calls")
            t0 = time.time()
            resp = self.create(self.messages, tools=schemas)
            p_tok, c_tok = usage_of(resp)
            used["prompt"] += p_tok
            used["completion"] += c_tok
            choice = resp.choices[0]
            msg = choice.message
            calls = list(msg.tool_calls or [])
            self.messages.append({"role": "assistant", "content": msg.content or "",
                                  **({"tool_calls": [_call_dict(c) for c in calls]} if calls else {})})
            self._record(context, {"kind": "model", "tool": None, "prompt_tokens": p_tok, "completion_tokens": c_tok,
                                   "seconds": time.time() - t0, "detail": choice.finish_reason})
            if not calls:
                edits = parse_edits(msg.content or "")
                if edits:  # a server that ignores tools, or a model that answers in edit blocks
                    try:
                        tools.checked(candidate_src, edits)
                    except tools.ToolError as e:
                        bad_edits += 1
                        if bad_edits >= self.max_malformed:
                            return stop("edits_do_not_apply", f"{bad_edits} proposals in a row whose edits "
                                        f"cannot be applied; the last: {e}")
                        self.messages.append({"role": "user", "content": f"Your edits were not applied: {e}. "
                                              + NUDGE})
                        continue
                    return [self._proposal(edits, "", diagnosis, used)]
                nudges += 1
                cut = choice.finish_reason == "length"
                if nudges > self.max_nudges:
                    return stop("model_never_proposed", f"{nudges} answers without a tool call or an edit"
                                + (" (cut off at the length limit)" if cut else ""))
                self.messages.append({"role": "user", "content": ("Your answer was cut off at the length limit. "
                                                                  if cut else "") + NUDGE})
                continue
            proposal, bad, refused = None, 0, None
            for call in calls:
                self.tool_calls += 1
                name = call.function.name
                t0 = time.time()
                result, status, edits = self._run_call(call, bench, by_name, proposal is not None)
                if edits is not None:  # a valid propose_edit: answered once the graph has verified it
                    proposal = self._proposal(edits, result, diagnosis, used)
                    self.pending = call.id
                    self._record(context, {"kind": "tool", "tool": name, "ok": 1,
                                           "arguments": call.function.arguments, "seconds": time.time() - t0})
                    continue
                bad += status == "malformed"
                if name == "propose_edit" and status == "tool_error":
                    refused = result[len("error: "):]
                if len(result) > self.max_tool_chars:
                    result = (result[:self.max_tool_chars]
                              + f"\n[output cut: {len(result) - self.max_tool_chars} more characters]")
                self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
                self._record(context, {"kind": "tool", "tool": name, "ok": int(status == "ok"),
                                       "arguments": call.function.arguments, "result_chars": len(result),
                                       "seconds": time.time() - t0, "detail": status})
                self._say(context, f"  tool {name}: {result.splitlines()[0][:160] if result else ''}")
            if proposal is not None:
                return [proposal]
            bad_edits = bad_edits + 1 if refused else 0
            if bad_edits >= self.max_malformed:
                return stop("edits_do_not_apply", f"{bad_edits} proposals in a row whose edits cannot be applied; "
                            f"the last: {refused}")
            malformed = malformed + 1 if bad == len(calls) else 0
            if malformed >= self.max_malformed:
                return stop("malformed_tool_calls", f"{malformed} turns of malformed or unknown tool calls")

    def _run_call(self, call, bench: tools.Workbench, by_name: dict, after_proposal: bool):
        """(text for the model, status, edits): status ok | malformed | tool_error | skipped; edits only
        for a valid propose_edit (the text is then its explanation)."""
        name = call.function.name
        if name not in by_name:
            return f"error: unknown tool {name!r}; tools: {', '.join(by_name)}", "malformed", None
        try:
            args = _parse_args(call.function.arguments)
        except ValueError as e:
            return f"error: {e}", "malformed", None
        if after_proposal:
            return "not run: the propose_edit before it ends this turn", "skipped", None
        tool = by_name[name]
        try:
            if tool.run is None:
                edits, _ = tools.checked_edits(bench, args)
                return str(args.get("explanation") or "")[:200], "ok", edits
            return tool.run(bench, args), "ok", None
        except tools.ToolError as e:
            return f"error: {e}", "tool_error", None
        except Exception as e:  # noqa: BLE001 - a failing tool is news for the model, never a traceback
            return f"error: the tool failed: {type(e).__name__}: {str(e)[:300]}", "tool_error", None

    def _proposal(self, edits: list[dict], explanation: str, diagnosis: dict, used: dict) -> Proposal:
        hyps = diagnosis.get("hypotheses") or []
        why = f": {explanation}" if explanation else ""
        return Proposal(origin="model", description=f"{self.model}: {len(edits)} edit(s) after "
                        f"{self.tool_calls} tool call(s){why}"[:300], edits=edits,
                        bug_class=hyps[0]["bug_class"] if hyps else None, prompt_tokens=used["prompt"],
                        completion_tokens=used["completion"])

    # -- accounting ---------------------------------------------------------------------------------
    @staticmethod
    def _say(context: dict, msg: str) -> None:
        run = context.get("run")
        if run is not None:
            run.say(msg)

    @staticmethod
    def _record(context: dict, row: dict) -> None:
        run = context.get("run")
        if run is not None and run.ledger is not None:
            run.ledger.tool_call(run.run_id, {"iteration": context.get("iteration", 0), **row})
