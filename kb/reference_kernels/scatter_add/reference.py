import torch
import torch.nn as nn

NUM_SRC = 200
NUM_BUCKETS = 30
DIM = 40


class Model(nn.Module):
    """Scatter-add rows of src into NUM_BUCKETS output rows: out[index[i]] += src[i]."""

    def __init__(self, num_buckets):
        super().__init__()
        self.num_buckets = num_buckets

    def forward(self, src, index):
        out = torch.zeros(self.num_buckets, src.shape[1], dtype=src.dtype, device=src.device)
        return out.index_add_(0, index, src)


def get_inputs():
    return [torch.randn(NUM_SRC, DIM), torch.randint(0, NUM_BUCKETS, (NUM_SRC,))]


def get_init_inputs():
    return [NUM_BUCKETS]
