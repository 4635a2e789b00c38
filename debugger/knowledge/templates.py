"""Learned fixes as templates: distilled from a verified before/after pair, re-applied to other kernels.

Extraction diffs the two sources statement by statement (difflib over whole statements, so a rule is
never half a call), pairs each changed statement with its most similar counterpart, and attaches
inserted or deleted statements to a neighbouring pair. Identifiers become placeholders ($A, $B, ...;
one map for the whole template) unless pysource keeps them (tl./triton./torch. names, attribute
names, builtins, API keyword names); keywords and literals stay. A call argument the edit left
untouched, whose names the rule needs nowhere else, becomes a hole ($1, $2, ...) that matches any
argument, so `tl.store(ptr + offs, value)` -> `tl.store(..., mask=m)` fits every store.

Application finds each rule's `before` in another source modulo a consistent, one-to-one renaming,
aligned to whole statements, and substitutes its `after`. A placeholder the match leaves unbound is
bound by the role it had in the learned fix: the enclosing function's parameter used the same way,
the local defined by the same expression, or the fresh name the fix introduced.
"""
from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

from debugger.knowledge import pysource
from debugger.knowledge.schema import Pattern, Template, TemplateHunk, TemplateName
from debugger.recipes.base import Patch, order_by_hints
from debugger.recipes.syntax import Source as RecipeSource

SYMBOL_RE = re.compile(r"\$([A-Z]+|_|[0-9]+)")  # $A placeholders, $_ wildcard, $1 holes
NAME_RE = re.compile(r"\$([A-Z]+)")
MARK = "__kb{}_{}__"  # how a $-symbol reads while template text is tokenized
MAX_CANDIDATES = 4
PAIR_SIMILARITY = 0.5
OPEN, CLOSE = set("([{"), set(")]}")


def placeholder(i: int) -> str:
    """$A .. $Z, then $AA, $AB, ..."""
    letters, i = "", i + 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return "$" + letters


# ----------------------------------------------------------------------------- sources


class _Source:
    """A source with its tokens, statements and line offsets, parsed once."""

    def __init__(self, text: str):
        self.text = text
        self.data = text.encode()
        self.tree = pysource.parse(text)
        self.toks = pysource.tokens(text, self.tree)
        self.stmts = pysource.statements(self.tree)
        self.line_starts = [0] + [i + 1 for i, b in enumerate(self.data) if b == 10]
        self.tok_at = {t.start: i for i, t in enumerate(self.toks)}
        self.tok_ending = {t.end: i for i, t in enumerate(self.toks)}
        self.stmt_spans = [self._span(s) for s in self.stmts]

    def _span(self, s: pysource.Statement) -> tuple[int, int]:
        first = self.tok_at.get(s.start)
        if first is None:
            first = next((i for i, t in enumerate(self.toks) if t.start >= s.start), len(self.toks))
        last = first
        while last + 1 < len(self.toks) and self.toks[last + 1].end <= s.end:
            last += 1
        return first, last

    def stmt_key(self, k: int) -> tuple[str, ...]:
        a, b = self.stmt_spans[k]
        return tuple(t.key for t in self.toks[a:b + 1])

    def line_text(self, first: int, last: int) -> str:
        end = self.line_starts[last + 1] if last + 1 < len(self.line_starts) else len(self.data)
        return self.data[self.line_starts[first]:end].decode(errors="replace").rstrip("\n")

    def identifiers(self) -> set[str]:
        return {t.text for t in self.toks if t.text.isidentifier()}

    def function_node(self, span: tuple[int, int] | None):
        if span is None:
            return None
        node = self.tree.root_node.descendant_for_byte_range(span[0], span[1])
        while node is not None and node.type != "function_definition":
            node = node.parent
        return node

    def parameters(self, span: tuple[int, int] | None) -> list[tuple[str, bool]]:
        """(name, is_constexpr) for each parameter of the function at `span`."""
        node = self.function_node(span)
        if node is None:
            return []
        out = []
        for p in node.child_by_field_name("parameters").named_children:
            ident = p if p.type == "identifier" else next(
                (c for c in p.named_children if c.type == "identifier"), None)
            if ident is not None:
                text = self.data[p.start_byte:p.end_byte].decode(errors="replace")
                out.append((ident.text.decode(), "constexpr" in text))
        return out

    def uses(self, name: str, span: tuple[int, int] | None) -> set[str]:
        """The tokens right next to each use of `name` in the body of the function at `span`."""
        node = self.function_node(span)
        if node is None:
            return set()
        body = node.child_by_field_name("body")
        out = set()
        for i, t in enumerate(self.toks):
            if t.text == name and body.start_byte <= t.start < body.end_byte:
                out.update(x.text for x in self.toks[max(i - 1, 0):i + 2:2] if x is not t)
        return out


