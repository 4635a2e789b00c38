"""The derived index of the knowledge base: chromadb embeddings plus an SQLite table of items.

Two chromadb collections hold one document per item each: `kb_text` (what the item says: title,
symptoms, root cause, fix; for a reference kernel its operator and description) and `kb_code` (the
Triton kernel functions of the item's example or kernel). SQLite (`kb.db`, table `items`) holds the
metadata retrieval filters on, and the content hash that makes re-indexing incremental. Everything
here is rebuildable from the files: the curated knowledge base and the user's layer beside the index
(<data dir>/kb). Without the `retrieval` extra (chromadb and the embedding model) only the SQLite
table is kept and retrieval ranks on metadata alone; installing it later embeds every item.
"""
from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import sqlite_utils

from debugger import extras, settings, symptoms
from debugger.knowledge import pysource
from debugger.knowledge.loader import load_all
from debugger.output import log
from debugger.knowledge.schema import Pattern, ReferenceKernel

INDEX_VERSION = "2"  # bump when the documents below change: every item is then re-embedded
TEXT, CODE = "kb_text", "kb_code"
PATTERN, KERNEL = "pattern", "reference_kernel"
KINDS = (PATTERN, KERNEL)


def code_digest(src: str) -> str:
    """The kernel code of a source, layout dropped: its Triton kernel functions (comments dropped too),
    else the CUDA sources it hands to load_inline, else all of it."""
    functions = pysource.jit_functions(src)
    if not functions:
        cuda = cuda_sources(src)
        if cuda:
            return "\n".join(" ".join(c.split()) for c in cuda)
    return "\n".join(" ".join(t.text for t in pysource.tokens(f)) for f in functions or [src])


def cuda_sources(src: str) -> list[str]:
    """The texts of the CUDA units a candidate compiles with load_inline (empty: none)."""
    from debugger.lang.cuda import units

    try:
        return [u.source.text for u in units(src) if u.kernels]
    except Exception:  # an unparsable file has no CUDA units to read
        return []


def language_of(src: str) -> str | None:
    """The kernel language of a candidate: triton (a @triton.jit function), cuda (a load_inline kernel)."""
    if pysource.jit_functions(src):
        return "triton"
    return "cuda" if cuda_sources(src) else None


def pattern_documents(p: Pattern) -> tuple[str, str]:
    """(text document, code document) of a pattern."""
    described = "; ".join(symptoms.ALL[s] for s in p.symptoms)
    summary = settings.bug_classes().get(p.bug_class, "")
    text = (f"{p.title}. Symptoms: {described}. {summary} Root cause: {p.root_cause} Fix: {p.fix} "
            f"Operators: {', '.join(p.operators)}.")
    return text, code_digest(p.example.before)


def kernel_documents(k: ReferenceKernel) -> tuple[str, str]:
    """(text document, code document) of a reference kernel."""
    lang = "CUDA" if k.language == "cuda" else k.language.capitalize()
    text = (f"{k.operator} ({k.category}) reference {lang} kernel: {k.description} "
            f"Tags: {', '.join(k.tags)}.")
    return text, code_digest(k.kernel_src)


def kernel_title(k: ReferenceKernel) -> str:
    """`operator: the description's first sentence` (at most about 100 characters)."""
    first = k.description.split(". ")[0].strip().rstrip(".")
    title = f"{k.operator}: {first}"
    return title if len(title) <= 100 else title[:97] + "..."


def chroma_id(kind: str, item_id: str) -> str:
    return f"{kind}:{item_id}"


_warned = False


def packaged_embedder():
    """The packaged MiniLM embedding function, or None (said once) when the retrieval extra is missing."""
    global _warned
    if not extras.installed("retrieval"):
        if not _warned:
            log(f"kdebug: retrieval on metadata only, no embeddings ({extras.hint('retrieval')})")
            _warned = True
        return None
    from debugger.knowledge.embedder import PackagedMiniLM

    return PackagedMiniLM()


