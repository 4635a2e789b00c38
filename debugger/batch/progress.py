"""The batch progress bar on stderr: done/total, results so far, running workers, rate and ETA.

On a terminal it redraws one line; elsewhere (a log file, CI) it prints a line when the counts change,
at most every `quiet_interval` seconds, so logs stay short.
"""
from __future__ import annotations

import sys
import time

WIDTH = 24


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Draw with `update(done, total, results, running)`; `close()` ends the line."""

    def __init__(self, stream=None, quiet_interval: float = 10.0):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.time()
        self.quiet_interval = quiet_interval
        self.last_line = ""
        self.last_print = 0.0
        self.drawn = False
        self.last_key = None

    def line(self, done: int, total: int, results: dict, running: int) -> str:
        elapsed = time.time() - self.t0
        filled = int(WIDTH * done / total) if total else WIDTH
        bar = "#" * filled + "." * (WIDTH - filled)
        parts = [f"[{bar}] {done}/{total}"]
        if results:
            parts.append(" ".join(f"{k}={v}" for k, v in sorted(results.items())))
        parts.append(f"running {running}")
        rate = done / elapsed * 60 if elapsed > 0 else 0.0
        parts.append(f"{rate:.1f}/min")
        if 0 < done < total:
            parts.append(f"ETA {_duration((total - done) * elapsed / done)}")
        parts.append(_duration(elapsed))
        return "  ".join(parts)

    def update(self, done: int, total: int, results: dict, running: int) -> None:
        text = self.line(done, total, results, running)
        now = time.time()
        if self.tty:
            self.stream.write("\r" + text.ljust(len(self.last_line)))
            self.drawn = True
        else:
            key = (done, total, tuple(sorted(results.items())), running)
            changed = key != self.last_key
            if not ((changed and (now - self.last_print >= 1.0 or done == total))
                    or now - self.last_print >= self.quiet_interval):
                return
            self.stream.write(text + "\n")
            self.last_print, self.last_key = now, key
        self.stream.flush()
        self.last_line = text

    def note(self, msg: str) -> None:
        """A log line that does not tear the bar."""
        if self.tty and self.drawn:
            self.stream.write("\r" + " " * len(self.last_line) + "\r")
        self.stream.write(msg + "\n")
        if self.tty and self.drawn:
            self.stream.write(self.last_line)
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
