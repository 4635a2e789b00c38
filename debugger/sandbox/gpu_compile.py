"""Would this kernel compile on a GPU? Asked on a machine without one (runs in the sandbox worker only).

Triton's CPU interpreter runs a kernel's Python body with numpy: it accepts constructs a GPU build
rejects (`tl.math.trunc`, slice assignment into a tensor, a Python conditional expression on a runtime
value, ...). Code generation for a GPU needs no GPU, so for every launch the interpreter recorded, the
kernel is compiled for sm_90 with that launch's argument types and constexpr values (Triton's own
binder specialises them as a GPU launch would): front end, TTIR, TTGIR, LLVM IR and PTX; the last step
(ptxas, a subprocess the sandbox refuses) is left out.

The compile runs at a kernel's first launch of each specialisation, before the interpreter runs it
(so a check that then times out still has its answer), when the parent asked for it (`configure`, from
the worker's setup): hooks.LaunchRecorder calls `on_launch`, which keys the launch by (kernel source
with its helpers, Triton's specialisation: argument types, constexpr values, divisibility), skips the
keys the parent already knows, compiles the rest within a time bound (SIGALRM per compile, a budget per
worker) and appends one JSON line per key to a file in the worker's scratch folder, which the parent
reads (debugger/gpu_check.py) even after the worker was killed.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import signal
import time
import types
from pathlib import Path

import torch

ARCH = 90
PTX_VERSION = 84  # CUDA 12.4's PTX ISA: asking ptxas for its version is a subprocess
COMPILE_LIMIT_S = 20.0  # one compile (a static_range unrolled 4096 times, say)
BUDGET_S = 60.0  # all compiles of one worker

_STATE: dict = {"out": None, "skip": set(), "done": set(), "spent": 0.0}


def _one(a):
    if isinstance(a, torch.Tensor):
        return {"t": str(a.dtype).replace("torch.", ""), "a16": a.data_ptr() % 16 == 0}
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, (tuple, list)):
        return {"seq": [_one(x) for x in a]}
    if isinstance(a, torch.dtype):
        return {"dtype": str(a).replace("torch.", "")}
    return {"o": type(a).__name__}


def arg_summary(args, kwargs) -> dict:
    """A launch's arguments as plain data: tensors by dtype and 16-byte alignment, scalars by value."""
    return {"args": [_one(a) for a in args],
            "kwargs": {k: _one(v) for k, v in kwargs.items() if k not in ("grid", "warmup")}}


def _rebuild(s):
    if isinstance(s, dict):
        if "t" in s:
            dtype = getattr(torch, s["t"])
            base = torch.empty(4, dtype=dtype)
            return base[:2] if s["a16"] else base[1:3]
        if "seq" in s:
            return tuple(_rebuild(x) for x in s["seq"])
        if "dtype" in s:
            return getattr(torch, s["dtype"])
        raise TypeError(f"argument of type {s['o']} cannot be passed to a GPU kernel")
    return s


def _jit_copy(fn, made: dict):
    """A JITFunction of an interpreted kernel's Python function, its @jit helpers converted too."""
    from triton.runtime.jit import JITFunction
    raw = getattr(fn, "fn", fn)
    if id(raw) in made:
        return made[id(raw)]
    glb = dict(raw.__globals__)
    copy = types.FunctionType(raw.__code__, glb, raw.__name__, raw.__defaults__, raw.__closure__)
    copy.__kwdefaults__, copy.__module__, copy.__qualname__ = raw.__kwdefaults__, raw.__module__, raw.__qualname__
    copy.__annotations__ = dict(getattr(raw, "__annotations__", {}))  # tl.constexpr parameters
    made[id(raw)] = jf = JITFunction(copy, **{k: v for k, v in getattr(fn, "kwargs", {}).items()
                                           if k in ("do_not_specialize", "do_not_specialize_on_alignment",
                                                    "noinline")})
    for name, value in raw.__globals__.items():
        if type(value).__name__ == "InterpretedFunction":
            glb[name] = _jit_copy(value, made)
    return jf


_PRISTINE: list = []  # (module or class of triton.language, its attributes before any kernel ran)


def _language_objects():
    import sys
    for name, module in list(sys.modules.items()):
        if not name.startswith("triton.language") or module is None:
            continue
        yield module
        for value in list(vars(module).values()):
            if isinstance(value, type) and getattr(value, "__module__", "").startswith("triton.language"):
                yield value


