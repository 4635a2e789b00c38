"""What a sandbox worker does, by role. Runs in the child; talks to the parent through channel.py.

reference role: draws inputs and the model for a check, runs Model natively and in float64, keeps
  the outputs, and compares candidate outputs sent to it (the candidate never sees them).
candidate role: draws the same inputs and model (ModelNew with the reference's values copied into
  the tensors matched to them, see debugger/params.py; for KernelBench trials, its own
  initialisation), runs forward under poisoning and recording, sends its outputs back as plain
  tensors and the parameter correspondence.
"""
from __future__ import annotations

import os
import time
import traceback
from contextlib import ExitStack, nullcontext
from pathlib import Path

import torch

from debugger import compare, inputs
from debugger.gpu_memory import is_out_of_memory, memory_note
from debugger.sandbox import channel
from debugger.sandbox.hooks import LaunchRecorder, PoisonAndRecord, overlaps, written_by_launch
from debugger.sandbox.work import TopLevelCalls, WorkLog


OUT_OF_MEMORY_MESSAGE_CHARS = 4000


# Lines PyTorch appends to every CUDA error (torch.AcceleratorError): the error itself is the line before them.
_CUDA_ERROR_ADVICE = ("CUDA kernel errors might be asynchronously reported", "For debugging consider passing",
                      "Compile with `TORCH_USE_CUDA_DSA`", "Device-side assertion tracking was not enabled",
                      "Search for `cuda")


def _error(e: BaseException, stage: str) -> dict:
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    kind = "compile_error" if "CompilationError" in type(e).__name__ else "runtime_error"
    last = [ln for ln in str(e).strip().splitlines() if ln.strip() and not ln.strip().startswith(_CUDA_ERROR_ADVICE)]
    msg = f"{type(e).__name__}: {last[-1] if last else ''}"
    # An out-of-memory message names every process's use after the first 500 characters on a crowded GPU, and
    # gpu_memory.crowded_out needs all of it: cut there, a reference crowded out read as failing on its inputs.
    msg = msg[:OUT_OF_MEMORY_MESSAGE_CHARS if is_out_of_memory(msg) else 500]
    if is_out_of_memory(msg) and "total capacity" not in msg:
        msg += memory_note()  # the driver's error names no process: what this one sees, for crowded_out
    return {"ok": False, "status": kind, "stage": stage, "error": msg, "traceback": "".join(tb[-6:])[-4000:]}


