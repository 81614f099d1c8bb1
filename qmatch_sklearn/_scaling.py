"""Numeric columns in the network's units: bounded, and independent of the user's units.

A raw table keeps its natural units: incomes of ~1e4, populations of ~1e5,
years near 2000. Everything downstream of the input reads it unscaled
otherwise: the input feature block of ``passthrough=True``, the balance of
the embedding block against it (``_passthrough.py``), the closed-form heads
that penalise every weight alike, and the encoder's first layer. Every
estimator therefore maps each numeric column of ``X`` to the network's units
with an affine map fitted at ``fit`` on all its rows (unlabeled ones included:
no label is read), in float64, before the rows become float32:

    x'_j = clip((x_j - center_j) / scale_j, -MAX_DEVIATION, MAX_DEVIATION)

- a column with more than two distinct observed values is standardised:
  ``center_j`` its mean over the observed (non-NaN) entries and ``scale_j``
  its standard deviation, as ``StandardScaler`` does (the few-label
  benchmark's preprocessing), but at least its range (maximum minus minimum)
  over :data:`MAX_DEVIATION`;
- a column with two observed values (an indicator, a one-hot column made
  upstream) goes to {0, 1}: ``center_j`` its minimum, ``scale_j`` the gap, so a
  0/1 column is left exactly as it is and a yes/no column in any other
  coding becomes the same 0/1 column (two values whose gap exceeds float64,
  near its largest of either sign, are standardised instead);
- a constant column reads 0 whatever its value later: ``scale_j`` is
  float64's largest (:data:`CONSTANT_SCALE`); the network learned nothing
  about it, and a unit of its own would decide what a new value did.

The floor on the scale is what keeps rare values from becoming outliers: a
pixel that is 0 in all rows but a few has a standard deviation near 0, and
its few bright values would reach hundreds of standard deviations (and a
column whose value is 1 in one row of n, sqrt(n)); with the floor no fit
row maps beyond ``MAX_DEVIATION``, and every row given later is clipped to
the same bound, so a value beyond the fit rows' range (a pixel dark in every
fit row) cannot either. For columns near a normal distribution the floor does
not bind below about half a million rows (their range is 7.4 standard
deviations at 1,000 rows, 9.6 at 100,000). On MNIST's 1% split the
supervised baseline (MLP 512-512, seeds 0-4) went from 84.1% to 86.8% with the
floor, the clip and a non-normalising first layer, and to 87.8% with that layer's
tighter bound on columns of rare values (:class:`~._networks.InputScale`); the
paper reports 89.0% (its code feeds raw pixels) (``docs/design.md``).

Each case is invariant to a column's affine units: ``a * x + b`` with any
``a > 0`` and any ``b`` maps to the same ``x'``. Missing entries stay NaN
(the missing-values layer then fills them with the column's mean, 0). The
internal one-hot blocks of categorical columns have no units and are not
mapped. Sparse input is never densified: its columns are divided by the
scale (the standard deviation over all entries, implicit zeros included, at
least the largest absolute value over :data:`MAX_DEVIATION`, or the largest
absolute value of a two-valued column) and not centred, as
``StandardScaler(with_mean=False)`` does. (An estimator fitted on dense rows
centres sparse rows it is given later, densified, so that the same rows give
the same results.)

Standardisation rather than a quantile-normal map (the paper's
preprocessing): it is the map of the few-label benchmark's preprocessed path,
which the estimators were tuned on, so a raw table and the same table
standardised upstream give the same network input; and it is exact and
invertible within the bound, so a column with a few extreme values keeps them
in order and apart. Preprocess in a Pipeline (e.g. ``QuantileTransformer``)
for another map.
"""

import numpy as np
import scipy.sparse as sp
import torch

from ._missing import dense_blocks, fill_and_indicate
from ._networks import Encoder, InputScale

#: The bound of every mapped value, in scales: a scale is at least the column's
#: range over it, and rows mapped later are clipped to it.
MAX_DEVIATION = 10.0
#: The scale of a constant column: any value of it maps to 0.
CONSTANT_SCALE = np.finfo(np.float64).max


