"""What a candidate worker watches while ModelNew.forward runs.

- PoisonAndRecord: a TorchDispatchMode that fills every tensor the candidate allocates with a poison
  (NaN for floats) so elements a kernel never writes cannot pass by luck, and records every aten op
  that runs; given a WorkLog (work.py), also each op's shapes and FLOPs, leaving out the ops that run
  inside the candidate's own Triton launches (the integrity gate measures PyTorch's share from it).
- LaunchRecorder: wraps Triton's launch entry points (compiled and interpreted) to record which
  kernels ran and which tensors they received; with capture_writes, also what each launch wrote
  (tensor arguments compared before and after it), for localisation across kernels. It also wraps
  torch.utils.cpp_extension.load_inline/load, so that every function of an extension the candidate
  builds (at import, in __init__ or lazily) is recorded as a launch of its own code, with the
  tensors it received and the tensors it returned (which it allocated and wrote); with capture_writes,
  what it returned and the arguments it changed are its writes (localisation of CUDA candidates).
  Inside such a call its raw CUDA launches are not seen: a buffer its host code allocates and no aten
  op writes (`auto out = torch::zeros_like(x); kernel<<<...>>>(..., out.data_ptr<float>()); out.sum()`)
  holds what its kernels wrote, for the work log's "reads only what the launches wrote".
"""
from __future__ import annotations

import weakref
from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from debugger.sandbox.buffer_coverage import BufferCoverage

ALLOC_OPS = {"empty.memory_format", "empty_strided.default", "empty_like.default", "new_empty.default",
             "new_empty_strided.default", "empty.default"}
INT_POISON = -1234567
# Ops that move data unchanged into new storage: an output copied (or cast, or concatenated) from what a
# launch wrote is still the launch's work (a strided result filled by `out.copy_(kernel_out)`).
COPY_OPS = {"copy_", "_to_copy", "clone", "cat", "stack", "_copy_from", "_copy_from_and_resize"}
# Buffers an extension's host code makes for its kernels: allocations, and those filled with a constant.
EXTENSION_BUFFER_OPS = ALLOC_OPS | {"zeros.default", "zeros_like.default", "ones.default", "ones_like.default",
                                    "full.default", "full_like.default", "new_zeros.default", "new_ones.default",
                                    "new_full.default"}
CONSTANT_FILLS = {"fill_", "zero_"}  # writes into such a buffer that leave it the kernels' to write


def poison_fill(t: torch.Tensor, value: float) -> None:
    """Fill a freshly allocated tensor with the poison for its dtype."""
    if t.numel() == 0:
        return
    if t.is_floating_point() or t.is_complex():
        t.fill_(value)
    elif t.dtype != torch.bool:
        info = torch.iinfo(t.dtype)
        t.fill_(max(info.min, min(info.max, INT_POISON)))


class PoisonAndRecord(TorchDispatchMode):
    """Poison allocations and count aten ops during the candidate's forward."""

    def __init__(self, poison: float | None = float("nan"), work=None, recorder: LaunchRecorder | None = None):
        super().__init__()  # poison None: record only (KernelBench trials, the reference's own run)
        self.poison = poison
        self.ops: Counter = Counter()
        self.work = work
        self.recorder = recorder

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.__name__ if hasattr(func, "__name__") else str(func)
        self.ops[name] += 1
        try:  # what is recorded is evidence: it never fails the forward (a tensor without storage, say)
            if self.recorder is not None and name.split(".")[0] in COPY_OPS and isinstance(out, torch.Tensor):
                self.recorder.note_copy(name, args, out)
            if self.recorder is not None:
                self.recorder.note_op(args, kwargs, out)
            if self.work is not None and not (self.recorder is not None and self.recorder.in_kernel):
                self.work.note(func, name, args, kwargs, out,
                               in_extension=bool(self.recorder is not None and self.recorder.in_extension),
                               written=self.recorder.written_spans() if self.recorder is not None else None)
            if self.recorder is not None:  # after the op's own entry: an allocation reads nothing
                self.recorder.note_extension_buffer(func, name, args, kwargs, out)
        except Exception:  # noqa: BLE001
            if self.work is not None:
                self.work.dropped += 1
        if self.poison is not None and name in ALLOC_OPS and isinstance(out, torch.Tensor):
            with torch.utils._python_dispatch._disable_current_modes():
                poison_fill(out, self.poison)
            if self.recorder is not None and not self.recorder.in_kernel:  # not the interpreter's own tensors
                self.recorder.coverage.note_alloc(out, self.poison)
        return out


WRITE_CAPTURE_BYTES = 256 << 20  # at most this much of launch output is kept per forward


