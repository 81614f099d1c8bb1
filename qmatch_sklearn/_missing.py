"""Missing values, natively: what the network receives for a NaN entry.

A row with missing entries enters every network through :class:`MissingValues`,
the first layer of the encoder of an estimator fitted on rows with NaN: each
missing entry is replaced by its column's fill value (the mean of the column's
observed values at fit), and each column whose missingness is informative gets
an indicator channel (1 where the entry is missing). Missingness is deemed
informative when it is related to the rest of the row
(:func:`informative_missingness`): values missing completely at random carry
no information, and their indicators were pure noise that the pretext task
learned to encode (on digits with 30% of the entries removed at random, 64
such channels cost 6 points of few-label accuracy against median imputation;
``benchmarks/results/missing.md``).

Corruption works on the rows with their NaN (:mod:`._corruption`): VIME's
corruption draws a replacement from the column's values in the batch,
missingness included, so a corrupted entry can become missing but a missing
entry is never given its (unknown) value. Losses that reconstruct the row
(VIME, TabNet) score observed entries only (:func:`observed_mean_squares`).
"""

import numpy as np
import scipy.sparse as sp
import torch
from scipy.stats import norm
from torch import nn

#: Rows per block when a dense X is scanned for missing values.
SCAN_ROWS = 8192
#: Most bytes of a float64 row block in the informative-missingness test.
SCAN_BYTES = 32 * 2**20
#: Significance of the test that gives a column a missing indicator
#: (:func:`informative_missingness`), before the Bonferroni correction.
INDICATOR_ALPHA = 0.01
#: Above this many correlations (columns compared x columns with missing
#: values) the test is skipped and every column with missing values is indicated.
MAX_INDICATOR_TEST = 10**7


class MissingValues(nn.Module):
    """x -> [x with each NaN replaced by its column's fill value, 1{x_j is NaN} for j in
    ``indicated``]: the input layer of an encoder fitted on rows with missing values.

    Parameters
    ----------
    fill_values : Tensor of shape (n_features,)
        Each column's observed mean at fit.
    indicated : Tensor of int64
        The columns whose missingness was informative at fit
        (:func:`informative_missingness`): each gets an indicator channel. A
        NaN in another column is filled all the same.
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


def missing_values_layer(X, describe=None):
    """The :class:`MissingValues` layer fitted on ``X`` (dense or CSR), or None
    when ``X`` has no missing value. Raises a ValueError naming the columns
    that have no observed value at all: ``describe`` maps their positions in
    ``X`` (the network's input) to the names the user knows (those of the
    table's columns), or they are named by position."""
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
            f"Column(s) {describe(empty) if describe else empty.tolist()} of X have no "
            "observed value (all NaN): there is "
            "nothing to learn from them. Drop them before fitting."
        )
    fill_values = sums / (X.shape[0] - missing)
    columns = np.flatnonzero(missing)
    layer = MissingValues(fill_values.astype(np.float32),
                          columns[informative_missingness(X, columns, fill_values)])
    layer.missing_columns = columns  # known at fit only (see missing_columns)
    return layer


def dense_blocks(X):
    """Consecutive row blocks of dense or CSR ``X`` as dense float64 arrays of
    at most ``SCAN_BYTES``."""
    rows = max(1, SCAN_BYTES // (8 * max(1, X.shape[1])))
    for start in range(0, X.shape[0], rows):
        block = X[start : start + rows]
        yield np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)


def informative_missingness(X, columns, fill_values):
    """Which of ``columns`` (those of ``X`` with missing values) have a
    missingness related to the rest of the row, as a boolean array.

    A column's missingness m_j is informative when its correlation with some
    other column's value (missing entries filled with ``fill_values``) or
    missingness m_k exceeds z_{alpha / 2p} / sqrt(n), with alpha =
    ``INDICATOR_ALPHA`` Bonferroni-corrected over the p = n_features +
    len(columns) columns it is compared with: under missingness completely at
    random every such correlation is N(0, 1/n). A column whose entries go
    missing together with others', or more often for some kinds of rows, gets
    an indicator; one emptied at random does not. (Missingness that depends
    on the missing value alone is invisible to the test.) Above
    ``MAX_INDICATOR_TEST`` correlations every column keeps its indicator.
    """
    n, d = X.shape
    p = d + len(columns)
    if p * len(columns) > MAX_INDICATOR_TEST:
        return np.ones(len(columns), dtype=bool)
    sum_f, sum_f2 = np.zeros(p), np.zeros(p)
    cross = np.zeros((p, len(columns)))
    for block in dense_blocks(X):
        isnan = np.isnan(block)
        m = isnan[:, columns].astype(np.float64)
        f = np.hstack([np.where(isnan, fill_values, block), m])
        sum_f += f.sum(axis=0)
        sum_f2 += np.einsum("ij,ij->j", f, f)
        cross += f.T @ m
    mean_f = sum_f / n
    std_f = np.sqrt(np.maximum(sum_f2 / n - mean_f**2, 0.0))
    mean_m, std_m = mean_f[d:], std_f[d:]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (cross / n - np.outer(mean_f, mean_m)) / np.outer(std_f, std_m)
    r = np.abs(np.nan_to_num(r, nan=0.0, posinf=0.0, neginf=0.0))
    own = np.arange(len(columns))
    r[columns, own] = 0.0  # a column's own (filled) value
    r[d + own, own] = 0.0  # and its own missingness
    threshold = norm.isf(INDICATOR_ALPHA / (2 * p)) / np.sqrt(n)
    return r.max(axis=0) > threshold


def missing_columns(layer):
    """The input features that had missing values at fit (``missing_features_``), for
    a layer just fitted by :func:`missing_values_layer`."""
    return np.empty(0, np.int64) if layer is None else layer.missing_columns


def indicated_features(layer):
    """The input features that get an indicator channel: ``missing_indicators_``."""
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
        flagged = position[X.indices[isnan]]  # -1: a column without indicator
        rows, flagged = rows[flagged >= 0], flagged[flagged >= 0]
        flags = sp.csr_matrix(
            (np.ones(len(rows), dtype=np.float32), (rows, flagged)),
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
    """Raise a ValueError when ``X`` (more rows to train on: validation rows, a
    ``partial_fit`` chunk) has missing values but the estimator's network has no
    :class:`MissingValues` layer (the rows it was built from had none)."""
    if not fitted_with_missing and has_missing(X):
        raise ValueError(
            f"X has missing values (NaN), but {type(estimator).__name__} was fitted on rows "
            "without any, so its network has no input for them. Fit it on rows that have "
            "missing values too, or impute them upstream (e.g. SimpleImputer)."
        )


def zero_missing(X):
    """A copy of the rows ``X`` (float32, dense or CSR) with each NaN replaced by 0,
    and the columns that had one (sorted)."""
    if sp.issparse(X):
        X = X.copy()
        isnan = np.isnan(X.data)
        columns = np.unique(X.indices[isnan])
        X.data[isnan] = 0.0
        X.eliminate_zeros()
        return X, columns
    isnan = np.isnan(X)
    return np.where(isnan, np.float32(0.0), X), np.flatnonzero(isnan.any(axis=0))


def observed_mean_squares(prediction, target):
    """Mean of (prediction - target)^2 over the entries where ``target`` is
    observed (not NaN), as a reconstruction loss that never scores a missing
    entry; the plain mean when nothing is missing."""
    observed = ~torch.isnan(target)
    squares = torch.where(observed, prediction - target, 0.0) ** 2
    return squares.sum() / observed.sum().clamp_min(1)
