"""Real-pool benchmark: kdebug's verdicts (and repairs) on real pipelines' answers, against what they recorded.

    python eval/real_pool.py PATH [--device cpu|cuda] [--limit N] [--only mismatch|correct|all]
                             [--diagnose] [--repair] [--jobs N] [--out DIR] [--resume]
                             [--semantics kernel|kernelbench] [--sizes auto|published|small]
                             [--match GLOB] [--shard K/N] [--deadline S] [--skip-judged ROWS...]
    python eval/real_pool.py --from-rows A/rows.json B/rows.json [--out DIR]    # shards merged, nothing run
    python eval/real_pool.py --verify-repairs OUT/repairs [--device cuda --sizes published ...]

PATH: a KernelBench checkout or ../shared/real/kernelbench-fork (runs/ + KernelBench/), or a pool of
case folders such as ../shared/real/tritonbench-t-dev (nearmiss/ = recorded fail, honest/ = recorded
pass). The answers are read with `ingest.answers`, written as case folders under OUT/cases (OUT: a
scratch folder, never inside the repository or the pool), and each is run through the CLI in a
subprocess with a time limit: `kdebug eval CASE --json` (status, both verdicts where the eval reports
`verdicts`, the parameter map); with --diagnose `kdebug diagnose --json` (top hypothesis) for failing
answers; with --repair `kdebug repair --backend kb --json -o OUT/repairs/ID.py` for failing answers
and `kdebug check --json` on what it repaired. Flags the installed kdebug does not take yet
(--semantics, --sizes, --policy) are left out and the row says so.

CUDA answers (load_inline) run on --device cpu through kdebug's CPU emulation of CUDA
(debugger/lang/cuda/emulate); those using what it does not run (inline PTX, cuBLAS, wmma...) are
reported `not_runnable`, with the reason, and never counted as failures.

Writes OUT/rows.jsonl (one row per answer, as it finishes; --resume skips the rows already there),
OUT/rows.json (rows + summary) and OUT/table.md (the agreement matrix per semantics, the
disagreements, repair counts per diagnosed class, time), the Markdown for eval/RESULTS.md. A run
that does not fit one sitting (a device call of 10 minutes) is cut into `--shard K/N` slices, each with
a `--deadline` to stop starting answers in time, and their rows.json files merged with --from-rows.
A campaign over several device sessions passes the rows committed so far with --skip-judged: what they
judged is left out, what they could not judge (time, memory) is run again.

--verify-repairs DIR judges repairs made elsewhere: DIR holds the case folders a --repair run writes
under OUT/repairs/ (reference.py, case.toml, candidate.py = the repaired answer), and each is run
through `kdebug eval` and `kdebug check` only. The GPU's minutes are scarce: the kb loop's search can
run on the CPU (emulated CUDA, reduced sizes) and the H200 judge what it repaired at the published sizes.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from debugger.evaluate import CUDA_ON_CPU  # noqa: E402
from debugger.integrity.gate import incomplete_accept  # noqa: E402
from ingest.answers import Answer, read_pool  # noqa: E402

STATUSES = ("pass", "mismatch", "compile_error", "runtime_error", "timeout", "invalid_input")
NOT_JUDGED = ("not_runnable", "no_result")
FAILING = ("mismatch", "compile_error", "runtime_error", "timeout")


# -- running kdebug ------------------------------------------------------------------------------
class Kdebug:
    """The CLI in subprocesses, with a scratch data folder; knows which optional flags it takes."""

    def __init__(self, data_dir: Path, python: str = sys.executable):
        self.python = python
        self.env = {**os.environ, "KDEBUG_DATA_DIR": str(data_dir),
                    "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        self._help: dict[str, str] = {}
        self._lock = threading.Lock()

    def takes(self, command: str, flag: str) -> bool:
        """Does `kdebug COMMAND` accept FLAG (read from its --help once)?"""
        with self._lock:
            if command not in self._help:
                try:
                    out = subprocess.run([self.python, "-m", "debugger.cli", command, "--help"], env=self.env,
                                         capture_output=True, text=True, timeout=120)
                    self._help[command] = out.stdout
                except (OSError, subprocess.TimeoutExpired):
                    self._help[command] = ""
        return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", self._help[command]) is not None

    def run(self, args: list[str], timeout: float, cwd: Path) -> dict:
        """{'exit', 'json' (or None), 'seconds', 'stderr_tail', 'timed_out'} of `kdebug ARGS --json`."""
        t0 = time.time()
        proc = subprocess.Popen([self.python, "-m", "debugger.cli", *args, "--json"], env=self.env, cwd=cwd,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: the command and its sandbox workers
            except ProcessLookupError:
                pass
            _, stderr = proc.communicate()
            return {"exit": None, "json": None, "seconds": round(time.time() - t0, 1), "timed_out": True,
                    "stderr_tail": (stderr or "")[-600:]}
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError:
            data = None
        return {"exit": proc.returncode, "json": data if isinstance(data, dict) else None,
                "seconds": round(time.time() - t0, 1), "timed_out": False, "stderr_tail": stderr[-600:]}


def _optional(kd: Kdebug, command: str, flags: dict[str, str | None], used: dict) -> list[str]:
    """The optional flags this kdebug takes, recording which were left out in `used`."""
    out = []
    for flag, value in flags.items():
        if value is None:
            continue
        if kd.takes(command, flag):
            out += [flag, value]
        else:
            used.setdefault("left_out", []).append(f"{command} {flag} {value}")
    return out


def eval_fields(data: dict | None) -> dict:
    """What a row keeps of an eval JSON object (tolerating fields this kdebug does not report yet)."""
    if not data:
        return {}
    out = {"status": data.get("status"), "message": str(data.get("message") or "")[:300],
           "checks": len(data.get("checks") or []),
           "failed_checks": [c.get("name") for c in data.get("checks") or [] if not c.get("passed")][:12]}
    # what each failing check said (a kernel-verdict failure under --semantics kernelbench is not the message)
    failing = {c.get("name"): str(c.get("message") or c.get("status") or "")[:200]
               for c in data.get("checks") or [] if not c.get("passed") and c.get("status") != "skipped"}
    if failing:
        out["failed_messages"] = dict(list(failing.items())[:6])
    timed = [(c.get("seconds"), c.get("name"), c.get("phases")) for c in data.get("checks") or []
             if isinstance(c.get("seconds"), (int, float))]
    if timed:
        seconds, name, phases = max(timed, key=lambda t: t[0])
        out["slowest_check"] = {"name": name, "seconds": round(seconds, 1), **({"phases": phases} if phases else {})}
    peaks = {}
    for c in data.get("checks") or []:
        for who, n in (c.get("peak_bytes") or {}).items():
            peaks[who] = max(peaks.get(who, 0), n)
    if peaks:  # the most GPU memory any check held, per worker: what the memory estimate admitted it by is beside it
        out["peak_bytes"] = peaks
    verdicts = data.get("verdicts")
    if isinstance(verdicts, dict):
        for name in ("kernel", "kernelbench"):
            v = verdicts.get(name)
            if isinstance(v, dict):
                out[name] = {"status": v.get("status"), "failed": list(v.get("failed") or [])[:12],
                             "skipped": v.get("skipped") or {}}
    if data.get("verdict_note"):
        out["verdict_note"] = str(data["verdict_note"])[:300]
    pm = data.get("parameter_map")
    if isinstance(pm, dict):
        out["parameter_map"] = {"pairs": len(pm.get("pairs") or []),
                                "unmatched_candidate": list(pm.get("unmatched_candidate") or [])[:20],
                                "unmatched_reference": list(pm.get("unmatched_reference") or [])[:20]}
    return out


def verdict(row: dict, semantics: str) -> str:
    """kdebug's status for an answer under `semantics`: a STATUSES value, not_runnable or no_result."""
    if row.get("not_runnable"):
        return "not_runnable"
    ev = row.get("eval") or {}
    if not ev.get("status"):
        return "no_result"
    v = ev.get(semantics)
    if isinstance(v, dict) and v.get("status"):
        if v["status"] != "pass" and not v.get("failed") and v.get("skipped"):
            return "no_result"  # no check failed, some could not run (GPU memory, the reference): not judged
        status = v["status"]
    elif semantics == "kernel" or ev["status"] in ("invalid_input", "compile_error"):
        status = ev["status"]  # a kdebug reporting one verdict, or a failure before any check ran
    else:
        return "no_result"
    if status in ("runtime_error", "compile_error", "invalid_input") and undecided(ev):
        return "no_result"
    return status


