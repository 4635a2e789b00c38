"""Write-back: a verified fix becomes a learned pattern file, or one more occurrence of a near twin.

The pattern (<data dir>/kb/patterns/learned/<id>.md, status `learned`: the user's layer, never the
curated files of the checkout or the installed package) carries the fix's provenance (case, unified
diff, diagnosis summary, backend, tokens, date) and its template, so the kb backend can re-apply the
edit to other kernels at no token cost (templates.TemplateRecipe). Before adding, the fix is compared
with the user's learned patterns of the same bug class: the same abstracted edit (token similarity
>= EDIT_MERGE) or a near-identical embedding of it (>= EMBED_MERGE, with the retrieval extra) merges
into the existing file (occurrences + 1, provenance appended) instead of adding a twin. `kdebug kb
promote` copies one into a checkout's kb/ for review.
"""
from __future__ import annotations

import difflib
import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from debugger import settings, symptoms as vocabulary
from debugger.knowledge.distil import NAME_RE, extract_template
from debugger.knowledge.index import KnowledgeIndex
from debugger.knowledge.loader import load_all, load_pattern
from debugger.knowledge.markdown import dump_front_matter, fence, split_front_matter
from debugger.knowledge.retrieve import diagnosis_query
from debugger.knowledge.schema import KnowledgeError, Pattern, Provenance, Template
from debugger.knowledge.templates import canonical_edit

EDIT_MERGE = 0.9
EMBED_MERGE = 0.97
TITLE_PART = 60


def unified_diff(before_src: str, after_src: str) -> str:
    """The unified diff before -> after, lines right-stripped (so YAML keeps it as a readable block)."""
    lines = difflib.unified_diff(before_src.splitlines(), after_src.splitlines(), "before.py", "after.py",
                                 n=2, lineterm="")
    return "".join(line.rstrip() + "\n" for line in lines)


def summarize_diagnosis(diagnosis: dict | None) -> str:
    """One paragraph: the top hypotheses with confidence and evidence, then the symptom tags."""
    if not diagnosis:
        return ""
    parts = []
    for h in (diagnosis.get("hypotheses") or [])[:3]:
        evidence = h.get("evidence")
        if isinstance(evidence, list):
            evidence = "; ".join(str(e) for e in evidence[:3])
        conf = h.get("confidence")
        conf = f" ({conf:.2f})" if isinstance(conf, (int, float)) else ""
        parts.append(f"{h.get('bug_class')}{conf}: {evidence}" if evidence else f"{h.get('bug_class')}{conf}")
    if diagnosis.get("symptoms"):
        parts.append("symptoms: " + ", ".join(map(str, diagnosis["symptoms"])))
    text = " | ".join(parts)
    return text if len(text) <= 600 else text[:597] + "..."


def _concrete(text: str, template: Template) -> str:
    """Template text with the learned fix's own names put back (for titles)."""
    out = NAME_RE.sub(lambda m: template.names[m.group(0)].name if m.group(0) in template.names else m.group(0), text)
    out = "; ".join(" ".join(line.split()) for line in out.splitlines() if line.strip())
    return out if len(out) <= TITLE_PART else out[:TITLE_PART - 3] + "..."


def _edit_similarity(a: list[str], b: list[str]) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _near_twin(template: Template, bug_class: str, patterns: list[Pattern],
               index: KnowledgeIndex | None) -> Pattern | None:
    """The existing pattern of the same class whose learned edit is (nearly) this one, if any."""
    mine = canonical_edit(template)
    same_class = [p for p in patterns if p.bug_class == bug_class and p.template is not None]
    if not same_class:
        return None
    edits = [canonical_edit(p.template) for p in same_class]
    scored = sorted(((_edit_similarity(mine, e), i) for i, e in enumerate(edits)), reverse=True)
    if scored[0][0] >= EDIT_MERGE:
        return same_class[scored[0][1]]
    if index is not None and index.embeddings:
        vectors = index.embed([" ".join(mine)] + [" ".join(e) for e in edits])
        sims = [float(np.dot(vectors[0], v)) for v in vectors[1:]]
        best = int(np.argmax(sims))
        if sims[best] >= EMBED_MERGE:
            return same_class[best]
    return None


def _merge(pattern: Pattern, provenance: Provenance) -> dict:
    path = Path(pattern.path)
    meta, body = split_front_matter(path.read_text())
    previous = meta.get("provenance") or []
    meta["provenance"] = ([previous] if isinstance(previous, dict) else list(previous)) + [
        provenance.model_dump(exclude_none=True)]
    meta["occurrences"] = int(meta.get("occurrences") or 1) + 1
    path.write_text(dump_front_matter(meta) + body)
    return {"action": "merged", "id": pattern.id, "path": str(path), "occurrences": meta["occurrences"]}


