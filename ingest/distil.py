"""Failed -> later correct pairs of the same problem, diffed and distilled into pattern drafts.

Within one history (a trace's turns, a problem's samples, a JSONL problem's attempts in order), each
correct attempt is paired with the nearest failed attempt before it. A pair whose two sources are
mostly the same file (line similarity >= NEAR_MISS) is a fix worth reading; a rewrite is not. The
draft is a knowledge-base pattern file (status `draft`, provenance naming both log locations) whose
bug class and symptom tags are guessed from what the diff adds and removes; it validates against the
pattern schema before it is kept, and goes to the drafts folder for a person to review and promote.
"""
from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from debugger import settings
from ingest.attempt import Attempt
from ingest.cases import slug

FAILED = ("numerical_mismatch", "runtime_error", "interface_error", "compile_error", "timeout")
NEAR_MISS = 0.5


@dataclass
class Logged:
    """An attempt with its class and hash, as the pairing needs it."""

    attempt: Attempt
    klass: str
    reason: str
    hash: str
    new: bool
    reference_src: str | None  # normalised (class Model)
    candidate_src: str | None  # normalised (class ModelNew)


@dataclass
class Pair:
    failed: Logged
    correct: Logged

    @property
    def hash(self) -> str:
        return hashlib.sha256(f"{self.failed.hash}:{self.correct.hash}".encode()).hexdigest()


def find_pairs(logged: list[Logged]) -> list[Pair]:
    """Nearest earlier failure for each correct attempt, per history; pairs with something new only."""
    histories: dict[str, list[Logged]] = {}
    for item in logged:
        histories.setdefault(item.attempt.history, []).append(item)
    pairs = []
    for items in histories.values():
        items.sort(key=lambda x: x.attempt.order)
        last_failed = None
        for item in items:
            if item.klass in FAILED and item.attempt.candidate_src:
                last_failed = item
            elif item.klass == "correct" and last_failed is not None:
                if last_failed.new or item.new:
                    pairs.append(Pair(last_failed, item))
                last_failed = None
    return pairs


def similarity(a: str, b: str) -> float:
    """How much of two sources is the same lines (blank lines left out)."""
    def lines(s: str) -> list[str]:
        return [ln.strip() for ln in s.splitlines() if ln.strip()]

    return difflib.SequenceMatcher(None, lines(a), lines(b), autojunk=False).ratio()


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """(removed, added) lines of the diff, stripped."""
    removed, added = [], []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        if line.startswith("-"):
            removed.append(line[1:].strip())
        elif line.startswith("+"):
            added.append(line[1:].strip())
    return removed, added


def _has(lines: list[str], pattern: str) -> bool:
    rx = re.compile(pattern)
    return any(rx.search(line) for line in lines)


