"""Checks on the rows an estimator is given, before anything trains on them."""

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype
from scipy.sparse import issparse

from ._columns import column_position, name_positions


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

    Names are looked up in ``feature_names_in_`` (set when the table input reads ``X``).
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