def _same(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Equal element for element, NaN equal to NaN (a poisoned element left alone is unchanged)."""
    if before.is_floating_point() or before.is_complex():
        return bool((before.eq(after) | (before.isnan() & after.isnan())).all())
    return torch.equal(before, after)


class LaunchRecorder:
    """Record Triton launches: kernel name and the storage byte ranges of the tensor arguments."""

    def __init__(self):
        self.launches: list[dict] = []
        self.active = False
        self.capture_writes = False
        self.writes: list[dict] = []  # {"launch", "kernel", "arg", "tensor", "writers"}, latest content per buffer
        self.in_kernel = 0  # depth of Triton launches running now (aten ops there are the interpreter's)
        self.in_extension = 0  # depth of calls into the candidate's extension running now
        self.copies: list[dict] = []  # {"to": span, "from": [spans]} of each copy op, in order
        self._captured_bytes = 0
        self._patched = []
        self.interpreted: dict = {}  # kernel + argument summary -> (function, summary) (gpu_compile.py)
        self.derived: dict[tuple[int, int], set] = {}  # see reset
        self.held: list[tuple[int, int]] = []
        self._launch_products: tuple[tuple, list] = ((), [])  # (count of launches and copies, their spans)
        self.coverage = BufferCoverage()  # what of each poisoned buffer a launch received stayed poison
        self.extension_buffers: list[tuple[int, int]] = []  # see note_extension_buffer

    def reset(self, capture_writes: bool = False, held: list | None = None) -> None:
        self.launches, self.writes, self._captured_bytes, self.copies = [], [], 0, []
        self.capture_writes = capture_writes
        # What PyTorch computed from what the kernels wrote: the storage of every op output that read
        # a launch's tensor (the forward's inputs and the model's own tensors, `held`, excepted: a
        # launch reads them, it does not produce them) or an earlier such output. Each span is kept while
        # a tensor holding it lives (weak references, dropped as the tensors are freed: _forget): a freed
        # intermediate's address, reused by a later allocation (`relu(x)` of an input, say), must not
        # read as derived.
        self.derived: dict[tuple[int, int], set] = {}
        self.held = [storage_span(t) for t in held or [] if isinstance(t, torch.Tensor)]
        self._launch_products = ((), [])
        self.extension_buffers = []
        self.coverage.reset()

    def _produced_spans(self) -> list[tuple[int, int]]:
        # Called for every aten op of forward: the launches' spans are recomputed only after a launch or
        # a copy was recorded, not per op.
        key = (len(self.launches), len(self.copies))
        if self._launch_products[0] != key:
            spans = [s for s in launch_spans(self.launches, self.copies)
                     if not any(h0 < s[1] and s[0] < h1 for h0, h1 in self.held)]
            self._launch_products = (key, spans)
        return self._launch_products[1] + list(self.derived)

    def note_op(self, args, kwargs, out) -> None:
        """An aten op ran outside the kernels: its outputs derive from the kernels' work if it read any."""
        if not self.active or self.in_kernel or not self.launches:
            return
        produced = self._produced_spans()
        ins = [t for t in _tensors(args) + _tensors(list((kwargs or {}).values())) if t.numel()]
        if any(s0 < e1 and t0 < s1 for t in ins for t0, e1 in [storage_span(t)] for s0, s1 in produced):
            for t in _tensors([out]):
                if t.numel():
                    span = storage_span(t)
                    self.derived.setdefault(span, set()).add(weakref.ref(t, _forget(self.derived, span)))

    def derived_from_kernels(self, out: torch.Tensor) -> bool:
        """`out` was written by a launch (not as an input it read) or computed from what one wrote."""
        o0, o1 = storage_span(out)
        return any(s0 < o1 and o0 < s1 for s0, s1 in self._produced_spans())

    def note_extension_buffer(self, func, name: str, args, kwargs, out) -> None:
        """Inside a call into the candidate's extension: a buffer its host code allocates is its kernels' to
        write (their raw launches are not seen) until an aten op other than a constant fill writes into it."""
        if not self.active or self.in_kernel or not self.in_extension:
            return
        if name in EXTENSION_BUFFER_OPS:
            if isinstance(out, torch.Tensor) and out.numel():
                self.extension_buffers.append(storage_span(out))
            return
        if not self.extension_buffers or name.split(".")[0] in CONSTANT_FILLS:
            return
        spans = [storage_span(t) for t in _written_arguments(func, args, kwargs)]
        if spans:
            self.extension_buffers = [b for b in self.extension_buffers
                                      if not any(s0 < b[1] and b[0] < s1 for s0, s1 in spans)]

    def written_spans(self) -> list[tuple[int, int]] | None:
        """Storage the launches so far received (launch_spans) and, inside an extension call, the buffers its
        host code made for its kernels; None when there is none."""
        spans = launch_spans(self.launches, self.copies) if self.launches else []
        return spans + self.extension_buffers or None

    def note_copy(self, name: str, args, out: torch.Tensor) -> None:
        """A copy op ran: its destination's storage now holds data from its sources' storage."""
        if not self.active or self.in_kernel:
            return
        tensors = _tensors(args)
        sources = tensors[1:] if name.startswith("copy_") else tensors
        with torch.utils._python_dispatch._disable_current_modes():
            self.copies.append({"to": list(storage_span(out)), "from": [list(storage_span(t)) for t in sources],
                                "after": len(self.launches)})

    def _snapshot(self, tensors: list) -> list | None:
        size = sum(t.numel() * t.element_size() for t in tensors)
        if not tensors or self._captured_bytes + 2 * size > WRITE_CAPTURE_BYTES:
            return None
        with torch.utils._python_dispatch._disable_current_modes():
            return [t.detach().clone() for t in tensors]

    def _note_writes(self, index: int, name: str, tensors: list, before: list) -> None:
        with torch.utils._python_dispatch._disable_current_modes():
            for arg, (t, b) in enumerate(zip(tensors, before)):
                if b is not None and _same(b, t):  # None: a tensor the launch returned (all of it written)
                    continue
                key = (storage_span(t), tuple(t.shape), t.dtype)
                kept = next((w for w in self.writes if w["key"] == key), None)
                after = t.detach().clone()
                if kept is None:
                    self.writes.append({"key": key, "launch": index, "kernel": name, "arg": arg, "tensor": after,
                                        "writers": [index]})
                    self._captured_bytes += after.numel() * after.element_size()
                else:  # written again (an accumulation pass, say): its latest content and last writer
                    kept.update(launch=index, kernel=name, arg=arg, tensor=after)
                    kept["writers"].append(index)

    def install(self) -> None:
        from debugger.sandbox.gpu_compile import snapshot_language
        snapshot_language()  # triton.language before the interpreter patches it (gpu_compile.py)
        targets = []
        try:
            from triton.runtime.jit import JITFunction
            targets.append(JITFunction)
        except ImportError:
            pass
        try:
            from triton.runtime.interpreter import InterpretedFunction
            targets.append(InterpretedFunction)
        except ImportError:
            pass
        recorder = self
        for cls in targets:
            original = cls.run

            def run(self, *args, __original=original, **kwargs):
                if not recorder.active:
                    return __original(self, *args, **kwargs)
                tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
                name = str(getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "?"))
                recorder.launches.append({"kernel": name, "tensors": [list(storage_span(a)) for a in tensors]})
                recorder.coverage.note_launch(name, args)
                if type(self).__name__ == "InterpretedFunction":
                    recorder.note_interpreted(self, name, args, kwargs)
                    from debugger.sandbox.duplicate_programs import narrowed_grid
                    grid = narrowed_grid(self, args, kwargs)
                    if grid is not None:  # copies of each program on axes no program reads: one runs
                        recorder.launches[-1]["grid_given"] = str(kwargs["grid"])
                        kwargs = {**kwargs, "grid": grid}
                index = len(recorder.launches) - 1
                before = recorder._snapshot(tensors) if recorder.capture_writes else None
                recorder.in_kernel += 1
                try:
                    result = __original(self, *args, **kwargs)
                finally:
                    recorder.in_kernel -= 1
                if before is not None:
                    recorder._note_writes(index, name, tensors, before)
                return result

            cls.run = run
            self._patched.append((cls, original))
        self._install_extension_loaders()

    def _install_extension_loaders(self) -> None:
        try:
            from torch.utils import cpp_extension
        except ImportError:
            return
        recorder = self
        for name in ("load_inline", "load"):
            original = getattr(cpp_extension, name, None)
            if original is None or getattr(original, "__kdebug_wrapped__", False):
                continue

            def loader(*args, __original=original, **kwargs):
                module = __original(*args, **kwargs)
                if module is not None and kwargs.get("is_python_module", True):
                    recorder.wrap_extension(module)
                return module

            loader.__kdebug_wrapped__ = True
            setattr(cpp_extension, name, loader)
            self._patched.append((cpp_extension, original))

    def wrap_extension(self, module) -> None:
        """Record calls of the extension module's functions as launches (once per module)."""
        if getattr(module, "__kdebug_recorded__", False):
            return
        recorder = self
        for attr in dir(module):
            fn = getattr(module, attr, None)
            if attr.startswith("_") or not callable(fn) or isinstance(fn, type):
                continue

            def call(*args, __fn=fn, __name=attr, **kwargs):
                if not recorder.active:
                    return __fn(*args, **kwargs)
                given = [a for a in [*args, *kwargs.values()] if isinstance(a, torch.Tensor)]
                before = recorder._snapshot(given) if recorder.capture_writes else None
                recorder.in_extension += 1
                try:
                    result = __fn(*args, **kwargs)
                finally:
                    recorder.in_extension -= 1
                    if not recorder.in_extension:  # what it returned is now a launch's; its temporaries are freed
                        recorder.extension_buffers = []
                returned = result if isinstance(result, (tuple, list)) else [result]
                tensors = [a for a in [*args, *kwargs.values(), *returned] if isinstance(a, torch.Tensor)]
                recorder.launches.append({"kernel": __name, "tensors": [list(storage_span(a)) for a in tensors],
                                          "extension": True})
                if recorder.capture_writes:  # what the call wrote: the arguments it changed, the tensors it made
                    made = [r for r in returned if isinstance(r, torch.Tensor) and not any(r is g for g in given)]
                    recorder._note_writes(len(recorder.launches) - 1, __name, (given if before else []) + made,
                                          (before or []) + [None] * len(made))
                return result

            try:
                setattr(module, attr, call)
            except (AttributeError, TypeError):
                continue
        try:
            module.__kdebug_recorded__ = True
        except (AttributeError, TypeError):
            pass

    def note_interpreted(self, fn, name: str, args, kwargs) -> None:
        """Keep an interpreted launch's kernel and argument types, to compile it for a GPU later."""
        import json

        from debugger.sandbox.gpu_compile import arg_summary, on_launch
        summary = arg_summary(args, kwargs)
        key = name + json.dumps(summary, sort_keys=True, default=str)
        if key not in self.interpreted:
            self.interpreted[key] = (fn, summary)
            on_launch(fn, summary)  # compiled for sm_90 when the parent asked (gpu_compile.configure)

    def kernels(self) -> list[str]:
        return [l["kernel"] for l in self.launches]