def snapshot_language() -> None:
    """Remember triton.language as imported, before the interpreter runs a kernel: its device-function
    calls patch the language (tl.core's builtins, tensor methods) and never restore it (Triton 3.9)."""
    import triton.language  # noqa: F401 - the snapshot is of the language as imported
    if not _PRISTINE:
        _PRISTINE.extend((obj, dict(vars(obj))) for obj in _language_objects())


class _CompiledLanguage:
    """While compiling: triton.language as imported (the interpreter's leftover patches undone) with its own
    @jit functions (tl.max, tl.sum... decorated while TRITON_INTERPRET=1, so interpreted) as JITFunctions,
    as the code generator needs them; everything put back after."""

    def __enter__(self):
        self.changed, made = [], {}
        missing = object()
        for obj, before in _PRISTINE:
            now = dict(vars(obj))
            for attr in set(before) | set(now):
                if attr in ("__dict__", "__weakref__"):
                    continue
                if now.get(attr, missing) is not before.get(attr, missing):
                    self._set(obj, attr, before.get(attr, missing), now.get(attr, missing), missing)
        for obj in _language_objects():
            if isinstance(obj, type):
                continue
            for attr, value in list(vars(obj).items()):
                if type(value).__name__ == "InterpretedFunction":
                    self._set(obj, attr, _jit_copy(value, made), value, missing)
        return self

    def _set(self, obj, attr, value, old, missing):
        try:
            if value is missing:
                delattr(obj, attr)
            else:
                setattr(obj, attr, value)
            self.changed.append((obj, attr, old, missing))
        except (AttributeError, TypeError):
            pass

    def __exit__(self, *exc):
        for obj, attr, old, missing in reversed(self.changed):
            try:
                if old is missing:
                    delattr(obj, attr)
                else:
                    setattr(obj, attr, old)
            except (AttributeError, TypeError):
                pass


def _sources(fn) -> str:
    raw = getattr(fn, "fn", fn)
    parts = []
    for value in [raw] + [v.fn for v in raw.__globals__.values() if type(v).__name__ == "InterpretedFunction"]:
        try:
            parts.append(inspect.getsource(value))
        except (OSError, TypeError):
            parts.append(value.__qualname__)
    return "\n".join(parts)


def _kernel_line(error: BaseException, raw) -> int | None:
    """The candidate file's line the compiler names: CompilationError carries the AST node, numbered from
    the `def` line of the function it compiled (the kernel, or a @jit helper it calls: its source says which)."""
    node, src = getattr(error, "node", None), getattr(error, "src", None) or ""
    if node is None or not hasattr(node, "lineno"):
        return None
    head = next((l.strip() for l in src.splitlines() if l.strip().startswith("def ")), None)
    helpers = [v.fn for v in raw.__globals__.values() if type(v).__name__ == "InterpretedFunction"]
    for fn in [raw] + helpers:
        try:
            lines, start = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            continue
        at = next((i for i, l in enumerate(lines) if l.lstrip().startswith("def ")), 0)
        if head is None or lines[at].strip() == head:
            return start + at + node.lineno - 1
    return None


def _message(e: BaseException) -> str:
    text = str(e).strip()
    # CompilationError: the source excerpt, then the cause's "TypeError: ..." / "AttributeError: ..." line
    cause = e.__cause__ or e.__context__
    tail = f"{type(cause).__name__}: {cause}" if cause is not None else (text.splitlines()[-1] if text else "")
    return f"{type(e).__name__}: {tail}"[:600]


def specialise(fn, summary: dict):
    """Triton's binder on stand-in arguments of the launch's types: (jf, backend, options, signature,
    constexprs, attrs), as JITFunction.run computes them for a GPU launch."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    jf = _jit_copy(fn, {})
    backend = make_backend(GPUTarget("cuda", ARCH, 32))
    args = [_rebuild(a) for a in summary["args"]]
    kwargs = {k: _rebuild(v) for k, v in summary["kwargs"].items()}
    kwargs.setdefault("debug", False)
    binder = create_function_from_signature(jf.signature, jf.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    kwargs["ptx_version"] = PTX_VERSION
    options, signature, constexprs, attrs = jf._pack_args(backend, kwargs, bound, specialization, options)
    return jf, backend, options, signature, constexprs, attrs


def spec_key(fn, spec) -> str:
    """(kernel and helper sources, signature, constexprs, attributes, options) as one hash."""
    _, _, options, signature, constexprs, attrs = spec
    text = json.dumps([_sources(fn), signature, sorted((str(k), repr(v)) for k, v in constexprs.items()),
                       sorted((str(k), repr(v)) for k, v in attrs.items()),
                       sorted((k, repr(v)) for k, v in vars(options).items())], default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class _Alarm:
    """Raise TimeoutError in the compile after `seconds` (Python steps of the front end and between passes)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self):
        def fire(signum, frame):
            raise TimeoutError(f"compile for sm_{ARCH} took over {self.seconds:g} s")
        try:
            self.old = signal.signal(signal.SIGALRM, fire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        except ValueError:  # not the main thread: no bound but the worker's
            self.old = None
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)


