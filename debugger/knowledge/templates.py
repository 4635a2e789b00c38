"""Re-applying learned templates to other kernels, and the recipe adapter the kb backend uses.

A template (see distil.py, which extracts it from a verified before/after pair) is a list of rules.
Each rule's `before` is found in another source modulo a consistent, one-to-one renaming, aligned to
whole statements, and replaced by its `after`; holes copy the matched argument verbatim. A
placeholder the match leaves unbound is bound by the role it had in the learned fix: the enclosing
function's parameter used the same way, the local defined by the same expression, or the fresh name
the fix introduced.
"""
from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field

from debugger.knowledge import cudasource, pysource
from debugger.knowledge.distil import NAME_RE, extract_template, placeholder
from debugger.knowledge.pysource import ParsedSource
from debugger.knowledge.schema import Pattern, Template, TemplateHunk
from debugger.recipes.base import Patch, order_by_hints
from debugger.recipes.syntax import Source as RecipeSource

SYMBOL_RE = re.compile(r"\$([A-Z]+|_|[0-9]+)")  # $A placeholders, $_ wildcard, $1 holes
MARK = "__kb{}_{}__"  # how a $-symbol reads while template text is tokenized
MAX_CANDIDATES = 4
OPEN, CLOSE = set("([{"), set(")]}")

__all__ = ["extract_template", "apply_template", "apply_template_sites", "canonical_edit", "TemplateMatch",
           "TemplateRecipe"]


def canonical_edit(template: Template) -> list[str]:
    """The template's tokens, placeholders renumbered by first appearance (for de-duplication)."""
    order: dict[str, str] = {}
    out: list[str] = [] if template.language == "triton" else [f"language:{template.language}"]
    for h in template.hunks:
        for part, text in (("-", h.before), ("+", h.after)):
            out.append(part)
            for kind, value in _pattern_tokens(text, template.language):
                out.append(order.setdefault(value, placeholder(len(order))) if kind == "ph" else value)
    return out


def _pattern_tokens(text: str, language: str = "triton") -> list[tuple[str, str]]:
    """Template text as ('ph', '$A') / ('wild', '$_') / ('hole', '$1') / ('lit', key) tokens, read as
    Python (triton) or as CUDA C++ (cuda)."""
    if not text.strip():
        return []
    kinds = {"_": "wild"}

    def mark(m: re.Match) -> str:
        sym = m.group(1)
        kind = kinds.get(sym, "hole" if sym.isdigit() else "ph")
        return MARK.format(kind, "W" if sym == "_" else sym)

    out = []
    tokenize = cudasource.tokens if language == "cuda" else pysource.tokens
    for t in tokenize(SYMBOL_RE.sub(mark, text)):
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


def _match(pattern, src: ParsedSource, i: int, bound: dict[str, str]) -> _Site | None:
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
    hunk: int = -1


@dataclass
class TemplateMatch:
    """One way of applying a template: the new source and the 1-based lines it edited."""

    new_src: str
    sites: list[int] = field(default_factory=list)


class _Applier:
    """One sweep over a target source with one choice of anchors and of role bindings."""

    def __init__(self, template: Template, target, prefer: str, level: int):
        self.t = template
        self.lang = template.language
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
            before, after = next((o for o in usable if self._occurs(_pattern_tokens(o[0], self.lang))), usable[0])
        fresh = any(self.t.names.get("$" + ph) is not None and self.t.names["$" + ph].role == "fresh"
                    for ph in NAME_RE.findall(after))
        return _AppliedRule(k, _pattern_tokens(before, self.lang), before, after, once=fresh)

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
                edit.hunk = rule.hunk
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
            sep, empty = (" ", ";") if self.lang == "cuda" else ("; ", "pass")  # C statements end in ';' already
            flat = sep.join(ln.strip() for ln in text.splitlines() if ln.strip()) or empty
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
            pattern = _pattern_tokens(f"{ph} = {info.definition}", self.lang)
            found = []
            for k, (a, _) in enumerate(self.src.stmt_spans):
                if self.src.stmts[k].function == func_span:
                    site = self._site(pattern, a, {p: v for p, v in bindings.items() if p != ph})
                    if site and ph in site.bindings and site.bindings[ph] not in found:
                        found.append(site.bindings[ph])
            if found:
                return found[min(self.level, len(found) - 1)]
        return info.name if info.name in idents and info.name not in taken else None


def _coherent(template: Template, applied: set[int]) -> bool:
    """False when the edits would use a name the fix introduces without its definition.

    For each fresh name: if any hunk mentioning it applied, the first such hunk (which introduces
    it) applied too; and a name the learned fix used in several hunks is used in two at least.
    """
    for ph, info in template.names.items():
        if info.role != "fresh":
            continue
        hunks = [k for k, h in enumerate(template.hunks)
                 if ph in set("$" + n for n in NAME_RE.findall(h.before + "\n" + h.after))]
        used = applied & set(hunks)
        if used and (hunks[0] not in used or (len(hunks) > 1 and len(used) < 2)):
            return False
    return True


def _edited(target: ParsedSource, edits: list[_Edit]) -> TemplateMatch | None:
    data = target.data
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        data = data[:e.start] + e.text.encode() + data[e.end:]
    new_src = data.decode(errors="replace")
    try:
        ast.parse(new_src)
    except SyntaxError:
        return None
    return TemplateMatch(new_src, sorted(e.line for e in edits))


def _sweeps(template: Template, target) -> list[list[_Edit]]:
    """The edit sets to try: every site (for each choice of anchors and role bindings), then, for a
    one-rule template that matched several sites, each site alone (the learned bug may be at one)."""
    sweeps = [_Applier(template, target, prefer, level).sweep() for level in (0, 1) for prefer in ("above", "below")]
    sweeps = [edits for edits in sweeps if edits and _coherent(template, {e.hunk for e in edits})]
    if len(template.hunks) == 1 and sweeps and len(sweeps[0]) > 1:
        sweeps += [[e] for e in sweeps[0]]
    return sweeps


def apply_template_sites(template: Template | dict, src: str) -> list[TemplateMatch]:
    """Every distinct way the template rewrites `src` (at most MAX_CANDIDATES), most likely first.

    First every site rewritten (for each choice of anchors and role bindings); then, for a one-rule
    template that matched several sites, each site alone (the learned bug may be at one of them).
    A cuda template is applied to the text of each CUDA unit and written back into the Python file's
    strings (cudatemplates.py).
    """
    template = template if isinstance(template, Template) else Template.model_validate(template)
    if template.language == "cuda":
        from debugger.knowledge.cudatemplates import apply_cuda_template

        return apply_cuda_template(template, src, _sweeps)[:MAX_CANDIDATES]
    target = ParsedSource(src)
    sweeps = _sweeps(template, target)
    out: list[TemplateMatch] = []
    seen = {src}
    for edits in sweeps:
        match = _edited(target, edits)
        if match is None or match.new_src in seen:
            continue
        seen.add(match.new_src)
        out.append(match)
        if len(out) >= MAX_CANDIDATES:
            break
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
