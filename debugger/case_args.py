"""The arguments every case command shares (candidate, --ref, --device, tolerances, --timeout, --json; the
verdict and size options of eval), and the case and settings they name. The `kdebug` parser (cli.py)
hands `case_args` to each command module's `register`; the command modules load their case here, so
none of them imports cli.
"""
from __future__ import annotations

import argparse

from debugger.errors import InvalidInput


def case_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("candidate", help="candidate file, or a case folder (reference.py + candidate.py)")
    p.add_argument("--ref", help="reference file (KernelBench format)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available, else cpu")
    p.add_argument("--atol", type=float, help="absolute tolerance (overrides case.toml)")
    p.add_argument("--rtol", type=float, help="relative tolerance (overrides case.toml)")
    p.add_argument("--timeout", type=float, help="seconds per sandbox request (default 120)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def semantics_args(p: argparse.ArgumentParser, default: str = "kernel") -> None:
    """--semantics: which verdict sets the exit status (both are reported)."""
    p.add_argument("--semantics", choices=["kernel", "kernelbench"], default=default,
                   help="kernel: Model's weights mapped into ModelNew, every check (default); kernelbench: "
                        "KernelBench's verdict (each model's own initialisation under seed 42, its 5 trials, "
                        "torch.allclose atol=rtol=1e-2)")
    p.add_argument("--kb-tolerance", type=float, help="KernelBench's atol=rtol (default 1e-2, as v0.1)")
    p.add_argument("--sizes", choices=["auto", "published", "small"], default="published",
                   help="published: the task's sizes (default); small: batch-like constants halved until a "
                        "check's inputs fit (1 MiB on the CPU, 256 MB on a GPU); auto: published where a check "
                        "fits the device's memory, else small")
    p.add_argument("--checks", choices=["all", "quick", "kernel", "kernelbench"], default="all",
                   help="which checks run: both verdicts' (default), quick (four kernel checks and KernelBench's "
                        "trials), or one verdict's only")


def load_case_and_settings(args):
    """The case the arguments name and the settings they resolve to (the device checked)."""
    from debugger.case import load_case
    from debugger.settings import resolve

    settings = resolve(device=args.device, timeout=getattr(args, "timeout", None))
    if settings.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            raise InvalidInput("--device cuda asked for, but no CUDA GPU is visible")
    case = load_case(args.candidate, args.ref, atol=args.atol, rtol=args.rtol)
    return case, settings
