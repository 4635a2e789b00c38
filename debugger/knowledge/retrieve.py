"""Retrieval: a hybrid of metadata (bug class, operator, symptom overlap) and embedding similarity.

Each item's score is the weighted mean, over the signals the query gives, of one value in 0..1 per
signal: text similarity (query words and symptom descriptions against the item's text document),
code similarity (the candidate's kernel functions against the item's, half embedding, half overlap
of the tl./torch. calls used), bug-class weight (from the diagnosis' hypotheses), symptom overlap
(Dice coefficient of the tag sets) and operator match. An explicit `bug_class` or `kind` is a filter.
A reference kernel has no bug class and no symptoms, so a query by symptoms or diagnosis ranks the
patterns first; search kind="reference_kernel" (or closest_reference_kernel) for models to follow.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from debugger import settings, symptoms as vocabulary
from debugger.knowledge import pysource
from debugger.knowledge.index import (CODE, KERNEL, PATTERN, TEXT, KnowledgeIndex, chroma_id, code_digest,
                                      language_of)

WEIGHTS = {"text": 0.30, "code": 0.15, "bug_class": 0.30, "symptoms": 0.25, "operator": 0.10}


@dataclass
class Hit:
    """One retrieved item: a pattern or a reference kernel, with its score in 0..1."""

    id: str
    kind: str
    score: float
    bug_class: str | None
    path: str
    title: str
    fix_recipe: str | None = None
    signals: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _name(op: str) -> str:
    return op.strip().lower().replace("-", "_").replace(" ", "_")


def operator_match(operator: str, operators: list[str]) -> float:
    """1 for the operator itself, 0.6 for a relative (softmax / log_softmax), 0.5 for 'any', else 0."""
    op = _name(operator)
    names = [_name(o) for o in operators]
    if op in names:
        return 1.0
    if any(op in n or n in op for n in names if n != "any"):
        return 0.6
    return 0.5 if "any" in names else 0.0


def dice(a: set, b: set) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def search(index: KnowledgeIndex, query: str | None = None, *, symptoms=None, bug_class: str | None = None,
           operator: str | None = None, code: str | None = None, kind: str | None = None, k: int = 5,
           class_weights: dict[str, float] | None = None, language: str | None = None) -> list[Hit]:
    """The k best items for the query; `bug_class`, `kind` and `language` filter, everything else ranks."""
    if kind not in (None, PATTERN, KERNEL):
        raise ValueError(f"kind must be {PATTERN!r} or {KERNEL!r}, not {kind!r}")
    tags = [s for s in (symptoms or []) if vocabulary.is_symptom(s)]
    rows = index.items(kind)
    if bug_class:
        rows = [r for r in rows if r["bug_class"] == bug_class]
    if language:
        rows = [r for r in rows if r["language"] == language]
    text = " ".join([query or ""] + [vocabulary.ALL[s] for s in tags]).strip()
    text_sim = index.similarities(TEXT, text, kind) if text else {}
    code_sim = index.similarities(CODE, code_digest(code), kind) if code else {}
    code_apis = pysource.api_calls(code) if code else set()

    hits = []
    for r in rows:
        key = chroma_id(r["kind"], r["id"])
        signals: dict[str, float] = {}
        if text:
            signals["text"] = text_sim.get(key, 0.0)
        if code:
            signals["code"] = 0.5 * code_sim.get(key, 0.0) + 0.5 * jaccard(code_apis, set(r["apis"]))
        if class_weights:
            signals["bug_class"] = class_weights.get(r["bug_class"], 0.0)
        if tags:
            signals["symptoms"] = dice(set(tags), set(r["symptoms"]))
        if operator:
            signals["operator"] = operator_match(operator, r["operators"])
        total = sum(WEIGHTS[s] for s in signals)
        score = sum(WEIGHTS[s] * v for s, v in signals.items()) / total if total else 0.0
        hits.append(Hit(id=r["id"], kind=r["kind"], score=round(score, 4), bug_class=r["bug_class"],
                        path=r["path"], title=r["title"], fix_recipe=r["fix_recipe"],
                        signals={s: round(v, 4) for s, v in signals.items()}))
    seen = {(r["kind"], r["id"]): r["occurrences"] or 0 for r in rows}
    hits.sort(key=lambda h: (-h.score, -seen[(h.kind, h.id)], h.id))
    return hits[:k]


def _text_of(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        return " ".join(_text_of(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return " ".join(_text_of(v) for v in value)
    return str(value)


def diagnosis_query(diagnosis: dict) -> dict:
    """The search arguments a diagnosis implies: class weights, symptom tags, query text, operator.

    Reads `hypotheses` (each with `bug_class`, `confidence` in 0..1 and `evidence`), `symptoms`,
    `error_signature` or `signature` (a string or a mapping) and `operator`; missing keys are fine.
    """
    class_weights: dict[str, float] = {}
    tags = [s for s in diagnosis.get("symptoms") or [] if isinstance(s, str) and vocabulary.is_symptom(s)]
    words = [_text_of(diagnosis.get("error_signature") or diagnosis.get("signature"))]
    for rank, h in enumerate(diagnosis.get("hypotheses") or []):
        cls = h.get("bug_class")
        if cls not in settings.bug_classes():
            continue
        conf = h.get("confidence")
        weight = float(conf) if isinstance(conf, (int, float)) else 1.0 / (rank + 1)
        class_weights[cls] = max(class_weights.get(cls, 0.0), min(max(weight, 0.0), 1.0))
        evidence = h.get("evidence")
        for item in evidence if isinstance(evidence, list) else [evidence]:
            if isinstance(item, str) and vocabulary.is_symptom(item):
                tags.append(item)
            elif rank < 3:
                words.append(_text_of(item))
        if rank < 3:
            words.append(settings.bug_classes()[cls])
    return {"query": " ".join(w for w in words if w).strip() or None, "symptoms": list(dict.fromkeys(tags)),
            "class_weights": class_weights, "operator": diagnosis.get("operator")}


def for_diagnosis(index: KnowledgeIndex, diagnosis: dict, candidate_src: str | None = None, k: int = 5) -> list[Hit]:
    """Patterns for a diagnosis (hypotheses, symptoms, error signature) and the candidate's code."""
    q = diagnosis_query(diagnosis)
    hits = search(index, q["query"], symptoms=q["symptoms"], operator=q["operator"], code=candidate_src,
                  kind=PATTERN, k=max(3 * k, 12), class_weights=q["class_weights"] or None)
    return diversify(hits, k)


def diversify(hits: list[Hit], k: int) -> list[Hit]:
    """The best hit of each bug class first (in score order), then the rest by score: a result list
    that names three classes is worth more to a repair than three patterns of one class."""
    firsts, rest, seen = [], [], set()
    for h in hits:
        (rest if h.bug_class in seen else firsts).append(h)
        seen.add(h.bug_class)
    return (firsts + rest)[:k]


def closest_reference_kernel(index: KnowledgeIndex, candidate_src: str, operator_hint: str | None = None) -> Hit | None:
    """The reference kernel most like the candidate (by code, and by operator where hinted), in the
    candidate's language (Triton or CUDA) where the knowledge base has one, else in any."""
    hits = []
    language = language_of(candidate_src)
    if language:
        hits = search(index, operator_hint, operator=operator_hint, code=candidate_src, kind=KERNEL, k=1,
                      language=language)
    if not hits:
        hits = search(index, operator_hint, operator=operator_hint, code=candidate_src, kind=KERNEL, k=1)
    return hits[0] if hits else None
