"""The knowledge base: failure patterns and reference kernels as files, a derived index, retrieval, write-back.

    kb = KnowledgeBase()                      # curated kb (package data); user layer + index under the data dir
    kb.search("NaN on large inputs", symptoms=["nan_in_output"], k=3)
    kb.for_diagnosis(diagnosis, candidate_src)
    kb.record_fix(case, before, after, diagnosis, backend="openai", tokens=1234, bug_class="mask_missing")
    kb.promote("learned-mask-missing-1a2b3c4d", "/path/to/checkout/kb")

The files are the source of truth, in two layers: the curated ones (the repository's kb/, shipped as
package data; only read) and the user's (<data dir>/kb: learned patterns, `add`). The index (chromadb
+ SQLite under data_dir) is brought up to date, incrementally, the first time a KnowledgeBase is
queried, and after every change it makes.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from debugger import settings
from debugger.knowledge import promote as promoting, retrieve, writeback
from debugger.knowledge.index import KERNEL, PATTERN, KnowledgeIndex
from debugger.knowledge.loader import load_all, load_pattern, load_reference_kernel, lint
from debugger.knowledge.retrieve import Hit
from debugger.knowledge.schema import KnowledgeError, Pattern, ReferenceKernel, Template
from debugger.knowledge.templates import TemplateRecipe, apply_template, extract_template

__all__ = ["KnowledgeBase", "Hit", "KnowledgeError", "Pattern", "ReferenceKernel", "Template",
           "TemplateRecipe", "apply_template", "extract_template", "lint"]


class KnowledgeBase:
    """One knowledge base: its curated files (kb_dir), the user's layer and the index (under data_dir)."""

    def __init__(self, kb_dir: Path | str | None = None, data_dir: Path | str | None = None):
        self.kb_dir = Path(kb_dir) if kb_dir else settings.kb_dir()
        self.index = KnowledgeIndex(data_dir)
        self._fresh = False

    @property
    def data_dir(self) -> Path:
        return self.index.data_dir

    @property
    def user_dir(self) -> Path:
        """The user's layer: <data_dir>/kb (patterns/learned/, and what `add` copies in)."""
        return self.index.user_dir

    def _loaded(self):
        return load_all(self.kb_dir, self.user_dir)

    def reindex(self) -> dict:
        """Re-embed new and changed files, drop deleted ones: {added, updated, removed, unchanged, problems}."""
        result = self.index.reindex(self.kb_dir)
        self._fresh = True
        return result

    def _ensure_indexed(self) -> None:
        if not self._fresh:
            self.reindex()

    def stats(self) -> dict:
        """{"patterns", "reference_kernels", "by_class", "by_status", "by_category", ...} of the index."""
        self._ensure_indexed()
        return {**self.index.stats(), "curated_dir": str(self.kb_dir)}

    def lint(self) -> list[str]:
        """Every problem in the files, one line each."""
        return lint(self.kb_dir, self.user_dir)

    def search(self, query: str | None = None, *, symptoms=None, bug_class: str | None = None,
               operator: str | None = None, code: str | None = None, kind: str | None = None,
               k: int = 5, language: str | None = None) -> list[Hit]:
        """Patterns and reference kernels ranked for the query (see retrieve.search)."""
        self._ensure_indexed()
        return retrieve.search(self.index, query, symptoms=symptoms, bug_class=bug_class, operator=operator,
                               code=code, kind=kind, k=k, language=language)

    def for_diagnosis(self, diagnosis: dict, candidate_src: str | None = None, k: int = 5) -> list[Hit]:
        """Patterns for a diagnosis (hypotheses, symptoms, error signature) and the candidate's code."""
        self._ensure_indexed()
        return retrieve.for_diagnosis(self.index, diagnosis, candidate_src, k)

    def closest_reference_kernel(self, candidate_src: str, operator_hint: str | None = None) -> Hit | None:
        """The reference kernel most like the candidate, in its language where the kb has one."""
        self._ensure_indexed()
        return retrieve.closest_reference_kernel(self.index, candidate_src, operator_hint)

    def pattern(self, pattern_id: str) -> Pattern:
        """A pattern by id, loaded from its file."""
        for p in self._loaded().patterns:
            if p.id == pattern_id:
                return p
        raise KnowledgeError(f"no pattern {pattern_id!r} under {self.kb_dir / 'patterns'} "
                             f"or {self.user_dir / 'patterns'}")

    def reference_kernel(self, name: str) -> ReferenceKernel:
        """A reference kernel by name, loaded from its folder (curated first, then the user's)."""
        for root in (self.kb_dir, self.user_dir):
            if (root / "reference_kernels" / name).is_dir():
                return load_reference_kernel(root / "reference_kernels" / name)
        return load_reference_kernel(self.kb_dir / "reference_kernels" / name)

    def learned_recipes(self, bug_class: str | None = None) -> list[TemplateRecipe]:
        """Every pattern with a template, as a recipe the kb backend can apply (optionally one class)."""
        return [TemplateRecipe(p) for p in self._loaded().patterns
                if p.template is not None and (bug_class is None or p.bug_class == bug_class)]

    def add(self, path: Path | str) -> dict:
        """Validate a pattern file (or a reference kernel folder), copy it into the user's layer without
        overwriting (the curated files are never written), index it."""
        path = Path(path)
        if not path.exists():
            raise KnowledgeError(f"{path}: no such file or folder")
        if path.is_dir():
            kernel = load_reference_kernel(path)
            dest = self.user_dir / "reference_kernels" / kernel.name
            if dest.exists() or (self.kb_dir / "reference_kernels" / kernel.name).exists():
                raise KnowledgeError(f"a reference kernel {kernel.name!r} exists already; rename the folder")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(path, dest)
            kind, item_id = KERNEL, kernel.name
        else:
            pattern = load_pattern(path)
            taken = {p.id: p.path for p in self._loaded().patterns}
            if pattern.id in taken:
                raise KnowledgeError(f"{path}: id {pattern.id!r} is already used by {taken[pattern.id]}")
            dest = self.user_dir / "patterns" / path.name
            if dest.exists():
                raise KnowledgeError(f"{dest} exists already; edit it in place or choose another id")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            kind, item_id = PATTERN, pattern.id
        self.reindex()
        return {"action": "added", "kind": kind, "id": item_id, "path": str(dest)}

    def record_fix(self, case_name: str, before_src: str, after_src: str, diagnosis: dict | None = None,
                   backend: str | None = None, tokens: int | dict | None = None, bug_class: str | None = None,
                   *, reference_src: str | None = None, operator: str | None = None) -> dict:
        """Distil a verified fix into a learned pattern (or merge it into its near twin); see writeback."""
        if bug_class is None:
            hypotheses = (diagnosis or {}).get("hypotheses") or []
            bug_class = hypotheses[0].get("bug_class") if hypotheses else None
        if bug_class is None:
            raise KnowledgeError("record_fix: no bug_class given and none in the diagnosis")
        result = writeback.record_fix(case_name, before_src, after_src, diagnosis, backend, tokens, bug_class,
                                      self.kb_dir, self.data_dir, reference_src=reference_src,
                                      operator=operator, index=self.index)
        self._fresh = True
        return result

    def promote(self, pattern_id: str, to: Path | str | None = None) -> dict:
        """Copy a pattern of the user's layer (or an ingest draft) into a checkout's kb/ for review."""
        result = promoting.promote(pattern_id, self.user_dir, self.data_dir / "drafts",
                                   Path(to) if to else promoting.default_target(self.kb_dir))
        self._fresh = False  # the copy may shadow the original in the index
        return result
