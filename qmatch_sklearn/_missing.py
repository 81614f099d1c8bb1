"""Missing values, natively: what the network receives for a NaN entry.

A row with missing entries enters every network through :class:`MissingValues`,
the first layer of the encoder of an estimator fitted on rows with NaN: each
missing entry is replaced by its column's fill value (the mean of the column's
observed values at fit), and each column that had missing values at fit gets
an indicator channel (1 where the entry is missing). The network thus always
knows which entries were observed, in the clean (teacher) view as in the
corrupted one.

Corruption works on the rows with their NaN (:mod:`._corruption`): VIME's
corruption draws a replacement from the column's values in the batch,
missingness included, so a corrupted entry can become missing but a missing
entry is never given its (unknown) value. Losses that reconstruct the row
(VIME, TabNet) score observed entries only (:func:`observed_mean_squares`).
"""

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

#: Rows per block when a dense X is scanned for missing values.
SCAN_ROWS = 8192


class MissingValues(nn.Module):
    """x -> [x with each NaN replaced by its column's fill value, 1{x_j is NaN} for j in
    ``indicated``]: the input layer of an encoder fitted on rows with missing values.

    Parameters
    ----------
    fill_values : Tensor of shape (n_features,)
        Each column's observed mean at fit.
    indicated : Tensor of int64
        The columns that had missing values at fit: each gets an indicator
        channel. A NaN in another column is filled all the same.
    """

    def __init__(self, fill_values, indicated):
        super().__init__()
        # copies: the arrays may be read-only (a memory-mapped, unpickled estimator)
        self.register_buffer("fill_values", torch.tensor(fill_values, dtype=torch.float32))
        self.register_buffer("indicated", torch.tensor(indicated, dtype=torch.int64))

    @property
    def n_outputs(self):
        return len(self.fill_values) + len(self.indicated)

    def forward(self, x):
        missing = torch.isnan(x)
        filled = torch.where(missing, self.fill_values.to(x.dtype), x)
        return torch.cat([filled, missing[:, self.indicated].to(x.dtype)], dim=1)


def missing_values_layer(X):
    """The :class:`MissingValues` layer fitted on ``X`` (dense or CSR), or None
    when ``X`` has no missing value. Raises a ValueError naming the columns
    that have no observed value at all."""
    if sp.issparse(X):
        missing = np.zeros(X.shape[1], dtype=np.int64)
        np.add.at(missing, X.indices[np.isnan(X.data)], 1)
        if not missing.any():
            return None
        sums = np.asarray(sp.csr_matrix((np.nan_to_num(X.data), X.indices, X.indptr),
                                        shape=X.shape).sum(axis=0), dtype=np.float64).ravel()
    else:
        # in row blocks: a boolean mask of the whole X would add a quarter of its size
        missing = np.zeros(X.shape[1], dtype=np.int64)
        sums = np.zeros(X.shape[1], dtype=np.float64)
        for start in range(0, X.shape[0], SCAN_ROWS):
            block = X[start : start + SCAN_ROWS]
            isnan = np.isnan(block)
            missing += isnan.sum(axis=0)
            sums += np.where(isnan, 0.0, block).sum(axis=0, dtype=np.float64)
        if not missing.any():
            return None
    empty = np.flatnonzero(missing == X.shape[0])
    if len(empty):
        raise ValueError(
            f"Column(s) {empty.tolist()} of X have no observed value (all NaN): there is "
            "nothing to learn from them. Drop them before fitting."
        )
    fill_values = sums / (X.shape[0] - missing)
    return MissingValues(fill_values.astype(np.float32), np.flatnonzero(missing))


def indicated_features(layer):
    """The input features that get an indicator channel: ``missing_features_``."""
    return np.empty(0, np.int64) if layer is None else layer.indicated.cpu().numpy().copy()


def missing_values_skeleton(n_features, indicated):
    """An untrained :class:`MissingValues` of the right shape, for loading."""
    return MissingValues(np.zeros(n_features, dtype=np.float32), np.asarray(indicated))


def fill_and_indicate(X, layer):
    """What ``layer`` makes of the rows ``X`` (dense or CSR), in NumPy/SciPy:
    the input of the encoder, returned by ``transform`` with ``passthrough=True``."""
    fill_values = layer.fill_values.cpu().numpy()
    indicated = layer.indicated.cpu().numpy()
    if sp.issparse(X):
        X = X.copy()
        isnan = np.isnan(X.data)
        X.data[isnan] = fill_values[X.indices[isnan]]
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[isnan]
        position = np.full(X.shape[1], -1)
        position[indicated] = np.arange(len(indicated))
        flags = sp.csr_matrix(
            (np.ones(len(rows), dtype=np.float32), (rows, position[X.indices[isnan]])),
            shape=(X.shape[0], len(indicated)),
        )
        return sp.hstack([X, flags], format="csr", dtype=np.float32)
    isnan = np.isnan(X)
    return np.hstack([np.where(isnan, fill_values, X), isnan[:, indicated]]).astype(np.float32)


def has_missing(X):
    """Whether ``X`` (dense or CSR) has a missing value (NaN), scanned in row blocks."""
    if sp.issparse(X):
        return bool(np.isnan(X.data).any())
    return any(np.isnan(X[start : start + SCAN_ROWS]).any()
               for start in range(0, X.shape[0], SCAN_ROWS))


def check_missing_columns(estimator, X, fitted_with_missing):
    """Raise a ValueError when ``X`` has missing values but the estimator's
    network has no :class:`MissingValues` layer (it saw none at fit)."""
    if not fitted_with_missing and has_missing(X):
        raise ValueError(
            f"X has missing values (NaN), but {type(estimator).__name__} was fitted on rows "
            "without any, so its network has no input for them. Fit it on rows that have "
            "missing values too, or impute them upstream (e.g. SimpleImputer)."
        )


def observed_mean_squares(prediction, target):
    """Mean of (prediction - target)^2 over the entries where ``target`` is
    observed (not NaN), as a reconstruction loss that never scores a missing
    entry; the plain mean when nothing is missing."""
    observed = ~torch.isnan(target)
    squares = torch.where(observed, prediction - target, 0.0) ** 2
    return squares.sum() / observed.sum().clamp_min(1)