def _observed(block):
    """The mask of ``block``'s observed (non-NaN) entries, or None when all are."""
    observed = ~np.isnan(block)
    return None if observed.all() else observed


def _filled(block, observed, value):
    """``block`` with its unobserved entries read as ``value``: ``block`` itself
    where all are observed (``observed`` None), so a table without NaN skips
    the masking's passes over its rows and gets the same numbers."""
    return block if observed is None else np.where(observed, block, value)


def observed_moments(X):
    """Per column of dense ``X``: the count, mean, minimum and maximum of its
    observed entries, in float64 (one pass in row blocks, :func:`~._missing.dense_blocks`)."""
    n_features = X.shape[1]
    count = np.zeros(n_features)
    total = np.zeros(n_features)
    low = np.full(n_features, np.inf)
    high = np.full(n_features, -np.inf)
    for block in dense_blocks(X):
        observed = _observed(block)
        count += len(block) if observed is None else observed.sum(axis=0)
        with np.errstate(over="ignore", invalid="ignore"):  # beyond float64: summed again below
            total += _filled(block, observed, 0.0).sum(axis=0)
        low = np.minimum(low, _filled(block, observed, np.inf).min(axis=0))
        high = np.maximum(high, _filled(block, observed, -np.inf).max(axis=0))
    mean = total / np.maximum(count, 1)
    # beyond float64 (inf), or NaN where partial sums overflowed both ways (numpy sums a
    # column-major block pairwise)
    overflowed = np.flatnonzero(~np.isfinite(total) & (count > 0))
    if len(overflowed):  # values near float64's largest: summed in units of a power of two
        unit = power_of_two_above(np.maximum(np.abs(low), np.abs(high)))[overflowed]
        total = np.zeros(len(overflowed))
        for block in dense_blocks(X):
            total += np.nansum(block[:, overflowed] / unit, axis=0)
        mean[overflowed] = total / count[overflowed] * unit
    return count, mean, low, high


def power_of_two_above(largest):
    """Per column, the power of two 2^e at or above ``largest`` (1 where it is 0,
    infinite or NaN; 2^1023, float64's largest, from there on). Deviations
    divided by it square without overflow (values beyond ~1e154) or underflow
    (below ~1e-154); dividing by a power of two is exact, so a column in
    ordinary units gets the same standard deviation to the last bit."""
    exponent = np.frexp(np.where(np.isfinite(largest), largest, 0.0))[1]
    return np.ldexp(1.0, np.minimum(exponent, np.finfo(np.float64).maxexp - 1))


def mean_and_std(values):
    """Per column of the float64 array ``values`` (2-D, no NaN): the mean and the
    (biased) standard deviation, computed on the values divided by the power of
    two above the column's largest absolute value (:func:`power_of_two_above`),
    so that neither overflows beyond ~1e154 nor underflows below ~1e-154; in
    ordinary units they are numpy's ``mean`` and ``std`` to the last bit."""
    unit = power_of_two_above(np.abs(values).max(axis=0))
    scaled = values / unit
    mean = scaled.mean(axis=0)
    return mean * unit, np.sqrt(((scaled - mean) ** 2).mean(axis=0)) * unit