# ----------------------------------------------------------------------------- extraction


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


def _rules(before: _Source, after: _Source) -> list[_Rule]:
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


def _argument_nodes(src: _Source, k: int):
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


def _holes(before: _Source, after: _Source, rule: _Rule, abstract) -> tuple[dict, dict]:
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

    def text(self, src: _Source, first_stmt: int, last_stmt: int, holes: dict | None = None) -> str:
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


def _role(name: str, before: _Source, func_span, abstractor: _Abstractor) -> TemplateName:
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


def _definition(name: str, src: _Source, func_span, abstractor: _Abstractor) -> str | None:
    """The abstracted right-hand side of the first `name = rhs` in the function (other names: $_)."""
    for k, s in enumerate(src.stmts):
        if s.function != func_span:
            continue
        a, b = src.stmt_spans[k]
        toks = src.toks[a:b + 1]
        if len(toks) > 2 and toks[0].text == name and toks[1].text == "=":
            parts, pos = [], toks[2].start
            for t in toks[2:]:
                if t.abstractable:
                    parts += [src.data[pos:t.start].decode(errors="replace"), abstractor.names.get(t.text, "$_")]
                    pos = t.end
            parts.append(src.data[pos:toks[-1].end].decode(errors="replace"))
            return " ".join("".join(parts).split())
    return None


def extract_template(before_src: str, after_src: str) -> Template | None:
    """The template of the edit before -> after, or None when both have the same statements."""
    before, after = _Source(before_src), _Source(after_src)
    rules = _rules(before, after)
    if not rules:
        return None
    abstractor = _Abstractor()
    hunks, funcs = [], {}
    for r in rules:
        holes_b, holes_a = _holes(before, after, r, abstractor)
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
                funcs.setdefault("$" + ph, func)
    inverse = {ph: name for name, ph in abstractor.names.items()}
    names = {ph: _role(inverse[ph], before, funcs[ph], abstractor)
             for ph in sorted(funcs, key=lambda p: (len(p), p))}
    return Template(hunks=hunks, names=names)


def canonical_edit(template: Template) -> list[str]:
    """The template's tokens, placeholders renumbered by first appearance (for de-duplication)."""
    order: dict[str, str] = {}
    out: list[str] = []
    for h in template.hunks:
        for part, text in (("-", h.before), ("+", h.after)):
            out.append(part)
            for kind, value in _pattern_tokens(text):
                out.append(order.setdefault(value, placeholder(len(order))) if kind == "ph" else value)
    return out


# ----------------------------------------------------------------------------- application


def _pattern_tokens(text: str) -> list[tuple[str, str]]:
    """Template text as ('ph', '$A') / ('wild', '$_') / ('hole', '$1') / ('lit', key) tokens."""
    if not text.strip():
        return []
    kinds = {"_": "wild"}

    def mark(m: re.Match) -> str:
        sym = m.group(1)
        kind = kinds.get(sym, "hole" if sym.isdigit() else "ph")
        return MARK.format(kind, "W" if sym == "_" else sym)

    out = []
    for t in pysource.tokens(SYMBOL_RE.sub(mark, text)):
        m = re.fullmatch(r"__kb(ph|wild|hole)_(\w+?)__", t.text)
        if m:
            out.append((m.group(1), "$_" if m.group(1) == "wild" else "$" + m.group(2)))
        else:
            out.append(("lit", t.key))
    return out


@dataclass
class _Site:
    bindings: dict[str, str]
    holes: dict[str, str]
    last: int  # index of the last matched token


def _match(pattern, src: _Source, i: int, bound: dict[str, str]) -> _Site | None:
    """The bindings (one-to-one, extending `bound`) under which `pattern` matches from token i."""
    toks = src.toks
    new: dict[str, str] = {}
    holes: dict[str, str] = {}
    taken = set(bound.values())
    k = i
    for n, (kind, value) in enumerate(pattern):
        if k >= len(toks):
            return None
        tok = toks[k]
        if kind == "hole":
            start, depth = k, 0
            while k < len(toks):
                t = toks[k].text
                if depth == 0 and (t == "," or t in CLOSE) and k > start:
                    break
                if t in CLOSE and depth == 0:
                    return None
                depth += (t in OPEN) - (t in CLOSE)
                k += 1
            if k >= len(toks) or k == start:
                return None
            holes[value] = src.data[toks[start].start:toks[k - 1].end].decode(errors="replace")
            continue
        if kind == "lit":
            if tok.key != value:
                return None
        elif not tok.abstractable:
            return None
        elif kind == "ph":
            have = bound.get(value, new.get(value))
            if have is None:
                if tok.text in taken:
                    return None
                new[value] = tok.text
                taken.add(tok.text)
            elif have != tok.text:
                return None
        k += 1
    return _Site(new, holes, k - 1) if k > i else None


