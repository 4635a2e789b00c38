"""Was a CUDA out-of-memory error the run's own doing, or the GPU's other tenants'?

On a GPU shared with other processes (parallel evaluations, another user's job), an allocation can fail
because others hold the memory: that says nothing about the candidate, and a check that failed so is
skipped with its reason (as a check the reference could not run is), never counted as the kernel's
runtime error or as the reference failing on its own inputs. PyTorch's message names the total, each
process's use and this process's own (allocated + reserved by PyTorch); process ids are not compared,
since inside a container they are not the host's.
"""
from __future__ import annotations

import re

CROWDED_SHARE = 0.25  # other processes holding at least this share of the GPU: the failure is theirs

_UNIT = {"B": 1, "bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_SIZE = r"([\d.]+) (bytes|B|KiB|MiB|GiB|TiB)"
_TOTAL = re.compile(r"total capacity of " + _SIZE)
_PROCESS = re.compile(r"Process \d+ has " + _SIZE + " memory in use")
_OWN = re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, and " + _SIZE + " is reserved")
_OWN_TOTAL = re.compile(r"this process has " + _SIZE + " memory in use")


def _bytes(value: str, unit: str) -> float:
    return float(value) * _UNIT[unit]


def is_out_of_memory(message: str | None) -> bool:
    return bool(message) and ("OutOfMemoryError" in message or "CUDA out of memory" in message
                              or "CUDA error: out of memory" in message)  # the allocator's, or the driver's


# Any run out of memory, in PyTorch's words (GPU or CPU), the C++ allocator's, or kdebug's own for a crowded-out run.
_ANY_OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|out of (GPU )?memory|MemoryError|can't allocate memory",
                                re.IGNORECASE)


def says_out_of_memory(message: str | None) -> bool:
    """A failure message that reports memory running out, wherever and whoever's: wider than
    is_out_of_memory (PyTorch's CUDA error, which crowded_out can read numbers from)."""
    return bool(message) and bool(_ANY_OUT_OF_MEMORY.search(message))


def held_by_others(message: str) -> float | None:
    """Bytes the other processes held when the allocation failed (None: the message does not say)."""
    processes = [_bytes(v, u) for v, u in _PROCESS.findall(message)]
    own = _OWN_TOTAL.search(message)
    if own:
        mine = _bytes(*own.groups())
    else:
        parts = _OWN.search(message)
        if not parts or not processes:
            return None
        mine = _bytes(*parts.groups()[:2]) + _bytes(*parts.groups()[2:])  # allocated + reserved unallocated
    return max(0.0, sum(processes) - mine)


# What the failing process read itself where the error names no numbers (the driver's "CUDA error: out of
# memory", raised by an extension's cudaMalloc or a launch, where PyTorch's allocator would have named each process)
_NOTE = re.compile(r"GPU memory at the failure: " + _SIZE + " free of " + _SIZE + ", this process held " + _SIZE)


def memory_note() -> str:
    """The GPU's free and total memory and this process's own (PyTorch's reserved), read now, for an
    out-of-memory error that names none: " (GPU memory at the failure: ...)", or "" without an initialised GPU."""
    try:
        import torch

        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return ""
        free, total = torch.cuda.mem_get_info()
        own = torch.cuda.memory_reserved()
    except Exception:  # noqa: BLE001 - a note, never a second failure
        return ""
    gib = 1 << 30
    return (f" (GPU memory at the failure: {free / gib:.2f} GiB free of {total / gib:.2f} GiB, "
            f"this process held {own / gib:.2f} GiB)")


def crowded_out(message: str | None) -> str | None:
    """A reason when an out-of-memory error came from other processes holding the GPU, else None."""
    if not is_out_of_memory(message):
        return None
    total, others, note = _TOTAL.search(message), held_by_others(message), _NOTE.search(message)
    if total is not None and others is not None:
        capacity = _bytes(*total.groups())
    elif note is not None:
        free, capacity, own = (_bytes(*note.groups()[i:i + 2]) for i in (0, 2, 4))
        others = max(0.0, capacity - free - own)
    else:
        return None
    if others < CROWDED_SHARE * capacity:
        return None
    return (f"out of GPU memory while other processes held {others / (1 << 30):.1f} of "
            f"{capacity / (1 << 30):.1f} GiB (not the run's own use: judged on a GPU of its own)")
