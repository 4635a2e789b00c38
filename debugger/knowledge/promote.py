"""`kdebug kb promote ID`: copy a pattern of the user's layer into a checkout's kb/ for review.

Learned patterns (and `kb add` copies) live in the user's layer under the data folder, ingest's drafts
in <data dir>/drafts; the curated knowledge base is only ever written by this, when asked. The copy
keeps its place relative to patterns/ (learned/<id>.md, drafts/<id>.md) and never overwrites; the
original stays where it was (once the copy is curated, the curated one shadows it at load).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from debugger import settings
from debugger.knowledge.loader import load_all, load_pattern, pattern_files
from debugger.knowledge.schema import KnowledgeError


def default_target(curated: Path) -> Path | None:
    """The curated kb when it is a checkout's (editable install, KDEBUG_KB_DIR), None when it is the
    installed package's own copy."""
    curated = Path(curated).resolve()
    return None if curated.is_relative_to(settings.PACKAGE_DIR.resolve()) else curated


def find(pattern_id: str, user_dir: Path, drafts_dir: Path) -> tuple[Path, Path]:
    """(the pattern file, its place under patterns/) of an id in the user's layer or the drafts."""
    root = Path(user_dir) / "patterns"
    for path in pattern_files(user_dir):
        if path.stem == pattern_id:
            return path, path.relative_to(root)
    draft = Path(drafts_dir) / f"{pattern_id}.md"
    if draft.is_file():
        return draft, Path("drafts") / draft.name
    raise KnowledgeError(f"no learned pattern or draft {pattern_id!r} under {root} or {Path(drafts_dir)}")


def promote(pattern_id: str, user_dir: Path, drafts_dir: Path, to: Path | None) -> dict:
    """Copy the pattern `pattern_id` into the knowledge-base folder `to` (the one holding patterns/)."""
    if to is None:
        raise KnowledgeError("the curated knowledge base is the installed package's own copy: "
                             "give --to CHECKOUT/kb to promote into a checkout")
    to = Path(to)
    if not (to / "patterns").is_dir():
        hint = f"; did you mean {to / 'kb'}?" if (to / "kb" / "patterns").is_dir() else ""
        raise KnowledgeError(f"{to} is not a knowledge-base folder (no patterns/ in it){hint}")
    source, place = find(pattern_id, Path(user_dir), Path(drafts_dir))
    pattern = load_pattern(source)
    taken = {p.id: p.path for p in load_all(to).patterns}
    if pattern.id in taken:
        raise KnowledgeError(f"{to}: id {pattern.id!r} is already used by {taken[pattern.id]}")
    dest = to / "patterns" / place
    if dest.exists():
        raise KnowledgeError(f"{dest} exists already; edit it in place or remove it first")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, dest)
    return {"action": "promoted", "id": pattern.id, "status": pattern.status, "from": str(source),
            "path": str(dest)}
