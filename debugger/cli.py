"""The `kdebug` command: parse, call the library, print (progress on stderr, --json on stdout).

Exit statuses follow interface.md; every error we raise on purpose becomes one line on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys

from debugger.errors import InvalidInput, KdebugError
from debugger.output import eval_text, log, print_json

EVAL_EXIT = {"pass": 0, "mismatch": 1, "compile_error": 1, "runtime_error": 1, "timeout": 1, "invalid_input": 2}


def _case_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("candidate", help="candidate file, or a case folder (reference.py + candidate.py)")
    p.add_argument("--ref", help="reference file (KernelBench format)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available, else cpu")
    p.add_argument("--atol", type=float, help="absolute tolerance (overrides case.toml)")
    p.add_argument("--rtol", type=float, help="relative tolerance (overrides case.toml)")
    p.add_argument("--timeout", type=float, help="seconds per sandbox request (default 120)")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def _semantics_args(p: argparse.ArgumentParser, default: str = "kernel") -> None:
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


def _load(args):
    from debugger.case import load_case
    from debugger.settings import resolve

    settings = resolve(device=args.device, timeout=getattr(args, "timeout", None))
    if settings.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            raise InvalidInput("--device cuda asked for, but no CUDA GPU is visible")
    case = load_case(args.candidate, args.ref, atol=args.atol, rtol=args.rtol)
    return case, settings


def cmd_eval(args) -> int:
    """kdebug eval: full-coverage correctness check."""
    from debugger.evaluate import evaluate

    case, settings = _load(args)
    log(f"evaluating {case.name} on {settings.device} ...")
    from debugger.evaluate import kernelbench_checks, quick_checks, standard_checks

    checks = {"all": None, "quick": quick_checks() + kernelbench_checks(), "kernel": standard_checks(),
              "kernelbench": kernelbench_checks()}[args.checks]
    report = evaluate(case, settings.device, timeout=settings.timeout, memory_limit_gb=settings.memory_limit_gb,
                      semantics=args.semantics, kb_tolerance=args.kb_tolerance, sizes=args.sizes, checks=checks)
    if args.json:
        print_json(report.to_dict())
    else:
        print(eval_text(report))
    if report.status == "invalid_input":
        log(f"kdebug: {report.message}")
    return EVAL_EXIT.get(report.status, 1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kdebug", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("eval", help="full-coverage correctness check of a candidate against its reference")
    _case_args(p)
    _semantics_args(p)
    p.set_defaults(func=cmd_eval)
    for register in _registrations():
        register(sub, _case_args)
    return parser


def _registrations():
    """Subcommands that live beside the feature they expose (each module has `register`)."""
    import importlib

    regs = []
    for name in ("debugger.diagnose.command", "debugger.integrity.command", "debugger.repair.command",
                 "debugger.knowledge.command", "debugger.bench_command", "ingest.command",
                 "debugger.mcp_command", "debugger.ledger_command"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and name.startswith(e.name):
                continue  # the feature module is not there
            regs.append(_unavailable(name.split(".")[-1].replace("_command", "").replace("command", ""), e.name))
            continue
        regs.append(module.register)
    return regs


def _unavailable(feature: str, missing: str):
    """A stand-in for a command whose third-party dependency is not installed: one clear line."""

    def register(sub, case_args) -> None:
        return None

    register.feature, register.missing = feature, missing
    return register


def _wants_json(argv: list[str]) -> bool:
    return "--json" in argv


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except InvalidInput as e:
        log(f"kdebug: {e}")
        if _wants_json(argv):
            print_json({"status": "invalid_input", "message": str(e)})
        code = 2
    except KdebugError as e:
        log(f"kdebug: {e}")
        if _wants_json(argv):
            print_json({"status": "error", "message": str(e)})
        code = 2
    except KeyboardInterrupt:
        log("kdebug: interrupted")
        code = 130
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
