"""``passthrough=True``: the input features beside the embedding, on one footing.

A linear model on ``[x, z]`` penalises every weight alike, so each block's scale decides which
one it leans on; the embedding block is therefore standardised over the fit rows and scaled so
that its total variance equals the input block's:

    z_balanced = (z - mean(z)) / std(z) * sqrt(sum_j var(x_j) / embedding_dim)
"""

import itertools

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn


def column_variances(X):
    """Per-column float64 variances of dense or CSR ``X`` (no NaN), without densifying it."""
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0, dtype=np.float64)).ravel()
        squares = np.asarray(X.multiply(X).mean(axis=0, dtype=np.float64)).ravel()
        return np.maximum(squares - mean**2, 0.0)
    return np.asarray(X, dtype=np.float64).var(axis=0)


def embedding_balance(inputs, Z):
    """``(mean, scale)`` making ``(Z - mean) * scale`` the module docstring's z_balanced, from
    the rows ``inputs`` and their embeddings ``Z``."""
    Z = np.asarray(Z, dtype=np.float64)
    std = Z.std(axis=0)
    std = np.where(std > 1e-12, std, 1.0)
    total = column_variances(inputs).sum()
    per_column = np.sqrt(total / len(std)) if total > 0 else 1.0
    return Z.mean(axis=0).astype(np.float32), (per_column / std).astype(np.float32)


def balanced(Z, mean, scale):
    return ((Z - mean) * scale).astype(np.float32)


class WithInput(nn.Module):
    """``x -> [x, (encoder(x) - mean) * scale]``: a ``passthrough=True`` encoder's ``transform``,
    for a classifier's head. With ``missing`` (a :class:`~._networks.MissingValues` layer) the
    filled features and their missing indicators stand for ``x``."""

    def __init__(self, encoder, mean, scale, missing=None):
        super().__init__()
        self.encoder = encoder
        self.missing = missing
        # on the encoder's device: a frozen encoder on a GPU is shared, not moved
        device = next(itertools.chain(encoder.parameters(), encoder.buffers()),
                      torch.empty(0)).device
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32, device=device))
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float32, device=device))

    def forward(self, x):
        inputs = x if self.missing is None else self.missing(x)
        return torch.cat([inputs, (self.encoder(x) - self.mean) * self.scale], dim=1)
