import torch
import torch.nn as nn
import torch.nn.functional as F

NUM_EMBEDDINGS = 100
EMBEDDING_DIM = 48
BATCH = 7
SEQ = 9


class Model(nn.Module):
    """Embedding lookup: out[b, s, :] = weight[indices[b, s], :]."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices):
        return F.embedding(indices, self.weight)


def get_inputs():
    return [torch.randint(0, NUM_EMBEDDINGS, (BATCH, SEQ))]


def get_init_inputs():
    return [NUM_EMBEDDINGS, EMBEDDING_DIM]
