"""Distilling a verified fix into a template: which statements changed, and how, with names abstracted.

The two sources are diffed statement by statement (difflib over whole statements, so a rule is never
half a call); each changed statement is paired with its most similar counterpart, and inserted or
deleted statements attach to a neighbouring pair. Identifiers become placeholders ($A, $B, ...; one
map for the whole template) unless pysource keeps them (tl./triton./torch. names, attribute names,
builtins, API keyword names); keywords and literals stay. A call argument the edit left untouched,
whose names the rule needs nowhere else, becomes a hole ($1, $2, ...) that matches any argument, so
`tl.store(ptr + offs, value)` -> `tl.store(..., mask=m)` fits every store. Each placeholder records
the role its name had (parameter, local with its definition, fresh name, global), so templates.py
can bind the ones a match leaves open. A fix made inside load_inline's CUDA strings is distilled the
same way over the CUDA text (cudasource.py: C++ statements and tokens), as a template of language cuda.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from debugger.knowledge.pysource import ParsedSource
from debugger.knowledge.schema import Template, TemplateHunk, TemplateName

NAME_RE = re.compile(r"\$([A-Z]+)")
PAIR_SIMILARITY = 0.5


def placeholder(i: int) -> str:
    """$A .. $Z, then $AA, $AB, ..."""
    letters, i = "", i + 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return "$" + letters


@dataclass
class _Rule:
    before: tuple[int, int] | None  # statement index range in the before source, inclusive
    after: tuple[int, int] | None   # in the after source
    above: int | None = None        # unchanged neighbour statements (before source)
    below: int | None = None
    pair: tuple[int, int] | None = None  # the before/after statements that correspond


def _similarity(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def _align(bkeys: list[tuple], akeys: list[tuple]) -> list[tuple[int, int]]:
    """Monotonic pairing of similar statements maximising total similarity (pairs below 0.5 refused)."""
    m, n = len(bkeys), len(akeys)
    sim = [[_similarity(bkeys[i], akeys[j]) for j in range(n)] for i in range(m)]
    score = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            take = sim[i][j] + score[i + 1][j + 1] if sim[i][j] >= PAIR_SIMILARITY else -1.0
            score[i][j] = max(take, score[i + 1][j], score[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < m and j < n:
        if sim[i][j] >= PAIR_SIMILARITY and abs(score[i][j] - (sim[i][j] + score[i + 1][j + 1])) < 1e-12:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif score[i + 1][j] >= score[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _rules(before: ParsedSource, after: ParsedSource) -> list[_Rule]:
    bkeys = [before.stmt_key(k) for k in range(len(before.stmts))]
    akeys = [after.stmt_key(k) for k in range(len(after.stmts))]
    nb = len(bkeys)

    def neighbours(first: int, last: int, func) -> tuple[int | None, int | None]:
        above = first - 1 if first > 0 and before.stmts[first - 1].function == func else None
        below = last + 1 if last + 1 < nb and before.stmts[last + 1].function == func else None
        return above, below

    rules: list[_Rule] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, bkeys, akeys, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        func = before.stmts[min(i1, nb - 1)].function if nb else None
        if tag in ("insert", "delete"):
            above, below = neighbours(i1, i2 - 1, func)
            rules.append(_Rule((i1, i2 - 1) if tag == "delete" else None,
                               (j1, j2 - 1) if tag == "insert" else None, above, below))
            continue
        pairs = _align(bkeys[i1:i2], akeys[j1:j2])
        if not pairs:
            rules.append(_Rule((i1, i2 - 1), (j1, j2 - 1), *neighbours(i1, i2 - 1, func)))
            continue
        prev_b, prev_a = i1, j1
        for k, (pb, pa) in enumerate(pairs):
            last = k == len(pairs) - 1
            b_end, a_end = (i2 - 1, j2 - 1) if last else (i1 + pb, j1 + pa)
            rules.append(_Rule((prev_b, b_end), (prev_a, a_end),
                               *neighbours(prev_b, b_end, before.stmts[i1 + pb].function),
                               pair=(i1 + pb, j1 + pa)))
            prev_b, prev_a = b_end + 1, a_end + 1
    return [r for r in rules if r.before is None or r.after is None
            or bkeys[r.before[0]:r.before[1] + 1] != akeys[r.after[0]:r.after[1] + 1]]


def _argument_nodes(src: ParsedSource, k: int):
    """Call arguments inside statement k (positional ones and keyword values), outermost first."""
    s = src.stmts[k]
    node = src.tree.root_node.descendant_for_byte_range(s.start, s.end)
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        if n.type == "argument_list":
            for c in n.named_children:
                if c.type == "keyword_argument":
                    v = c.child_by_field_name("value")
                    if v is not None:
                        out.append(v)
                elif c.type not in ("comment", "list_splat", "dictionary_splat"):
                    out.append(c)
        stack.extend(reversed(n.children))
    return out


def _holes(before: ParsedSource, after: ParsedSource, rule: _Rule) -> tuple[dict, dict]:
    """Untouched call arguments of the paired statements that can become holes.

    Returns ({(start, end): label} for the before source, the same for the after source).
    """
    if rule.pair is None:
        return {}, {}
    bs, as_ = rule.pair
    (b0, b1), (a0, a1) = before.stmt_spans[bs], after.stmt_spans[as_]
    sm = difflib.SequenceMatcher(None, before.stmt_key(bs), after.stmt_key(as_), autojunk=False)
    blocks = [(b0 + i, a0 + j, n) for i, j, n in sm.get_matching_blocks() if n]
    after_args = {(n.start_byte, n.end_byte) for n in _argument_nodes(after, as_)}
    rule_toks = []
    for src, rng in ((before, rule.before), (after, rule.after)):
        if rng:
            first, last = src.stmt_spans[rng[0]][0], src.stmt_spans[rng[1]][1]
            rule_toks.append((src, first, last))
    holes_b, holes_a, taken = {}, {}, []
    for node in _argument_nodes(before, bs):
        p, q = before.tok_at.get(node.start_byte), before.tok_ending.get(node.end_byte)
        if p is None or q is None or any(s <= node.start_byte < e for s, e in taken):
            continue
        block = next(((bi, ai, n) for bi, ai, n in blocks if bi <= p and q < bi + n), None)
        if block is None:
            continue
        pa, qa = block[1] + p - block[0], block[1] + q - block[0]
        span_a = (after.toks[pa].start, after.toks[qa].end)
        if span_a not in after_args:
            continue
        inside = {t.text for t in before.toks[p:q + 1] if t.abstractable}
        outside = set()
        for src, first, last in rule_toks:
            lo, hi = (p, q) if src is before else (pa, qa)
            outside.update(t.text for i, t in enumerate(src.toks[first:last + 1], first)
                           if t.abstractable and not lo <= i <= hi)
        if inside & outside or not inside and len(before.toks[p:q + 1]) == 1:
            continue  # a name the rule needs elsewhere, or a lone literal (keep it specific)
        label = f"${len(holes_b) + 1}"
        holes_b[(node.start_byte, node.end_byte)] = label
        holes_a[span_a] = label
        taken.append((node.start_byte, node.end_byte))
    return holes_b, holes_a


class _Abstractor:
    """Turns statement ranges into placeholder text with one identifier -> placeholder map."""

    def __init__(self):
        self.names: dict[str, str] = {}  # identifier -> placeholder

    def text(self, src: ParsedSource, first_stmt: int, last_stmt: int, holes: dict | None = None) -> str:
        """Abstracted text of the statements' whole lines (holes replace untouched arguments)."""
        first, last = src.stmts[first_stmt].first_line, src.stmts[last_stmt].last_line
        base = src.line_starts[first]
        raw = src.data[base:base + len(src.line_text(first, last).encode())]
        spans = sorted((holes or {}).items())
        out, pos = [], 0
        for t in src.toks:
            if t.line < first or t.line > last or t.start - base < pos:
                continue
            hole = next(((s, e, lbl) for (s, e), lbl in spans if s <= t.start < e), None)
            if hole:
                out += [raw[pos:hole[0] - base].decode(errors="replace"), hole[2]]
                pos = hole[1] - base
            elif t.abstractable:
                ph = self.names.setdefault(t.text, placeholder(len(self.names)))
                out += [raw[pos:t.start - base].decode(errors="replace"), ph]
                pos = t.end - base
        out.append(raw[pos:].decode(errors="replace"))
        return "".join(out)


