"""Drawing input sets and models for one check, inside a sandbox worker.

Both workers (reference and candidate) draw the same inputs and parameters from the same spec, on
the device, so nothing large ever crosses a process boundary and every check gets fresh inputs.
A spec: {"seed", "init_seed", "transform", "param_noise", "shapes"} (see evaluate.py); KernelBench's
trials ({"kb_trial": i, "own_init": True}) draw their inputs on the CPU under KernelBench's trial seeds
and build each model with its own initialisation under seed 42, exactly as its harness does.

Models run as built, in train mode, as KernelBench's harness runs them (BatchNorm normalises with the
batch's statistics); {"eval_mode": True} puts both in eval mode, a diagnosis experiment.
"""
from __future__ import annotations

import copy
import importlib.util
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

from debugger import params

KERNELBENCH_SEED = 42  # KernelBench's seed_num: inputs of the trials and both models' initialisation
TRANSFORMS = ("none", "scale:3", "scale:0.01", "scale:100", "negate", "all_negative", "noncontig", "transposed")
LAYOUT_TRANSFORMS = ("noncontig", "transposed")  # the layout checks' transforms: strided views of the inputs


def load_module(src: str, folder: Path, name: str):
    """Import source text as a module from a file in `folder` (Triton needs the source on disk)."""
    path = folder / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def shapes_overridden(module, shapes: dict | None):
    """Temporarily rebind the reference's module-level size constants (hidden and GPU shapes)."""
    saved = {}
    for key, value in (shapes or {}).items():
        if hasattr(module, key):
            saved[key] = getattr(module, key)
            setattr(module, key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(module, key, value)


def _noncontiguous(t: torch.Tensor) -> torch.Tensor:
    """Same values, last-dim stride 2."""
    if t.dim() == 0:
        return t
    wide = torch.empty(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype, device=t.device)
    view = wide[..., ::2]
    view.copy_(t)
    return view


def _transposed(t: torch.Tensor) -> torch.Tensor:
    """Same values, last two dims stored column-major."""
    if t.dim() < 2:
        return _noncontiguous(t)
    return t.transpose(-1, -2).contiguous().transpose(-1, -2)


def transform_tensor(t: torch.Tensor, transform: str) -> torch.Tensor:
    """Apply one value-distribution transform (floating tensors) or layout transform (every tensor:
    an integer index tensor read by flat offsets is as wrong on a strided view as a float one)."""
    if transform == "noncontig":
        return _noncontiguous(t)
    if transform == "transposed":
        return _transposed(t)
    if not t.is_floating_point():
        return t
    if transform.startswith("scale:"):
        return t * float(transform.split(":", 1)[1])
    if transform == "negate":
        return -t
    if transform == "all_negative":
        return -(t.abs())
    return t


def kernelbench_trial_seeds(trials: int) -> list[int]:
    """The seeds of KernelBench's correctness trials (drawn from its seed, as its harness does)."""
    gen = torch.Generator().manual_seed(KERNELBENCH_SEED)
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=gen).item()) for _ in range(trials)]


def kernelbench_trial_seed(spec: dict) -> int:
    """The seed of the KernelBench trial a spec names (its inputs and its forwards draw from it)."""
    return kernelbench_trial_seeds(spec["kb_trial"] + 1)[spec["kb_trial"]]


def draw_inputs(ref_module, spec: dict, device: str) -> list:
    """The reference's get_inputs() under the spec's seed, drawn on the device, then transformed.

    A KernelBench trial draws on the CPU (as its harness does, so the values are the same) and moves
    the tensors to the device.
    """
    with shapes_overridden(ref_module, spec.get("shapes")):
        if "kb_trial" in spec:
            torch.manual_seed(kernelbench_trial_seed(spec))
            raw = ref_module.get_inputs()
        else:
            torch.manual_seed(spec["seed"])
            with torch.device(device):
                raw = ref_module.get_inputs()
    out = []
    for x in raw:
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            x = transform_tensor(x, spec.get("transform", "none"))
        out.append(x)
    return out


