"""kdebug repair-batch: the queue's claims and leases, then real batches kept tiny (the failing softmax and
the already-correct add kernel): two entries each finished exactly once, resume after a crash (a dead
lease, and a killed batch) without repeats, and the same queue on a local Ray cluster."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from debugger.batch.devices import parse_devices, slots
from debugger.batch.progress import Progress
from debugger.errors import InvalidInput
from debugger.batch.queue import Queue

REPO = Path(__file__).resolve().parents[1]
SOFTMAX = REPO / "examples" / "softmax"
ADD_REF = REPO / "tests/data/kernels/add_reference.py"
ADD = REPO / "tests/data/kernels/add_kernel.py"


def add_entry(queue: Queue, name: str, reference: Path, candidate: Path, extra: str = "") -> str:
    folder = queue.cases_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.py").write_text(reference.read_text())
    (folder / "candidate.py").write_text(candidate.read_text() + extra)
    assert queue.add_entry({"id": name, "attempt_hash": name, "problem_id": name, "case_dir": str(folder)})
    return name


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def kdebug(*args, env=None, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "debugger.cli", *args], cwd=REPO, env=env or dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)


def ledger_runs(case: str) -> list[dict]:
    from debugger.ledger import Ledger

    return list(Ledger().db.query("select * from runs where \"case\" = ?", [case]))


# -- the queue: claims, leases, recovery (no kernel runs) ------------------------------------------
def test_claims_are_atomic_and_finish_needs_the_holder(tmp_path):
    q1, q2 = Queue(tmp_path / "q"), Queue(tmp_path / "q")
    for name in ("a", "b"):
        add_entry(q1, name, ADD_REF, ADD)
    got = []
    barrier = threading.Barrier(4)

    def claim(q, worker):
        barrier.wait()
        got.append(q.claim(worker, 60))

    threads = [threading.Thread(target=claim, args=(Queue(tmp_path / "q"), f"w{i}")) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [e["id"] for e in got if e]
    assert sorted(claimed) == ["a", "b"] and got.count(None) == 2
    a = q1.entry("a")
    assert not q2.finish("a", "someone-else", "done", {"result_status": "repaired"})
    assert q2.finish("a", a["worker"], "done", {"result_status": "repaired"})
    assert not q1.finish("a", a["worker"], "done", {"result_status": "repaired"})  # never twice
    assert q1.entry("a")["status"] == "done" and q1.entry("a")["tries"] == 1
    b = q1.entry("b")
    assert q1.release("b", b["worker"]) and q1.entry("b")["status"] == "queued"


def test_recover_puts_back_dead_holders_only(tmp_path):
    q = Queue(tmp_path / "q")
    for name in ("dead", "alive", "elsewhere", "hopeless"):
        add_entry(q, name, ADD_REF, ADD)
    q.claim("w", 60, pid=dead_pid(), only=["dead"])
    q.claim("w", 60, pid=os.getpid(), only=["alive"])
    q.claim("w", 60, only=["elsewhere"])
    q.db.execute("update entries set host = 'another-host', lease_until = 0 where id = 'elsewhere'")
    q.claim("w", 60, pid=dead_pid(), only=["hopeless"])
    q.db.execute("update entries set tries = 3 where id = 'hopeless'")
    assert sorted(q.recover(max_tries=3)) == ["dead", "elsewhere", "hopeless"]
    status = {e["id"]: e["status"] for e in q.entries()}
    assert status == {"dead": "queued", "alive": "running", "elsewhere": "queued", "hopeless": "failed"}
    assert "died" in q.entry("hopeless")["message"]


def test_devices_and_worker_plan(monkeypatch):
    import debugger.batch.devices as devices

    monkeypatch.setattr(devices, "gpu_count", lambda: 2)
    monkeypatch.setattr(devices, "cores", lambda: 2)
    assert parse_devices(None) == ["cuda:0", "cuda:1"]
    assert [s.gpu for s in slots(parse_devices("cuda:0,cuda:1"), None)] == [0, 1]
    assert [s.gpu for s in slots(["cuda:1"], 3)] == [1, 1, 1]
    assert slots(["cuda:1"], None)[0].env() == {"CUDA_VISIBLE_DEVICES": "1"}
    assert len(slots(["cpu"], 16)) == 2 and len(slots(["cpu"], None)) == 1
    for bad in ("tpu", "cuda:7", "cpu,cuda:0"):
        with pytest.raises(InvalidInput):
            parse_devices(bad)


def test_progress_line():
    class Sink(list):
        def write(self, s):
            self.append(s)

        def flush(self):
            pass

    sink = Sink()
    p = Progress(stream=sink)
    p.update(1, 4, {"repaired": 1}, 2)
    line = "".join(sink)
    assert "1/4" in line and "repaired=1" in line and "running 2" in line and "/min" in line and "ETA" in line


def test_empty_queue_is_not_an_error(tmp_path):
    r = kdebug("repair-batch", "--queue", str(tmp_path / "q"), "--devices", "cpu", "--json", timeout=300)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["processed"] == 0 and "nothing queued" in out["message"]


def test_ledger_rows_move_between_ledgers(tmp_path):
    from debugger.batch.ledger_rows import export_run, import_run
    from debugger.ledger import Ledger

    private = Ledger(tmp_path / "private.db")
    run_id = private.start_run(case="c", case_digest="d", backend="kb", device="cpu")
    private.iteration(run_id, {"n": 1, "recipe": "r", "outcome": "fixed"})
    private.event(run_id, "node", "kind", {"x": 1})
    private.outcome(run_id, "r", ["tail_block_wrong"], "fixed")
    private.finish_run(run_id, status="repaired")
    rows = export_run(private, run_id)
    import_run(rows, tmp_path / "main.db")
    import_run(rows, tmp_path / "main.db")  # idempotent
    main = Ledger(tmp_path / "main.db")
    assert main.run(run_id)["status"] == "repaired"
    assert len(main.iterations(run_id)) == 1 and len(main.outcomes()) == 1
    assert main.db["events"].count == 1


# -- real batches (a repair takes tens of seconds on the CPU) -------------------------------------
@pytest.mark.slow
def test_batch_repairs_two_entries_exactly_once(tmp_path):
    q = Queue(tmp_path / "q")
    add_entry(q, "softmax-bad", SOFTMAX / "reference.py", SOFTMAX / "candidate.py")
    add_entry(q, "add-ok", ADD_REF, ADD)
    r = kdebug("repair-batch", "--queue", str(q.root), "--workers", "2", "--devices", "cpu", "--max-iters", "3",
               "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["processed"] == 2 and out["workers"] == 2 and out["remaining"]["queued"] == 0
    assert sorted(e["id"] for e in out["per_entry"]) == ["add-ok", "softmax-bad"]
    assert "running" in r.stderr and "2/2" in r.stderr  # the progress bar
    entries = {e["id"]: e for e in q.entries()}
    for name, e in entries.items():
        assert e["status"] == "done" and e["tries"] == 1, e
        assert [run["id"] for run in ledger_runs(name)] == [e["run_id"]]
    assert entries["add-ok"]["result_status"] == "repaired"
    assert entries["softmax-bad"]["result_status"] in ("repaired", "unrepaired", "rejected")
    if entries["softmax-bad"]["result_status"] == "repaired":
        assert "tl.max" in Path(entries["softmax-bad"]["output"]).read_text()
    again = kdebug("repair-batch", "--queue", str(q.root), "--json", timeout=300)
    assert json.loads(again.stdout)["processed"] == 0  # nothing is repaired twice


@pytest.mark.slow
def test_resume_after_a_crash_finishes_the_rest_without_repeats(tmp_path):
    from debugger.batch import BatchOptions, run_batch

    q = Queue(tmp_path / "q")
    add_entry(q, "finished-before", ADD_REF, ADD)
    add_entry(q, "crashed-mid-repair", ADD_REF, ADD, extra="\n# a second add\n")
    q.claim("old-run/cpu-0", 60, only=["finished-before"])
    q.finish("finished-before", "old-run/cpu-0", "done", {"result_status": "repaired", "run_id": "old"})
    q.claim("old-run/cpu-1", 60, pid=dead_pid(), only=["crashed-mid-repair"])  # its worker died

    summary = run_batch(BatchOptions(queue_dir=q.root, devices="cpu", workers=1, flags={"max_iters": 2}),
                        progress=Progress(stream=open(os.devnull, "w")))
    assert summary.recovered == ["crashed-mid-repair"]
    assert [e["id"] for e in summary.per_entry] == ["crashed-mid-repair"]
    before, crashed = q.entry("finished-before"), q.entry("crashed-mid-repair")
    assert before["tries"] == 1 and before["run_id"] == "old"
    assert crashed["status"] == "done" and crashed["tries"] == 2 and crashed["result_status"] == "repaired"
    assert len(ledger_runs("crashed-mid-repair")) == 1


@pytest.mark.slow
def test_killed_batch_resumes_without_repeats(tmp_path):
    q = Queue(tmp_path / "q")
    add_entry(q, "killed", ADD_REF, ADD, extra="\n# killed\n")
    proc = subprocess.Popen([sys.executable, "-m", "debugger.cli", "repair-batch", "--queue", str(q.root),
                             "--workers", "1", "--devices", "cpu"], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while q.entry("killed")["status"] != "running" and time.time() < deadline:
        time.sleep(0.5)
    assert q.entry("killed")["status"] == "running"
    proc.kill()  # the driver dies hard; its worker is told by the kernel (PR_SET_PDEATHSIG)
    proc.wait()
    deadline = time.time() + 60
    while time.time() < deadline:
        e = q.entry("killed")
        if e["status"] == "queued" or (e["status"] == "running" and not _alive(e["pid"])):
            break
        time.sleep(0.5)
    assert e["status"] in ("queued", "running") and not _alive(e["pid"])
    r = kdebug("repair-batch", "--queue", str(q.root), "--workers", "1", "--devices", "cpu", "--json")
    out = json.loads(r.stdout)
    assert [x["id"] for x in out["per_entry"]] == ["killed"]
    e = q.entry("killed")
    assert e["status"] == "done" and e["result_status"] == "repaired"
    assert [run["id"] for run in ledger_runs("killed")] == [e["run_id"]]


def _alive(pid) -> bool:
    from debugger.batch.queue import pid_alive

    return pid_alive(pid)


# -- Ray -----------------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster():
    """A one-node Ray cluster on the loopback address, started (and ended) by this test alone."""
    pytest.importorskip("ray", reason="ray is not installed (pip install ray)")
    ray_bin = Path(sys.executable).with_name("ray")
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0",  # bind to 127.0.0.1, not the host address
               RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="kdray", dir="/tmp")  # socket paths must stay short
    proc = subprocess.Popen([str(ray_bin), "start", "--head", "--block", f"--port={port}", "--num-cpus=1",
                             "--num-gpus=0", "--include-dashboard=false", "--disable-usage-stats",
                             f"--temp-dir={temp}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True).start()
    deadline = time.time() + 240
    while not any("Ray runtime started" in ln for ln in lines):
        if proc.poll() is not None or time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail("the local Ray cluster did not start:\n" + "".join(lines[-30:]))
        time.sleep(0.5)
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_cluster_works_the_same_queue(tmp_path, ray_cluster):
    address, env = ray_cluster
    q = Queue(tmp_path / "q")
    add_entry(q, "on-ray", ADD_REF, ADD, extra="\n# on ray\n")
    r = kdebug("repair-batch", "--queue", str(q.root), "--ray", address, "--json", env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    assert out["mode"] == "ray" and out["processed"] == 1 and out["results"] == {"repaired": 1}
    e = q.entry("on-ray")
    assert e["status"] == "done" and e["tries"] == 1 and Path(e["output"]).is_file()
    assert [run["id"] for run in ledger_runs("on-ray")] == [e["run_id"]]  # results back in the ledger
