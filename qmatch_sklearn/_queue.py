"""The queue Q of past teacher embeddings (MoCo-style memory, newest first)."""

import torch
from torch import nn
from torch.nn import functional as F


class EmbeddingQueue(nn.Module):
    """A fixed-size FIFO of L2-normalised embeddings, stored as a buffer.

    Random unit vectors at first; after each step the batch's teacher embeddings replace the
    oldest rows (the Q-Match paper, Algorithm 1), in a ring at a fixed address (as MoCo's) that
    a CUDA graph can replay. FIFO order, newest first, is ``embeddings.roll(-int(head), 0)``.

    Parameters
    ----------
    size, dim : int
        Number of rows K and width of the embeddings.
    generator : torch.Generator, optional
        Source of the random initial rows.
    """

    def __init__(self, size, dim, generator=None):
        super().__init__()
        initial = torch.randn(size, dim, generator=generator)
        self.register_buffer("embeddings", F.normalize(initial, dim=1))
        # a tensor beside the rows, so that a captured step moves it on replay
        self.register_buffer("head", torch.zeros((), dtype=torch.long), persistent=False)
        self.register_buffer("offsets", torch.arange(size), persistent=False)

    @torch.no_grad()
    def push(self, batch):
        """Write ``batch`` (newest first) over the oldest rows, in place; a batch larger than
        the queue keeps its first (newest) rows."""
        size = len(self.embeddings)
        batch = batch.detach()[:size]
        self.head.sub_(len(batch)).remainder_(size)
        rows = (self.offsets[: len(batch)] + self.head).remainder_(size)
        self.embeddings.index_copy_(0, rows, batch.to(self.embeddings.dtype))