def _dense_scaling(X):
    count, mean, low, high = observed_moments(X)
    unit = power_of_two_above(np.maximum(np.abs(low), np.abs(high)))
    squares = np.zeros(X.shape[1])
    others = np.zeros(X.shape[1], dtype=bool)  # a value that is neither the min nor the max
    for block in dense_blocks(X):
        observed = _observed(block)
        deviation = block / unit  # then minus mean / unit: (block - mean) / unit, exactly,
        deviation -= mean / unit  # with no overflow on a range beyond float64
        deviation *= deviation
        squares += _filled(deviation, observed, 0.0).sum(axis=0)
        others |= _filled((block != low) & (block != high), observed, False).any(axis=0)
    std = np.sqrt(squares / np.maximum(count, 1)) * unit
    with np.errstate(over="ignore", invalid="ignore"):
        spread = high - low
    # a range beyond float64 (values near its largest) cannot be a scale: the std then
    finite = np.isfinite(spread)
    two_valued = ~others & finite
    center = np.where(two_valued, low, mean)
    floor = np.where(finite, spread / MAX_DEVIATION, high / MAX_DEVIATION - low / MAX_DEVIATION)
    scale = np.where(two_valued, spread, np.fmax(std, floor))
    center[count == 0] = 0.0  # no observed value: refused later, by the missing-values layer
    return center, np.where(scale > 0, scale, CONSTANT_SCALE)


def _sparse_scaling(X):
    X = sp.csr_matrix(X, dtype=np.float64)
    n_rows, n_features = X.shape
    data, columns = X.data, X.indices
    observed = ~np.isnan(data)
    data, columns = data[observed], columns[observed]
    count = n_rows - np.bincount(X.indices[~observed], minlength=n_features)
    mean = np.bincount(columns, data, minlength=n_features) / np.maximum(count, 1)
    # implicit zeros are entries too: (count - stored) of them, each (0 - mean)^2
    largest = np.zeros(n_features)
    np.maximum.at(largest, columns, np.abs(data))
    unit = power_of_two_above(largest)
    stored = np.bincount(columns, minlength=n_features)
    squares = np.bincount(columns, ((data - mean[columns]) / unit[columns]) ** 2,
                          minlength=n_features)
    squares += (count - stored) * (mean / unit) ** 2
    std = np.sqrt(squares / np.maximum(count, 1)) * unit
    nonzero = data != 0
    first = np.zeros(n_features)
    first[columns[nonzero]] = data[nonzero]  # one of each column's non-zero values
    others = np.zeros(n_features, dtype=bool)
    others[columns[nonzero & (data != first[columns])]] = True
    scale = np.where(others, np.maximum(std, largest / MAX_DEVIATION), largest)
    return np.zeros(n_features), np.where(scale > 0, scale, CONSTANT_SCALE)


def fit_scaling(X):
    """``(center, scale)``, float64 arrays of one entry per column of ``X``
    (dense or CSR, NaN for missing), as the module docstring describes."""
    return _sparse_scaling(X) if sp.issparse(X) else _dense_scaling(X)


def apply_scaling(X, center, scale):
    """``(X - center) / scale`` clipped to +-:data:`MAX_DEVIATION` as float32,
    computed in float64 in row blocks (NaN stays NaN). Sparse ``X`` stays CSR,
    only scaled, where ``center`` is 0 (fitted on sparse rows); centred by a map
    fitted on dense rows, it becomes dense."""
    if sp.issparse(X) and not np.any(center):
        X = sp.csr_matrix(X)
        data = np.clip(X.data.astype(np.float64) / scale[X.indices], -MAX_DEVIATION,
                       MAX_DEVIATION)
        return sp.csr_matrix((data.astype(np.float32), X.indices.copy(), X.indptr.copy()),
                             shape=X.shape)
    out = np.empty(X.shape, dtype=np.float32)
    start = 0
    for block in dense_blocks(X):
        with np.errstate(over="ignore"):  # a deviation beyond float64: clipped all the same
            mapped = block - center  # a new array: the user's X is never written
            mapped /= scale
        out[start : start + len(block)] = np.clip(mapped, -MAX_DEVIATION, MAX_DEVIATION,
                                                  out=mapped)
        start += len(block)
    return out


#: Rows per block of :func:`input_statistics` (a CSR block stays sparse there).
STATISTICS_ROWS = 8192


def _blocks(X, missing):
    """The encoder's input rows in blocks of :data:`STATISTICS_ROWS` (float64; a CSR
    block stays sparse)."""
    for start in range(0, X.shape[0], STATISTICS_ROWS):
        block = X[start : start + STATISTICS_ROWS]
        if missing is not None:
            block = fill_and_indicate(block, missing)
        yield block.astype(np.float64) if sp.issparse(block) else np.asarray(block, np.float64)


