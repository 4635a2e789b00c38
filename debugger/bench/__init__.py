"""The benchmark: run repair (or the regenerate baseline) over a folder of cases and score it.

    from debugger.bench import BenchOptions, run_bench
    summary = run_bench(BenchOptions(cases_dir="eval/cases", backend="kb", device="cpu"))

Every case is repaired in a throw-away data folder with a throw-away copy of the knowledge base;
each repair is then verified independently (fresh checks plus the integrity gate) before it counts.
`kdebug bench` (debugger/bench_command.py) is the command-line face of `run_bench`. The package
imports lazily, so `python -m debugger.bench.timing` on a GPU host needs only torch and triton.
"""
__all__ = ["BenchOptions", "run_bench"]


def __getattr__(name: str):
    if name in __all__:
        from debugger.bench import runner

        return getattr(runner, name)
    raise AttributeError(name)
