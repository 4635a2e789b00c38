"""A build lock left by a killed builder no longer blocks the next build (debugger/sandbox/extension_lock.py).

torch's load_inline waits for ever on a lock file that exists; a worker killed mid-build leaves it behind.
These builders are real processes, really killed (SIGKILL: no finally runs), as a check's timeout kills one."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from torch.utils.file_baton import FileBaton

from debugger.sandbox.extension_lock import OwnedBaton, install

REPO = Path(__file__).resolve().parents[1]

HOLDER = textwrap.dedent('''
    import sys, time
    from debugger.sandbox.extension_lock import OwnedBaton
    baton = OwnedBaton(sys.argv[1])
    assert baton.try_acquire()
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    baton.release()
''')


def holder(lock, seconds):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(seconds)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_whose_builder_was_killed_is_taken_over(tmp_path):
    lock = tmp_path / "lock"
    proc = holder(lock, 60)
    assert not OwnedBaton(str(lock)).try_acquire()  # alive: wait for it
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert lock.exists()  # what the killed builder left
    assert not FileBaton(str(lock)).try_acquire()  # torch's own baton would wait for ever here
    baton = OwnedBaton(str(lock))
    assert baton.try_acquire()
    baton.release()
    assert not lock.exists()


def test_a_waiter_sees_a_live_builder_finish(tmp_path):
    lock = tmp_path / "lock"
    proc = holder(lock, 0.5)
    baton = OwnedBaton(str(lock))
    assert not baton.try_acquire()
    t = time.time()
    baton.wait()
    assert not lock.exists() and time.time() - t < 30
    proc.wait()


def test_a_waiter_whose_builder_dies_gets_an_error_not_an_endless_wait(tmp_path):
    lock = tmp_path / "lock"
    proc = holder(lock, 60)
    baton = OwnedBaton(str(lock))
    assert not baton.try_acquire()
    killer = subprocess.Popen([sys.executable, "-c", f"import os, time; time.sleep(0.5); os.kill({proc.pid}, 9)"])
    with pytest.raises(RuntimeError, match="ended before it finished"):
        baton.wait()
    killer.wait()
    proc.wait()


def test_a_lock_of_an_older_builder_without_a_side_file_is_taken_when_no_one_owns_it(tmp_path):
    lock = tmp_path / "lock"
    lock.write_text("")  # left by a build before this change: no lock.owner
    baton = OwnedBaton(str(lock))
    assert baton.try_acquire()
    baton.release()


def test_install_makes_load_inline_use_it(monkeypatch):
    import torch.utils.cpp_extension as cpp_extension

    monkeypatch.setattr(cpp_extension, "FileBaton", FileBaton)  # put back after the test
    install()
    assert cpp_extension.FileBaton is OwnedBaton