class KnowledgeIndex:
    """The index under one data folder (chroma/ and kb.db); opens both lazily.

    `embedder` None (the retrieval extra missing): no chroma; similarities are empty.
    """

    def __init__(self, data_dir: Path | str | None = None, embedder=None):
        self.data_dir = Path(data_dir) if data_dir else settings.data_dir()
        self.embedder = embedder if embedder is not None else packaged_embedder()
        self._client = None
        self._db = None

    @property
    def user_dir(self) -> Path:
        """The user's layer of the knowledge base (learned patterns, `kb add`) beside this index."""
        return settings.user_kb_dir(self.data_dir)

    @property
    def embeddings(self) -> bool:
        return self.embedder is not None

    # -- stores

    @property
    def db(self) -> sqlite_utils.Database:
        if self._db is None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._db = sqlite_utils.Database(self.data_dir / "kb.db")
            if "items" not in self._db.table_names():
                self._db["items"].create({
                    "kind": str, "id": str, "path": str, "content_hash": str, "bug_class": str,
                    "operators": str, "symptoms": str, "status": str, "occurrences": int,
                    "indexed_at": str, "title": str, "fix_recipe": str, "category": str,
                    "apis": str, "has_template": int, "language": str,
                }, pk=("kind", "id"))
        return self._db

    def collection(self, name: str):
        if self._client is None:
            import chromadb

            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(
                path=str(self.data_dir / "chroma"),
                settings=chromadb.Settings(anonymized_telemetry=False))
        return self._client.get_or_create_collection(
            name, embedding_function=self.embedder, configuration={"hnsw": {"space": "cosine"}})

    # -- indexing

    def reindex(self, kb_dir: Path | str | None = None) -> dict:
        """Bring the index in line with the files: embed new and changed items, drop deleted ones.

        The files are the curated kb_dir (default settings.kb_dir()) and the user's layer (user_dir).
        Returns {"added", "updated", "removed", "unchanged"} counts and "problems" (invalid files,
        which are left out of the index).
        """
        kb_dir = Path(kb_dir) if kb_dir else settings.kb_dir()
        loaded = load_all(kb_dir, self.user_dir)
        current: dict[tuple[str, str], tuple[dict, tuple[str, str]]] = {}
        for p in loaded.patterns:
            current[(PATTERN, p.id)] = (self._pattern_row(p), pattern_documents(p))
        for k in loaded.kernels:
            current[(KERNEL, k.name)] = (self._kernel_row(k), kernel_documents(k))
        existing = {(r["kind"], r["id"]): r for r in self.db["items"].rows}
        if self.embeddings:
            text, code = self.collection(TEXT), self.collection(CODE)
            in_chroma = set(text.get(include=[])["ids"]) & set(code.get(include=[])["ids"])
        else:
            in_chroma = {chroma_id(*key) for key in existing}  # nothing to embed: the rows are the index

        counts = Counter()
        to_embed, rows = [], []
        for key, (row, docs) in current.items():
            old = existing.get(key)
            if old and old["content_hash"] == row["content_hash"] and chroma_id(*key) in in_chroma:
                counts["unchanged"] += 1
                if old["path"] != row["path"]:
                    rows.append({**old, "path": row["path"]})
                continue
            counts["updated" if old else "added"] += 1
            to_embed.append((key, row, docs))
            rows.append(row)
        gone = [key for key in existing if key not in current]
        if gone:
            ids = [chroma_id(*key) for key in gone]
            if self.embeddings:
                text.delete(ids=ids)
                code.delete(ids=ids)
            for key in gone:
                self.db["items"].delete(key)
        if to_embed and self.embeddings:
            ids = [chroma_id(*key) for key, _, _ in to_embed]
            metadatas = [{"kind": row["kind"], "bug_class": row["bug_class"] or ""} for _, row, _ in to_embed]
            text.upsert(ids=ids, documents=[d[0] for _, _, d in to_embed], metadatas=metadatas)
            code.upsert(ids=ids, documents=[d[1] for _, _, d in to_embed], metadatas=metadatas)
        if rows:
            self.db["items"].upsert_all(rows, pk=("kind", "id"), alter=True)  # alter: an older index lacks language
        return {"added": counts["added"], "updated": counts["updated"], "removed": len(gone),
                "unchanged": counts["unchanged"], "problems": loaded.problems}

    @staticmethod
    def _now() -> str:
        return datetime.now(timezone.utc).isoformat(timespec="seconds")

    def _pattern_row(self, p: Pattern) -> dict:
        hash_ = f"{INDEX_VERSION}:{p.content_hash}"
        return {"kind": PATTERN, "id": p.id, "path": str(p.path), "content_hash": hash_,
                "bug_class": p.bug_class, "operators": p.operators, "symptoms": p.symptoms,
                "status": p.status, "occurrences": p.occurrences, "indexed_at": self._now(),
                "title": p.title, "fix_recipe": p.fix_recipe, "category": None,
                "apis": sorted(pysource.api_calls(p.example.before)), "has_template": int(p.template is not None),
                "language": p.language}

    def _kernel_row(self, k: ReferenceKernel) -> dict:
        hash_ = f"{INDEX_VERSION}:{k.content_hash}"
        return {"kind": KERNEL, "id": k.name, "path": str(k.path), "content_hash": hash_,
                "bug_class": None, "operators": [k.operator], "symptoms": [], "status": None,
                "occurrences": None, "indexed_at": self._now(), "title": kernel_title(k),
                "fix_recipe": None, "category": k.category, "apis": sorted(pysource.api_calls(k.kernel_src)),
                "has_template": 0, "language": k.language}

    # -- reading

    def is_empty(self) -> bool:
        return self.db["items"].count == 0

    def items(self, kind: str | None = None) -> list[dict]:
        """Rows of the items table (lists decoded), optionally of one kind."""
        where, args = ("kind = ?", [kind]) if kind else (None, None)
        out = []
        for r in self.db["items"].rows_where(where, args, order_by="kind, id"):
            for col in ("operators", "symptoms", "apis"):
                r[col] = json.loads(r[col]) if isinstance(r[col], str) and r[col] else (r[col] or [])
            r["language"] = r.get("language") or "triton"
            out.append(r)
        return out

    def similarities(self, collection: str, text: str, kind: str | None = None) -> dict[str, float]:
        """Cosine similarity (0..1) of `text` to every indexed item's document: chroma id -> similarity.

        Empty without embeddings (the retrieval extra missing)."""
        if not self.embeddings:
            return {}
        col = self.collection(collection)
        n = col.count()
        if not n or not text.strip():
            return {}
        res = col.query(query_texts=[text], n_results=n, where={"kind": kind} if kind else None,
                        include=["distances"])
        return {i: min(max(1.0 - d, 0.0), 1.0) for i, d in zip(res["ids"][0], res["distances"][0])}

    def embed(self, texts: list[str]) -> list:
        """Embeddings of arbitrary texts with the index's model (normalised vectors)."""
        extras.require("retrieval", "embedding")
        return self.embedder.embed_query(texts)

    def stats(self) -> dict:
        """Counts over the indexed items (see KnowledgeBase.stats)."""
        rows = self.items()
        patterns = [r for r in rows if r["kind"] == PATTERN]
        kernels = [r for r in rows if r["kind"] == KERNEL]
        learned = [r for r in patterns if r["status"] == "learned"]
        return {
            "patterns": len(patterns),
            "reference_kernels": len(kernels),
            "by_class": dict(sorted(Counter(r["bug_class"] for r in patterns).items())),
            "by_status": dict(sorted(Counter(r["status"] for r in patterns).items())),
            "by_category": dict(sorted(Counter(r["category"] for r in kernels).items())),
            "with_recipe": sum(1 for r in patterns if r["fix_recipe"]),
            "learned": len(learned),
            "learned_occurrences": sum(r["occurrences"] or 0 for r in learned),
            "classes_without_pattern": sorted(set(settings.bug_classes()) - {r["bug_class"] for r in patterns}),
            "last_indexed": max((r["indexed_at"] for r in rows), default=None),
            "data_dir": str(self.data_dir),
            "user_dir": str(self.user_dir),
            "embeddings": self.embeddings,
        }


def reindex(kb_dir: Path | str | None = None, data_dir: Path | str | None = None) -> dict:
    """Bring the index under data_dir in line with the files under kb_dir (see KnowledgeIndex.reindex)."""
    return KnowledgeIndex(data_dir).reindex(kb_dir)


def stats(data_dir: Path | str | None = None) -> dict:
    """Counts over the index under data_dir (see KnowledgeIndex.stats)."""
    return KnowledgeIndex(data_dir).stats()
