"""The table input: what an estimator learns about the columns of ``X``, in one place.

:class:`TableInput` is fitted once, in ``fit``, on every row of ``X`` (no label), and makes the
network's input rows afterwards. pandas, polars and pyarrow tables (:func:`as_pandas`), arrays
and sparse matrices enter here; a new kind of column is added here. It learns:

- **Categorical columns** (``categorical_features``; "from_dtype" reads ``category``, ``string``
  and ``object`` dtypes, as ``HistGradientBoostingClassifier``, but objects that are all
  decimals as numbers): ``categories_``, each column a one-hot block, zeros for a missing or
  unseen category (as ``OneHotEncoder`` with ``handle_unknown="ignore"``), corrupted as one
  unit. Dates and durations are refused by name.
- **The numeric map** ``x' = clip((x - center_) / scale_, -MAX_DEVIATION, MAX_DEVIATION)``,
  fitted in float64 on all rows and invariant to a column's affine units: ``StandardScaler``
  with a scale at least the range over ``MAX_DEVIATION`` (rare values stay moderate); a
  two-valued column to {0, 1}, a constant one to 0; sparse input scaled, not centred. The
  paper's quantile map is a Pipeline step away (``docs/design.md``).
- **Missing values** (NaN): :class:`~._networks.MissingValues` fills each with its column's mean,
  with an indicator only where missingness is informative (:func:`informative_missingness`):
  other indicators are noise (``benchmarks/results/missing.md``).
- **The encoder's input layer**: its fixed mean and compression (:func:`center_input`).

Estimators keep it as ``_table_input`` (one around a library encoder reuses the encoder's), read
by ``transform``, ``predict``, :func:`~qmatch_sklearn.save` and the ONNX export.
"""

import contextlib
import datetime
import decimal

import numpy as np
import pandas as pd
import scipy.sparse as sp
import torch
from pandas.api.types import is_bool_dtype, is_numeric_dtype, is_object_dtype, is_string_dtype
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_X_y, validate_data

from ._constraints import NETWORK_CONSTRAINTS
from ._networks import Encoder, InputScale, MissingValues
from ._precision import check_float32_default
from ._warnings import warn

# Columns named by a parameter (feature_groups, categorical_features): by index or name.

def name_positions(names):
    """``{name: position}`` of X's column names, or None when X has none."""
    return None if names is None else {name: j for j, name in enumerate(names)}


def column_position(column, positions, n_features, parameter):
    """The position of ``column``, an index or a name in ``positions``; a ValueError if unknown."""
    if isinstance(column, str):
        if positions is None:
            raise ValueError(
                f"{parameter} names the column {column!r}, but X has no column names "
                "(pass a DataFrame, or column indices)."
            )
        if column not in positions:
            raise ValueError(
                f"{parameter} names the column {column!r}, which is not among X's columns."
            )
        return positions[column]
    j = int(column)
    if not -n_features <= j < n_features:
        raise ValueError(
            f"{parameter} has the column index {j}, but X has {n_features} columns."
        )
    return j % n_features


# Checks on the rows, before anything trains on them.

def holds_non_numbers(X):
    """Whether dense ``X`` holds values that do not convert to float (strings, say)."""
    if sp.issparse(X):
        return False
    if isinstance(X, pd.DataFrame):
        columns = [X[name].to_numpy() for name in X.columns if not is_numeric_dtype(X[name])]
    else:
        try:
            columns = [np.asarray(X)]
        except ValueError:  # ragged nested lists: not a matter of numbers
            return False
    for column in columns:
        if column.dtype.kind in "OUS":
            try:
                column.astype(np.float64)
            except (TypeError, ValueError):
                return True
    return False


def check_two_samples(estimator, n_samples):
    if n_samples < 2:
        raise ValueError(
            f"{type(estimator).__name__} needs at least 2 samples to fit (batch "
            f"normalisation), got n_samples = {n_samples}."
        )


def column_groups(estimator, feature_groups, n_features):
    """``feature_groups`` as each column's group id (a column in no group alone), or None.
    Raises a ValueError for an unknown column (names: ``feature_names_in_``) or one in two."""
    if feature_groups is None:
        return None
    positions = name_positions(getattr(estimator, "feature_names_in_", None))
    group_of = np.full(n_features, -1, dtype=np.int64)
    for g, group in enumerate(feature_groups):
        for column in group:
            j = column_position(column, positions, n_features, "feature_groups")
            if group_of[j] != -1:
                raise ValueError(
                    f"Column {column!r} is in two groups of feature_groups (groups "
                    f"{int(group_of[j])} and {g}); each column can be in one group only."
                )
            group_of[j] = g
    alone = np.flatnonzero(group_of == -1)
    group_of[alone] = len(feature_groups) + np.arange(len(alone))
    return group_of


