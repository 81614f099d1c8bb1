"""``passthrough=True``: the input features beside the embedding, on one footing.

A linear model on ``[x, z]`` (a downstream logistic regression, or the head of a
``QMatchClassifier``) penalises every weight alike, so the scale of each block
decides which one it leans on. The embedding's scale is whatever pretraining
left; on the few-label suite an unscaled ``z`` drowned ``x`` (attrition: 81.7%
against 83.9% for logistic regression on ``x`` alone). The embedding block is
therefore standardised with its mean and deviation over the fit rows and
scaled so that its total variance equals that of the input block:

    z_balanced = (z - mean(z)) / std(z) * sqrt(sum_j var(x_j) / embedding_dim)
"""

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn


def _column_sums(X):
    """Per-column sums of dense or CSR ``X`` and of its squares, in float64 (no NaN)."""
    if sp.issparse(X):
        return (np.asarray(X.sum(axis=0), dtype=np.float64).ravel(),
                np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel())
    X = np.asarray(X, dtype=np.float64)
    return X.sum(axis=0), np.einsum("ij,ij->j", X, X)


class ColumnMoments:
    """Per-column means and variances of a matrix given in row blocks (dense or
    CSR, no NaN), accumulated block by block: no copy of the whole is made."""

    def __init__(self):
        self.n, self.sums, self.squares = 0, 0.0, 0.0

    def add(self, block):
        block_sums, block_squares = _column_sums(block)
        self.n += block.shape[0]
        self.sums = self.sums + block_sums
        self.squares = self.squares + block_squares

    @property
    def mean(self):
        return self.sums / self.n

    @property
    def variance(self):
        return np.maximum(self.squares / self.n - self.mean**2, 0.0)


def embedding_balance(blocks):
    """``(mean, scale)`` with ``(Z - mean) * scale`` standardised per column and
    of total variance ``sum_j var(inputs_j)`` (the module docstring's formula).

    ``blocks`` yields ``(inputs, Z)`` for consecutive row blocks of the fit
    rows, so that fit never holds every row's embedding at once (holding them,
    with float64 copies, made fit peak at 8.7x a dense input's size)."""
    inputs, embeddings = ColumnMoments(), ColumnMoments()
    for input_block, z_block in blocks:
        inputs.add(input_block)
        embeddings.add(z_block)
    std = np.sqrt(embeddings.variance)
    std = np.where(std > 1e-12, std, 1.0)
    total = inputs.variance.sum()
    per_column = np.sqrt(total / len(std)) if total > 0 else 1.0
    return embeddings.mean.astype(np.float32), (per_column / std).astype(np.float32)


def balanced(Z, mean, scale):
    return ((Z - mean) * scale).astype(np.float32)


class WithInput(nn.Module):
    """``x -> [x, (encoder(x) - mean) * scale]``: the head of a classifier whose
    encoder has ``passthrough=True`` sees what that encoder's ``transform``
    returns. With ``missing`` (the encoder's
    :class:`~._missing.MissingValues` layer) the filled features and their
    missing indicators stand for ``x``."""

    def __init__(self, encoder, mean, scale, missing=None):
        super().__init__()
        self.encoder = encoder
        self.missing = missing
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32))
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float32))

    def forward(self, x):
        inputs = x if self.missing is None else self.missing(x)
        return torch.cat([inputs, (self.encoder(x) - self.mean) * self.scale], dim=1)
