"""The queue Q of past teacher embeddings (MoCo-style memory, newest first)."""

import torch
from torch import nn
from torch.nn import functional as F


class EmbeddingQueue(nn.Module):
    """A fixed-size FIFO of L2-normalised embeddings, stored as a buffer.

    It starts as random unit vectors and, after each optimisation step, the
    batch's teacher embeddings replace the oldest rows (the Q-Match paper,
    Algorithm 1). The buffer is a ring at a fixed address, as MoCo's
    ``_dequeue_and_enqueue`` keeps it: a push writes over the oldest rows in
    place (a new tensor every step would rule out a captured CUDA graph), and
    ``head`` (a tensor, read by no host code) is the row of the newest entry.
    The loss reads every row alike, so the rows' order in the buffer does not
    matter; in FIFO order (newest first) they are
    ``embeddings.roll(-int(head), 0)``, which holds exactly the rows of a FIFO
    that put each batch on top and dropped the bottom.

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
        # a tensor beside the rows, so that a captured step moves it on replay
        self.register_buffer("head", torch.zeros((), dtype=torch.long), persistent=False)
        self.register_buffer("offsets", torch.arange(size), persistent=False)

    @torch.no_grad()
    def push(self, batch):
        """Write ``batch`` (rows newest-first) over the oldest rows, in place; a
        batch of more rows than the queue keeps its first (newest) ones."""
        size = len(self.embeddings)
        batch = batch.detach()[:size]
        self.head.sub_(len(batch)).remainder_(size)
        rows = (self.offsets[: len(batch)] + self.head).remainder_(size)
        self.embeddings.index_copy_(0, rows, batch.to(self.embeddings.dtype))