# Categorical columns: one-hot blocks of the network's input.

#: Most categories of a column: a wider block is an identifier (HistGradientBoosting's limit).
MAX_CATEGORIES = 255


def _is_categorical_dtype(dtype):
    """Whether "from_dtype" reads ``dtype`` as categorical: category, string or object."""
    return isinstance(dtype, pd.CategoricalDtype) or is_string_dtype(dtype)


def _categorical_dtypes(frame):
    """:func:`_is_categorical_dtype` per column of a DataFrame."""
    return np.array([_is_categorical_dtype(dtype) for dtype in frame.dtypes])


#: What an object column's values may not be: read as categories, every later date, time,
#: duration or period would be unseen.
TEMPORAL_TYPES = (datetime.date, datetime.time, datetime.timedelta, pd.Period, np.datetime64,
                  np.timedelta64)


def _temporal_type(column):
    """The type of an object column's first observed value where it is temporal, else None."""
    observed = column.notna().to_numpy()
    value = column.iat[int(observed.argmax())] if observed.any() else None
    return type(value).__name__ if isinstance(value, TEMPORAL_TYPES) else None


def _refuse_columns(described):
    if described:
        raise ValueError(
            f"Column(s) {', '.join(described)} of X are neither numeric nor categorical. "
            "Convert them upstream: a date to numbers (its year, month, day of the week, "
            "or days since a reference date), a duration to seconds, or either to strings "
            "to read it as categories."
        )


def refuse_unreadable_columns(X, mask):
    """Refuse by name the columns, not categorical by ``mask``, neither numeric nor bool (dates,
    durations): as numbers they are nanoseconds, as categories every later date is unseen."""
    if not isinstance(X, pd.DataFrame):
        return
    if mask is None or len(mask) != X.shape[1]:  # other columns than at fit: named later
        mask = np.zeros(X.shape[1], dtype=bool)
    _refuse_columns([
        f"{X.columns[j]!r} ({dtype})" for j, dtype in enumerate(X.dtypes)
        if not mask[j] and not (
            is_numeric_dtype(dtype) or is_bool_dtype(dtype) or _is_categorical_dtype(dtype))
    ])


def refuse_object_dates(X):
    """Refuse by name, at fit, the object columns "from_dtype" would read as categories whose
    values are dates, times, durations or periods (pandas' ``.dt.date``, pyarrow's default
    ``to_pandas``), as :func:`refuse_unreadable_columns` refuses typed ones."""
    if isinstance(X, pd.DataFrame):
        _refuse_columns([
            f"{X.columns[j]!r} (object, of {kind})" for j, dtype in enumerate(X.dtypes)
            if is_object_dtype(dtype) and (kind := _temporal_type(X.iloc[:, j])) is not None
        ])


def categorical_mask(X, categorical_features):
    """Mask of ``X``'s categorical columns under ``categorical_features`` (checked), or None."""
    if categorical_features is None:
        return None
    if isinstance(categorical_features, str):  # "from_dtype"
        if not isinstance(X, pd.DataFrame):
            return None
        mask = _categorical_dtypes(X)
        return mask if mask.any() else None
    if sp.issparse(X):
        as_frame(X)  # refused: categorical columns of a sparse matrix
    if not isinstance(X, pd.DataFrame) and np.ndim(X) != 2:
        return None  # validate_data's error for input that is not 2-D follows
    n_features = np.shape(X)[1]
    given = list(categorical_features)
    if given and all(isinstance(item, (bool, np.bool_)) for item in given):
        if len(given) != n_features:
            raise ValueError(
                f"categorical_features is a boolean mask of {len(given)} entries, but X has "
                f"{n_features} columns."
            )
        mask = np.asarray(given, dtype=bool)
        return mask if mask.any() else None
    positions = name_positions(X.columns) if isinstance(X, pd.DataFrame) else None
    mask = np.zeros(n_features, dtype=bool)
    for item in given:
        mask[column_position(item, positions, n_features, "categorical_features")] = True
    return mask if mask.any() else None


def as_frame(X):
    if sp.issparse(X):
        raise ValueError(
            "categorical_features needs dense X (a DataFrame or an array): categorical "
            "columns of a sparse matrix are not supported. One-hot encode them upstream."
        )
    return X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=object))


def _name(X, j):
    return repr(X.columns[j]) if isinstance(X, pd.DataFrame) else f"{j}"