def undecided(ev: dict) -> bool:
    """An error that says nothing of the answer: out of GPU memory (beside other evaluations, most likely), or
    only PyTorch's advice on CUDA errors (a kdebug before 2026-12-07 kept that line instead of the error)."""
    return out_of_memory(ev) or "TORCH_USE_CUDA_DSA" in (ev.get("message") or "")


def eval_row(res: dict) -> dict:
    """A `kdebug eval` run as a row's field: what its JSON says, the exit, the time, and why there is no
    JSON when there is none."""
    row = {**eval_fields(res["json"]), "exit": res["exit"], "seconds": res["seconds"]}
    if res["json"] is None:
        row["error"] = "timed out" if res["timed_out"] else "no JSON: " + res["stderr_tail"][-300:]
    return row


def run_answer(answer: Answer, case: Path, kd: Kdebug, opts, out: Path) -> dict:
    """One answer through eval (and diagnose, repair, check when asked); the result row."""
    row = {**answer.row(), "case_dir": str(case), "flags": {}, "semantics": opts.semantics or "kernel"}
    device = ["--device", opts.device]
    flags = _optional(kd, "eval", {"--semantics": opts.semantics, "--sizes": opts.sizes,
                                   "--checks": getattr(opts, "checks", None)}, row["flags"])
    res = kd.run(["eval", str(case), *device, *flags], opts.timeout, out)
    row["eval"] = eval_row(res)
    message = (res["json"] or {}).get("message") or ""
    if (res["json"] or {}).get("status") == "invalid_input" and message.startswith(CUDA_ON_CPU):
        row["not_runnable"] = message  # CUDA the CPU emulation does not run (PTX, cuBLAS...)
        return row
    # the verdict the run judges by decides what is diagnosed and repaired (a parameter_init answer
    # passes the kernel verdict and fails KernelBench's)
    failing = verdict(row, "kernel") in FAILING or (opts.semantics == "kernelbench"
                                                    and verdict(row, "kernelbench") in FAILING)
    if failing and opts.diagnose:
        flags = _optional(kd, "diagnose", {"--sizes": opts.sizes, "--semantics": opts.semantics}, row["flags"])
        res = kd.run(["diagnose", str(case), *device, *flags], opts.timeout, out)
        hyps = (res["json"] or {}).get("hypotheses") or []
        top = hyps[0] if hyps else {}
        row["diagnose"] = {"status": (res["json"] or {}).get("status"), "exit": res["exit"],
                           "seconds": res["seconds"], "top": top.get("bug_class"),
                           "confidence": top.get("confidence"),
                           "ranked": [h.get("bug_class") for h in hyps[:3]],
                           "top_lines": top.get("lines") or [],
                           "top_evidence": [str(e)[:200] for e in (top.get("evidence") or [])[:4]]}
    if failing and opts.repair:
        target = out / "repairs" / f"{answer.id.replace('/', '__')}.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = _optional(kd, "repair", {"--sizes": opts.sizes, "--max-iters": opts.max_iters,
                                         "--wall-budget": opts.wall_budget, "--semantics": opts.semantics},
                          row["flags"])
        res = kd.run(["repair", str(case), "--backend", "kb", "--no-write-back", "-o", str(target), *device,
                      *flags], opts.repair_timeout, out)
        data = res["json"] or {}
        row["repair"] = {"status": data.get("status") or ("timed out" if res["timed_out"] else "no_result"),
                         "exit": res["exit"], "iterations": data.get("iterations"), "seconds": res["seconds"],
                         "bug_class": data.get("bug_class"), "output": data.get("output"),
                         "message": (data.get("message") or "")[:400],
                         "history": [_step(h) for h in data.get("history") or []][:8]}
        if not data or data.get("status") in ("invalid_input", "error"):
            row["repair"]["stderr_tail"] = res["stderr_tail"]  # why it gave no verdict
        if data.get("status") == "repaired" and data.get("output") and Path(data["output"]).is_file():
            repaired = repaired_case(case, Path(data["output"]), out / "repairs" / answer.id.replace("/", "__"))
            verify_repaired(row, repaired, kd, opts, out)
    return row