def _dedent(texts: list[str | None]) -> list[str | None]:
    """Remove the indentation common to all lines of all texts (relative indentation is kept)."""
    lines = [ln for t in texts if t for ln in t.splitlines() if ln.strip()]
    base = min((len(ln) - len(ln.lstrip(" \t")) for ln in lines), default=0)
    return ["\n".join(ln[base:] for ln in t.splitlines()) if t is not None else None for t in texts]


def _role(name: str, before: ParsedSource, func_span, abstractor: _Abstractor) -> TemplateName:
    params = before.parameters(func_span)
    for i, (p, constexpr) in enumerate(params):
        if p == name:
            return TemplateName(name=name, role="param", constexpr=constexpr,
                                param_from_end=len(params) - 1 - i, uses=sorted(before.uses(name, func_span)))
    if name not in before.identifiers():
        return TemplateName(name=name, role="fresh")
    definition = _definition(name, before, func_span, abstractor)
    if definition is not None:
        return TemplateName(name=name, role="local", definition=definition)
    return TemplateName(name=name, role="global")


def _definition(name: str, src: ParsedSource, func_span, abstractor: _Abstractor) -> str | None:
    """The abstracted right-hand side of the first `name = rhs` in the function (other names: $_)."""
    for k, s in enumerate(src.stmts):
        if s.function != func_span:
            continue
        a, b = src.stmt_spans[k]
        toks = src.toks[a:b + 1]
        at = _assigned_at(toks, name, getattr(src, "language", "triton"))
        if at is not None:
            rhs = toks[at + 2:]
            if getattr(src, "language", "triton") == "cuda" and rhs and rhs[-1].text == ";":
                rhs = rhs[:-1]
            if not rhs:
                continue
            parts, pos = [], rhs[0].start
            for t in rhs:
                if t.abstractable:
                    parts += [src.data[pos:t.start].decode(errors="replace"), abstractor.names.get(t.text, "$_")]
                    pos = t.end
            parts.append(src.data[pos:rhs[-1].end].decode(errors="replace"))
            return " ".join("".join(parts).split())
    return None