def fit_categories(X, mask):
    """Each categorical column's categories: declared, else observed (sorted if they sort).
    Raises a ValueError for a column with none or over ``MAX_CATEGORIES``."""
    frame = as_frame(X)
    categories = []
    for j in np.flatnonzero(mask):
        column = frame.iloc[:, j]
        if isinstance(column.dtype, pd.CategoricalDtype):
            values = column.cat.categories.to_numpy()
        else:
            try:
                values = pd.unique(column.dropna().to_numpy())
            except TypeError as error:  # lists, dicts, sets: no category compares equal
                raise ValueError(
                    f"Categorical column {_name(X, j)} of X holds values that cannot be "
                    f"categories ({error}). Convert them upstream, e.g. to strings."
                ) from error
            with contextlib.suppress(TypeError):
                values = np.sort(values)
        if column.isna().all() or len(values) == 0:
            raise ValueError(
                f"Categorical column {_name(X, j)} of X has no observed value (all missing): "
                "there is nothing to learn from it. Drop it before fitting."
            )
        if len(values) > MAX_CATEGORIES:
            raise ValueError(
                f"Categorical column {_name(X, j)} of X has {len(values)} categories, more "
                f"than {MAX_CATEGORIES}: as one-hot columns it would mostly be an identifier. "
                "Drop it, or encode it upstream (e.g. sklearn's TargetEncoder)."
            )
        categories.append(_plain_categories(values))
    return categories


#: The plain dtype of an object array whose items are all of one kind of scalar.
_PLAIN_KINDS = ((str, str), ((bool, np.bool_), bool), ((int, np.integer), np.int64),
                ((float, np.floating), np.float64))


def _plain_categories(values):
    """``values`` as str, bool, int64 or float64 when all of one kind, so a file can store them."""
    if values.dtype.kind != "O":
        return values
    for types, dtype in _PLAIN_KINDS:
        # a bool is an int: the booleans are told apart first
        if all(isinstance(value, types) and (dtype is bool or not isinstance(
                value, (bool, np.bool_))) for value in values):
            with contextlib.suppress(OverflowError):  # an int beyond int64 stays an object
                return values.astype(dtype)
    return values


def input_widths(n_features, mask, categories):
    """Network input columns per column of ``X``: 1, or its number of categories."""
    widths = np.ones(n_features, dtype=np.int64)
    if mask is not None:
        widths[mask] = [len(values) for values in categories]
    return widths


def input_origin(widths):
    """For each network input column, the column of ``X`` it comes from."""
    return np.repeat(np.arange(len(widths)), widths)


def input_starts(widths):
    """For each column of ``X``, its first network input column."""
    return np.cumsum(widths) - widths


def expand_groups(group_of, widths):
    """``group_of`` (None: columns alone) over the one-hot blocks, each one unit; or None."""
    if group_of is None and (widths == 1).all():
        return None
    base = np.arange(len(widths)) if group_of is None else group_of
    return np.repeat(base, widths)


def refuse_an_array(estimator, X, mask):
    """With "from_dtype", a ValueError naming the categorical columns if ``X`` has no dtypes."""
    if not isinstance(X, pd.DataFrame):
        names = np.asarray(getattr(estimator, "feature_names_in_", np.arange(len(mask))))
        names = names[mask]
        raise ValueError(
            f"{type(estimator).__name__} was fitted on a DataFrame with categorical columns "
            f"({', '.join(map(str, names))}); "
            f"pass a DataFrame with the same columns, not {type(X).__name__}."
        )


def check_dtypes_unchanged(X, mask):
    """With "from_dtype", a ValueError naming the columns whose kind differs from ``mask``."""
    changed = np.flatnonzero(_categorical_dtypes(X) != mask)
    if len(changed):
        described = ", ".join(
            f"{X.columns[j]!r} ({'categorical' if mask[j] else 'numeric'} "
            f"at fit, dtype {X.dtypes.iloc[j]} now)"
            for j in changed
        )
        raise ValueError(
            f"Column(s) of X changed kind since fit: {described}. Cast them back to the "
            "dtype they had at fit."
        )


def _kinds(values):
    """The kinds of scalar among ``values`` (str, bool, number, or a type's name)."""
    def kind(value):
        if isinstance(value, str):
            return "str"
        if isinstance(value, (bool, np.bool_)):
            return "bool"
        if isinstance(value, (int, float, np.number)):
            return "number"
        return type(value).__name__
    return {kind(value) for value in values}


