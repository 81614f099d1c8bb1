"""The table input: everything an estimator learns about the columns of ``X``, in one object.

An estimator's network never reads ``X`` as the user passed it. :class:`TableInput`
is fitted once, in ``fit``, on every row of ``X`` (no label is read), and makes
the network's input rows of any table afterwards:

- which columns are categorical and their categories (``_categorical.py``):
  each categorical column becomes a one-hot block of its categories;
- the numeric map (``_scaling.py``): each numeric column in the network's units;
- the missing-value layer (``_missing.py``): which columns had missing values and
  which of them get an indicator channel; the layer itself, with the fill values,
  is the first module of the network.

pandas DataFrames, polars DataFrames and pyarrow Tables (read as the pandas
DataFrames they convert to), NumPy arrays and sparse matrices all enter here.
An estimator keeps its table input as ``_table_input``, and a classifier or
regressor around a library encoder reads ``X`` with the encoder's own (reused
whole from a ``FrozenEstimator``), so the columns are read one way. ``transform``,
``predict``, :func:`~qmatch_sklearn.save` and the ONNX export all read it; a new
kind of column is added here.
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_array, check_X_y, validate_data

from ._categorical import (
    as_frame,
    categorical_mask,
    check_dtypes_unchanged,
    fit_categories,
    input_feature_names,
    input_origin,
    input_starts,
    input_widths,
    one_hot_table,
    refuse_an_array,
    refuse_unreadable_columns,
    warn_mismatched_kinds,
)
from ._constraints import NETWORK_CONSTRAINTS
from ._missing import (
    check_missing_columns,
    has_missing,
    indicated_features,
    missing_columns,
    missing_values_layer,
    zero_missing,
)
from ._precision import check_float32_default
from ._scaling import apply_scaling, fit_scaling
from ._validation import holds_non_numbers
from ._warnings import warn

#: What the numeric columns are read as: float64 stays float64 until the columns are
#: in the network's units, float32 stays float32, anything else is float64.
FLOAT_DTYPES = (np.float64, np.float32)
#: The table libraries whose tables are read as the pandas DataFrames they convert to.
FOREIGN_TABLES = ("polars", "pyarrow")
#: ``y`` not given: only ``X`` is read (scikit-learn's marker).
NO_Y = "no_validation"


def as_pandas(X):
    """A polars DataFrame or a pyarrow Table as the pandas DataFrame its Arrow form
    converts to; anything else as it is (a polars Series or pyarrow Array as its pandas
    one). The same column names, strings as strings, categoricals as categories,
    nulls as NaN, and the kinds pandas gives its own columns: booleans with nulls as
    pandas' nullable booleans (numeric, not objects), dates as datetimes (refused by
    name, as a pandas date column is), decimals as floats. A polars ``Categorical``
    declares no order of its categories (it lists them as its rows first show them),
    so they are sorted, as pandas sorts the categories it infers; an ``Enum``'s and
    an Arrow dictionary's stay in their declared order. Column kinds, categories
    and missing values are then read alike whichever library holds the table."""
    library = type(X).__module__.split(".")[0]
    if library not in FOREIGN_TABLES or not hasattr(X, "to_pandas"):
        return X
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
        """The fitted table input as a plain dict of its parameter and fitted
        attributes: what a saved or pickled estimator holds as ``_table_input``
        (every path to a file reads plain values, no class of its own)."""
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
        """Fit the columns' kinds, categories and numeric map on the rows ``X`` of
        the estimator ``owner`` (whose ``n_features_in_`` and ``feature_names_in_``
        are set); the network's input rows (and ``y``, checked)."""
        return self._rows(owner, X, y, reset=True, fit=True)

    def transform(self, owner, X, y=NO_Y, *, reset=False):
        """The rows ``X`` as the network's input (and ``y``, checked), read as at fit.

        ``X``'s columns are checked against ``owner``'s, or recorded as its own with
        ``reset`` (a table input fitted by another estimator: a frozen encoder's)."""
        return self._rows(owner, X, y, reset=reset, fit=False)

    def validation_rows(self, owner, X_val, fitted_with_missing):
        """The validation rows ``X_val`` read as the fit rows were, with no missing
        value where the network has no layer for one
        (:func:`~._missing.check_missing_columns`); each error names ``X_val``,
        whose problem it is (the checks speak of ``X``)."""
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
            mask = categorical_mask(X, self.categorical_features)
            self.is_categorical_ = mask
            self.categories_ = None if mask is None else fit_categories(X, mask)
        mask = self.is_categorical_
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
        """The rows of a table with categorical columns: names and count checked as
        ``validate_data`` checks them, then (``categorical_features="from_dtype"``)
        each column's kind against fit's; the numeric columns checked (finite or
        NaN) and mapped, the categorical ones one-hot encoded."""
        # kinds checked against fit's where X's columns are checked, not recorded
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
        """The numeric columns ``numeric`` mapped by ``center_`` and ``scale_``
        (fitted here with ``fit``), as float32."""
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
        """The :class:`~._missing.MissingValues` layer of the network's input rows
        ``rows`` (None: no missing value), setting ``missing_features_`` and
        ``missing_indicators_`` (columns of ``X``). A column with no observed value
        is refused by its name in ``owner``'s ``X``."""
        layer = missing_values_layer(rows, lambda inputs: self.describe(owner, inputs))
        origin = input_origin(self.input_widths())
        self.missing_features_ = origin[missing_columns(layer)]
        self.missing_indicators_ = origin[indicated_features(layer)]
        return layer

    @property
    def fitted_with_missing(self):
        """Whether the network starts with a missing-value layer."""
        return len(self.missing_features_) > 0

    def fill_unseen_missing(self, owner, rows, name="X"):
        """The network's input rows ``rows`` to predict from, with a missing value
        where the network has no input for one (the fit rows had none) read as 0,
        with a warning naming the columns (and the rows as ``name``).

        0 in the network's units is the column's mean over the fit rows for a
        standardised column (``_scaling.py``), the lower of its two values for a
        two-valued one (as a missing category is a block of zeros), and the
        implicit zero of sparse input. ``rows`` itself when nothing is filled; a
        copy otherwise."""
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
        """How many network input columns each column of ``X`` becomes (1, or its
        number of categories)."""
        return input_widths(len(self.center_), self.is_categorical_, self.categories_)

    @property
    def n_inputs(self):
        """Width of the network's input: ``X``'s columns, categorical ones one-hot."""
        return int(self.input_widths().sum())

    def network_input_map(self):
        """``(center, scale)`` of the numeric map over the network's input columns
        (what the ONNX graph applies): each numeric column's where it lands, 0 and 1
        (the identity) over a categorical column's one-hot block."""
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
        """Names of the network's input columns, from the names of ``X``'s columns."""
        return input_feature_names(names, self.is_categorical_, self.categories_)

    def describe(self, owner, inputs):
        """The columns of ``X`` that the network input columns ``inputs`` come from,
        each once: by name (``owner``'s ``feature_names_in_``), else by position."""
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
    """The fitted table input's attributes (``is_categorical_``, ``categories_``,
    ``center_``, ``scale_``, ``missing_features_``, ``missing_indicators_``) read
    on the estimator that keeps it as ``_table_input``."""

    is_categorical_ = _table_attribute("is_categorical_")
    categories_ = _table_attribute("categories_")
    center_ = _table_attribute("center_")
    scale_ = _table_attribute("scale_")
    missing_features_ = _table_attribute("missing_features_")
    missing_indicators_ = _table_attribute("missing_indicators_")