def _peak_bytes() -> int | None:
    """The most GPU memory PyTorch held in this process since the last call (None off a GPU): what a check
    really needs, beside the estimate evaluations sharing a GPU are admitted by (debugger/sizes.py)."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    peak = torch.cuda.max_memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    return int(peak)


def _model_key(spec: dict) -> str:
    return (f"{spec.get('init_seed', 0)}|{spec.get('param_noise', False)}|{spec.get('own_init', False)}|"
            f"{spec.get('eval_mode', False)}|{sorted((spec.get('shapes') or {}).items())}")


FORWARD_SEED = 7919  # the forwards of a check's reference and candidate draw from this plus the check's seed


def _seed_forward(spec: dict) -> None:
    """Seed the RNG before a forward: a reference that draws in forward (an LSTM's `h0 = torch.randn(...)`,
    dropout) and a candidate drawing the same way then see the same values in every check, as KernelBench's
    trials see them (each seeded with the trial's seed before both forwards)."""
    if "kb_trial" in spec:
        torch.manual_seed(inputs.kernelbench_trial_seed(spec))
    else:
        torch.manual_seed(FORWARD_SEED + int(spec.get("seed") or 0))


def _recording(work: WorkLog | None):
    """Record-only modes for the reference's native run: every aten op with its outermost torch function."""
    if work is None:
        return nullcontext()
    stack = ExitStack()
    stack.enter_context(PoisonAndRecord(None, work=work))
    stack.enter_context(TopLevelCalls(work))
    return stack


def _plain(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if type(t) is not torch.Tensor:
            t = t.as_subclass(torch.Tensor)
        return t.to("cpu") if t.device.type != "cpu" else t.clone()  # a copy either way, never a view
    if isinstance(t, (int, float, bool)) or t is None:
        return t
    return None


# A candidate element within NOISE_MARGIN times the reference's own rounding error there passes; the
# floor is measured only for a candidate within NOISE_GUARD times the reference's largest such error.
NOISE_MARGIN = 2.0
NOISE_GUARD = 4.0
OTHER_DRAWS = 8  # hidden_same_buffers: draws of get_inputs() tried for one with every tensor's shape


class ReferenceRole:
    """Holds the reference and its outputs for the current check."""

    def __init__(self, setup: dict, scratch: Path):
        self.device = setup["device"]
        self.module = inputs.load_module(setup["reference_src"], scratch, "kdebug_reference")
        self.models: dict = {}
        self.native: list = []
        self.ref64: list = []
        self.dtypes: list = []
        self.native_ok = True
        self.fingerprints: dict = {}
        self.intermediates: list = []
        self.pending_capture: tuple | None = None  # (ref64, inputs) of the last captured run

    def run(self, spec: dict) -> tuple[dict, bytes | None]:
        t0 = time.perf_counter()
        key = _model_key(spec)
        if key not in self.models:
            self.models = {key: inputs.build_reference(self.module, spec, self.device)}
        model = self.models[key]
        t_draw = time.perf_counter()
        xs = inputs.draw_inputs(self.module, spec, self.device)
        draw_seconds = time.perf_counter() - t_draw
        self.intermediates = []
        _seed_forward(spec)
        work = WorkLog() if spec.get("work") else None
        with torch.no_grad():
            try:
                with _recording(work):
                    native = inputs.flatten_outputs(model(*xs))
            except Exception:  # noqa: BLE001 - an op the recording modes cannot take: the run without them
                if work is None:
                    raise
                work = None
                _seed_forward(spec)
                native = inputs.flatten_outputs(model(*xs))
            # KernelBench's trials compare with the native output, as KernelBench does: no float64 run.
            kernelbench = spec.get("kind") == "kernelbench"
            ref64 = None if kernelbench else self._float64(model, xs, spec)
        if kernelbench:  # nor a float64 copy of it (twice the output's bytes on the device), nor its error against one
            ref64 = list(native)
        elif ref64 is None:
            ref64 = [o.double() if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in native]
        # Kept for a "captured" request: only failing checks are shipped to the parent.
        self.pending_capture = (ref64, xs) if spec.get("capture") else None
        forward_inputs = [x for x in xs if isinstance(x, torch.Tensor)] if work is not None else []
        # Whether the task's own get_inputs() hands forward a strided view (a layout check's transform aside)
        own_layout = None if spec.get("transform", "none") != "none" else \
            any(isinstance(x, torch.Tensor) and not x.is_contiguous() for x in xs)
        del xs
        self.native, self.ref64 = native, ref64
        self.last_spec, self.floors = spec, None  # the noise floors are measured only when needed
        self.dtypes = [o.dtype if isinstance(o, torch.Tensor) else None for o in native]
        self.native_err = [0.0] * len(native) if kernelbench else \
            [self._native_error(n, r) for n, r in zip(native, ref64)]
        if spec.get("fingerprint"):
            self.fingerprints[spec["name"]] = [
                o.double().flatten()[:4096].cpu() if isinstance(o, torch.Tensor) else o for o in native]
        header = {"ok": True, "n_outputs": len(native), "seconds": time.perf_counter() - t0,
                  "draw_seconds": draw_seconds, "peak_bytes": _peak_bytes(),
                  "shapes": [list(o.shape) if isinstance(o, torch.Tensor) else None for o in native],
                  "dtypes": [str(d).replace("torch.", "") if d is not None else None for d in self.dtypes],
                  "inputs_noncontiguous": own_layout}
        if work is not None:
            header["work"] = work.to_dict(forward_inputs, native)
        return header, None

    def _float64(self, model, xs: list, spec: dict) -> list | None:
        """The model's outputs in float64 (recording intermediates when localising); None when the
        operator has no float64 kernel on this device."""
        try:
            m64, x64 = inputs.as_double(model, xs)
            _seed_forward(spec)
            if not spec.get("localise"):
                return inputs.flatten_outputs(m64(*x64))
            from debugger.sandbox.localise import IntermediateRecorder
            rec = IntermediateRecorder()
            with rec:
                ref64 = inputs.flatten_outputs(m64(*x64))
            self.intermediates = [(f"input {i}", x.detach().clone()) for i, x in enumerate(x64)
                                  if isinstance(x, torch.Tensor) and x.is_floating_point()] + rec.tensors
            return ref64
        except Exception:  # noqa: BLE001
            return None

    def captured(self) -> tuple[dict, channel.TensorBlob | None]:
        """The last captured run's float64 outputs and inputs (for diagnosis)."""
        if self.pending_capture is None:
            return {"ok": False, "error": "the last run was not captured"}, None
        ref64, xs = self.pending_capture
        self.pending_capture = None
        return {"ok": True}, channel.TensorBlob([[_plain(o) for o in ref64], [_plain(x) for x in xs]])

    @staticmethod
    def _native_error(native, ref64) -> float:
        """How far PyTorch's own result in the task's dtype is from float64 (max over finite elements)."""
        if not (isinstance(native, torch.Tensor) and native.is_floating_point() and isinstance(ref64, torch.Tensor)):
            return 0.0
        return compare.max_finite_error(native, ref64)

    def _tol(self, i: int, atol, rtol) -> tuple[float, float]:
        """Tolerances for output i: flags/case.toml or the dtype's default, and never tighter than twice
        the reference's own float error against float64 (a kernel no worse than PyTorch passes)."""
        d = self.dtypes[i]
        da, dr = compare.default_tolerance(d, self.device) if d is not None else (0.0, 0.0)
        a = da if atol is None else atol
        r = dr if rtol is None else rtol
        err = self.native_err[i] if i < len(getattr(self, "native_err", [])) else 0.0
        if err > a and d is not None and d.is_floating_point:
            native, ref = self.native[i], self.ref64[i]
            if compare.any_wrong(native, ref, a, r):
                a = max(a, 2.0 * err)
        return a, r

    def _within_noise(self, i: int, stats: dict) -> bool:
        """A candidate no further off than a few times the reference's own largest rounding error:
        only then is measuring the per-element floor worth the reference's extra runs."""
        err = self.native_err[i] if i < len(getattr(self, "native_err", [])) else 0.0
        worst = stats.get("max_abs_err")
        return err > 0 and worst is not None and worst == worst and worst <= NOISE_GUARD * err

    def _floor(self, i: int):
        """The reference's own per-element rounding error on this check's inputs (measured once)."""
        spec = getattr(self, "last_spec", None)
        if spec is None or spec.get("kind") == "kernelbench":
            return None
        if self.floors is None:
            from debugger.sandbox.noise import noise_floors
            try:
                model = self.models[_model_key(spec)]
                xs = inputs.draw_inputs(self.module, spec, self.device)
                _seed_forward(spec)
                self.floors = noise_floors(model, xs, self.native, self.ref64)
            except Exception:  # noqa: BLE001 - no floor: the plain tolerance stands
                self.floors = [None] * len(self.native)
        return self.floors[i] if i < len(self.floors) else None

    def compare(self, header: dict, blob: bytes) -> tuple[dict, None]:
        """Stats of one candidate run's outputs; run 2 also reports its drift from run 1."""
        # On the reference's device: GPU-sized comparisons (stats, drift) are slow on a shared host's CPUs.
        outs_now = [o.to(self.device) if isinstance(o, torch.Tensor) else o for o in channel.blob_to_tensors(blob)]
        runs = [outs_now]
        atol, rtol = header.get("atol"), header.get("rtol")
        results = []
        for outs in runs:
            stats = []
            if len(outs) != len(self.ref64):
                stats.append({"index": 0, "shape": [], "dtype": "", "passed": False,
                              "problem": f"forward returned {len(outs)} outputs, expected {len(self.ref64)}"})
            elif header.get("semantics") == "kernelbench":
                stats = [compare.kernelbench_stats(i, c, n, header["kb_tolerance"])
                         for i, (c, n) in enumerate(zip(outs, self.native))]
            else:
                for i, (c, r) in enumerate(zip(outs, self.ref64)):
                    a, rt = self._tol(i, atol, rtol)
                    s = compare.output_stats(i, c, r, self.dtypes[i] or torch.float64, a, rt)
                    if not s["passed"] and s.get("problem") is None and isinstance(self.native[i], torch.Tensor) \
                            and self.native[i].is_floating_point():
                        # When the native reference itself is off float64 by more than the tolerance,
                        # matching the native reference is as good as matching float64.
                        alt = compare.output_stats(i, c, self.native[i], self.dtypes[i], a, rt)
                        if alt["passed"]:
                            s = alt
                        elif self._within_noise(i, s):
                            # Elements whose own rounding error in the reference exceeds the tolerance
                            # (cancellation): judged against that error, measured (sandbox/noise.py).
                            floor = self._floor(i)
                            if floor is not None:
                                alt = compare.output_stats(i, c, r, self.dtypes[i], a, rt, floor=NOISE_MARGIN * floor)
                                if alt["passed"]:
                                    s = alt
                    stats.append(s)
            results.append(stats)
        drift = None
        if header.get("run", 1) == 1:
            self.previous = outs_now
        elif getattr(self, "previous", None) is not None:
            drift = compare.max_difference(self.previous, outs_now)
            self.previous = None
        nonfinite = sum(int((~torch.isfinite(o)).sum()) for o in self.native
                        if isinstance(o, torch.Tensor) and o.is_floating_point())
        reply = {"ok": True, "runs": results, "drift": drift, "reference_nonfinite": nonfinite,
                 "peak_bytes": _peak_bytes()}
        if header.get("sentinel") is not None and not all(st["passed"] for st in results[0]):
            # elements that kept the poison: never written by this run
            reply["unwritten"] = sum(compare.count_equal(o, header["sentinel"]) for o in outs_now
                                     if isinstance(o, torch.Tensor) and o.is_floating_point())
        return reply, None

    def localise(self, header: dict, blob: bytes) -> tuple[dict, None]:
        """Match the candidate's per-launch buffers against this check's reference intermediates."""
        from debugger.sandbox.localise import localise

        if not self.intermediates:
            return {"ok": False, "error": "the reference ran without recording intermediates"}, None
        tensors = channel.blob_to_tensors(blob) if blob else []
        return {"ok": True, **localise(self.intermediates, header.get("writes") or [], tensors)}, None

    def input_bytes(self, header: dict) -> tuple[dict, None]:
        """Bytes of get_inputs() under a shapes override, drawn on the meta device (nothing allocated),
        and the device's free memory (for the sizes plan, debugger/sizes.py)."""
        try:
            with inputs.shapes_overridden(self.module, header.get("shapes")):
                with torch.device("meta"):
                    raw = self.module.get_inputs()
                total = sum(x.numel() * x.element_size() for x in raw if isinstance(x, torch.Tensor))
                forward_error, flops, params, results = self._meta_forward(raw)
        except Exception as e:  # noqa: BLE001 - these shapes cannot be drawn: the plan skips them
            return {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}, None
        free = torch.cuda.mem_get_info()[0] if self.device == "cuda" else None
        return {"ok": True, "bytes": int(total), "device_free": free, "forward_error": forward_error,
                "flops": flops, "param_bytes": params, "result_bytes": results}, None

    def _meta_forward(self, raw: list) -> tuple[str | None, int | None, int | None, int | None]:
        """The reference's forward on these (meta) inputs: why it fails (shapes a pooling window or a kernel
        no longer fits, halved to below the kernel size, fail here on shapes alone), or None; the FLOPs
        of its matmuls and convolutions (torch's FlopCounterMode), which bound what a check costs where
        kernels are interpreted or emulated; the bytes of Model's parameters and buffers; and of the largest
        tensor the forward allocates (a transposed convolution's output can be 20x its input)."""
        from torch.utils.flop_counter import FlopCounterMode

        from debugger.sizes import largest_result_bytes, module_bytes

        params = None
        try:
            with torch.device("meta"), torch.no_grad():
                model = self.module.Model(*self.module.get_init_inputs())
                params = module_bytes(model)
                with FlopCounterMode(display=False) as counter:
                    results = largest_result_bytes(model, *raw)
        except Exception as e:  # noqa: BLE001 - the reason is the answer
            return f"{type(e).__name__}: {e}"[:300], None, params, None
        return None, int(counter.get_total_flops()), params, results

    def sanity(self, header: dict) -> tuple[dict, None]:
        """Flag a reference that cannot tell right from wrong."""
        warnings = []
        fps = list(self.fingerprints.values())
        if len(fps) >= 2 and all(
                isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                and torch.equal(a, b) for a, b in zip(fps[0], fps[1])):
            warnings.append("reference output does not change with the inputs: any constant passes")
        atol = header.get("atol")
        for i, o in enumerate(self.native):
            if not isinstance(o, torch.Tensor) or not o.is_floating_point() or o.numel() == 0:
                continue
            od = o.double()
            finite = od[torch.isfinite(od)]
            if finite.numel() == 0:
                continue
            a, _ = self._tol(i, atol, None)
            if float(finite.abs().max()) <= a:
                warnings.append(f"reference output {i} lies inside the tolerance band (|y| <= {a:g}): zeros pass")
            elif finite.numel() > 1 and float(finite.std()) == 0.0:
                warnings.append(f"reference output {i} is constant ({float(finite[0]):g})")
        return {"ok": True, "warnings": warnings}, None


def extension_build_dir(setup: dict) -> None:
    """load_inline builds into TORCH_EXTENSIONS_DIR: one folder per candidate build inside the cache
    the sandbox may write (or inside the TORCH_EXTENSIONS_DIR the user set), keyed by what the build
    depends on (its C++/CUDA units and loader arguments), so that re-evaluating a candidate, or a repair
    that changed only its host code, reuses the build (about a minute per extension), and candidates
    that name their extension alike ("custom_op", a before and its repair) with different sources never
    share a build folder or its lock: a process that finds the lock taken waits, then loads what the
    other built (on the H200 a repaired kernel evaluated beside its original was judged as the original)."""
    import hashlib
    import os

    base = os.environ.get("KDEBUG_TORCH_EXTENSIONS_BASE") or os.environ.get("TORCH_EXTENSIONS_DIR")
    cache = (setup.get("allow_write") or [None])[0]
    if not base and not cache:
        return
    base = base or str(Path(cache) / "torch_extensions")
    os.environ["KDEBUG_TORCH_EXTENSIONS_BASE"] = base  # a later candidate of this worker keys under it too
    try:
        from debugger.lang.cuda.sources import build_key
        digest = build_key(setup["candidate_src"])
    except Exception:  # an unparsable candidate: one folder per source
        digest = None
    digest = digest or hashlib.sha256(setup["candidate_src"].encode()).hexdigest()[:16]
    os.environ["TORCH_EXTENSIONS_DIR"] = str(Path(base) / digest)
    from debugger.lang.cuda.emulate import builds_extension
    if builds_extension(setup["candidate_src"]):
        from debugger.sandbox.extension_lock import install
        install()  # a lock that a killed worker's build left in this folder no longer blocks the next build


def extension_base_dirs() -> list[str]:
    """A TORCH_EXTENSIONS_DIR the user set: load_inline builds there, in the keyed folder
    extension_build_dir makes, so the candidate may write inside it (on the H200, with it set, every
    build was refused as a write outside the cache and the candidate reported as a compile error)."""
    import os

    base = os.environ.get("KDEBUG_TORCH_EXTENSIONS_BASE") or os.environ.get("TORCH_EXTENSIONS_DIR")
    return [base] if base else []


class CandidateRole:
    """Runs ModelNew under poisoning and recording; never holds reference outputs."""

    def __init__(self, setup: dict, scratch: Path):
        self.device = setup["device"]
        self.ref_module = inputs.load_module(setup["reference_src"], scratch, "kdebug_task")
        from debugger.lang.cuda import emulate

        self.emulated = self.device == "cpu" and emulate.builds_extension(setup.get("candidate_src"))
        if self.emulated:
            # CUDA builds for kdebug's CPU runtime; before the recorder wraps the loaders
            emulate.install(setup.get("emulation_pch"))
        self.recorder = LaunchRecorder()
        self.recorder.install()
        self.setup = setup
        self.scratch = scratch
        self.cand_module = None
        self.models: dict = {}
        self.pristine: list | None = None
        self.last_writes: list = []
        if setup.get("gpu_compile"):  # compile each interpreted launch for sm_90 (gpu_compile.py)
            from debugger.sandbox.gpu_compile import configure
            configure(scratch / "gpu_compile.jsonl", setup.get("gpu_compile_skip"))

    def load_candidate(self) -> dict:
        extension_build_dir(self.setup)
        try:
            self.cand_module = inputs.load_module(self.setup["candidate_src"], self.scratch, "candidate")
        except SyntaxError as e:
            return {"ok": False, "status": "compile_error", "stage": "import",
                    "error": f"SyntaxError: line {e.lineno}: {e.msg}"}
        except BaseException as e:  # noqa: BLE001 - anything the candidate raises is data
            r = _error(e, "import")
            r["status"] = "compile_error"
            return r
        if not hasattr(self.cand_module, "ModelNew"):
            return {"ok": False, "status": "invalid_input", "stage": "import",
                    "error": "candidate does not define ModelNew"}
        return {"ok": True}

    def _call_on_other_values(self, model, spec: dict, xs: list) -> bool:
        """Call the model once with other values in this call's very input buffers, then put this call's
        values back into them (an output cached by buffer identity is then replayed by the real call).
        The other values are another draw of get_inputs() whose every tensor has this call's shape and
        dtype: inputs that hold together (offsets into indices of a drawn length) are swapped whole or not
        at all. False when no such draw came in OTHER_DRAWS tries (the call is not made)."""
        wanted = [(x.shape, x.dtype) if isinstance(x, torch.Tensor) else None for x in xs]
        for k in range(1, OTHER_DRAWS + 1):
            other = inputs.draw_inputs(self.ref_module, dict(spec, seed=spec.get("seed", 0) + 7919 * k), self.device)
            if len(other) == len(xs) and all(w is None or (isinstance(o, torch.Tensor) and (o.shape, o.dtype) == w)
                                             for w, o in zip(wanted, other)):
                break
        else:
            return False
        with torch.no_grad():
            for x, o in zip(xs, other):
                if isinstance(x, torch.Tensor):
                    x.copy_(o)
            model(*xs)
            for x, p in zip(xs, self.pristine):
                if isinstance(x, torch.Tensor):
                    x.copy_(p)
        return True

    def _own_constants(self, spec: dict) -> dict:
        """At kdebug's reduced sizes, the candidate file's own copies of the task's size constants (answers
        often repeat `batch_size = 256` and build state from it) take the reduced values too: the sizes
        are kdebug's choice, not the task's. A hidden shape leaves them alone: code that reads its own
        constant instead of the input's shape is what those checks are there to catch."""
        if not spec.get("plan_shapes"):
            return {}
        return {k: v for k, v in (spec.get("shapes") or {}).items()
                if isinstance(getattr(self.cand_module, k, None), (int, list))
                and getattr(self.cand_module, k) == getattr(self.ref_module, k, None)}

    def run(self, spec: dict) -> tuple[dict, channel.TensorBlob | None]:
        with inputs.shapes_overridden(self.cand_module, self._own_constants(spec)):
            return self._run(spec)

    def _run(self, spec: dict) -> tuple[dict, channel.TensorBlob | None]:
        key = _model_key(spec)
        try:
            if key not in self.models:
                self.models = {key: inputs.build_candidate(self.ref_module, self.cand_module, spec, self.device)}
        except BaseException as e:  # noqa: BLE001
            return _error(e, "init"), None
        model, mapping = self.models[key]
        t_draw = time.perf_counter()
        if spec.get("call", 1) == 1 or self.pristine is None:
            self.pristine = inputs.draw_inputs(self.ref_module, spec, self.device)
        draw_seconds = time.perf_counter() - t_draw
        xs = [inputs.clone_keeping_layout(x) for x in self.pristine]
        buffers_reused = None
        if spec.get("reuse_buffers"):
            try:
                buffers_reused = self._call_on_other_values(model, spec, xs)
            except BaseException as e:  # noqa: BLE001
                return _error(e, "forward"), None
        poison = spec.get("poison", "nan")
        work = WorkLog(xs) if spec.get("work") else None
        mode = PoisonAndRecord(None if poison is None else float(poison), work=work, recorder=self.recorder)
        self.recorder.reset(capture_writes=bool(spec.get("localise")) and spec.get("call", 1) == 1,
                            held=[*xs, *model.parameters(), *model.buffers()])
        self.recorder.active = True
        if self.emulated:
            # Emulated CUDA (emulate/include): a kernel check's repeated run lets each warp run alone between
            # barriers, so a race between warps shows as run-to-run drift, as it may on a GPU; KernelBench's
            # trials run once each, as its harness runs them.
            os.environ["KDCPU_SCHEDULE"] = "warps" if spec.get("call", 1) == 2 and "kb_trial" not in spec \
                else "side_by_side"
        t0 = time.perf_counter()
        _seed_forward(spec)
        try:
            with torch.no_grad(), mode, TopLevelCalls(work) if work is not None else nullcontext():
                out = model(*xs)
            if self.device == "cuda":
                torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001
            self.recorder.active = False
            return _error(e, "forward"), None
        finally:
            self.recorder.active = False
        seconds = time.perf_counter() - t0
        outs = inputs.flatten_outputs(out)
        tensors_in = [x for x in xs if isinstance(x, torch.Tensor)]
        mutated = any(isinstance(a, torch.Tensor) and not compare.max_difference([a], [b]) == 0.0
                      for a, b in zip(xs, self.pristine))
        info = {
            "ok": True, "seconds": seconds, "draw_seconds": draw_seconds, "n_outputs": len(outs),
            "inputs_mutated": mutated, "peak_bytes": _peak_bytes(),
            "buffers_reused": buffers_reused,
            "output_types": [type(o).__name__ for o in outs],
            "aliases_input": [any(overlaps(o, x) for x in tensors_in) if isinstance(o, torch.Tensor) else False
                              for o in outs],
            "written_by_kernel": [written_by_launch(o, self.recorder.launches, self.recorder.copies)
                                  if isinstance(o, torch.Tensor)
                                  else False for o in outs],
            "derived_from_kernels": [self.recorder.derived_from_kernels(o) if isinstance(o, torch.Tensor) else False
                                     for o in outs],
            "launches": self.recorder.kernels(),
            "output_bytes": [o.numel() * o.element_size() if isinstance(o, torch.Tensor) else 0 for o in outs],
            "largest_launch_tensor_bytes": max((end - start for l in self.recorder.launches
                                                for start, end in l["tensors"]), default=0),
            "ops": dict(mode.ops),
        }
        try:  # evidence, never a failure of the run; the evaluation keeps the first run's observations only
            if spec.get("call", 1) == 1:
                outputs = [o for o in outs if isinstance(o, torch.Tensor)]
                info["buffers"] = self.recorder.coverage.measure(lambda t: any(overlaps(t, o) for o in outputs))
        except Exception:  # noqa: BLE001
            pass
        finally:
            self.recorder.coverage.reset()  # the held buffers go now, not at the next run
        if work is not None:
            info["work"] = work.to_dict(tensors_in, outs)
        if mapping is not None:
            info["parameter_map"] = mapping.to_dict()
        if self.recorder.capture_writes:
            self.last_writes = self.recorder.writes
            info["launch_writes"] = len(self.last_writes)
        raw = getattr(self.cand_module, "__kdebug_probes__", None)
        if spec.get("probes") and raw is not None:
            from debugger.sandbox.probe_summary import summarise
            try:
                info["probes"] = summarise(raw, outs, self.recorder.launches, self.pristine)
            except Exception as e:  # noqa: BLE001 - probes are evidence, not a requirement
                info["probes"] = {"error": f"{type(e).__name__}: {e}"}
            for v in raw.values():
                v.clear()
        blob = channel.TensorBlob([_plain(o) for o in outs])
        del xs, out, outs
        return info, blob

    def writes(self) -> tuple[dict, channel.TensorBlob | None]:
        """What each launch of the last localising run wrote: metadata and the buffers' contents."""
        meta = [{k: w[k] for k in ("launch", "kernel", "arg", "writers")} for w in self.last_writes]
        blob = channel.TensorBlob([_plain(w["tensor"]) for w in self.last_writes])
        self.last_writes = []
        return {"ok": True, "writes": meta}, blob


def serve(conn, role: str, setup: dict, scratch: Path) -> None:
    """The worker's request loop: one JSON request, one reply, until 'exit' or EOF."""
    channel.spill_to(scratch / "blobs")
    try:
        worker = ReferenceRole(setup, scratch) if role == "reference" else CandidateRole(setup, scratch)
        if role == "candidate":
            from debugger.sandbox.guard import install_audit_hook
            install_audit_hook(deny_read=setup.get("deny_read", []),
                               allow_write=[str(scratch)] + setup.get("allow_write", []) + extension_base_dirs())
            reply = worker.load_candidate()
        else:
            reply = {"ok": True}
    except BaseException as e:  # noqa: BLE001
        reply = _error(e, "setup")
        reply.setdefault("status", "runtime_error")
        channel.send(conn, reply)
        return
    channel.send(conn, reply)
    if not reply.get("ok"):
        return
    while True:
        try:
            header, blob = channel.recv(conn)
        except EOFError:
            return
        op = header.get("op")
        try:
            if op == "exit":
                return
            if op == "run":
                reply, out_blob = worker.run(header["spec"])
            elif op == "compare":
                reply, out_blob = worker.compare(header, blob)
            elif op == "input_bytes" and role == "reference":
                reply, out_blob = worker.input_bytes(header)
            elif op == "sanity":
                reply, out_blob = worker.sanity(header)
            elif op == "captured" and role == "reference":
                reply, out_blob = worker.captured()
            elif op == "localise" and role == "reference":
                reply, out_blob = worker.localise(header, blob)
            elif op == "writes" and role == "candidate":
                reply, out_blob = worker.writes()
            else:
                reply, out_blob = {"ok": False, "error": f"unknown op {op}"}, None
        except BaseException as e:  # noqa: BLE001
            reply, out_blob = _error(e, op or "?"), None
        channel.send(conn, reply, out_blob)