def _new_pattern_text(pid: str, template: Template, case_name: str, before_src: str, after_src: str,
                      diagnosis: dict, bug_class: str, operators: list[str], provenance: Provenance,
                      reference_src: str | None) -> str:
    tags = diagnosis_query(diagnosis)["symptoms"]
    first = template.hunks[0]
    before_line = _concrete(first.before or first.above or first.below or "", template)
    after_line = _concrete(first.after, template) or "(deleted)"
    evidence = [h.get("evidence") for h in diagnosis.get("hypotheses") or [] if h.get("bug_class") == bug_class]
    evidence = [e for e in evidence if e]
    if evidence:
        root_cause = " ".join("; ".join(map(str, e)) if isinstance(e, list) else str(e) for e in evidence[:1])
    else:
        root_cause = settings.bug_classes()[bug_class]
    rules = len(template.hunks)
    fix = (f"Learned from case {case_name} ({provenance.backend or 'unknown backend'}): {rules} rewrite "
           f"rule{'s' if rules > 1 else ''}, first `{before_line}` -> `{after_line}`. The kb backend "
           f"re-applies it through the template, modulo identifier names.")
    meta = {
        "id": pid,
        "title": f"Learned {bug_class} fix: {before_line} -> {after_line}",
        "bug_class": bug_class,
        "operators": operators,
        "symptoms": tags,
        "root_cause": root_cause,
        "fix": fix,
        "fix_recipe": None,
        **({"language": template.language} if template.language != "triton" else {}),
        "status": "learned",
        "occurrences": 1,
        "provenance": [provenance.model_dump(exclude_none=True)],
        "template": template.model_dump(exclude_defaults=True),
    }
    symptom_lines = "\n".join(f"- `{t}`: {vocabulary.ALL[t]}" for t in tags) or "Not recorded by the diagnosis."
    signature = diagnosis.get("error_signature") or diagnosis.get("signature")
    if signature:
        symptom_lines += f"\n\nError signature: `{signature}`"
    example = ""
    if reference_src:
        example += fence("python reference", reference_src)
    example += fence("python before", before_src) + fence("python after", after_src)
    body = (f"## Symptom\n{symptom_lines}\n\n## Root cause\n{root_cause}\n\n## Fix\n{fix}\n\n"
            f"{fence('diff', unified_diff(before_src, after_src))}\n## Example\n{example}")
    return dump_front_matter(meta) + body


def record_fix(case_name: str, before_src: str, after_src: str, diagnosis: dict | None, backend: str | None,
               tokens: int | dict | None, bug_class: str, kb_dir: Path | str | None = None,
               data_dir: Path | str | None = None, *, reference_src: str | None = None,
               operator: str | None = None, index: KnowledgeIndex | None = None) -> dict:
    """Distil a verified fix into the user's layer of the knowledge base (under data_dir); returns
    {"action": "added"|"merged", "id", "path"}. kb_dir (the curated files) is only read.

    The caller vouches that the fix passed the hidden inputs and the integrity gate.
    """
    if bug_class not in settings.bug_classes():
        raise KnowledgeError(f"record_fix: {bug_class!r} is not a bug class in debugger/bug_classes.toml")
    template = extract_template(before_src, after_src)
    if template is None:
        raise KnowledgeError(f"record_fix: case {case_name}: the fix changes no statement")
    kb_dir = Path(kb_dir) if kb_dir else settings.kb_dir()
    index = index or KnowledgeIndex(data_dir)
    diagnosis = diagnosis or {}
    provenance = Provenance(case=case_name, diff=unified_diff(before_src, after_src),
                            diagnosis=summarize_diagnosis(diagnosis) or None, backend=backend, tokens=tokens,
                            date=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    user_dir = index.user_dir
    twin = _near_twin(template, bug_class, load_all(user_dir).patterns, index)
    if twin is not None:
        result = _merge(twin, provenance)
    else:
        digest = hashlib.sha256("\x00".join(canonical_edit(template)).encode()).hexdigest()[:8]
        pid = f"learned-{bug_class.replace('_', '-')}-{digest}"
        path = user_dir / "patterns" / "learned" / f"{pid}.md"
        if path.exists():
            raise KnowledgeError(f"{path}: exists but was not recognised as the same fix (is it valid?)")
        op = re.sub(r"[^a-z0-9_-]+", "_", str(operator or diagnosis.get("operator") or "any").lower()).strip("_-")
        operators = [op or "any"]
        text = _new_pattern_text(pid, template, case_name, before_src, after_src, diagnosis, bug_class,
                                 operators, provenance, reference_src)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        try:
            load_pattern(path)
        except KnowledgeError:
            path.unlink()
            raise
        result = {"action": "added", "id": pid, "path": str(path), "occurrences": 1}
    index.reindex(kb_dir)
    return result