def init_inputs(ref_module, spec: dict) -> list:
    """The reference's get_init_inputs() (constructor arguments) for this spec's shapes and init seed."""
    with shapes_overridden(ref_module, spec.get("shapes")):
        fn = getattr(ref_module, "get_init_inputs", None)
        torch.manual_seed(spec.get("init_seed", 0))
        return list(fn()) if fn else []


def _as_run(model: torch.nn.Module, spec: dict, device: str) -> torch.nn.Module:
    model = model.to(device)
    return model.eval() if spec.get("eval_mode") else model.train()


def build_reference(ref_module, spec: dict, device: str) -> torch.nn.Module:
    """Model under the spec's init seed, parameters re-drawn when asked; in train mode unless eval_mode."""
    args = init_inputs(ref_module, spec)
    torch.manual_seed(spec.get("init_seed", 0))
    model = ref_module.Model(*args)
    if spec.get("param_noise"):
        _redraw(model, spec)
    return _as_run(model, spec, device)


def _redraw(model: torch.nn.Module, spec: dict) -> None:
    """Re-draw the floating parameters in place (params_redrawn), from a generator of their own."""
    gen = torch.Generator().manual_seed(spec.get("init_seed", 0) + 7919)
    with torch.no_grad():
        for p in model.parameters():
            if p.is_floating_point():
                scale = p.detach().abs().mean().item() + 0.1
                p.add_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * 0.5 * scale)


def build_candidate(ref_module, cand_module, spec: dict, device: str
                    ) -> tuple[torch.nn.Module, params.ParameterMap | None]:
    """ModelNew under the same seed, and the parameter correspondence with Model.

    Kernel checks copy the reference's values (re-drawn ones included) into the matched tensors, so
    the kernel is judged on the same weights; KernelBench trials ({"own_init"}) keep ModelNew's own
    initialisation and copy nothing, as KernelBench does. Where the reference was built without
    re-drawn parameters, each pair also records how far ModelNew's own initial values are from
    Model's (the parameter_init evidence).
    """
    args = init_inputs(ref_module, spec)
    if spec.get("own_init"):
        torch.manual_seed(spec.get("init_seed", 0))
        return _as_run(cand_module.ModelNew(*args), spec, device), None
    # Matched as built, re-drawn after: matched on re-drawn values, a BatchNorm's weight of ones would pair
    # with its running_var of ones (buffers are never re-drawn).
    with params.recording_creation_order() as ref_order:
        reference = build_reference(ref_module, {**spec, "param_noise": False}, "cpu")
    torch.manual_seed(spec.get("init_seed", 0))
    with params.recording_creation_order() as cand_order:
        model = cand_module.ModelNew(*args)
    ref_tensors = params.named_tensors(reference, ref_order)
    cand_tensors = params.named_tensors(model, cand_order)
    mapping = params.correspond(ref_tensors, cand_tensors)
    if spec.get("param_noise"):
        _redraw(reference, spec)  # in place: ref_tensors hold the re-drawn values
    else:
        params.measure_own_init(mapping, ref_tensors, cand_tensors)
    params.copy_values(mapping, ref_tensors, cand_tensors)
    return _as_run(model, spec, device), mapping


def clone_keeping_layout(x):
    """A copy with the same strides (Tensor.clone makes non-dense views contiguous)."""
    if not isinstance(x, torch.Tensor):
        return x
    y = torch.empty_strided(x.size(), x.stride(), dtype=x.dtype, device=x.device)
    y.copy_(x)
    return y


def as_double(model: torch.nn.Module, inputs: list) -> tuple[torch.nn.Module, list]:
    """A float64 copy of the model and inputs (floating tensors only)."""
    m = copy.deepcopy(model).double()
    xs = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    return m, xs


def flatten_outputs(out) -> list:
    """A forward's result as a flat list (tensor, tuple/list of tensors, or scalars)."""
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(flatten_outputs(o))
        return flat
    return [out]
