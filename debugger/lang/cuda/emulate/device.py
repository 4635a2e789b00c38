"""The Python side of a CUDA candidate on the CPU: where its host code asks for the CUDA device
(`x.cuda()`, `device="cuda"`, `.to("cuda")`, `model.cuda()`), it gets the CPU, where the emulated
kernels' tensors live. A TorchFunctionMode entered for the worker's life rewrites the device arguments
of torch calls; nn.Module.cuda returns the module unchanged."""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode


def _is_cuda(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return False


class CudaOnCpu(TorchFunctionMode):
    """Maps the CUDA device to the CPU in every torch call."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if getattr(func, "__name__", "") == "cuda":  # Tensor.cuda: the tensor stays where it is
            return args[0]
        if "device" in kwargs and _is_cuda(kwargs["device"]):
            kwargs["device"] = "cpu"
        if getattr(func, "__name__", "") == "to" and len(args) > 1 and _is_cuda(args[1]):
            args = (args[0], "cpu", *args[2:])
        return func(*args, **kwargs)


_MODE: CudaOnCpu | None = None


def install() -> None:
    """Enter the mode for the rest of this process (once), and make Module.cuda a no-op."""
    global _MODE
    if _MODE is not None:
        return
    _MODE = CudaOnCpu()
    _MODE.__enter__()
    torch.nn.Module.cuda = lambda self, device=None: self
    torch.cuda.synchronize = lambda device=None: None