# (bug class, symptom tags, does the diff show it: f(removed, added)), most specific first.
RULES = [
    ("grid_undercount", ["floor_div_grid", "tail_block_wrong", "programs_missing"],
     lambda r, a: _has(a, r"cdiv\(") and _has(r, r"//")),
    ("numerical_overflow", ["no_max_subtraction", "nan_in_output", "inf_in_output"],
     lambda r, a: _has(a, r"-\s*[\w.]*max\(") and not _has(r, r"-\s*[\w.]*max\(")),
    ("masked_fill_value", ["other_zero_before_max"],
     lambda r, a: _has(a, r"other\s*=") and _has(r, r"other\s*=")),
    ("mask_missing", ["unmasked_load", "tail_block_wrong"],
     lambda r, a: _has(a, r"tl\.load\(.*mask\s*=") and not _has(r, r"tl\.load\(.*mask\s*=")),
    ("mask_missing", ["unmasked_store", "tail_block_wrong"],
     lambda r, a: _has(a, r"tl\.store\(.*mask\s*=") and not _has(r, r"tl\.store\(.*mask\s*=")),
    ("write_race", ["store_without_atomic", "programs_overlap"], lambda r, a: _has(a, r"atomic_")),
    ("index_overflow", ["int32_offsets"], lambda r, a: _has(a, r"int64")),
    ("low_precision_accumulator", ["low_precision_accumulator", "precision_noise"],
     lambda r, a: _has(a, r"float32") and _has(r, r"float16|bfloat16|fp16|bf16")),
    ("stride_layout", ["hardcoded_stride", "fails_noncontiguous"],
     lambda r, a: _has(a, r"\.stride\(|\.contiguous\(\)") and not _has(r, r"\.stride\(|\.contiguous\(\)")),
    ("program_id_axis", ["whole_rows_wrong", "whole_cols_wrong"],
     lambda r, a: _has(a, r"program_id\(") and _has(r, r"program_id\(")),
    ("pointer_advance", ["loop_pointer_not_advanced"],
     lambda r, a: _has(a, r"\+=\s*\w*(BLOCK|stride)\w*") and not _has(r, r"\+=\s*\w*(BLOCK|stride)\w*")),
    ("normalization_formula", ["intermediate_wrong", "divides_by_block"],
     lambda r, a: _has(a + r, r"eps|rsqrt|sqrt\(|var|mean")),
    ("scan_semantics", ["intermediate_wrong"], lambda r, a: _has(a + r, r"cumsum|cumprod|associative_scan")),
    ("reduction_axis", ["block_smaller_than_row", "whole_rows_wrong"],
     lambda r, a: _has(a + r, r"axis\s*=") or _has(a, r"next_power_of_2")),
    ("dtype_cast", ["large_error"], lambda r, a: _has(a + r, r"\.to\(|dtype\s*=")),
    ("activation_formula", ["large_error"],
     lambda r, a: _has(a + r, r"sigmoid|tanh|erf|gelu|relu|silu|exp\(|log\(")),
]


def guess_class(before: str, after: str, failed_class: str, max_difference: float | None) -> tuple[str, list[str]]:
    """(bug class, symptom tags) the diff points at; `other` with the failure's symptom when nothing fits."""
    removed, added = changed_lines(before, after)
    for bug_class, tags, test in RULES:
        try:
            if test(removed, added):
                return bug_class, tags
        except re.error:
            continue
    if failed_class == "runtime_error":
        return "other", ["raises_exception"]
    if failed_class in ("compile_error", "interface_error", "timeout"):
        return "other", ["raises_exception"]
    if max_difference is not None and max_difference < 1e-2:
        return "other", ["precision_noise"]
    return "other", ["large_error"]


def operator_name(attempt: Attempt) -> str:
    """An operator name for the pattern: the KernelBench problem name, or a word-like problem id."""
    name = attempt.meta.get("problem_name") or attempt.problem_id.rsplit("/", 1)[-1]
    name = re.sub(r"^\d+_", "", str(name))
    op = re.sub(r"[^a-z0-9_-]+", "_", name.lower()).strip("_-")
    return op if op and op[0].isalnum() and not op.isdigit() and len(op) <= 60 else "any"


def draft_id(pair: Pair) -> str:
    return f"draft-{slug(pair.correct.attempt.problem_id, 30)}-{pair.hash[:10]}"


def _one_line(text: str | None, limit: int = 240) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= limit else one[:limit - 3] + "..."


def _first_change(before: str, after: str) -> tuple[str, str]:
    removed, added = changed_lines(before, after)
    return (removed[0] if removed else "(nothing)"), (added[0] if added else "(deleted)")