def _at(block, values):
    """Rows of ``block`` equal to ``values`` (one per column), per column; a CSR
    block's implicit zeros count where the value is 0."""
    if not sp.issparse(block):
        return (block == values).sum(axis=0)
    explicit = np.bincount(block.indices[block.data == values[block.indices]],
                           minlength=block.shape[1])
    implicit = block.shape[0] - np.diff(block.tocsc().indptr)
    return explicit + np.where(values == 0, implicit, 0)


def input_statistics(X, missing=None):
    """Per column of the encoder's input (the rows ``X``, float32, dense or CSR,
    through the missing-values layer ``missing``: filled, then indicators), in
    float64: its mean, and its compression. A column of rare values, at one end
    of its range in more than half of the rows (a pixel that is mostly dark, a
    count that is mostly 0), is compressed so that no row lies beyond
    :attr:`~._networks.InputScale.BOUND` of its standard deviations (1 over the
    larger of its standard deviation and its range over the bound, at most 1);
    every other column has compression 1."""
    total = squares = 0.0
    low = high = at_low = at_high = None  # the extremes so far, and the rows at them
    for block in _blocks(X, missing):
        if sp.issparse(block):  # never densified; min and max count implicit zeros
            block_sum = np.asarray(block.sum(axis=0)).ravel()
            block_squares = np.asarray(block.multiply(block).sum(axis=0)).ravel()
            block_low = block.min(axis=0).toarray().ravel()
            block_high = block.max(axis=0).toarray().ravel()
        else:
            block_sum, block_squares = block.sum(axis=0), np.square(block).sum(axis=0)
            block_low, block_high = block.min(axis=0), block.max(axis=0)
        total, squares = total + block_sum, squares + block_squares
        block_at_low, block_at_high = _at(block, block_low), _at(block, block_high)
        if low is None:
            low, high, at_low, at_high = block_low, block_high, block_at_low, block_at_high
            continue
        # a new extreme restarts its count; an equal one adds to it
        at_low = np.where(block_low < low, block_at_low,
                          at_low + np.where(block_low == low, block_at_low, 0))
        at_high = np.where(block_high > high, block_at_high,
                           at_high + np.where(block_high == high, block_at_high, 0))
        low, high = np.minimum(low, block_low), np.maximum(high, block_high)
    mean = total / X.shape[0]
    std = np.sqrt(np.maximum(squares / X.shape[0] - mean**2, 0.0))
    spread = np.maximum(std, (high - low) / InputScale.BOUND)
    rare = 2 * np.maximum(at_low, at_high) > X.shape[0]
    compression = np.where(rare & (spread > 1.0), 1.0 / np.where(spread > 1.0, spread, 1.0), 1.0)
    return mean, compression


@torch.no_grad()
def center_input(module, X, missing=None):
    """Set the fixed ``mean`` and ``compression`` of the input layer of every
    built-in :class:`~._networks.Encoder` in ``module`` (a student and its
    teacher copies alike) from the encoder's input over the rows ``X``
    (:func:`input_statistics`): sparse rows, which the map does not centre,
    then reach the hidden layers as the same rows dense do, and no fit row
    enters beyond the layer's bound. A network of the user's own
    (``architecture=``) is left as it is."""
    layers = [m[0] for m in module.modules() if isinstance(m, Encoder)]
    if not layers:
        return
    mean, compression = input_statistics(X, missing)
    bound = np.where(compression < 1.0, InputScale.BOUND, np.finfo(np.float32).max)
    for layer in layers:
        layer.mean.copy_(torch.as_tensor(mean, dtype=layer.mean.dtype))
        layer.compression.copy_(torch.as_tensor(compression, dtype=layer.compression.dtype))
        layer.bound.copy_(torch.as_tensor(bound, dtype=layer.bound.dtype))