def prebuild(case: Path, kd: Kdebug, timeout: float) -> dict | None:
    """On a GPU: the answer's load_inline build (a minute of nvcc on the host's cores) in a confined process,
    into the extensions cache of kd's data folder, where its `kdebug eval` finds it; so that the GPU memory an
    evaluation is admitted with is not held through its build. {"ok"} or {"error"}, with "seconds"; None for
    an answer that builds no extension. A failed build is left to the evaluation to report."""
    from debugger.bench.perf import build_extension
    from debugger.evaluate import sandbox_cache_dir
    from debugger.lang.cuda.emulate import builds_extension

    src = (case / "candidate.py").read_text()
    if not builds_extension(src):
        return None
    t = time.time()
    cache = sandbox_cache_dir(Path(kd.env["KDEBUG_DATA_DIR"]))
    cache.mkdir(parents=True, exist_ok=True)
    built = build_extension(src, (case / "reference.py").read_text(),
                            {"deny_read": [str(case.resolve())], "cache": str(cache)}, timeout)
    return {**built, "seconds": round(time.time() - t, 1)}


def _step(h: dict) -> dict:
    """One repair iteration for the row; a rejected one keeps the gate's reasons (a rejection read later
    needs them, not a re-run)."""
    step = {k: (h.get(k) or "")[:300] if k == "message" else h.get(k)
            for k in ("recipe", "outcome", "status", "error_after", "message")}
    if h.get("reasons"):
        step["reasons"] = [str(r)[:300] for r in h["reasons"][:4]]
    return step


def verify_repaired(row: dict, repaired: Path, kd: Kdebug, opts, out: Path) -> dict:
    """The independent judgement of a repaired case folder: `kdebug eval` (both verdicts) and `kdebug
    check` (the gate), each in its own process, into row["verify"] and row["check"]."""
    eval_repaired(row, repaired, kd, opts, out)
    return gate_repaired(row, repaired, kd, opts, out)


def eval_repaired(row: dict, repaired: Path, kd: Kdebug, opts, out: Path) -> dict:
    """`kdebug eval` of a repaired case folder (both verdicts) into row["verify"]."""
    flags = _optional(kd, "eval", {"--semantics": opts.semantics, "--sizes": opts.sizes,
                                   "--checks": getattr(opts, "verify_checks", None)}, row["flags"])
    row["verify"] = eval_row(kd.run(["eval", str(repaired), "--device", opts.device, *flags], opts.timeout, out))
    return row


def gate_repaired(row: dict, repaired: Path, kd: Kdebug, opts, out: Path) -> dict:
    """`kdebug check` of a repaired case folder (the gate) into row["check"]."""
    flags = _optional(kd, "check", {"--policy": opts.policy, "--sizes": getattr(opts, "check_sizes", None)},
                      row["flags"])
    res = kd.run(["check", str(repaired), "--device", opts.device, *flags], opts.timeout, out)
    chk = res["json"] or {}
    incomplete = incomplete_accept(chk)
    row["check"] = {"verdict": "incomplete" if incomplete else
                    chk.get("verdict") or ("timed out" if res["timed_out"] else None),
                    **({"incomplete": incomplete[:400]} if incomplete else {}),
                    "exit": res["exit"], "seconds": res["seconds"],
                    "rules": sorted({f.get("rule") for f in chk.get("findings") or [] if f.get("rule")}),
                    # why it rejected: the findings that decide (a rejection read by hand needs them)
                    "findings": [{k: f.get(k) for k in ("rule", "severity", "message", "line")}
                                 for f in chk.get("findings") or [] if f.get("severity") == "reject"][:8]}
    return row


def repaired_case(case: Path, repaired: Path, folder: Path) -> Path:
    """A case folder for the repaired kernel: its reference and case.toml (the task's tolerances)
    beside the repair as candidate.py, so the independent eval and the gate judge the same task."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("reference.py", "case.toml"):
        if (case / name).is_file():
            (folder / name).write_text((case / name).read_text())
    (folder / "candidate.py").write_text(repaired.read_text())
    return folder


# -- sharing one GPU -----------------------------------------------------------------------------
def task_bytes(reference: Path) -> tuple[int, int, int] | None:
    """Bytes of the task's published inputs, of Model's parameters and buffers, and of the largest tensor
    its forward makes, drawn, built and run on the meta device (nothing allocated). The reference is the
    task's own file, not the answer; it runs here only to size them."""
    import importlib.util

    import torch

    from debugger.sizes import largest_result_bytes, module_bytes

    try:
        spec = importlib.util.spec_from_file_location(f"real_pool_ref_{abs(hash(str(reference)))}", reference)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with torch.device("meta"):
            xs = module.get_inputs()
            inputs = sum(x.numel() * x.element_size() for x in xs if isinstance(x, torch.Tensor))
            params = results = 0
            try:
                model = module.Model(*module.get_init_inputs())
                params = module_bytes(model)
                with torch.no_grad():
                    results = largest_result_bytes(model, *xs)
            except Exception:  # noqa: BLE001 - what could be sized then
                pass
        return inputs, params, results
    except Exception:  # noqa: BLE001 - unsized: scheduled as if it were large
        return None


# Model's, ModelNew's and the parameter map's copy of the weights, and the float64 reference's
PARAM_COPIES = 5
# KernelBench's trials alone: Model's and ModelNew's (run 51 on an H200: gemini level2/59 held 2.1 times its 4 GB of
# weights, level2/66 and 68 2.2 times their 1 GB), with a margin
TRIAL_PARAM_COPIES = 3
# Admission order on a shared GPU: a lone re-run first, then an evaluation (its gate has ended: the build is
# done), then a new gate
GATE, EVAL, ALONE = 0, 1, 2