def compile_spec(fn, spec, limit_s: float = COMPILE_LIMIT_S) -> dict:
    """Compile one specialisation for sm_90 up to PTX: {"kernel", "ok", "error", "line", "stage", "seconds"}."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton._C.libtriton import ir

    raw = getattr(fn, "fn", fn)
    jf, backend, options, signature, constexprs, attrs = spec
    t0 = time.perf_counter()
    result = {"kernel": raw.__name__, "ok": True, "error": "", "line": None, "stage": ""}
    stage = "frontend"
    language = _CompiledLanguage().__enter__()
    try:
        with _Alarm(limit_s):
            src = ASTSource(jf, signature, constexprs, attrs)
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            module = src.make_ir(GPUTarget("cuda", ARCH, 32), options, backend.get_codegen_implementation(options),
                                 backend.get_module_map(), context)
            stages: dict = {}
            backend.add_stages(stages, options, src.language)
            metadata: dict = {}
            for ext, step in list(stages.items())[list(stages).index(src.ext):]:  # ttir (inlining) onwards
                if ext == "cubin":
                    break
                stage = ext
                module = step(module, metadata)
    except TimeoutError as e:  # no verdict: a slow compile is not a failing one
        result.update(ok=None, stage=stage, error=str(e))
    except Exception as e:  # noqa: BLE001 - the compiler's refusal is the evidence
        # Only the front end's refusal (code generation: what the language does not allow) counts; a pass
        # failing later may be this pipeline's own difference from a GPU's (no ptxas, a fixed PTX version).
        result.update(ok=False if stage == "frontend" else None, stage=stage, error=_message(e),
                      line=_kernel_line(e, raw))
    finally:
        language.__exit__(None, None, None)
    result["seconds"] = round(time.perf_counter() - t0, 3)
    return result


def compile_one(fn, summary: dict) -> dict:
    """Bind and compile one launch (arguments as `arg_summary` gives them)."""
    try:
        spec = specialise(fn, summary)
    except Exception as e:  # noqa: BLE001 - an argument a GPU launch would refuse is also data
        raw = getattr(fn, "fn", fn)
        return {"kernel": raw.__name__, "ok": None, "stage": "bind", "line": None, "seconds": 0.0,
                "error": _message(e) if e.__cause__ else f"{type(e).__name__}: {e}"[:600]}
    return compile_spec(fn, spec)


def configure(out: str | Path | None, skip=()) -> None:
    """Compile launches from now on (the worker's setup asked), appending results to `out`; `skip`: keys
    whose result the parent already holds."""
    _STATE.update(out=Path(out) if out else None, skip=set(skip or ()), done=set(), spent=0.0)


def on_launch(fn, summary: dict) -> None:
    """A first interpreted launch with these argument types: compile it once per key, write its line."""
    if _STATE["out"] is None:
        return
    import torch.utils._python_dispatch as dispatch
    raw = getattr(fn, "fn", fn)
    line = {"kernel": raw.__name__}
    try:
        with dispatch._disable_current_modes():  # the stand-in arguments are not the candidate's ops
            try:
                spec = specialise(fn, summary)
            except Exception as e:  # noqa: BLE001
                key = hashlib.sha256((_sources(fn) + json.dumps(summary, default=str)).encode()).hexdigest()[:24]
                spec, line = None, dict(line, key=key, ok=None, stage="bind", line=None, seconds=0.0,
                                        error=_message(e) if e.__cause__ else f"{type(e).__name__}: {e}"[:600])
            if spec is not None:
                key = spec_key(fn, spec)
                if key in _STATE["done"]:
                    return
                if key in _STATE["skip"]:
                    line = dict(line, key=key, cached=True)
                elif _STATE["spent"] > BUDGET_S:
                    line = dict(line, key=key, ok=None, error=f"not compiled: the {BUDGET_S:g} s budget is spent")
                else:
                    line = dict(compile_spec(fn, spec), key=key)
                    _STATE["spent"] += line["seconds"]
            _STATE["done"].add(line["key"])
        with open(_STATE["out"], "a") as f:
            f.write(json.dumps(line, default=str) + "\n")
    except Exception:  # noqa: BLE001 - evidence only: never break the candidate's run
        return
