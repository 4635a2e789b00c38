import torch
import torch.nn as nn


class Model(nn.Module):
    """EmbeddingBag with mode='sum': each bag is the sum of the embedding rows it indexes."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.bag = nn.EmbeddingBag(num_embeddings, embedding_dim, mode="sum")

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets)


num_embeddings = 500
embedding_dim = 100
num_bags = 20
max_bag = 12


def get_inputs():
    lengths = torch.randint(1, max_bag + 1, (num_bags,))
    offsets = torch.cumsum(lengths, 0) - lengths
    indices = torch.randint(0, num_embeddings, (int(lengths.sum()),))
    return [indices, offsets]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
