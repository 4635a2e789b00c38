"""The `kdebug` command: parse, call the library, print (progress on stderr, --json on stdout).

Exit statuses follow interface.md; every error we raise on purpose becomes one line on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys

from debugger.case_args import case_args, load_case_and_settings, semantics_args
from debugger.errors import InvalidInput, KdebugError
from debugger.output import eval_text, log, print_json

EVAL_EXIT = {"pass": 0, "mismatch": 1, "compile_error": 1, "runtime_error": 1, "timeout": 1, "invalid_input": 2}


def cmd_eval(args) -> int:
    """kdebug eval: full-coverage correctness check."""
    from debugger.evaluate import evaluate

    case, settings = load_case_and_settings(args)
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
    case_args(p)
    semantics_args(p)
    p.set_defaults(func=cmd_eval)
    for register in _registrations():
        register(sub, case_args)
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