class DeviceMemory:
    """Evaluations that share one GPU are admitted by their memory estimate, not by count: an answer
    waits until its estimate fits beside those running (one larger than the budget runs alone). While a
    request of a higher rank waits (a lone re-run of an answer that ran out of memory beside others, an
    evaluation whose gate has ended), no request of a lower rank is admitted: the pipeline drains instead
    of starving its later stage (on an H100, twelve gates in flight left the published-size evaluations
    waiting most of a 10-minute command)."""

    def __init__(self, budget: int):
        self.budget, self.used, self.running = budget, 0, 0
        self.waiting = {GATE: 0, EVAL: 0, ALONE: 0}
        self.cond = threading.Condition()

    def need(self, reference: Path, sizes: str = "published", trials_only: bool = False) -> int:
        """What a task's checks are estimated to hold on the GPU: its inputs, its largest intermediate and
        its weights, several times over (the whole budget when they cannot be sized without running it).
        At sizes="small" (the gate's), the inputs and intermediates are scaled to the reduced sizes' input
        budget and the weights to their budget; `trials_only` (KernelBench's trials alone) counts fewer copies
        of the inputs, results and weights (debugger/sizes.TRIAL_MEMORY_FACTOR, TRIAL_PARAM_COPIES); each
        evaluation adds debugger/sizes.EVALUATION_OVERHEAD_BYTES. Answers that create a cuBLAS handle per call allocate
        outside PyTorch's allocator and never check its status: an underestimate can starve them
        (suspected where opus level2/40 was judged nondeterministic on an H100 shared by four jobs whose
        weights were not counted)."""
        from debugger.sizes import BUDGET_BYTES, BUDGET_PARAM_BYTES, EVALUATION_OVERHEAD_BYTES, check_memory_estimate

        size = task_bytes(reference)
        if size is None:
            return self.budget
        inputs, params, results = size
        if sizes == "small":
            scale = min(1.0, BUDGET_BYTES["cuda"] / inputs) if inputs else 1.0
            inputs, results = int(inputs * scale), int(results * scale)
            params = min(params, BUDGET_PARAM_BYTES["cuda"])
        copies = TRIAL_PARAM_COPIES if trials_only else PARAM_COPIES
        return check_memory_estimate(inputs, results, trials_only) + copies * params + EVALUATION_OVERHEAD_BYTES

    def hold(self, need: int, rank: int = EVAL):
        alone = rank == ALONE
        need = self.budget if alone else min(need, self.budget)
        outer = self

        def admissible() -> bool:
            if any(n for r, n in outer.waiting.items() if r > rank):
                return False
            return outer.running == 0 or (not alone and outer.used + need <= outer.budget)

        class _Held:
            def __enter__(self):
                with outer.cond:
                    outer.waiting[rank] += 1
                    outer.cond.wait_for(admissible)
                    outer.waiting[rank] -= 1
                    outer.used += need
                    outer.running += 1
                    outer.cond.notify_all()  # a lower rank may now be admissible beside it

            def __exit__(self, *exc):
                with outer.cond:
                    outer.used -= need
                    outer.running -= 1
                    outer.cond.notify_all()

        return _Held()


def out_of_memory(field: dict) -> bool:
    """A row's eval (row["verify"]) or gate (row["check"], or a policy's verdict in eval/integrity/real_dynamic.py)
    says a check ran out of GPU memory (beside others' evaluations, most likely): CUDA's own words, or kdebug's
    for a check crowded out."""
    texts = [field.get("message") or "", field.get("incomplete") or "", *(field.get("failed_messages") or {}).values(),
             *(f.get("message") or "" for f in [*(field.get("findings") or []), *(field.get("rejections") or [])])]
    return any(("out of memory" in t.lower() or "out of gpu memory" in t.lower()) for t in texts)


def two_stages(first, second, items: list, first_jobs: int, second_jobs: int) -> list:
    """second(first(item)) for each item, first's results handed to second as they finish: on a GPU the
    stage that builds (host cores) feeds the stage admitted by memory. second's results, in that order."""
    with ThreadPoolExecutor(max_workers=first_jobs) as firsts, ThreadPoolExecutor(max_workers=second_jobs) as seconds:
        done = [seconds.submit(second, f.result()) for f in as_completed([firsts.submit(first, i) for i in items])]
        return [d.result() for d in done]


# -- selecting answers ---------------------------------------------------------------------------
def select(answers: list[Answer], only: str, limit: int | None, match: str | None = None) -> list[Answer]:
    """Answers with a case folder to write, whose id matches the glob `match`, by recorded verdict
    (`only`), at most `limit` of them, taken in turn from the recorded classes so a limit samples each."""
    globs = [g for g in (match or "").split(",") if g]
    keep = [a for a in answers if a.usable() is None and (not globs or any(fnmatch.fnmatch(a.id, g) for g in globs))]
    if only == "mismatch":
        keep = [a for a in keep if a.recorded == "fail" and a.recorded_class in ("numerical_mismatch", "nearmiss")]
    elif only == "correct":
        keep = [a for a in keep if a.recorded == "pass"]
    elif only == "judged":  # what both verdicts can judge: recorded correct or numerically wrong
        keep = [a for a in keep if a.recorded == "pass"
                or (a.recorded == "fail" and a.recorded_class in ("numerical_mismatch", "nearmiss"))]
    if limit is None or limit >= len(keep):
        return keep
    by_class: dict[str, list[Answer]] = {}
    for a in keep:
        by_class.setdefault(a.recorded_class, []).append(a)
    picked, queues = [], [list(v) for _, v in sorted(by_class.items())]
    while len(picked) < limit:
        for q in queues:
            if q and len(picked) < limit:
                picked.append(q.pop(0))
    return picked


def shard(answers: list[Answer], spec: str | None) -> list[Answer]:
    """The K-th (1-based) of N interleaved slices: answer i is in slice i % N + 1."""
    if not spec:
        return answers
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise SystemExit(f"real_pool: --shard wants K/N, not {spec!r}") from None
    if not 1 <= k <= n:
        raise SystemExit(f"real_pool: --shard {spec}: K must be in 1..N")
    return answers[k - 1::n]


