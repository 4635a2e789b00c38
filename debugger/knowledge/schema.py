"""The knowledge base's record types and their validation: patterns, learned templates, reference kernels.

A pattern file is `kb/patterns/<id>.md` (learned ones under `<data dir>/kb/patterns/learned/`): YAML
front matter validated by `FrontMatter`, then a Markdown body with the sections `## Symptom`, `## Root cause`,
`## Fix`, `## Example`; the example holds fenced blocks `python reference`, `python before` and
`python after` (complete KernelBench files). A reference kernel is a folder
`kb/reference_kernels/<name>/` with reference.py, kernel.py and kernel.toml (`KernelToml`).

Validation failures raise `KnowledgeError`, whose message is one line naming the file and the field.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from debugger import settings, symptoms
from debugger.errors import InvalidInput

ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
PLACEHOLDER_RE = re.compile(r"\$(?:[A-Z]+|_)")
HOLE_RE = re.compile(r"\$[0-9]+")
STATUSES = ("reviewed", "draft", "learned")
REQUIRED_SECTIONS = ("Symptom", "Root cause", "Fix", "Example")


class KnowledgeError(InvalidInput):
    """A knowledge-base file does not follow the schema (one-line message: file, field, problem)."""


class Provenance(BaseModel):
    """Where a learned fix came from: one verified repair."""

    model_config = ConfigDict(extra="forbid")
    case: str
    diff: str | None = None
    diagnosis: str | None = None
    backend: str | None = None
    tokens: int | dict[str, int] | None = None
    date: str | None = None


class TemplateHunk(BaseModel):
    """One rewrite rule: whole statements before -> after, identifiers abstracted to $A, $B, ...

    `$1`, `$2`, ... are holes: call arguments the edit left untouched, matching any argument and
    copied verbatim. `above`/`below` are the neighbouring unchanged statements (abstracted), kept as context; for a
    pure insertion (empty `before`) they are the anchors the inserted statements attach to.
    """

    model_config = ConfigDict(extra="forbid")
    before: str
    after: str
    above: str | None = None
    below: str | None = None


class TemplateName(BaseModel):
    """What a placeholder stood for in the learned fix, so an unmatched one can be bound by role.

    role: `param` (a parameter of the enclosing function: `constexpr`, position counted from the
    end, `uses` = the tokens next to its uses in the body), `local` (assigned in the function;
    `definition` is the abstracted right-hand side), `fresh` (introduced by the fix), `global`.
    """

    model_config = ConfigDict(extra="forbid")
    name: str
    role: Literal["param", "local", "fresh", "global"] = "global"
    constexpr: bool = False
    param_from_end: int | None = None
    uses: list[str] | None = None
    definition: str | None = None


class Template(BaseModel):
    """A learned edit the kb backend can re-apply to another kernel (see templates.apply_template)."""

    model_config = ConfigDict(extra="forbid")
    hunks: list[TemplateHunk] = Field(min_length=1)
    names: dict[str, TemplateName] = Field(default_factory=dict)
    # what the hunks are written in: triton (the Python file), or cuda (the text of load_inline's sources)
    language: Literal["triton", "cuda"] = "triton"

    @field_validator("names")
    @classmethod
    def _placeholder_keys(cls, v: dict) -> dict:
        bad = [k for k in v if not re.fullmatch(r"\$[A-Z]+", k)]
        if bad:
            raise ValueError(f"{bad} are not placeholders ($A, $B, ..., $AA)")
        return v

    @model_validator(mode="after")
    def _placeholders_declared(self) -> "Template":
        used = set()
        for h in self.hunks:
            for text in (h.before, h.after, h.above or "", h.below or ""):
                used.update(p for p in PLACEHOLDER_RE.findall(text) if p != "$_")
        missing = sorted(used - set(self.names))
        if missing:
            raise ValueError(f"placeholders used but not declared in names: {', '.join(missing)}")
        for h in self.hunks:
            extra = set(HOLE_RE.findall(h.after)) - set(HOLE_RE.findall(h.before))
            if extra:
                raise ValueError(f"holes in after but not in before: {', '.join(sorted(extra))}")
        if not any(h.before.strip() or h.above or h.below for h in self.hunks):
            raise ValueError("no hunk has a before statement or an anchor to match")
        return self


class FrontMatter(BaseModel):
    """The YAML front matter of a pattern file (unknown keys are errors, to catch typos)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    title: str = Field(min_length=1)
    bug_class: str
    operators: list[str] = Field(min_length=1)
    symptoms: list[str] = Field(default_factory=list)
    root_cause: str = Field(min_length=1)
    fix: str = Field(min_length=1)
    fix_recipe: str | None = None
    language: str = "triton"  # the kernel language of the example: triton, or one of debugger.lang's
    status: Literal["reviewed", "draft", "learned"]
    occurrences: int = Field(default=1, ge=1)
    provenance: list[Provenance] | None = None
    template: Template | None = None

    @field_validator("id")
    @classmethod
    def _id_format(cls, v: str) -> str:
        if not ID_RE.match(v):
            raise ValueError(f"{v!r} must be lowercase letters, digits, '_' or '-'")
        return v

    @field_validator("bug_class")
    @classmethod
    def _known_class(cls, v: str) -> str:
        if v not in settings.bug_classes():
            raise ValueError(f"{v!r} is not a bug class in debugger/bug_classes.toml")
        return v

    @field_validator("language")
    @classmethod
    def _known_language(cls, v: str) -> str:
        from debugger.lang import REGISTRY

        if v != "triton" and v not in REGISTRY:
            raise ValueError(f"{v!r} is not a kernel language (triton, {', '.join(sorted(REGISTRY))})")
        return v

    @field_validator("operators")
    @classmethod
    def _operator_names(cls, v: list[str]) -> list[str]:
        bad = [op for op in v if not isinstance(op, str) or not NAME_RE.match(op)]
        if bad:
            raise ValueError(f"{bad} are not operator names (lowercase, digits, '_' or '-'; or 'any')")
        return v

    @field_validator("symptoms")
    @classmethod
    def _known_symptoms(cls, v: list[str]) -> list[str]:
        bad = [s for s in v if not symptoms.is_symptom(s)]
        if bad:
            raise ValueError(f"{bad} are not symptom tags (see debugger/symptoms.py)")
        return v

    @field_validator("provenance", mode="before")
    @classmethod
    def _one_or_many(cls, v):
        return [v] if isinstance(v, dict) else v

    @model_validator(mode="after")
    def _status_rules(self) -> "FrontMatter":
        if self.status != "learned" and not self.symptoms:
            raise ValueError("symptoms: a reviewed or draft pattern lists at least one symptom tag")
        return self


