"""Checks on the rows an estimator is given, before anything trains on them."""

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype
from scipy.sparse import issparse
from sklearn.utils.validation import validate_data

from ._categorical import TableInputMixin, check_table, refuse_unreadable_columns
from ._columns import column_position, name_positions
from ._missing import check_missing_columns
from ._precision import check_float32_default
from ._scaling import apply_scaling

#: What ``check_features`` reads numbers as: float64 stays float64 until the columns are
#: in the network's units (``_scaling.py``), float32 stays float32, anything else is float64.
FLOAT_DTYPES = (np.float64, np.float32)


#: The table libraries whose tables are read as the pandas DataFrames they convert to.
FOREIGN_TABLES = ("polars", "pyarrow")


def as_pandas(X):
    """A polars DataFrame or a pyarrow Table as the pandas DataFrame it converts to
    (``to_pandas()``: the same column names, strings as strings, categoricals as
    categories, nulls as NaN); anything else as it is. Column kinds, categories and
    missing values are then read alike whichever library holds the table."""
    if type(X).__module__.split(".")[0] in FOREIGN_TABLES and hasattr(X, "to_pandas"):
        return X.to_pandas()
    return X


def check_features(estimator, X, y="no_validation", *, reset):
    """``validate_data``, then each numeric column in the network's units, as float32.

    Sparse input (e.g. a ColumnTransformer's one-hot output) stays sparse, as
    CSR: the engine densifies one batch at a time, so a wide one-hot matrix
    never exists densely in memory (except given to an estimator fitted on
    dense rows, whose map centres it: it becomes dense, as those rows were).
    Missing values (NaN) pass: the networks
    take them natively (``_missing.py``); infinity raises. A hint is given
    when the input holds strings.

    For an estimator with categorical columns (a
    :class:`~._categorical.TableInputMixin`), ``reset`` fits
    ``is_categorical_`` and ``categories_``, and the rows come back as the
    network's input, each categorical column one-hot (``_categorical.py``).
    The numeric columns are mapped by ``center_`` and ``scale_``
    (``_scaling.py``), fitted at ``reset`` through ``_fit_scaling``.
    """
    check_float32_default(type(estimator).__name__)
    X = as_pandas(X)
    table = isinstance(estimator, TableInputMixin)
    if reset and table:
        estimator.is_categorical_, estimator.categories_ = estimator._fit_categories(X)
    mask = getattr(estimator, "is_categorical_", None) if table else None
    refuse_unreadable_columns(X, mask)
    if mask is not None:
        return check_table(estimator, X, y, reset=reset, mask=mask,
                           dtypes_from_fit=(not reset
                                            # "from_dtype", the one string it takes
                                            and isinstance(estimator._categorical_param(), str)),
                           categories=estimator.categories_,
                           numeric_map=lambda numeric: _in_network_units(
                               estimator, numeric, reset, mask),
                           dtype=FLOAT_DTYPES, ensure_all_finite="allow-nan")
    try:
        checked = validate_data(
            estimator, X, y, reset=reset, dtype=FLOAT_DTYPES, accept_sparse="csr",
            ensure_all_finite="allow-nan",
        )
    except ValueError as error:
        if not holds_non_numbers(X):
            raise
        raise ValueError(
            f"{type(estimator).__name__} needs numeric features ({error}). Pass a DataFrame "
            "whose categorical columns have dtype category, string or object (read by "
            "categorical_features='from_dtype'), name them in categorical_features, or "
            "encode them upstream, e.g. with a OneHotEncoder in a ColumnTransformer."
        ) from error
    if isinstance(y, str) and y == "no_validation":
        return _in_network_units(estimator, checked, reset)
    X, y = checked
    return _in_network_units(estimator, X, reset), y


def check_validation_features(estimator, X_val, fitted_with_missing):
    """The validation rows ``X_val`` checked as the fit rows were
    (:func:`check_features`, and no missing values where the network has no
    layer for them, :func:`~._missing.check_missing_columns`); each error names
    ``X_val``, whose problem it is (the checks speak of ``X``)."""
    try:
        X_val = check_features(estimator, X_val, reset=False)
        check_missing_columns(estimator, X_val, fitted_with_missing)
    except ValueError as error:
        raise ValueError(f"X_val: {error}") from error
    return X_val


def _in_network_units(estimator, numeric, reset, mask=None):
    """The numeric columns ``numeric`` (of ``X``'s columns where ``mask`` is
    False) mapped by the estimator's ``center_`` and ``scale_`` (fitted here
    at ``reset``), as float32."""
    if reset:
        estimator.center_, estimator.scale_ = estimator._fit_scaling(numeric, mask)
    center, scale = estimator.center_, estimator.scale_
    if mask is not None:
        center, scale = center[~mask], scale[~mask]
    return apply_scaling(numeric, center, scale)


def holds_non_numbers(X):
    """Whether dense ``X`` holds values that do not convert to numbers (strings, say).

    Judged from ``X`` itself: a DataFrame's columns of a non-numeric dtype, or
    an array (or nested list) of strings or objects, tried as float.
    """
    if issparse(X):
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
    """``feature_groups`` as each column's group id in 0..G-1 (a column in no
    group is a group of its own), or None when there are no groups.

    Names are looked up in ``feature_names_in_`` (set by :func:`check_features`).
    Raises a ValueError for an unknown name or index, or a column in two groups.
    """
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