def _pattern_text(pair: Pair, pid: str, bug_class: str, tags: list[str], template: dict | None) -> str:
    from debugger.knowledge.markdown import dump_front_matter, fence
    from debugger.knowledge.writeback import unified_diff

    f, c = pair.failed, pair.correct
    before, after, reference = f.candidate_src, c.candidate_src, c.reference_src or f.reference_src
    diff = unified_diff(before, after)
    first_before, first_after = _first_change(before, after)
    logged = f"{f.klass.replace('_', ' ')} ({_one_line(f.reason, 160)})"
    summary = settings.bug_classes()[bug_class]
    root_cause = (f"Guessed from the diff, not diagnosed: {summary} The log recorded the failed attempt as "
                  f"{logged}; the next attempt that passed changed what the diff shows.")
    fix = (f"As the passing attempt did: `{_one_line(first_before, 80)}` -> `{_one_line(first_after, 80)}`"
           f"{' and more (see the diff)' if len(changed_lines(before, after)[1]) > 1 else ''}.")
    provenance = {"case": f"{f.attempt.location} -> {c.attempt.location}", "diff": diff,
                  "diagnosis": f"logged as {logged}" + (f"; feedback: {_one_line(f.attempt.feedback, 300)}"
                                                         if f.attempt.feedback else ""),
                  "backend": f"log:{c.attempt.model}" if c.attempt.model else "log",
                  "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    if c.attempt.tokens is not None:
        provenance["tokens"] = int(c.attempt.tokens)
    meta = {"id": pid,
            "title": _one_line(f"Draft {bug_class} fix for {c.attempt.problem_id}: {first_before} -> {first_after}", 150),
            "bug_class": bug_class, "operators": [operator_name(c.attempt)], "symptoms": tags,
            "root_cause": root_cause, "fix": fix, "fix_recipe": None, "status": "draft", "occurrences": 1,
            "provenance": [provenance]}
    if template is not None:
        meta["template"] = template
    symptom = (f"The generation log recorded {logged} for the attempt at `{f.attempt.location}`"
               + (f", with max difference {f.attempt.max_difference:.3g}" if f.attempt.max_difference is not None
                  else "") + ".")
    if f.attempt.feedback:
        symptom += f"\n\nFeedback given to the model: {_one_line(f.attempt.feedback, 400)}"
    body = (f"## Symptom\n{symptom}\n\n## Root cause\n{root_cause}\n\nThis is a draft distilled from a failed -> "
            f"passing pair in generation logs ({c.attempt.source}); review the class, symptoms and root cause "
            f"before promoting it (status: reviewed) into kb/patterns.\n\n## Fix\n{fix}\n\n{fence('diff', diff)}\n"
            f"## Example\n{fence('python reference', reference)}{fence('python before', before)}"
            f"{fence('python after', after)}")
    return dump_front_matter(meta) + body


def _template(before: str, after: str) -> dict | None:
    try:
        from debugger.knowledge.distil import extract_template

        template = extract_template(before, after)
        return template.model_dump(exclude_defaults=True) if template is not None else None
    except Exception:  # noqa: BLE001 - a draft without a template is still a draft
        return None


def skip_reason(pair: Pair) -> str | None:
    """Why this pair cannot become a draft (None: it can)."""
    from ingest.sources import is_candidate, top_names

    f, c = pair.failed, pair.correct
    reference = c.reference_src or f.reference_src
    if not reference or not {"Model", "get_inputs", "get_init_inputs"} <= top_names(reference):
        return "no KernelBench reference (Model, get_inputs, get_init_inputs)"
    if not is_candidate(f.candidate_src) or not is_candidate(c.candidate_src):
        return "a source does not parse or defines no ModelNew"
    if f.candidate_src.strip() == c.candidate_src.strip():
        return "failed and passing sources are identical"
    if similarity(f.candidate_src, c.candidate_src) < NEAR_MISS:
        return "the passing attempt is a rewrite, not a fix"
    return None


def write_draft(pair: Pair, drafts_dir: Path) -> tuple[Path | None, str, str]:
    """(path or None, draft id, bug class or the reason it was not kept)."""
    from debugger.knowledge.loader import load_pattern
    from debugger.knowledge.schema import KnowledgeError

    pid = draft_id(pair)
    reason = skip_reason(pair)
    if reason:
        return None, pid, reason
    before, after = pair.failed.candidate_src, pair.correct.candidate_src
    bug_class, tags = guess_class(before, after, pair.failed.klass, pair.failed.attempt.max_difference)
    drafts_dir.mkdir(parents=True, exist_ok=True)
    path = drafts_dir / f"{pid}.md"
    if path.exists():
        return None, pid, "a draft with this id exists already"
    problem = None
    for template in (_template(before, after), None):
        path.write_text(_pattern_text(pair, pid, bug_class, tags, template))
        try:
            load_pattern(path)
            return path, pid, bug_class
        except KnowledgeError as e:
            problem = str(e)
            path.unlink()
            if template is None:
                break
    return None, pid, f"the draft does not validate: {problem}"
