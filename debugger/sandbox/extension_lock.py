"""torch's extension build lock, made safe against a builder that was killed.

load_inline serialises the builds of one extension folder with a bare lock file
(torch.utils.file_baton.FileBaton): created on entry, removed on exit, and waited on for ever by every other
process while it exists. A worker killed mid-build (a check's timeout, a run's deadline) leaves the file
behind, and every later build of the same sources - the next evaluation of the candidate, a repair that
changed only its host code (the same keyed folder, roles.extension_build_dir), the timing of either - waits
until its own timeout (on the H100, a repair whose build was cut at 150 s then ran past its timing's 90 s,
twice).

OwnedBaton pairs the lock file with an flock on a side file (`lock.owner`), which the kernel lets go when
its holder dies, however it dies. A lock file whose side file nobody holds is stale: the next builder
removes it and builds. A process waiting on a builder that dies meanwhile gets a clear error instead of
an endless wait (torch would otherwise import a module that was never built).
"""
from __future__ import annotations

import fcntl
import os
import time

try:
    from torch.utils.file_baton import FileBaton
except ImportError:  # no torch: nothing builds extensions here
    FileBaton = object  # type: ignore[assignment,misc]


class OwnedBaton(FileBaton):  # type: ignore[misc,valid-type]
    """FileBaton whose holder also holds an flock, so a dead holder's lock can be told from a live one's."""

    def __init__(self, lock_file_path, wait_seconds=0.1, warn_after_seconds=None) -> None:
        super().__init__(lock_file_path, wait_seconds, warn_after_seconds)
        self.owner_path = f"{lock_file_path}.owner"
        self._owner_fd: int | None = None

    def _take_owner(self) -> bool:
        fd = os.open(self.owner_path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._owner_fd = fd
        return True

    def _drop_owner(self) -> None:
        if self._owner_fd is not None:
            os.close(self._owner_fd)  # closing lets go of the flock
            self._owner_fd = None

    def holder_alive(self) -> bool:
        """Someone holds the side file's flock. Without a side file the holder is not one of ours (an
        older build): assume it lives, as torch does."""
        if not os.path.exists(self.owner_path):
            return True
        fd = os.open(self.owner_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except OSError:
            return True
        finally:
            os.close(fd)  # a shared flock taken by the probe goes with the descriptor

    def try_acquire(self) -> bool:
        if not self._take_owner():
            return False  # a live builder holds it: wait() for it
        try:
            os.remove(self.lock_file_path)  # present only if its builder died
        except FileNotFoundError:
            pass
        if super().try_acquire():
            return True
        self._drop_owner()
        return False

    def wait(self) -> None:
        while os.path.exists(self.lock_file_path):
            if not self.holder_alive():
                raise RuntimeError(
                    f"the build of this extension in another process ended before it finished (its lock "
                    f"{self.lock_file_path} was left behind); building again redoes it")
            time.sleep(self.wait_seconds)

    def release(self) -> None:
        try:
            super().release()
        finally:
            self._drop_owner()


def install() -> None:
    """Make load_inline/load in this process use OwnedBaton (torch looks the name up at each build)."""
    try:
        import torch.utils.cpp_extension as cpp_extension
    except ImportError:
        return
    if getattr(cpp_extension, "FileBaton", None) is not OwnedBaton:
        cpp_extension.FileBaton = OwnedBaton