def one_hot_table(X, mask, categories, numeric):
    """The network's input rows (``numeric`` and the one-hot blocks), and the categorical columns
    whose values are all of another kind than the categories (1 at fit, "1" now), to warn of."""
    frame = as_frame(X)
    widths = input_widths(len(mask), mask, categories)
    starts = input_starts(widths)
    out = np.zeros((frame.shape[0], int(widths.sum())), dtype=np.float32)
    out[:, starts[~mask]] = numeric
    rows = np.arange(frame.shape[0])
    mismatched = []
    for j, values in zip(np.flatnonzero(mask), categories, strict=True):
        column = frame.iloc[:, j].to_numpy()
        codes = pd.Index(values).get_indexer(column)  # -1: missing, unseen
        seen = codes >= 0
        out[rows[seen], starts[j] + codes[seen]] = 1.0
        if not seen.any():
            kinds, fit_kinds = _kinds(pd.unique(pd.Series(column).dropna())), _kinds(values)
            if kinds and not kinds & fit_kinds:
                mismatched.append((j, kinds, fit_kinds, values[:3].tolist()))
    return out, mismatched


def warn_mismatched_kinds(estimator, X, mismatched):
    """Warn of the columns that :func:`one_hot_table` found blanked by a type change upstream."""
    described = "; ".join(
        f"{_name(X, j)} ({'/'.join(sorted(kinds))} now, "
        f"{'/'.join(sorted(fit_kinds))} at fit: {examples}...)"
        for j, kinds, fit_kinds, examples in mismatched
    )
    warn(
        f"{type(estimator).__name__}: no value of categorical column(s) {described} is a "
        "category seen at fit, so every row reads them as missing. Cast them to the type "
        "they had at fit.",
        UserWarning,
    )


# Numeric columns: the numeric map to the network's units.

#: Bound of every mapped value, in scales: a scale is at least the column's range over it.
MAX_DEVIATION = 10.0
#: The scale of a constant column: any value of it maps to 0.
CONSTANT_SCALE = np.finfo(np.float64).max


def _observed(block):
    """The mask of ``block``'s observed (non-NaN) entries, or None when all are."""
    observed = ~np.isnan(block)
    return None if observed.all() else observed


def _filled(block, observed, value):
    """``block`` with unobserved entries as ``value``; itself if ``observed`` is None (no pass)."""
    return block if observed is None else np.where(observed, block, value)


def observed_moments(X):
    """Per column of dense ``X``: count, mean, min and max of its observed entries, float64."""
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
    # inf, or NaN where numpy's pairwise partial sums overflowed both ways: resummed in units
    overflowed = np.flatnonzero(~np.isfinite(total) & (count > 0))
    if len(overflowed):
        unit = power_of_two_above(np.maximum(np.abs(low), np.abs(high)))[overflowed]
        total = np.zeros(len(overflowed))
        for block in dense_blocks(X):
            total += np.nansum(block[:, overflowed] / unit, axis=0)
        mean[overflowed] = total / count[overflowed] * unit
    return count, mean, low, high


def power_of_two_above(largest):
    """Per column, the power of two at or above ``largest``: an exact unit that squares safely."""
    exponent = np.frexp(np.where(np.isfinite(largest), largest, 0.0))[1]
    return np.ldexp(1.0, np.minimum(exponent, np.finfo(np.float64).maxexp - 1))


def mean_and_std(values):
    """numpy's mean and std per column, without overflow (in :func:`power_of_two_above` units)."""
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
        deviation = block / unit  # (block - mean) / unit, exactly, with no overflow
        deviation -= mean / unit
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
    """``(center, scale)`` per column of ``X`` (dense or CSR): the module docstring's map."""
    return _sparse_scaling(X) if sp.issparse(X) else _dense_scaling(X)


def apply_scaling(X, center, scale):
    """``(X - center) / scale`` clipped to +-MAX_DEVIATION, float32 (CSR kept if center is 0)."""
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


# Missing values: the missing-value layer's fit, and the rows it makes.

#: Rows per block where X is read in blocks: the scans for missing values, and the input
#: statistics (:func:`input_statistics`, where a CSR block stays sparse).
SCAN_ROWS = 8192
#: Most bytes of a float64 row block in the informative-missingness test.
SCAN_BYTES = 32 * 2**20
#: Significance of :func:`informative_missingness`, before the Bonferroni correction.
INDICATOR_ALPHA = 0.01
#: Above this many correlations the test is skipped: every column with NaN is indicated.
MAX_INDICATOR_TEST = 10**7


def missing_values_layer(X, describe=None):
    """The :class:`MissingValues` layer fitted on ``X``, or None; refuses all-NaN columns."""
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
        for block in row_blocks(X):
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
    layer.missing_columns = columns  # known at fit only (TableInput.fit_missing_values)
    return layer


def row_blocks(X, rows=None):
    """Consecutive blocks of at most ``rows`` (default :data:`SCAN_ROWS`) rows of dense or CSR
    ``X`` (slices, not copies, of dense ``X``)."""
    rows = SCAN_ROWS if rows is None else rows
    return (X[start : start + rows] for start in range(0, X.shape[0], rows))


