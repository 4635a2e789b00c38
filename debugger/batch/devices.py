"""Which workers a batch runs: one per GPU when there are GPUs, on the CPU as many as the cores allow.

`--devices cpu` or `--devices cuda:0,cuda:1`; by default every visible GPU, else the CPU. A GPU worker
sees only its own GPU (CUDA_VISIBLE_DEVICES) and repairs with `--device cuda`; `--workers N` puts N
workers round-robin on the listed GPUs, or N CPU workers (never more than the cores).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from debugger.errors import InvalidInput

DEVICE_RE = re.compile(r"^(cpu|cuda(?::(\d+))?)$")


@dataclass(frozen=True)
class Slot:
    """One worker: its name, the device it repairs on, and the GPU it alone sees."""

    name: str
    device: str  # cpu | cuda
    gpu: int | None = None

    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": str(self.gpu)} if self.gpu is not None else {}


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def gpu_count() -> int:
    """Visible GPUs, without initialising CUDA in this process."""
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001 - no torch build with CUDA: no GPUs
        return 0


def parse_devices(text: str | None) -> list[str]:
    """['cpu'] or ['cuda:0', 'cuda:1', ...]; InvalidInput for anything else or a GPU that is not there."""
    if not text:
        n = gpu_count()
        return [f"cuda:{i}" for i in range(n)] if n else ["cpu"]
    devices = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        m = DEVICE_RE.match(part)
        if not m:
            raise InvalidInput(f"--devices: {part!r} is not cpu or cuda:N")
        if part == "cuda":
            devices.extend(f"cuda:{i}" for i in range(gpu_count()))
        else:
            devices.append(part)
    if not devices:
        raise InvalidInput("--devices: no device given (cpu, or cuda:0,cuda:1,...)")
    if "cpu" in devices and len(devices) > 1:
        raise InvalidInput("--devices: use cpu alone, or a list of GPUs")
    if devices == ["cpu"]:
        return devices
    n = gpu_count()
    missing = [d for d in devices if int(d.split(":")[1]) >= n]
    if missing:
        raise InvalidInput(f"--devices: {', '.join(missing)} not visible ({n} GPU(s) here)")
    return list(dict.fromkeys(devices))


def slots(devices: list[str], workers: int | None, log=None) -> list[Slot]:
    """The workers to start for these devices."""
    if workers is not None and workers < 1:
        raise InvalidInput("--workers must be at least 1")
    if devices == ["cpu"]:
        limit = cores()
        n = workers or max(1, limit // 2)
        if n > limit:
            if log:
                log(f"--workers {n} > {limit} cores: running {limit} CPU workers")
            n = limit
        return [Slot(f"cpu-{i}", "cpu") for i in range(n)]
    gpus = [int(d.split(":")[1]) for d in devices]
    n = workers or len(gpus)
    return [Slot(f"cuda{gpus[i % len(gpus)]}-{i}", "cuda", gpus[i % len(gpus)]) for i in range(n)]