@dataclass
class _AppliedRule:
    hunk: int
    before: list[tuple[str, str]]
    before_text: str
    after_text: str
    once: bool


@dataclass
class _Edit:
    start: int
    end: int
    text: str
    line: int


@dataclass
class TemplateMatch:
    """One way of applying a template: the new source and the 1-based lines it edited."""

    new_src: str
    sites: list[int] = field(default_factory=list)


class _Applier:
    """One sweep over a target source with one choice of anchors and of role bindings."""

    def __init__(self, template: Template, target: _Source, prefer: str, level: int):
        self.t = template
        self.src = target
        self.level = level
        self.globals: dict[str, str] = {}
        self.starts = {a: k for k, (a, _) in enumerate(target.stmt_spans)}
        self.ends = {b for _, b in target.stmt_spans}
        counts: dict[str, int] = {}
        for h in template.hunks:
            for ph in set(NAME_RE.findall(h.before + "\n" + h.after)):
                counts["$" + ph] = counts.get("$" + ph, 0) + 1
        self.shared = {ph for ph, n in counts.items() if n > 1}
        self.rules = [r for k, h in enumerate(template.hunks) if (r := self._rule(k, h, prefer))]

    def _rule(self, k: int, h: TemplateHunk, prefer: str) -> _AppliedRule | None:
        if h.before.strip():
            before, after = h.before, h.after
        else:
            options = {"above": (h.above, f"{h.above}\n{h.after}" if h.above else None),
                       "below": (h.below, f"{h.after}\n{h.below}" if h.below else None)}
            order = [prefer, "below" if prefer == "above" else "above"]
            usable = [options[o] for o in order if options[o][0]]
            if not usable:
                return None
            # the preferred anchor where it occurs in the target, else the other one
            before, after = next((o for o in usable if self._occurs(_pattern_tokens(o[0]))), usable[0])
        fresh = any(self.t.names.get("$" + ph) is not None and self.t.names["$" + ph].role == "fresh"
                    for ph in NAME_RE.findall(after))
        return _AppliedRule(k, _pattern_tokens(before), before, after, once=fresh)

    def _occurs(self, pattern) -> bool:
        return any(self._site(pattern, a, {}) is not None for a in self.starts)

    def _site(self, pattern, i: int, bound: dict[str, str]) -> _Site | None:
        if not pattern:
            return None
        site = _match(pattern, self.src, i, bound)
        return site if site is not None and site.last in self.ends else None

    def sweep(self) -> list[_Edit]:
        edits: list[_Edit] = []
        used_once: set[int] = set()
        covered_until = -1
        for a, _ in self.src.stmt_spans:
            if a <= covered_until:
                continue
            for rule in self.rules:
                if rule.once and rule.hunk in used_once:
                    continue
                site = self._site(rule.before, a, dict(self.globals))
                if site is None:
                    continue
                edit = self._render(rule, a, site)
                if edit is None:
                    continue
                self.globals.update({ph: v for ph, v in site.bindings.items() if ph in self.shared})
                edits.append(edit)
                used_once.add(rule.hunk)
                covered_until = site.last
                break
        return edits

    def _render(self, rule: _AppliedRule, i: int, site: _Site) -> _Edit | None:
        stmt = self.src.stmts[self.starts[i]]
        bindings = {**self.globals, **site.bindings}
        resolved = {}
        for ph in dict.fromkeys("$" + m for m in NAME_RE.findall(rule.after_text)):
            if ph not in bindings:
                name = self._bind_by_role(ph, stmt.function, bindings)
                if name is None:
                    return None
                bindings[ph] = resolved[ph] = name
        self.globals.update(resolved)
        text = SYMBOL_RE.sub(lambda m: site.holes.get(m.group(0)) or bindings.get(m.group(0), m.group(0)),
                             rule.after_text)
        first_tok, last_tok = self.src.toks[i], self.src.toks[site.last]
        line_start = self.src.line_starts[first_tok.line]
        if self.src.data[line_start:first_tok.start].strip():
            # the statement shares its line with another (`if c: x = 1`): edit from its first token
            flat = "; ".join(ln.strip() for ln in text.splitlines() if ln.strip()) or "pass"
            return _Edit(first_tok.start, last_tok.end, flat, first_tok.line + 1)
        if not text.strip():  # a deletion removes whole lines
            end = self.src.data.find(b"\n", last_tok.end)
            return _Edit(line_start, len(self.src.data) if end < 0 else end + 1, "", first_tok.line + 1)
        rel = len(rule.before_text) - len(rule.before_text.lstrip(" \t"))
        pad = " " * max(first_tok.start - line_start - rel, 0)
        body = "\n".join(pad + ln if ln.strip() else "" for ln in text.splitlines())
        return _Edit(line_start, last_tok.end, body, first_tok.line + 1)

    def _bind_by_role(self, ph: str, func_span, bindings: dict[str, str]) -> str | None:
        info = self.t.names.get(ph)
        if info is None:
            return None
        taken = set(bindings.values())
        idents = self.src.identifiers()
        if info.role == "fresh":
            name, n = info.name, 1
            while name in idents or name in taken:
                name, n = f"{info.name}_{n}", n + 1
            return name
        if info.role == "param":
            params = self.src.parameters(func_span)
            learned_uses = set(info.uses or [])

            def distance(ip):
                i, p = ip
                uses = self.src.uses(p, func_span)
                union = uses | learned_uses
                use_gap = 1 - len(uses & learned_uses) / len(union) if union else 0.0
                return (use_gap, abs(len(params) - 1 - i - (info.param_from_end or 0)),
                        -difflib.SequenceMatcher(None, p, info.name).ratio())

            ranked = sorted(((i, p) for i, (p, c) in enumerate(params) if c == info.constexpr and p not in taken),
                            key=distance)
            return ranked[min(self.level, len(ranked) - 1)][1] if ranked else None
        if info.role == "local" and info.definition:
            pattern = _pattern_tokens(f"{ph} = {info.definition}")
            found = []
            for k, (a, _) in enumerate(self.src.stmt_spans):
                if self.src.stmts[k].function == func_span:
                    site = self._site(pattern, a, {p: v for p, v in bindings.items() if p != ph})
                    if site and ph in site.bindings and site.bindings[ph] not in found:
                        found.append(site.bindings[ph])
            if found:
                return found[min(self.level, len(found) - 1)]
        return info.name if info.name in idents and info.name not in taken else None