def _tensors(values) -> list[torch.Tensor]:
    """The tensors among an op's arguments, one level of lists and tuples looked into."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out += [t for t in v if isinstance(t, torch.Tensor)]
    return out


def _written_arguments(func, args, kwargs) -> list[torch.Tensor]:
    """The tensors an aten op writes: its schema's mutable arguments (`self` of add_, `out` of add.out)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return []
    found = []
    for i, a in enumerate(schema.arguments):
        if a.alias_info is None or not a.alias_info.is_write:
            continue
        value = (kwargs or {}).get(a.name, args[i] if i < len(args) and not a.kwarg_only else None)
        found += _tensors([value])
    return found


def storage_span(t: torch.Tensor) -> tuple[int, int]:
    """[start, end) byte range of a tensor's storage."""
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def _forget(derived: dict, span: tuple[int, int]):
    """A weak-reference callback: the tensor is freed, so `span` no longer holds it in `derived` (the
    recorder's table when the reference was taken; a reset starts a new one)."""
    def gone(ref) -> None:
        refs = derived.get(span)
        if refs is not None:
            refs.discard(ref)
            if not refs:
                del derived[span]
    return gone


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True if two tensors share storage bytes."""
    a0, a1 = storage_span(a)
    b0, b1 = storage_span(b)
    return a0 < b1 and b0 < a1 and a1 > a0 and b1 > b0


def launch_spans(launches: list[dict], copies: list[dict] = ()) -> list[tuple[int, int]]:
    """Storage byte ranges the recorded launches received, with those copied (`copies`, in the order they
    ran, after the launches they read) from them."""
    spans = [tuple(span) for launch in launches for span in launch["tensors"]]
    copied = []
    for copy in copies:
        known = [tuple(span) for launch in launches[:copy.get("after", len(launches))]
                 for span in launch["tensors"]] + copied
        if any(s0 < e1 and f0 < s1 for s0, s1 in known for f0, e1 in copy["from"]):
            copied.append(tuple(copy["to"]))
    return spans + copied


def written_by_launch(out: torch.Tensor, launches: list[dict], copies: list[dict] = ()) -> bool:
    """True if some recorded launch received a tensor whose storage holds `out`, or `out` was copied
    from such storage after the launch."""
    o0, o1 = storage_span(out)
    return any(start < o1 and o0 < end for start, end in launch_spans(launches, copies))