def _assigned_at(toks, name: str, language: str) -> int | None:
    """Where `name = ...` starts in a statement's tokens: at its start in Python; in CUDA also after the
    declared type (`const int name = ...`: only names CUDA keeps and keywords before it)."""
    reach = 1 if language != "cuda" else min(4, len(toks))
    for p in range(reach):
        if p + 2 < len(toks) and toks[p].text == name and toks[p + 1].text == "=" \
                and not any(t.abstractable for t in toks[:p]):
            return p
    return None


def extract_template(before_src: str, after_src: str) -> Template | None:
    """The template of the edit before -> after, or None when both have the same statements.

    A fix inside the CUDA sources a candidate hands to load_inline is distilled over the CUDA text
    (language cuda: C++ statements, CUDA's own names kept) when that template reproduces the whole fix;
    otherwise, and for Triton, over the Python file."""
    cuda = _cuda_template(before_src, after_src)
    if cuda is not None:
        return cuda
    return _extract([(ParsedSource(before_src), ParsedSource(after_src))])


def _cuda_template(before_src: str, after_src: str) -> Template | None:
    """The template over the changed CUDA units, if the fix is all there (applying it to before gives after)."""
    if "load_inline" not in before_src and "__global__" not in before_src:
        return None
    from debugger.knowledge.cudasource import CudaParsedSource
    from debugger.knowledge.templates import apply_template
    from debugger.lang.cuda import units

    before, after = units(before_src), units(after_src)
    if not before or len(before) != len(after):
        return None
    pairs = [(CudaParsedSource(b.source.text), CudaParsedSource(a.source.text))
             for b, a in zip(before, after) if b.source.text != a.source.text]
    template = _extract(pairs, language="cuda") if pairs else None
    return template if template is not None and after_src in apply_template(template, before_src) else None


def _extract(pairs: list, language: str = "triton") -> Template | None:
    """One template (one placeholder map) over the rules of every (before, after) pair of sources."""
    abstractor = _Abstractor()
    hunks, funcs = [], {}
    for before, after in pairs:
        for r in _rules(before, after):
            holes_b, holes_a = _holes(before, after, r)
            b_text = abstractor.text(before, *r.before, holes_b) if r.before else ""
            a_text = abstractor.text(after, *r.after, holes_a) if r.after else ""
            above = abstractor.text(before, r.above, r.above) if r.above is not None else None
            below = abstractor.text(before, r.below, r.below) if r.below is not None else None
            b_text, a_text, above, below = _dedent([b_text, a_text, above, below])
            hunks.append(TemplateHunk(before=b_text, after=a_text, above=above, below=below))
            anchor = r.before[0] if r.before else (r.above if r.above is not None else r.below)
            func = before.stmts[anchor].function if anchor is not None else None
            for text in (b_text, a_text, above or "", below or ""):
                for ph in NAME_RE.findall(text):
                    funcs.setdefault("$" + ph, (before, func))
    if not hunks:
        return None
    inverse = {ph: name for name, ph in abstractor.names.items()}
    names = {ph: _role(inverse[ph], *funcs[ph], abstractor) for ph in sorted(funcs, key=lambda p: (len(p), p))}
    return Template(hunks=hunks, names=names, language=language)