def dense_blocks(X):
    """Row blocks of dense or CSR ``X`` as dense float64 arrays of at most ``SCAN_BYTES``."""
    for block in row_blocks(X, max(1, SCAN_BYTES // (8 * max(1, X.shape[1])))):
        yield np.asarray(block.toarray() if sp.issparse(block) else block, dtype=np.float64)


def informative_missingness(X, columns, fill_values):
    """Which of ``columns`` (those with NaN) have missingness related to the rest of the row.

    m_j is informative when its correlation with another column's (filled) value or
    missingness exceeds z_{alpha/2p} / sqrt(n), alpha = ``INDICATOR_ALPHA`` Bonferroni-corrected
    over the p compared: under missingness completely at random each is N(0, 1/n). Missingness
    that depends on the missing value alone is invisible to it.
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


def fill_and_indicate(X, layer):
    """What ``layer`` makes of ``X`` (dense or CSR), in NumPy: ``passthrough=True``'s block."""
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
    return any(np.isnan(block).any() for block in row_blocks(X))


def check_missing_columns(estimator, X, fitted_with_missing):
    """Refuse training rows ``X`` with NaN when the network has no :class:`MissingValues` layer."""
    if not fitted_with_missing and has_missing(X):
        raise ValueError(
            f"X has missing values (NaN), but {type(estimator).__name__} was fitted on rows "
            "without any, so its network has no input for them. Fit it on rows that have "
            "missing values too, or impute them upstream (e.g. SimpleImputer)."
        )


def zero_missing(X):
    """A copy of ``X`` (dense or CSR) with each NaN as 0, and the columns that had one."""
    if sp.issparse(X):
        X = X.copy()
        isnan = np.isnan(X.data)
        columns = np.unique(X.indices[isnan])
        X.data[isnan] = 0.0
        X.eliminate_zeros()
        return X, columns
    isnan = np.isnan(X)
    return np.where(isnan, np.float32(0.0), X), np.flatnonzero(isnan.any(axis=0))


# The encoder's input layer: its statistics over the fit rows.

def _blocks(X, missing):
    """The encoder's input rows in float64 blocks of :data:`SCAN_ROWS`."""
    for block in row_blocks(X):
        if missing is not None:
            block = fill_and_indicate(block, missing)
        yield block.astype(np.float64) if sp.issparse(block) else np.asarray(block, np.float64)


def _at(block, values):
    """Per column, the rows of ``block`` equal to ``values`` (implicit zeros included)."""
    if not sp.issparse(block):
        return (block == values).sum(axis=0)
    explicit = np.bincount(block.indices[block.data == values[block.indices]],
                           minlength=block.shape[1])
    implicit = block.shape[0] - np.diff(block.tocsc().indptr)
    return explicit + np.where(values == 0, implicit, 0)


def input_statistics(X, missing=None):
    """Per column of the encoder's input (``X`` through ``missing``): mean and compression. The
    latter is below 1 only for a column at one end of its range in over half the rows, so that no
    row lies beyond :attr:`~._networks.InputScale.BOUND` of its standard deviations."""
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
    """Set each built-in :class:`~._networks.Encoder`'s input layer in ``module`` from
    :func:`input_statistics`, so that sparse rows (uncentred by the map) enter as dense ones do."""
    layers = [m[0] for m in module.modules() if isinstance(m, Encoder)]
    if not layers:
        return
    mean, compression = input_statistics(X, missing)
    bound = np.where(compression < 1.0, InputScale.BOUND, np.finfo(np.float32).max)
    for layer in layers:
        layer.mean.copy_(torch.as_tensor(mean, dtype=layer.mean.dtype))
        layer.compression.copy_(torch.as_tensor(compression, dtype=layer.compression.dtype))
        layer.bound.copy_(torch.as_tensor(bound, dtype=layer.bound.dtype))


# The table input.

#: The numeric columns' dtypes: float64 and float32 stay as they are, anything else float64.
FLOAT_DTYPES = (np.float64, np.float32)
#: The table libraries whose tables are read as the pandas DataFrames they convert to.
FOREIGN_TABLES = ("polars", "pyarrow")
#: ``y`` not given: only ``X`` is read (scikit-learn's marker).
NO_Y = "no_validation"


def _arrow_dictionaries_as_categories(frame):
    """A pandas DataFrame with its Arrow-backed dictionary columns (``pd.ArrowDtype``) as the
    pandas categoricals their Arrow form converts to, as a pyarrow table's, in a shallow copy."""
    arrow = [j for j, dtype in enumerate(frame.dtypes) if isinstance(dtype, pd.ArrowDtype)]
    if not arrow:
        return frame
    import pyarrow as pa  # installed wherever a pandas column is Arrow-backed

    columns = [j for j in arrow if pa.types.is_dictionary(frame.dtypes.iloc[j].pyarrow_dtype)]
    if not columns:
        return frame
    frame = frame.copy(deep=False)
    for j in columns:
        categories = pa.array(frame.iloc[:, j].array).to_pandas()
        frame.isetitem(j, pd.Series(categories.array, index=frame.index))
    return frame


def _holds_only(column, types, *, if_none):
    """Whether an object column's observed values are all of ``types`` (booleans are not
    numbers here); ``if_none`` for a column with none."""
    observed = column.dropna()
    if not len(observed):
        return if_none
    return all(isinstance(value, types) and not isinstance(value, (bool, np.bool_))
               for value in observed)


def _objects_as_floats(frame, columns):
    """``frame`` with its ``columns`` as float64, in a shallow copy (the caller's is kept)."""
    if not columns:
        return frame
    frame = frame.copy(deep=False)
    for j in columns:
        frame.isetitem(j, frame.iloc[:, j].astype(np.float64))
    return frame


def _decimals_as_floats(frame):
    """A pandas DataFrame with its object columns of ``decimal.Decimal`` values (pandas'
    ``read_sql`` of a NUMERIC column) as float64, as pyarrow's decimals are read: as objects
    "from_dtype" would read each distinct value as a category."""
    return _objects_as_floats(frame, [
        j for j, dtype in enumerate(frame.dtypes)
        if is_object_dtype(dtype) and _holds_only(frame.iloc[:, j], decimal.Decimal,
                                                  if_none=False)])


def numbers_as_floats(frame, numeric):
    """The object columns of a later ``frame`` that were numeric at fit (``numeric``) and hold
    only numbers or nothing, as float64: a batch of a NUMERIC column read by ``read_sql``
    may hold no decimal (all NULL) or floats beside them."""
    if not isinstance(frame, pd.DataFrame) or len(numeric) != frame.shape[1]:
        return frame
    return _objects_as_floats(frame, [
        j for j, dtype in enumerate(frame.dtypes)
        if numeric[j] and is_object_dtype(dtype)
        and _holds_only(frame.iloc[:, j], (decimal.Decimal, int, float, np.number),
                        if_none=True)])


def as_pandas(X):
    """A polars or pyarrow table as the pandas DataFrame its Arrow form converts to, read alike
    (anything else as it is, but a pandas DataFrame's Arrow dictionaries as categoricals and
    its object columns of decimals as numbers). A polars ``Categorical`` declares no order, so
    its categories are sorted as pandas sorts inferred ones; an ``Enum``'s and an Arrow
    dictionary's keep theirs."""
    if isinstance(X, pd.DataFrame):
        return _decimals_as_floats(_arrow_dictionaries_as_categories(X))
    library = type(X).__module__.split(".")[0]
    if library not in FOREIGN_TABLES:
        return X
    if not hasattr(X, "to_pandas"):
        raise TypeError(f"X is a {library} {type(X).__name__}, not a table of rows: pass the "
                        "table it reads or computes (a polars LazyFrame's X.collect(), a "
                        "pyarrow Dataset's X.to_table()).")
    if not hasattr(X, "schema"):  # a Series or an Array: one column, refused downstream
        return X.to_pandas()
    import pyarrow as pa

    table = X.to_arrow() if library == "polars" else X
    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type):
            table = table.set_column(i, field.name, table.column(i).cast(pa.float64()))
    frame = table.to_pandas(date_as_object=False)
    for field, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_boolean(field.type) and column.null_count:  # objects otherwise
            frame[field.name] = frame[field.name].astype("boolean")
    if library == "polars":
        import polars as pl

        for name, dtype in X.schema.items():
            if isinstance(dtype, pl.Categorical):
                categories = frame[name].cat.categories
                frame[name] = frame[name].cat.reorder_categories(categories.sort_values())
    return frame


def _no_y(y):
    return isinstance(y, str) and y == NO_Y


class TableInput(BaseEstimator):
    """What an estimator learns about the columns of ``X``, and the network input it makes.

    Parameters
    ----------
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        Which columns are categorical, as the estimators' parameter of that name says.

    Attributes
    ----------
    is_categorical_ : ndarray of bool or None
        Which columns of ``X`` are categorical (None: none is).
    categories_ : list of ndarray or None
        The categories of each categorical column, in order.
    center_, scale_ : ndarray of shape (n_features,)
        The numeric map, one entry per column of ``X`` (0 and 1 for a categorical one).
    missing_features_, missing_indicators_ : ndarray of int
        The columns of ``X`` with missing values at fit, and those of them whose
        missingness gets an indicator channel.
    """

    _parameter_constraints = {
        "categorical_features": NETWORK_CONSTRAINTS["categorical_features"],
    }

    def __init__(self, categorical_features="from_dtype"):
        self.categorical_features = categorical_features

    #: The fitted attributes, which :meth:`state` holds beside ``categorical_features``.
    FITTED = ("is_categorical_", "categories_", "center_", "scale_", "missing_features_",
              "missing_indicators_")

    def state(self):
        """The plain dict estimators keep as ``_table_input`` (files hold no class of their own)."""
        return {"categorical_features": self.categorical_features,
                **{name: getattr(self, name) for name in self.FITTED if hasattr(self, name)}}

    @classmethod
    def from_state(cls, state):
        """The fitted table input that :meth:`state` described."""
        table = cls(state["categorical_features"])
        for name in cls.FITTED:
            if name in state:  # all of them once fitted (a file's are checked)
                setattr(table, name, state[name])
        return table

    def fit_transform(self, owner, X, y=NO_Y):
        """Fit the kinds, categories and numeric map on ``owner``'s ``X``, and :meth:`transform`."""
        return self._rows(owner, X, y, reset=True, fit=True)

    def transform(self, owner, X, y=NO_Y, *, reset=False):
        """The rows ``X`` as the network's input (and ``y``, checked); ``X``'s columns checked
        against ``owner``'s, or recorded with ``reset`` (a frozen encoder's table input)."""
        return self._rows(owner, X, y, reset=reset, fit=False)

    def validation_rows(self, owner, X_val, fitted_with_missing):
        """``X_val`` read as the fit rows (:func:`check_missing_columns`); errors name ``X_val``."""
        try:
            X_val = self.transform(owner, X_val)
            check_missing_columns(owner, X_val, fitted_with_missing)
        except ValueError as error:
            raise ValueError(f"X_val: {error}") from error
        return X_val

    def _rows(self, owner, X, y, *, reset, fit):
        check_float32_default(type(owner).__name__)
        X = as_pandas(X)
        if fit:
            if isinstance(self.categorical_features, str):  # "from_dtype"
                refuse_object_dates(X)
            mask = categorical_mask(X, self.categorical_features)
            self.is_categorical_ = mask
            self.categories_ = None if mask is None else fit_categories(X, mask)
        mask = self.is_categorical_
        if not fit and mask is not None:
            X = numbers_as_floats(X, ~mask)
        refuse_unreadable_columns(X, mask)
        if mask is not None:
            return self._table_rows(owner, X, y, reset=reset, fit=fit)
        try:
            checked = validate_data(owner, X, y, reset=reset, dtype=FLOAT_DTYPES,
                                    accept_sparse="csr", ensure_all_finite="allow-nan")
        except ValueError as error:
            if not holds_non_numbers(X):
                raise
            raise ValueError(
                f"{type(owner).__name__} needs numeric features ({error}). Pass a DataFrame "
                "whose categorical columns have dtype category, string or object (read by "
                "categorical_features='from_dtype'), name them in categorical_features, or "
                "encode them upstream, e.g. with a OneHotEncoder in a ColumnTransformer."
            ) from error
        if _no_y(y):
            return self._in_network_units(checked, fit)
        X, y = checked
        return self._in_network_units(X, fit), y

    def _table_rows(self, owner, X, y, *, reset, fit):
        """:meth:`_rows` of a table with categorical columns (kinds checked with "from_dtype")."""
        from_dtype = not reset and isinstance(self.categorical_features, str)
        if from_dtype:
            refuse_an_array(owner, X, self.is_categorical_)
        validate_data(owner, X, skip_check_array=True, reset=reset)
        if from_dtype:
            check_dtypes_unchanged(X, self.is_categorical_)
        frame = as_frame(X)
        if not len(frame):  # the message check_array would give, with X's own shape
            raise ValueError(f"Found array with 0 sample(s) (shape={frame.shape}) while a "
                             f"minimum of 1 is required by {type(owner).__name__}.")
        mask = self.is_categorical_
        numeric = frame.iloc[:, np.flatnonzero(~mask)]
        if not numeric.shape[1]:  # every column categorical: check_array finds no dtype in none
            numeric = np.empty((len(frame), 0))
        params = {"ensure_min_features": 0, "estimator": owner, "dtype": FLOAT_DTYPES,
                  "ensure_all_finite": "allow-nan"}
        if _no_y(y):
            numeric = check_array(numeric, **params)
        else:
            numeric, y = check_X_y(numeric, y, **params)
        out, mismatched = one_hot_table(frame, mask, self.categories_,
                                        self._in_network_units(numeric, fit))
        if mismatched:
            warn_mismatched_kinds(owner, X, mismatched)
        return out if _no_y(y) else (out, y)

    def _in_network_units(self, numeric, fit):
        """``numeric`` mapped by ``center_`` and ``scale_`` (fitted here with ``fit``)."""
        mask = self.is_categorical_
        if fit:
            center, scale = fit_scaling(numeric)
            if mask is not None:  # 0 and 1 for a categorical column
                self.center_, self.scale_ = np.zeros(len(mask)), np.ones(len(mask))
                self.center_[~mask], self.scale_[~mask] = center, scale
            else:
                self.center_, self.scale_ = center, scale
        center, scale = self.center_, self.scale_
        if mask is not None:
            center, scale = center[~mask], scale[~mask]
        return apply_scaling(numeric, center, scale)

    def fit_missing_values(self, owner, rows):
        """:func:`missing_values_layer` of ``rows``, setting the ``missing_*`` attributes."""
        layer = missing_values_layer(rows, lambda inputs: self.describe(owner, inputs))
        origin = input_origin(self.input_widths())
        none = np.empty(0, np.int64)
        self.missing_features_ = origin[none if layer is None else layer.missing_columns]
        self.missing_indicators_ = origin[none if layer is None else layer.indicated.cpu().numpy()]
        return layer

    @property
    def fitted_with_missing(self):
        """Whether the network starts with a missing-value layer."""
        return len(self.missing_features_) > 0

    def fill_unseen_missing(self, owner, rows, name="X"):
        """``rows`` with NaN read as 0 (a column's fit mean, a two-valued one's lower value, as a
        missing category is zeros), with a warning, where the network has no input for them."""
        if self.fitted_with_missing or not has_missing(rows):
            return rows
        rows, inputs = zero_missing(rows)
        warn(
            f"{type(owner).__name__}: {name} has missing values (NaN) in column(s) "
            f"{self.describe(owner, inputs)}, but its network was fitted on rows without "
            "any, so it has no input for them: they are read as the column's mean over those "
            "rows (the lower value of a two-valued column). Fit the network (an encoder "
            "passed frozen: that encoder) on rows with missing values for it to learn from "
            "them, or impute upstream to choose the value.",
            UserWarning,
        )
        return rows

    def input_widths(self):
        """:func:`input_widths` of the fitted columns."""
        return input_widths(len(self.center_), self.is_categorical_, self.categories_)

    @property
    def n_inputs(self):
        """Width of the network's input: ``X``'s columns, categorical ones one-hot."""
        return int(self.input_widths().sum())

    def network_input_map(self):
        """The numeric map over the network's input columns (identity over a one-hot block)."""
        mask = self.is_categorical_
        if mask is None:
            return self.center_, self.scale_
        starts = input_starts(self.input_widths())[~mask]
        center, scale = np.zeros(self.n_inputs), np.ones(self.n_inputs)
        center[starts], scale[starts] = self.center_[~mask], self.scale_[~mask]
        return center, scale

    def indicated_inputs(self):
        """The network input columns of ``missing_indicators_``."""
        return input_starts(self.input_widths())[self.missing_indicators_]

    def input_feature_names(self, names):
        """Names of the network's input columns, from the names of ``X``'s columns:
        ``c_<category>`` for a categorical ``c``, as OneHotEncoder names them."""
        if self.is_categorical_ is None:
            return np.asarray(names, dtype=object)
        out, blocks = [], iter(self.categories_)
        for name, is_categorical in zip(names, self.is_categorical_, strict=True):
            out += [f"{name}_{value}" for value in next(blocks)] if is_categorical else [name]
        return np.asarray(out, dtype=object)

    def describe(self, owner, inputs):
        """The columns of ``X`` that input columns ``inputs`` come from, by name or position."""
        columns = np.unique(input_origin(self.input_widths())[inputs])
        names = getattr(owner, "feature_names_in_", None)
        return [str(names[j]) if names is not None else int(j) for j in columns]


def _table_attribute(name):
    def read(self):
        table = vars(self).get("_table_input")
        if table is None or not hasattr(table, name):  # not fitted
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(table, name)

    # no docstring: numpydoc would render it in place of each estimator's Attributes entry
    return property(read)


class TableAttributes:
    """:class:`TableInput`'s fitted attributes, read on the estimator that keeps it."""

    is_categorical_ = _table_attribute("is_categorical_")
    categories_ = _table_attribute("categories_")
    center_ = _table_attribute("center_")
    scale_ = _table_attribute("scale_")
    missing_features_ = _table_attribute("missing_features_")
    missing_indicators_ = _table_attribute("missing_indicators_")
