import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mse_kernel(p_ptr, t_ptr, out_ptr, n_elements, inv_n, BLOCK_SIZE: tl.constexpr, NUM_PROGS: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    # persistent grid-stride loop: each program walks the flat tensor
    for start in range(pid * BLOCK_SIZE, n_elements, BLOCK_SIZE * NUM_PROGS):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_elements
        p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        t = tl.load(t_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        d = p - t
        acc += d * d
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0) * inv_n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous().view(-1)
        t = targets.contiguous().view(-1)
        n = p.numel()
        out = torch.zeros((), device=p.device, dtype=torch.float32)
        BLOCK_SIZE = 1024
        num_progs = min(triton.cdiv(n, BLOCK_SIZE), 16)
        mse_kernel[(num_progs,)](p, t, out, n, 1.0 / n, BLOCK_SIZE=BLOCK_SIZE, NUM_PROGS=num_progs)
        return out
