"""compute-sanitizer findings as diagnosis evidence: symptom tags, and scored findings for the ranking.

A finding in one of the candidate's own kernels (its line mapped to the Python file) is direct
evidence, weighed like a counterfactual's support (ranking.rank's `findings`):
- memcheck: an access out of bounds -> mask_missing (a bounds check or mask is missing); one far
  before its allocation or 2 GiB past it is an index that wrapped -> index_overflow too.
- racecheck: a shared-memory hazard -> write_race (a __syncthreads is missing between the accesses).
- synccheck: a barrier reached by part of a block or warp -> write_race.
- initcheck: a kernel of the candidate reads memory nothing wrote (an accumulator never zeroed,
  partials never stored) -> unwritten_output; a copy of never-written memory to the host or a read
  of it by PyTorch's own kernels (at::native: an output with elements no thread wrote) ->
  unwritten_output, grid_undercount.
Findings in other code (PyTorch's kernels) are kept in the record, weighed only where they say an
output was never written.
"""
from __future__ import annotations

WRAP_BYTES = 1 << 31  # an offset this far off its allocation is an int32 index that wrapped

# the finding's tag: what kind of fault (debugger/symptoms.py SANITIZER)
TAGS = {"invalid_read": "sanitizer_out_of_bounds", "invalid_write": "sanitizer_out_of_bounds",
        "invalid_atomic": "sanitizer_out_of_bounds", "race": "sanitizer_shared_race",
        "barrier_error": "sanitizer_barrier_error", "uninitialised_read": "sanitizer_uninitialised_read",
        "uninitialised_copy": "sanitizer_unwritten_output"}
SCORES = {  # tag -> [(class, score)]
    "sanitizer_out_of_bounds": [("mask_missing", 3.5)],
    "sanitizer_index_wrapped": [("index_overflow", 3.0)],
    "sanitizer_shared_race": [("write_race", 3.5)],
    "sanitizer_barrier_error": [("write_race", 2.0)],
    "sanitizer_uninitialised_read": [("unwritten_output", 2.5)],
    "sanitizer_unwritten_output": [("unwritten_output", 2.0), ("grid_undercount", 1.0)],
}


def describe(f: dict) -> str:
    """One line for a finding: tool, what, where."""
    where = f.get("kernel") or "code outside the candidate"
    if f.get("pyline"):
        where += f" (line {f['pyline']}"
        where += f", {f['file'].rsplit('/', 1)[-1]}:{f['line']})" if f.get("file") and f.get("line") else ")"
    kind = f["kind"]
    if kind.startswith("invalid_"):
        what = f"{kind.split('_')[1]} of {f.get('size')} bytes of __{f.get('space')}__ memory out of bounds"
        if f.get("oob_bytes") is not None:
            what += (f", {f['oob_bytes']} bytes {f.get('oob_side')} the nearest allocation"
                     + (f" of {f['allocation_size']} bytes" if f.get("allocation_size") else ""))
    elif kind == "race":
        acc = f.get("accesses") or []
        what = "shared-memory race between " + " and ".join(
            f"{a['access']} at line {a.get('pyline') or a.get('line') or '?'}" for a in acc[:3])
        hazards = sum(a.get("hazards") or 0 for a in acc)
        what += f" ({hazards} hazards)" if hazards else ""
    elif kind == "barrier_error":
        what = "barrier error: " + f["message"].split("detected", 1)[-1].strip(". ")
    elif kind == "uninitialised_read":
        what = f"read of {f.get('size')} bytes of memory nothing wrote"
    elif kind == "uninitialised_copy":
        what = f"a copy of {f.get('size')} bytes nothing wrote (an output left partly unwritten)"
    else:
        what = f["message"]
    count = f" [{f['count']} threads]" if f.get("count", 1) > 1 else ""
    return f"compute-sanitizer {f['tool']}: {what} in {where}{count}"


def _tags(f: dict) -> list[str]:
    tag = TAGS.get(f["kind"])
    if tag is None:
        return []
    if f["kind"] == "uninitialised_read" and not f.get("in_candidate"):
        # PyTorch's own kernels (a copy, an elementwise op) read what the candidate never wrote; a
        # library's (cuBLAS, cuDNN) may read padding it owns: not evidence
        return ["sanitizer_unwritten_output"] if "at::native" in (f.get("function") or "") else []
    if tag != "sanitizer_unwritten_output" and not f.get("in_candidate"):
        return []
    if tag == "sanitizer_out_of_bounds" and (f.get("oob_side") == "before" or (f.get("oob_bytes") or 0) >= WRAP_BYTES):
        return [tag, "sanitizer_index_wrapped"]
    if f["kind"] == "race" and f.get("severity") != "error":
        return []  # racecheck's warnings (intra-warp hazards) are not errors
    return [tag]


def evidence(result: dict) -> tuple[set[str], list[dict]]:
    """(symptom tags, ranking findings {bug_class, score, evidence, lines}) of a sanitizer result."""
    tags: set[str] = set()
    by_class: dict[str, dict] = {}
    for tool in result.get("tools", []):
        for f in tool.get("findings", []):
            for tag in _tags(f):
                tags.add(tag)
                lines = [n for n in [f.get("pyline")] + [a.get("pyline") for a in f.get("accesses") or []] if n]
                for cls, score in SCORES[tag]:
                    entry = by_class.setdefault(cls, {"bug_class": cls, "score": 0.0, "evidence": [], "lines": [],
                                                      "recipes": [], "_tags": set()})
                    if tag not in entry["_tags"]:  # one score per kind of fault, however many places
                        entry["_tags"].add(tag)
                        entry["score"] += score
                    text = describe(f)
                    if text not in entry["evidence"]:
                        entry["evidence"].append(text)
                    entry["lines"] += [n for n in lines if n not in entry["lines"]]
    findings = []
    for entry in by_class.values():
        entry.pop("_tags")
        findings.append(entry)
    return tags, findings
