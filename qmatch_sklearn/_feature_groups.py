"""The one-hot groups of a fitted preprocessor, for the encoders' ``feature_groups``."""

from itertools import pairwise

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils.validation import check_is_fitted


def _one_hot_widths(encoder):
    """Output columns per input feature of a fitted OneHotEncoder (drop and infrequent aware)."""
    widths = []
    infrequent = getattr(encoder, "infrequent_categories_", None)
    for i, categories in enumerate(encoder.categories_):
        width = len(categories)
        if infrequent is not None and infrequent[i] is not None:
            width -= len(infrequent[i]) - 1
        if encoder.drop_idx_ is not None and encoder.drop_idx_[i] is not None:
            width -= 1
        widths.append(width)
    return widths


def _groups_of(encoder, start, stop):
    widths = _one_hot_widths(encoder)
    if sum(widths) != stop - start:
        raise ValueError(
            f"Cannot tell the one-hot columns of {encoder!r} apart: it has "
            f"{stop - start} output columns, its categories account for {sum(widths)}."
        )
    bounds = start + np.cumsum([0, *widths])
    return [list(range(int(a), int(b))) for a, b in pairwise(bounds) if b - a > 1]


def one_hot_groups(preprocessor):
    """The column groups of each one-hot encoded feature in a preprocessor's output.

    Pass the result as ``feature_groups`` (see :class:`~qmatch_sklearn.QMatchEncoder`) to an
    encoder that reads that output, so that corruption replaces a categorical feature as one unit.

    Parameters
    ----------
    preprocessor : ColumnTransformer or OneHotEncoder, fitted
        A OneHotEncoder, or a ColumnTransformer whose transformers may be one or a Pipeline
        ending in one (e.g. an imputer, then the encoder).

    Returns
    -------
    groups : list of lists of int
        For each one-hot encoded input feature with two or more output columns, the indices
        of those columns in the preprocessor's output.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.compose import make_column_transformer
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from qmatch_sklearn import one_hot_groups
    >>> X = pd.DataFrame({"age": [30, 40, 50], "city": ["a", "b", "c"],
    ...                   "pet": ["cat", "dog", "cat"]})
    >>> prep = make_column_transformer((StandardScaler(), ["age"]),
    ...                                (OneHotEncoder(), ["city", "pet"])).fit(X)
    >>> one_hot_groups(prep)
    [[1, 2, 3], [4, 5]]
    """
    if isinstance(preprocessor, OneHotEncoder):
        check_is_fitted(preprocessor)
        return _groups_of(preprocessor, 0, sum(_one_hot_widths(preprocessor)))
    if not isinstance(preprocessor, ColumnTransformer):
        raise TypeError(
            "one_hot_groups takes a fitted ColumnTransformer or OneHotEncoder; got "
            f"{type(preprocessor).__name__}."
        )
    check_is_fitted(preprocessor)
    groups = []
    for name, transformer, _ in preprocessor.transformers_:
        encoder = transformer.steps[-1][1] if isinstance(transformer, Pipeline) else transformer
        indices = preprocessor.output_indices_[name]
        if not isinstance(encoder, OneHotEncoder) or indices.start == indices.stop:
            continue  # not one-hot, or no column selected (left unfitted)
        groups += _groups_of(encoder, indices.start, indices.stop)
    return groups