def apply_template_sites(template: Template | dict, src: str) -> list[TemplateMatch]:
    """Every distinct way the template rewrites `src` (at most MAX_CANDIDATES), most likely first."""
    template = template if isinstance(template, Template) else Template.model_validate(template)
    target = _Source(src)
    out: list[TemplateMatch] = []
    seen = {src}
    for level in (0, 1):
        for prefer in ("above", "below"):
            edits = _Applier(template, target, prefer, level).sweep()
            data = target.data
            for e in sorted(edits, key=lambda e: e.start, reverse=True):
                data = data[:e.start] + e.text.encode() + data[e.end:]
            new_src = data.decode(errors="replace")
            if new_src in seen:
                continue
            seen.add(new_src)
            try:
                ast.parse(new_src)
            except SyntaxError:
                continue
            out.append(TemplateMatch(new_src, sorted(e.line for e in edits)))
            if len(out) >= MAX_CANDIDATES:
                return out
    return out


def apply_template(template: Template | dict, src: str) -> list[str]:
    """New sources produced by re-applying the learned edit to `src` (empty: it does not apply)."""
    return [m.new_src for m in apply_template_sites(template, src)]


class TemplateRecipe:
    """A learned pattern as a fix recipe (recipes.RecipeLike): propose() re-applies its template.

    The patches are recipes' own Patch records, ordered by the diagnosis' hints (kernel, line) the
    same way the hand-written recipes order theirs; no model and no tokens are involved.
    """

    def __init__(self, pattern: Pattern):
        if pattern.template is None:
            raise ValueError(f"pattern {pattern.id} has no template")
        self.pattern = pattern
        self.id = f"learned:{pattern.id}"
        self.bug_classes = (pattern.bug_class,)
        self.symptoms = tuple(pattern.symptoms)
        self.description = f"{pattern.title} (learned, seen {pattern.occurrences}x)"

    def propose(self, src: str, hints: dict | None = None) -> list[Patch]:
        """Candidate patches for `src`, best first ([] when the template does not apply)."""
        patches = [Patch(self.id, self.description, m.new_src, m.sites, self.pattern.bug_class)
                   for m in apply_template_sites(self.pattern.template, src)]
        return order_by_hints(RecipeSource(src), patches, hints or {}) if hints else patches

    def __repr__(self) -> str:
        return f"<learned recipe {self.pattern.id}>"
