"""The Python side of a CUDA candidate on the CPU: where its host code asks for the CUDA device
(`x.cuda()`, `device="cuda"`, `.to("cuda")`, `model.cuda()`, `x.is_cuda`), it gets the CPU, where the emulated
kernels' tensors live. A TorchFunctionMode entered for the worker's life rewrites the device arguments
of torch calls; nn.Module.cuda returns the module unchanged."""
from __future__ import annotations

import os
import sys

import torch
from torch.overrides import TorchFunctionMode


_IS_CUDA = torch.Tensor.is_cuda  # the property's descriptor: its getter reaches the mode as func


def _is_cuda(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if isinstance(device, str):
        return device == "cuda" or device.startswith("cuda:")
    return False


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


class CudaOnCpu(TorchFunctionMode):
    """Maps the CUDA device to the CPU in every torch call; `x.is_cuda` read by code outside torch (the
    candidate's `if x.is_cuda: <kernel> else: <PyTorch fallback>`) is True, so the kernel path runs."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if getattr(func, "__self__", None) is _IS_CUDA:
            # torch's own code keeps the truth (an RNN asking whether cuDNN may flatten its weights)
            caller = sys._getframe(1).f_code.co_filename
            return True if not caller.startswith(_TORCH_DIR) else func(*args, **kwargs)
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