def judged_ids(paths: list[Path], semantics: str) -> set[str]:
    """The answers these rows gave a verdict under `semantics`: pass or mismatch, or a compile or runtime error
    that is the answer's own (not out of GPU memory beside other evaluations). What kdebug could not judge -
    timeouts, memory, a reference that could not run (invalid_input) - is run again. An answer any of the files
    judged counts, whatever another file says of it (a CPU run's not_runnable does not undo a GPU's verdict)."""
    judged = set()
    for path in paths:
        for r in read_rows([path])[0]:
            if verdict(r, semantics) in ("pass", "mismatch", "compile_error", "runtime_error"):
                judged.add(r["id"])
    return judged


def read_rows(paths: list[Path]) -> tuple[list[dict], list[dict]]:
    """(rows, the summaries they came with) of rows.jsonl / rows.json files; a later row of the same id wins."""
    rows: dict[str, dict] = {}
    summaries = []
    for path in paths:
        text = path.read_text()
        if path.suffix == ".json":
            data = json.loads(text)
            summaries.append(data.get("summary") or {})
            items = data.get("rows") or []
        else:
            items = [json.loads(line) for line in text.splitlines() if line.strip()]
        for r in items:
            rows[r["id"]] = r
    return list(rows.values()), summaries


def check_out(out: Path, pool: Path) -> None:
    """OUT must be outside the repository and the pool."""
    o = out.resolve()
    for inside, what in ((REPO.resolve(), "the repository"), (pool.resolve(), "the pool")):
        if o == inside or inside in o.parents:
            raise SystemExit(f"real_pool: --out must be a scratch folder outside {what}: {out}")


# -- the summary and the table ---------------------------------------------------------------------
def agreement(rows: list[dict], semantics: str) -> dict:
    """Matrix recorded class -> kdebug status, and agreement over the answers both judged."""
    matrix: dict[str, dict[str, int]] = {}
    agree = judged = 0
    disagreements = []
    for r in rows:
        got = verdict(r, semantics)
        key = f"{r.get('recorded') or 'none'} ({r.get('recorded_class')})"
        matrix.setdefault(key, {})
        matrix[key][got] = matrix[key].get(got, 0) + 1
        if r.get("recorded") in ("pass", "fail") and got not in NOT_JUDGED:
            judged += 1
            if (got == "pass") == (r["recorded"] == "pass"):
                agree += 1
            else:
                disagreements.append({"id": r["id"], "recorded": r["recorded"], "kdebug": got,
                                      "why": _why(r, semantics)})
    reported = semantics == "kernel" or any(semantics in (r.get("eval") or {}) for r in rows)
    return {"matrix": matrix, "agree": agree, "judged": judged, "disagreements": disagreements,
            "reported": reported}


def _why(row: dict, semantics: str) -> str:
    """One line on a disagreement: the checks that failed, else the eval's message."""
    ev = row.get("eval") or {}
    failed = (ev.get(semantics) or {}).get("failed") if isinstance(ev.get(semantics), dict) else None
    if semantics == "kernelbench" and ev.get("verdict_note"):
        note = ev["verdict_note"]
        return note if len(note) <= 240 else note[:237].rsplit(" ", 1)[0] + " ..."
    if failed:
        return "fails " + ", ".join(failed) + (f" ({ev['message'][:120]})" if ev.get("message") else "")
    return (ev.get("message") or ev.get("error") or "")[:160]


def _verified(row: dict) -> bool:
    """The repaired kernel passes kdebug eval again, run apart from the repair (the verdict the run
    judges by: kernelbench's when it is reported and asked for, else the kernel verdict)."""
    v = row.get("verify") or {}
    sem = "kernelbench" if row.get("semantics") == "kernelbench" else "kernel"
    status = (v.get(sem) or {}).get("status") if isinstance(v.get(sem), dict) else v.get("status")
    return status == "pass"


def repair_counts(rows: list[dict]) -> dict[str, dict]:
    """Per diagnosed class (diagnose's top hypothesis, else the repair's bug_class): repair outcomes."""
    out: dict[str, dict] = {}
    for r in rows:
        if "repair" not in r:
            continue
        klass = (r.get("diagnose") or {}).get("top") or r["repair"].get("bug_class") or "none"
        c = out.setdefault(klass, {"tried": 0, "repaired_accepted": 0, "repaired_failed_verify": 0,
                                   "repaired_rejected_by_check": 0,
                                   "rejected": 0, "unrepaired": 0, "other": 0, "seconds": [], "iterations": []})
        c["tried"] += 1
        status = r["repair"]["status"]
        if status == "repaired":
            verified = "verify" not in r or _verified(r)
            key = "repaired_rejected_by_check" if (r.get("check") or {}).get("verdict") != "accept" else \
                "repaired_accepted" if verified else "repaired_failed_verify"
        else:
            key = status if status in ("rejected", "unrepaired") else "other"
        c[key] += 1
        c["seconds"].append(r["repair"].get("seconds") or 0)
        if r["repair"].get("iterations") is not None:
            c["iterations"].append(r["repair"]["iterations"])
    return out


def summary(rows: list[dict], meta: dict) -> dict:
    evals = [r["eval"]["seconds"] for r in rows if (r.get("eval") or {}).get("seconds") is not None]
    return {**meta, "answers": len(rows), "not_runnable": sum(1 for r in rows if r.get("not_runnable")),
            "agreement": {s: agreement(rows, s) for s in ("kernel", "kernelbench")},
            "repairs": repair_counts(rows),
            "rows_no_result": [(r["id"], ((r.get("eval") or {}).get("error") or (r.get("eval") or {}).get("message")
                                          or "no status")[:200], (r.get("eval") or {}).get("seconds"))
                               for r in rows if "no_result" in (verdict(r, "kernel"), verdict(r, "kernelbench"))],
            "eval_seconds": {"median": _median(evals), "p90": _pct(evals, 0.9), "total": round(sum(evals), 1)},
            "flags_left_out": sorted({f for r in rows for f in (r.get("flags") or {}).get("left_out", [])})}


def _median(xs):
    return round(statistics.median(xs), 1) if xs else None


def _pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 1)


