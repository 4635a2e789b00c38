"""GPU timing runner, always in its own process: `python -m debugger.bench.timing SPEC` prints one JSON line.

SPEC is a JSON object, or the path of a file holding one:

    {"op": "ceilings"}
        -> {"ok", "device", "copy_bytes_per_s", "matmul_flops_per_s"}: a large device-to-device copy
           (bytes read + written per second) and a large float32 matmul with tf32 allowed.
    {"op": "time", "reference_src": ..., "implementations": {"fixed": SRC, "repaired": SRC},
     "seed": 0, "warmup_ms": 25, "rep_ms": 100, "rounds": 5}
        -> {"ok", "device", "bytes_moved", "flops", "rounds", "reference": {...}, "fixed": {...}, ...},
           each entry {"ms" (median over the rounds of do_bench's median), "ms_rounds", "spread" ((slowest
           - fastest round) / ms: the noise a difference between implementations must exceed),
           "peak_bytes" (allocated by one forward), "max_abs_err" vs the reference (unwritten output
           elements read as NaN)} or {"error"}. The rounds interleave the implementations in a rotating
           order, so that no one of them alone meets a slow moment of the machine.

    {"op": "build", "reference_src": ..., "implementations": {...}, "device": "cuda", "construct": true}
        -> {"ok", name: {"ok"} or {"error"}}: each implementation built once (load_inline's nvcc build lands
           in the extensions cache), so that builds can run side by side before the timings run one at a time.
           "construct": false only imports each (a module-level load_inline builds then): no ModelNew, so
           nothing is put on the device.

Inputs are drawn on the device from the reference's get_inputs() under the seed, afresh for every
implementation; ModelNew gets the reference's parameters where state_dict keys match (as in the
harness). The bench process never imports a candidate: it only reads this line.

Untrusted implementations (a pipeline's answers): the spec's "sandbox", {"deny_read": [...], "cache": DIR},
confines this process as a sandbox worker is confined (debugger/sandbox/guard.py: no network, no core files or
large files, reads of the denied folders, writes outside its scratch and DIR and processes beyond the
compilers refused), and each load_inline build goes to a folder of DIR keyed by its sources, the one an
evaluation with the same cache uses.
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import traceback
from pathlib import Path

COPY_BYTES = 1 << 30
MATMUL_N = 8192
ROUNDS = 5  # interleaved timing rounds per case (METHOD: time each version more than once)


def _load_spec(arg: str) -> dict:
    text = arg if arg.lstrip().startswith("{") else Path(arg).read_text()
    return json.loads(text)


def _bench_ms(fn, warmup_ms: float, rep_ms: float) -> float:
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def ceilings(spec: dict) -> dict:
    """The device's measured copy bandwidth and float32 (tf32-allowed) matmul throughput."""
    import torch

    src = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    copy_ms = _bench_ms(lambda: dst.copy_(src), spec.get("warmup_ms", 25), spec.get("rep_ms", 200))
    del src, dst
    torch.backends.cuda.matmul.allow_tf32 = True
    a = torch.randn(MATMUL_N, MATMUL_N, device="cuda")
    b = torch.randn(MATMUL_N, MATMUL_N, device="cuda")
    mm_ms = _bench_ms(lambda: a @ b, spec.get("warmup_ms", 25), spec.get("rep_ms", 200))
    return {"ok": True, "device": torch.cuda.get_device_name(),
            "copy_bytes_per_s": 2 * COPY_BYTES / (copy_ms / 1e3),
            "matmul_flops_per_s": 2 * MATMUL_N ** 3 / (mm_ms / 1e3)}


def _tensors(values) -> list:
    import torch

    return [v for v in values if isinstance(v, torch.Tensor)]


def _max_abs_err(outs, ref_outs) -> float | None:
    import torch

    worst = 0.0
    for o, r in zip(outs, ref_outs):
        if isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor):
            if o.shape != r.shape:
                return float("inf")
            if not o.numel():
                continue
            o, r = o.double(), r.double()
            if not torch.equal(torch.isnan(o), torch.isnan(r)):
                return float("nan")  # NaN where the reference has none (or the other way round)
            diff = (o - r).abs()
            diff = torch.where(torch.isnan(diff), torch.zeros_like(diff), diff)  # inf - inf where both agree
            worst = max(worst, diff.max().item())
    return worst


def _poison_freed_outputs(reference, inputs) -> None:
    """Run the reference once and NaN its outputs before freeing them, so that an output the next
    kernel allocates from the same cached block but never writes shows up as wrong, not as right."""
    import torch

    from debugger.inputs import flatten_outputs

    for o in flatten_outputs(reference(*inputs)):
        if isinstance(o, torch.Tensor) and o.is_floating_point():
            o.fill_(float("nan"))
    torch.cuda.synchronize()


def _prepare(model, ref_module, seed: int, ref_outs=None, reference=None) -> tuple[dict, object]:
    """One implementation's error and peak memory on its own fresh inputs, and the call to time."""
    import torch

    from debugger.inputs import draw_inputs, flatten_outputs

    inputs = draw_inputs(ref_module, {"seed": seed}, "cuda")
    with torch.no_grad():
        if reference is not None:
            _poison_freed_outputs(reference, inputs)
        out = flatten_outputs(model(*inputs))  # compiles, autotunes
        torch.cuda.synchronize()
        entry = {"max_abs_err": _max_abs_err(out, ref_outs) if ref_outs is not None else 0.0}
        del out
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out = model(*inputs)
        torch.cuda.synchronize()
        entry["peak_bytes"] = int(torch.cuda.max_memory_allocated() - base)
        del out
    return entry, lambda: model(*inputs)


