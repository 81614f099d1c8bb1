"""The queue Q of past teacher embeddings (MoCo-style memory, newest first)."""

import torch
from torch import nn
from torch.nn import functional as F


class EmbeddingQueue(nn.Module):
    """A fixed-size FIFO of L2-normalised embeddings, stored as a buffer.

    Row 0 is the newest entry. It starts as random unit vectors and, after
    each optimisation step, the batch's teacher embeddings are put on top and
    the oldest rows fall off the bottom (the Q-Match paper, Algorithm 1).

    Parameters
    ----------
    size : int
        Number of rows K.
    dim : int
        Width of the embeddings.
    generator : torch.Generator, optional
        Source of the random initial rows.
    """

    def __init__(self, size, dim, generator=None):
        super().__init__()
        initial = torch.randn(size, dim, generator=generator)
        self.register_buffer("embeddings", F.normalize(initial, dim=1))

    @torch.no_grad()
    def push(self, batch):
        """Put ``batch`` (rows newest-first) on top and drop the oldest rows."""
        size = len(self.embeddings)
        self.embeddings = torch.cat([batch.detach(), self.embeddings])[:size]