class Example(BaseModel):
    """The example of a pattern: complete KernelBench files (reference optional for learned ones)."""

    reference: str | None = None
    before: str
    after: str


class Pattern(FrontMatter):
    """A validated pattern: front matter, body sections and the parsed example."""

    model_config = ConfigDict(extra="forbid")
    sections: dict[str, str] = Field(default_factory=dict)
    example: Example
    path: Path | None = None
    content_hash: str = ""


class KernelToml(BaseModel):
    """kernel.toml of a reference kernel."""

    model_config = ConfigDict(extra="forbid")
    operator: str
    category: str
    tags: list[str] = Field(default_factory=list)
    description: str = Field(min_length=1)
    language: str = "triton"  # the kernel language of kernel.py: triton, or one of debugger.lang's

    _known_language = field_validator("language")(FrontMatter._known_language.__func__)

    @field_validator("operator", "category")
    @classmethod
    def _name_format(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{v!r} must be lowercase letters, digits, '_' or '-'")
        return v


class ReferenceKernel(KernelToml):
    """A validated reference kernel: its toml fields and both sources."""

    name: str
    reference_src: str
    kernel_src: str
    path: Path | None = None
    content_hash: str = ""


def one_line(err: ValidationError) -> str:
    """The first problems of a pydantic error as `field: message; field: message`."""
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(x) for x in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    more = len(err.errors()) - 3
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def check_kernelbench(src: str, what: str, required: tuple[str, ...]) -> None:
    """Raise ValueError unless `src` parses and defines the `required` top-level names."""
    try:
        tree = ast.parse(src)
    except SyntaxError as e:
        raise ValueError(f"{what}: syntax error line {e.lineno}: {e.msg}") from None
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    missing = [n for n in required if n not in names]
    if missing:
        raise ValueError(f"{what}: does not define {', '.join(missing)}")