def _time_rounds(calls: dict, rounds: int, warmup_ms: float, rep_ms: float) -> tuple[dict, dict]:
    """Median times of each call over `rounds` interleaved rounds, the order rotated every round, so
    that a slow moment of the host or the GPU falls on every implementation alike, not on one.
    Returns ({name: [ms per round]}, {name: error}); a call that raises is dropped from later rounds."""
    import torch

    names = list(calls)
    times: dict[str, list[float]] = {n: [] for n in names}
    errors: dict[str, str] = {}
    with torch.no_grad():
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                if name in errors:
                    continue
                try:
                    times[name].append(_bench_ms(calls[name], warmup_ms, rep_ms))
                except Exception as e:  # noqa: BLE001 - that implementation's result, not the case's
                    errors[name] = f"{type(e).__name__}: {str(e)[:300]}"
    return {n: t for n, t in times.items() if n not in errors}, errors


def _summarise(entry: dict, times: list[float]) -> None:
    mid = statistics.median(times)
    entry["ms"] = mid
    entry["ms_rounds"] = times
    entry["spread"] = (max(times) - min(times)) / mid if mid else None


def confine(box: dict, scratch: Path) -> None:
    """This process from now on: a sandbox worker's limits (see the module docstring)."""
    from debugger.sandbox import guard
    from debugger.sandbox.roles import extension_base_dirs

    guard.apply_limits(None, "cuda")
    guard.isolate_network()
    guard.install_audit_hook(deny_read=box.get("deny_read") or [],
                             allow_write=[str(scratch), box["cache"], tempfile.gettempdir(), *extension_base_dirs()])


def _load_implementation(src: str, folder: Path, name: str, ref_module, device: str, box: dict | None,
                         construct: bool = True):
    from debugger.inputs import build_candidate, load_module

    if box:
        from debugger.sandbox.roles import extension_build_dir

        extension_build_dir({"allow_write": [box["cache"]], "candidate_src": src})
    module = load_module(src, folder, name)
    if not construct:
        return module
    model, _ = build_candidate(ref_module, module, {"init_seed": 0}, device)
    return model


def build_all(spec: dict) -> dict:
    """Build every implementation once, nothing timed."""
    from debugger.inputs import load_module

    device = spec.get("device", "cuda")
    folder = Path(tempfile.mkdtemp(prefix="kdebug-timing-"))
    if spec.get("sandbox"):
        confine(spec["sandbox"], folder)
    ref_module = load_module(spec["reference_src"], folder, "bench_reference")
    result = {"ok": True}
    for i, (name, src) in enumerate((spec.get("implementations") or {}).items()):
        try:
            _load_implementation(src, folder, f"bench_impl_{i}", ref_module, device, spec.get("sandbox"),
                                 spec.get("construct", True))
            result[name] = {"ok": True}
        except Exception as e:  # noqa: BLE001 - that implementation's result
            result[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    return result


def time_case(spec: dict) -> dict:
    """Time the reference and each implementation on the same freshly drawn device inputs."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from debugger.inputs import build_reference, draw_inputs, flatten_outputs, load_module

    seed, warmup, rep = spec.get("seed", 0), spec.get("warmup_ms", 25), spec.get("rep_ms", 100)
    rounds = max(1, int(spec.get("rounds", ROUNDS)))
    folder = Path(tempfile.mkdtemp(prefix="kdebug-timing-"))
    if spec.get("sandbox"):
        confine(spec["sandbox"], folder)
    ref_module = load_module(spec["reference_src"], folder, "bench_reference")
    reference = build_reference(ref_module, {"init_seed": 0}, "cuda")
    inputs = draw_inputs(ref_module, {"seed": seed}, "cuda")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        ref_outs = [o.detach().clone() if isinstance(o, torch.Tensor) else o
                    for o in flatten_outputs(reference(*inputs))]
    state = list(reference.state_dict().values())
    moved = sum(t.numel() * t.element_size() for t in _tensors(inputs) + _tensors(ref_outs) + _tensors(state))
    result = {"ok": True, "device": torch.cuda.get_device_name(), "bytes_moved": int(moved),
              "flops": int(counter.get_total_flops()), "rounds": rounds}
    del inputs
    calls = {}
    result["reference"], calls["reference"] = _prepare(reference, ref_module, seed)
    for i, (name, src) in enumerate((spec.get("implementations") or {}).items()):
        try:
            model = _load_implementation(src, folder, f"bench_impl_{i}", ref_module, "cuda", spec.get("sandbox"))
            result[name], calls[name] = _prepare(model, ref_module, seed, ref_outs, reference)
        except Exception as e:  # noqa: BLE001 - one implementation's failure is that entry's result
            result[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}",
                            "traceback": traceback.format_exc()[-1500:]}
            torch.cuda.empty_cache()
    times, errors = _time_rounds(calls, rounds, warmup, rep)
    for name, ms in times.items():
        _summarise(result[name], ms)
    for name, error in errors.items():
        result[name] = {"error": error}
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(json.dumps({"ok": False, "error": "usage: python -m debugger.bench.timing SPEC_JSON_OR_FILE"}))
        return 2
    from debugger.output import jsonable

    stdout, sys.stdout = sys.stdout, sys.stderr  # whatever the kernels print must not break the one line
    try:
        spec = _load_spec(argv[0])
        op = spec.get("op", "time")
        result = ceilings(spec) if op == "ceilings" else build_all(spec) if op == "build" else time_case(spec)
    except Exception as e:  # noqa: BLE001 - reported as the one JSON line
        result = {"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}",
                  "traceback": traceback.format_exc()[-2000:]}
    finally:
        sys.stdout = stdout
    sys.stdout.write(json.dumps(jsonable(result), allow_nan=False, default=str) + "\n")
    sys.stdout.flush()
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