def markdown(s: dict) -> str:
    """The summary as Markdown (the section for eval/RESULTS.md)."""
    lines = [f"Pool `{s['pool']}`, {s['answers']} answers ({s['selection']}), --device {s['device']}, "
             f"{s['date']}, commit {s['commit']}, wall {s['wall_seconds']} s.", "",
             "    " + s["command"], ""]
    if s.get("left_by_deadline"):
        lines += [f"{s['left_by_deadline']} selected answers not started (--deadline): not in the table.", ""]
    if s["not_runnable"]:
        lines += [f"{s['not_runnable']} answers not runnable here (CUDA the CPU emulation does not run): not counted "
                  "as failures.", ""]
    for sem, a in s["agreement"].items():
        cols = [c for c in (*STATUSES, *NOT_JUDGED) if any(c in m for m in a["matrix"].values())]
        if not s["eval_seconds"]["median"] and sem != "kernel":
            continue  # nothing was run: one matrix of the recorded verdicts is enough
        if not a["reported"]:
            lines += [f"{sem} verdict: not reported by this kdebug.", ""]
            continue
        lines += [f"**{sem} verdict**: agrees with the recorded verdict on {a['agree']} of {a['judged']} "
                  "answers both judged.", "",
                  f"| recorded \\ kdebug ({sem}) | " + " | ".join(cols) + " | total |",
                  "| --- | " + " | ".join("---:" for _ in cols) + " | ---: |"]
        for key in sorted(a["matrix"]):
            m = a["matrix"][key]
            lines.append(f"| {key} | " + " | ".join(str(m.get(c, 0)) for c in cols) + f" | {sum(m.values())} |")
        lines.append("")
        if a["disagreements"]:
            lines.append(f"Disagreements ({sem}):")
            lines += [f"- `{d['id']}`: recorded {d['recorded']}, kdebug {d['kdebug']}: {d['why']}"
                      for d in a["disagreements"]]
            lines.append("")
    if s.get("rows_no_result"):
        lines += ["No result (kdebug eval did not finish within --timeout, printed no JSON, gave no verdict under a "
                  "semantics, or could not run the checks that would decide): "
                  + ", ".join(f"`{i}` ({why}, {sec} s)" for i, why, sec in s["rows_no_result"]), ""]
    if s["repairs"]:
        lines += ["Repairs (kb backend) of the answers kdebug fails, per diagnosed class (repaired: kdebug repair "
                  "says so, a separate kdebug eval of the repair passes and kdebug check accepts it):", "",
                  "| diagnosed class | tried | repaired | repaired, re-eval fails | repaired, check rejects | "
                  "rejected | unrepaired | other | median s | median iterations |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for klass, c in sorted(s["repairs"].items()):
            lines.append(f"| {klass} | {c['tried']} | {c['repaired_accepted']} | "
                         f"{c.get('repaired_failed_verify', 0)} | {c['repaired_rejected_by_check']} | {c['rejected']} | {c['unrepaired']} | {c['other']} | "
                         f"{_median(c['seconds'])} | {_median(c['iterations'])} |")
        lines.append("")
    e = s["eval_seconds"]
    if e["median"] is not None:
        lines.append(f"Time: eval median {e['median']} s, p90 {e['p90']} s, total {e['total']} s over the answers "
                     "run.")
    if s["flags_left_out"]:
        lines.append("Flags this kdebug did not take (left out): " + ", ".join(f"`{f}`" for f in s["flags_left_out"]))
    return "\n".join(lines) + "\n"


# -- main ------------------------------------------------------------------------------------------
def _commit() -> str:
    """HEAD's short hash, `+dirty` when tracked files differ from it (the code run is not HEAD's)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "?"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return head + ("+dirty" if dirty else "")


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", type=Path, nargs="?", help="the pool (not with --from-rows)")
    ap.add_argument("--problems", type=Path, help="KernelBench checkout with the references (default: PATH)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--match", metavar="GLOB", help="only answers whose id matches (e.g. 'opus4*', 'nearmiss/*'; several, comma-separated)")
    ap.add_argument("--only", choices=["mismatch", "correct", "judged", "all"], default="all")
    ap.add_argument("--diagnose", action="store_true", help="kdebug diagnose the answers kdebug fails")
    ap.add_argument("--repair", action="store_true", help="kdebug repair --backend kb the answers kdebug fails")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--gpu-memory-gb", type=float, default=100.0,
                    help="--device cuda: admit answers by their memory estimate up to this much (default 100)")
    ap.add_argument("--out", type=Path, help="scratch folder (default: a new temporary folder)")
    ap.add_argument("--resume", action="store_true", help="keep OUT/rows.jsonl's rows, run only the others")
    ap.add_argument("--semantics", choices=["kernel", "kernelbench"])
    ap.add_argument("--sizes", choices=["auto", "published", "small"])
    ap.add_argument("--checks", choices=["all", "quick", "kernel", "kernelbench"],
                    help="which checks kdebug eval runs (kernelbench: only KernelBench's trials, for agreement)")
    ap.add_argument("--policy", choices=["kernelbench", "strict"], default="kernelbench",
                    help="kdebug check's policy for repaired answers (default kernelbench)")
    ap.add_argument("--check-sizes", choices=["auto", "published", "small"],
                    help="kdebug check's --sizes for repaired answers (default: the task's)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per eval / diagnose / check (default 900)")
    ap.add_argument("--repair-timeout", type=float, default=1200, help="seconds per repair (default 1200)")
    ap.add_argument("--max-iters")
    ap.add_argument("--wall-budget")
    ap.add_argument("--shard", metavar="K/N", help="run only the K-th of N interleaved slices of the selection")
    ap.add_argument("--deadline", type=float, metavar="S",
                    help="start no answer after S seconds; the rest is left out (and counted)")
    ap.add_argument("--skip-judged", nargs="+", type=Path, default=[], metavar="ROWS",
                    help="leave out the answers these rows.jsonl / rows.json files of earlier runs judged (under "
                         "--semantics, kernelbench's by default): a campaign over several device sessions")
    ap.add_argument("--from-rows", nargs="+", type=Path, metavar="ROWS",
                    help="run nothing: the table of these rows.jsonl / rows.json files (shards merged)")
    ap.add_argument("--verify-repairs", type=Path, metavar="DIR",
                    help="run only kdebug eval and kdebug check on the repaired case folders in DIR (OUT/repairs "
                         "of a --repair run)")
    opts = ap.parse_args(argv)
    if sum(x is not None for x in (opts.path, opts.from_rows, opts.verify_repairs)) != 1:
        ap.error("give PATH, --from-rows ROWS... or --verify-repairs DIR")
    missing = [str(p) for p in opts.skip_judged if not p.is_file()]
    if missing:
        ap.error(f"--skip-judged: no such rows file: {', '.join(missing)}")
    if opts.verify_repairs is not None and not opts.verify_repairs.is_dir():
        ap.error(f"--verify-repairs: {opts.verify_repairs} is not a folder")
    opts.verify_checks = opts.checks if opts.verify_repairs is not None else None
    return opts


def _argv_text(argv) -> str:
    return " ".join(sys.argv[1:]) if argv is None else " ".join(map(str, argv))


def write_outputs(out: Path, rows: list[dict], meta: dict) -> dict:
    """rows.json and table.md in OUT; the summary."""
    s = summary(rows, meta)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.json").write_text(json.dumps({"summary": s, "rows": rows}, indent=1))
    (out / "table.md").write_text(markdown(s))
    print(markdown(s))
    print(f"real_pool: wrote {out / 'rows.json'} and {out / 'table.md'}", file=sys.stderr)
    return s


def merge(opts, argv) -> int:
    """--from-rows: the table of rows run elsewhere (the shards of a GPU run), nothing run."""
    rows, summaries = read_rows(opts.from_rows)
    first = summaries[0] if summaries else {}
    commands = [x["command"] for x in summaries if x.get("command")]
    meta = {"pool": first.get("pool", "?"), "device": first.get("device", "?"),
            "selection": first.get("selection", "?"), "date": first.get("date", "?"),
            "commit": first.get("commit", "?"),
            "wall_seconds": round(sum(x.get("wall_seconds") or 0 for x in summaries), 1),
            "command": "; ".join(commands + [f"python eval/real_pool.py {_argv_text(argv)}"])}
    write_outputs(opts.out or Path(tempfile.mkdtemp(prefix="real_pool-")), rows, meta)
    return 0


def verify_markdown(rows: list[dict], meta: dict) -> str:
    """--verify-repairs' table: each repaired answer's two verdicts and the gate's."""
    def status(r, sem):
        v = r.get("verify") or {}
        return (v.get(sem) or {}).get("status") or v.get("error") or v.get("status") or "?"
    ok = [r for r in rows if status(r, "kernelbench") == "pass" and (r.get("check") or {}).get("verdict") == "accept"]
    both = [r for r in ok if status(r, "kernel") == "pass"]
    lines = [f"Repairs judged apart: {len(rows)} case folders from `{meta['pool']}`, --device {meta['device']}, "
             f"{meta['date']}, commit {meta['commit']}, wall {meta['wall_seconds']} s.", "",
             "    " + meta["command"], "",
             f"KernelBench's verdict passes and the gate accepts: {len(ok)} of {len(rows)}; the kernel verdict "
             f"passes too: {len(both)}.", "",
             "| answer | KernelBench's verdict | kernel verdict | gate | rejecting rules | eval s |",
             "| --- | --- | --- | --- | --- | ---: |"]
    for r in sorted(rows, key=lambda r: r["id"]):
        chk = r.get("check") or {}
        lines.append(f"| {r['id']} | {status(r, 'kernelbench')} | {status(r, 'kernel')} | {chk.get('verdict')} | "
                     f"{', '.join(f['rule'] for f in chk.get('findings') or [])} | "
                     f"{(r.get('verify') or {}).get('seconds')} |")
    return "\n".join(lines) + "\n"


def verify_main(opts, argv) -> int:
    """--verify-repairs: kdebug eval and kdebug check on each repaired case folder, by memory on a GPU."""
    t0 = time.time()
    commit = _commit()
    out = opts.out or Path(tempfile.mkdtemp(prefix="real_pool-verify-"))
    out.mkdir(parents=True, exist_ok=True)
    folders = sorted(d.resolve() for d in opts.verify_repairs.iterdir()  # kdebug runs in OUT: absolute paths
                     if d.is_dir() and (d / "candidate.py").is_file() and (d / "reference.py").is_file())
    if opts.match:
        pats = opts.match.split(",")
        folders = [d for d in folders if any(fnmatch.fnmatch(d.name.replace("__", "/"), p) for p in pats)]
    kd = Kdebug(out / "data")
    memory = DeviceMemory(int(opts.gpu_memory_gb * 2**30)) if opts.device == "cuda" else None
    rows_path = out / "rows.jsonl"
    done = {}
    if opts.resume and rows_path.is_file():  # a later command on the same machine: its builds are in OUT/data
        done = {r["id"]: r for r in read_rows([rows_path])[0]}
    else:
        rows_path.unlink(missing_ok=True)
    ids = {d: d.name.replace("__", "/") for d in folders}
    todo = [d for d in folders if ids[d] not in done]
    lock = threading.Lock()
    print(f"real_pool: {len(folders)} repaired case folders in {opts.verify_repairs}, {len(folders) - len(todo)} "
          f"already judged; out {out}", file=sys.stderr)

    def late() -> bool:
        return opts.deadline is not None and time.time() - t0 > opts.deadline

    def again_alone(row: dict, field: str, judge_with, kept: tuple[str, ...]) -> None:
        """A gate or eval that ran out of GPU memory beside others is run again with the GPU to itself;
        the row keeps what the crowded run said."""
        if not out_of_memory(row[field]) or late():
            return
        crowded = row[field]
        with memory.hold(0, ALONE):
            judge_with(row, Path(row["case_dir"]), kd, opts, out)
        row[field]["alone_after"] = {k: crowded.get(k) for k in kept}

    # On a GPU, two stages in a pipeline: the gate, at its (reduced) sizes and light on GPU memory, with twice
    # the jobs - the extension builds (a minute of nvcc each, on the host's cores) happen there - and, as
    # each gate ends, the published-size evaluation, admitted by memory, which finds the build done.
    # Elsewhere one stage does both.
    def gate(folder: Path) -> dict | None:
        if late():
            return None
        row = {"id": ids[folder], "case_dir": str(folder), "flags": {},
               "semantics": opts.semantics or "kernel"}
        if memory is None:
            return verify_repaired(row, folder, kd, opts, out)
        with memory.hold(memory.need(folder / "reference.py", getattr(opts, "check_sizes", None) or "auto"),
                         GATE):
            gate_repaired(row, folder, kd, opts, out)
        again_alone(row, "check", gate_repaired, ("verdict", "seconds", "rules"))
        return row

    def judge(row: dict | None) -> dict | None:
        if row is None or (memory is not None and late()):
            return None
        if memory is not None:
            folder = Path(row["case_dir"])
            with memory.hold(memory.need(folder / "reference.py")):
                eval_repaired(row, folder, kd, opts, out)
            again_alone(row, "verify", eval_repaired, ("status", "message", "seconds"))
        with lock, rows_path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        v = row["verify"]
        print(f"  {row['id']}: kernelbench {(v.get('kernelbench') or {}).get('status')}, kernel "
              f"{(v.get('kernel') or {}).get('status')}, gate {row['check']['verdict']} ({v.get('seconds')} s)",
              file=sys.stderr)
        return row

    gate_jobs = max(1, opts.jobs) * (2 if memory is not None else 1)
    judged = two_stages(gate, judge, todo, gate_jobs, max(1, opts.jobs))
    rows = sorted([*(r for r in judged if r is not None), *(done[i] for i in ids.values() if i in done)],
                  key=lambda r: r["id"])
    meta = {"pool": str(opts.verify_repairs), "device": opts.device, "commit": commit,
            "command": f"python eval/real_pool.py {_argv_text(argv)}",
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "wall_seconds": round(time.time() - t0, 1),
            "left_by_deadline": len(folders) - len(rows)}
    text = verify_markdown(rows, meta)
    (out / "rows.json").write_text(json.dumps({"summary": meta, "rows": rows}, indent=1))
    (out / "table.md").write_text(text)
    print(text)
    return 0


def main(argv=None) -> int:
    opts = parse(argv)
    if opts.from_rows:
        return merge(opts, argv)
    if opts.verify_repairs is not None:
        return verify_main(opts, argv)
    t0 = time.time()
    commit = _commit()  # the code the run started with
    out = opts.out or Path(tempfile.mkdtemp(prefix="real_pool-"))
    check_out(out, opts.path)
    out.mkdir(parents=True, exist_ok=True)
    answers, unread = read_pool(opts.path, opts.problems)
    chosen = shard(select(answers, opts.only, opts.limit, opts.match), opts.shard)
    if opts.skip_judged:
        judged = judged_ids(opts.skip_judged, opts.semantics or "kernelbench")
        chosen = [a for a in chosen if a.id not in judged]
    rows_path = out / "rows.jsonl"
    done = {}
    if opts.resume and rows_path.is_file():
        done = {r["id"]: r for r in read_rows([rows_path])[0]}
    elif rows_path.exists():
        rows_path.unlink()
    kd = Kdebug(out / "data")
    print(f"real_pool: {len(answers)} answers read ({len(unread)} unreadable records), {len(chosen)} selected, "
          f"{len(done)} already done; out {out}", file=sys.stderr)
    lock = threading.Lock()
    memory = DeviceMemory(int(opts.gpu_memory_gb * 2**30)) if opts.device == "cuda" else None

    def late() -> bool:
        return opts.deadline is not None and time.time() - t0 > opts.deadline

    # a GPU run's builds go at most this many answers ahead of their evaluations (memory-bound evaluations
    # would otherwise leave builds, done on the cores the evaluations draw their inputs with, never used)
    ahead = threading.BoundedSemaphore(2 * max(1, opts.jobs))

    def stage(answer: Answer) -> tuple[Answer, Path | None, dict | None] | None:
        """The case folder and, on a GPU, the answer's extension built before its evaluation is admitted."""
        if answer.id in done:
            return answer, None, None
        if late():
            return None
        case = answer.write(out / "cases")
        if memory is None:
            return answer, case, None
        ahead.acquire()
        return answer, case, prebuild(case, kd, opts.timeout)

    def one(staged: tuple[Answer, Path | None, dict | None] | None) -> dict | None:
        if staged is None:
            return None
        answer, case, built = staged
        if case is None:
            return done[answer.id]
        try:
            if late():  # its build, or the answers before it, took the time
                return None
            if memory is None:
                row = run_answer(answer, case, kd, opts, out)
            else:
                need = memory.need(case / "reference.py", trials_only=opts.checks == "kernelbench")
                with memory.hold(need):
                    if late():
                        return None
                    row = run_answer(answer, case, kd, opts, out)
                row["memory_estimate_bytes"] = need
                if built is not None:
                    row["prebuild"] = built
        finally:
            if memory is not None:
                ahead.release()
        with lock, rows_path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        ev = row.get("eval") or {}
        print(f"  {answer.id}: recorded {answer.recorded}, kernel {verdict(row, 'kernel')}, kernelbench "
              f"{verdict(row, 'kernelbench')}" + (f", repair {row['repair']['status']}" if "repair" in row else "")
              + (f" ({ev.get('seconds')} s" + (f", built before in {built['seconds']} s" if built else "") + ")"
                 if ev else ""), file=sys.stderr)
        return row

    results = two_stages(stage, one, chosen, max(1, opts.jobs), max(1, opts.jobs))
    rows = [r for r in results if r is not None]
    selection = f"--only {opts.only}" + (f" --limit {opts.limit}" if opts.limit else "") + \
        (f" --match {opts.match}" if opts.match else "") + \
        (f" --shard {opts.shard}" if opts.shard else "") + \
        (f" (less {len(opts.skip_judged)} earlier runs' judged answers)" if opts.skip_judged else "")
    meta = {"pool": str(opts.path), "device": opts.device, "selection": selection,
            "command": f"python eval/real_pool.py {_argv_text(argv)}",
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d"), "commit": commit,
            "wall_seconds": round(time.time() - t0, 1), "answers_in_pool": len(answers), "unread": unread[:50],
            "left_by_deadline": len(results) - len(rows)}
    write_outputs(out, rows, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
