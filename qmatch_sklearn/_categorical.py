"""Categorical columns, natively: a table's categories become one-hot blocks of the input.

An estimator that builds a network (the encoders, the supervised baselines)
takes a pandas DataFrame whose categorical columns are still categories, as
``HistGradientBoostingClassifier(categorical_features="from_dtype")`` does.
Its ``categorical_features`` parameter says which columns are categorical:
``"from_dtype"`` (the columns of dtype ``category``, ``string`` or
``object``), explicit column indices, names or a boolean mask (then integer
codes in a numeric array work too), or None (every column numeric). A column
of another dtype that is not declared categorical (dates, durations, periods)
is refused by name (:func:`refuse_unreadable_columns`).

At ``fit`` each categorical column's categories are recorded
(``categories_``: a ``category`` column's declared categories, else its
distinct observed values, sorted). The network's input is the table with
each categorical column replaced, in place, by a one-hot block of its
categories (internal one-hot); a missing value or a category not seen at
fit is a block of zeros, as ``OneHotEncoder(handle_unknown="ignore")``
encodes it. Each block is one unit for the corruption (``_corruption.py``):
a corrupted row takes the whole block from another row, so it still has at
most one category on, never two.
"""

import contextlib

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype, is_string_dtype
from scipy.sparse import issparse

from ._columns import column_position, name_positions
from ._warnings import warn

#: Categories one column may have: a wider one-hot block is an identifier, not a
#: category (HistGradientBoostingClassifier's limit too).
MAX_CATEGORIES = 255


def _is_categorical_dtype(dtype):
    """Whether ``categorical_features="from_dtype"`` reads a column of ``dtype``
    as categorical: ``category``, ``string`` or ``object``."""
    return isinstance(dtype, pd.CategoricalDtype) or is_string_dtype(dtype)


def _categorical_dtypes(frame):
    """Per column of a DataFrame, whether its dtype is categorical
    (:func:`_is_categorical_dtype`)."""
    return np.array([_is_categorical_dtype(dtype) for dtype in frame.dtypes])


def refuse_unreadable_columns(X, mask):
    """Raise a ValueError naming the columns of the DataFrame ``X`` that are not
    categorical (``mask``, None: none is) and whose dtype is neither numeric,
    bool nor categorical: dates, durations, periods, intervals. Read as numbers
    they would be nanoseconds since 1970 (or fail to convert), and read as
    categories every later date would be a category unseen at fit."""
    if not isinstance(X, pd.DataFrame):
        return
    if mask is None or len(mask) != X.shape[1]:  # other columns than at fit: named later
        mask = np.zeros(X.shape[1], dtype=bool)
    unreadable = [
        f"{X.columns[j]!r} ({dtype})" for j, dtype in enumerate(X.dtypes)
        if not mask[j] and not (
            is_numeric_dtype(dtype) or is_bool_dtype(dtype) or _is_categorical_dtype(dtype))
    ]
    if unreadable:
        raise ValueError(
            f"Column(s) {', '.join(unreadable)} of X are neither numeric nor categorical. "
            "Convert them upstream: a date to numbers (its year, month, day of the week, "
            "or days since a reference date), a duration to seconds, or either to strings "
            "to read it as categories."
        )


def categorical_mask(X, categorical_features):
    """Which columns of ``X`` are categorical under ``categorical_features``,
    as a boolean mask, or None when none is.

    ``"from_dtype"`` reads a DataFrame's dtypes (any other input has none);
    indices, names or a boolean mask are checked against ``X``'s columns.
    """
    if categorical_features is None:
        return None
    if isinstance(categorical_features, str):  # "from_dtype"
        if not isinstance(X, pd.DataFrame):
            return None
        mask = _categorical_dtypes(X)
        return mask if mask.any() else None
    if issparse(X):
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
    if issparse(X):
        raise ValueError(
            "categorical_features needs dense X (a DataFrame or an array): categorical "
            "columns of a sparse matrix are not supported. One-hot encode them upstream."
        )
    return X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=object))


def _name(X, j):
    return repr(X.columns[j]) if isinstance(X, pd.DataFrame) else f"{j}"


def fit_categories(X, mask):
    """The categories of each categorical column of ``X``: a ``category``
    column's declared categories, else its distinct non-missing values
    (sorted when they sort). Raises a ValueError for a column with none (all
    missing) or more than ``MAX_CATEGORIES``."""
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
            # values of several types do not sort: they keep their order of appearance
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
    """A column's categories ``values`` in a plain dtype (str, bool, int64 or
    float64) when they are an object array of one such kind of scalar (an object
    column of strings, of Python ints, of booleans): they match the same values,
    and a file written by ``qmatch_sklearn.save``, which holds numbers and strings
    only, can store them. Other objects (pandas intervals of ``pd.cut``, say)
    stay as they are."""
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
    """How many network input columns each column of ``X`` becomes (1, or its
    number of categories)."""
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
    """Corruption groups over the network's input: ``group_of`` (each column
    of ``X``'s group, or None: each column alone) spread over the one-hot
    blocks, so that a block is always one unit. None when nothing is grouped."""
    if group_of is None and (widths == 1).all():
        return None
    base = np.arange(len(widths)) if group_of is None else group_of
    return np.repeat(base, widths)


def input_feature_names(names, mask, categories):
    """Names of the network's input columns: a categorical column ``c`` becomes
    ``c_<category>`` for each category, as ``OneHotEncoder`` names them."""
    if mask is None:
        return np.asarray(names, dtype=object)
    out, blocks = [], iter(categories)
    for name, is_categorical in zip(names, mask, strict=True):
        out += [f"{name}_{value}" for value in next(blocks)] if is_categorical else [name]
    return np.asarray(out, dtype=object)


def refuse_an_array(estimator, X, mask):
    """With ``categorical_features="from_dtype"``, raise a ValueError naming the
    categorical columns ``mask`` when ``X`` is not a DataFrame (it has no dtypes)."""
    if not isinstance(X, pd.DataFrame):
        names = np.asarray(getattr(estimator, "feature_names_in_", np.arange(len(mask))))
        names = names[mask]
        raise ValueError(
            f"{type(estimator).__name__} was fitted on a DataFrame with categorical columns "
            f"({', '.join(map(str, names))}); "
            f"pass a DataFrame with the same columns, not {type(X).__name__}."
        )


def check_dtypes_unchanged(X, mask):
    """With ``categorical_features="from_dtype"``, raise a ValueError naming the
    columns of the DataFrame ``X`` whose kind (categorical or numeric) differs
    from fit's ``mask``, compared by position (the names were checked before)."""
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
    """The network's input rows: the numeric columns (already checked, float32)
    and each categorical column's one-hot block, in the columns' order; a
    missing or unseen category is a block of zeros. Also, for each categorical
    column none of whose values is a category, nor of the same kind of scalar as
    the categories (1, 2, 3 at fit; "1", "2", "3" now), which every row then reads
    as missing: its position, its values' kinds, its categories' kinds and its
    first categories."""
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
    """Warn of the categorical columns ``mismatched`` (:func:`one_hot_table`) by
    name: a change of type upstream (a CSV read with other dtypes) would
    otherwise blank them silently."""
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
