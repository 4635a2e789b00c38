"""The full integrity gate (static rules + the sandboxed run) over real answers, several side by side.

real_static.py --dynamic calls `judge_all`: each answer is one `kdebug check CANDIDATE --ref REFERENCE
--device D --policy P --sizes S --json` subprocess (eval/real_pool.py's runner: its own session, killed
with its sandbox workers at its limit), `jobs` of them at a time, so that CUDA answers compile their
load_inline extensions in parallel (about a minute each on the H200's 16 cores). A `deadline` bounds the
whole run: every answer's limit is what is left of it, and none starts with less than `min_left`
seconds left (those are reported as not started). Rows go to `sink` as each answer finishes, so a run
cut short keeps everything it judged.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

from debugger.integrity.gate import incomplete_accept

REPO = Path(__file__).resolve().parents[2]


def _real_pool():
    """eval/real_pool.py as a module: its runner (Kdebug) and its GPU admission (DeviceMemory)."""
    spec = importlib.util.spec_from_file_location("real_pool", REPO / "eval" / "real_pool.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("real_pool", module)
    spec.loader.exec_module(module)
    return module


def verdicts_of(result: dict, policies: tuple[str, ...]) -> dict[str, dict]:
    """Each policy's part of a row from one `kdebug check --json` (with `--policy both`, one object per policy)."""
    data = result.get("json")
    if len(policies) == 1 or data is None:
        return {p: verdict_of(result) for p in policies}
    return {p: verdict_of(dict(result, json=data.get(p))) for p in policies}


def verdict_of(result: dict) -> dict:
    """One policy's part of a row, from `kdebug check --json`'s result (or why there is none)."""
    data = result.get("json")
    base = {"seconds": result.get("seconds")}
    if data is None:
        why = "timeout" if result.get("timed_out") else "error"
        return {**base, "verdict": why, "rejections": [{"rule": why, "line": None,
                                                        "message": (result.get("stderr_tail") or "")[-300:]}],
                "warnings": []}
    findings = data.get("findings") or []
    incomplete = incomplete_accept(data)
    return {**base, "verdict": "incomplete" if incomplete else data.get("verdict", "error"),
            **({"incomplete": incomplete[:400]} if incomplete else {}),
            "rejections": [{"rule": f["rule"], "line": f.get("line"), "message": f["message"][:400]}
                           for f in findings if f.get("severity") == "reject"],
            "warnings": sorted({f["rule"] for f in findings if f.get("severity") != "reject"}),
            "torch_work": _short_work(data.get("torch_work")),
            "evaluation_status": (data.get("evaluation") or {}).get("status")}


def _short_work(work: dict | None) -> dict | None:
    if not work:
        return work
    return {k: work.get(k) for k in ("share", "torch_flops", "reference_flops", "candidate_launches")} | {
        "ops": [{k: o.get(k) for k in ("op", "family", "weight", "share", "via", "inputs")}
                for o in work.get("ops", [])[:5]]}


def judge_all(answers: list[dict], policies: tuple[str, ...], *, device: str, timeout: float, sizes: str,
              jobs: int, deadline: float | None, min_left: float = 150.0, answer_limit: float = 420.0,
              sink=None) -> list[dict]:
    """Rows for the answers, in their order; answers the deadline left unstarted get verdict not_started."""
    t0 = time.time()
    scratch = Path(tempfile.mkdtemp(prefix="kdebug-real-dynamic-"))
    kd_module = _real_pool()
    kd = kd_module.Kdebug(scratch / "data")
    lock = threading.Lock()

    # On a GPU, an answer whose verdict ran out of GPU memory beside the others is judged again with the GPU
    # to itself (eval/real_pool.py's admission: every job holds nothing, a lone re-run all of it).
    memory = kd_module.DeviceMemory(1) if device != "cpu" else None

    def left_now() -> float:
        return answer_limit if deadline is None else min(answer_limit, deadline - (time.time() - t0))

    def one(answer: dict) -> dict:
        row = {"name": answer["name"], "source": answer["source"]}
        if left_now() < min_left:
            row.update({p: {"verdict": "not_started", "rejections": [], "warnings": [], "seconds": 0}
                        for p in policies})
        else:
            # every policy from one sandboxed run (`--policy both`)
            args = ["check", str(Path(answer["candidate"]).resolve()), "--ref",
                    str(Path(answer["reference"]).resolve()), "--device", device,
                    "--policy", policies[0] if len(policies) == 1 else "both", "--sizes", sizes,
                    "--timeout", str(timeout)]
            with memory.hold(0, kd_module.GATE) if memory else nullcontext():
                row.update(verdicts_of(kd.run(args, timeout=left_now(), cwd=scratch), policies))
            if memory is not None and any(kd_module.out_of_memory(row[p]) for p in policies):
                with memory.hold(0, kd_module.ALONE):
                    if left_now() >= min_left:
                        crowded = {p: row[p] for p in policies}
                        row.update(verdicts_of(kd.run(args, timeout=left_now(), cwd=scratch), policies))
                        for p in policies:
                            row[p]["alone_after"] = {"verdict": crowded[p]["verdict"],
                                                     "rules": [r["rule"] for r in crowded[p]["rejections"]]}
        with lock:
            if sink is not None and any(row[p]["verdict"] != "not_started" for p in policies):
                sink.write(json.dumps(row) + "\n")
                sink.flush()
            print(f"  {row['name']}: " + ", ".join(f"{p} {row[p]['verdict']} ({row[p]['seconds']} s)"
                                                    for p in policies), file=sys.stderr, flush=True)
        return row

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, answers))
