"""Categorical columns: one-hot corrupted column by column, as groups, or natively (issue #15).

The few-label protocol of ``benchmarks/fewlabel.py`` (same tables, splits, labeled rows,
preprocessing and logistic-regression recipe) on the tables with categorical columns.
Per (table, seed) the first two contenders see the same one-hot encoded rows:

- ``independent``: ``QMatchEncoder()``; each one-hot column is corrupted on its own
  (the paper's protocol), so a corrupted row can have two categories of a feature on,
  or none;
- ``grouped``: ``QMatchEncoder(feature_groups=one_hot_groups(preprocessor))``: the
  columns of a categorical feature are corrupted as one unit;
- ``native``: ``QMatchEncoder()`` on a DataFrame whose numeric columns are imputed and
  standardised as above and whose categorical columns are left as they are (category or
  string dtype, missing values included): the encoder one-hot encodes them itself
  (``categorical_features="from_dtype"``), a missing or unseen category as a block of
  zeros rather than the most frequent one, and corrupts each block as one unit;

each followed by the ``logreg`` recipe on the embeddings of the labeled rows. Results are
appended to ``benchmarks/results/categorical.csv``; (table, seed, contender) already there
are skipped. ``python -m benchmarks.realtables_report`` writes the table.

    OMP_NUM_THREADS=1 nice -n 10 python -m benchmarks.categorical --data-home ../shared/data
"""

from pathlib import Path

import numpy as np

from qmatch_sklearn import one_hot_groups

from ._fewlabel_tables import TABLES, split_table
from ._harness import Store, class_scores, run_grid, split_sizes, study_parser, timed
from .fewlabel import (
    _as_object,
    fit_logistic,
    make_encoder,
    make_preprocessor,
)

RESULTS = Path(__file__).parent / "results" / "categorical.csv"
FIELDS = ["table", "seed", "contender", "commit", "accuracy", "balanced_accuracy",
          "n_groups", "grouped_columns", "n_columns", "n_labeled", "n_unlabeled", "n_test",
          "fit_seconds", "machine", "finished"]
KEY = ("table", "seed", "contender")
#: The few-label tables with categorical columns, cheap first.
DEFAULT_TABLES = ("penguins", "titanic", "attrition", "chile", "credit", "loans", "adult_1p")
CONTENDERS = ("independent", "grouped", "native")


def encoder_input_width(encoder):
    """Columns the encoder's network reads: numeric columns, plus one per category."""
    if encoder.is_categorical_ is None:
        return encoder.n_features_in_
    return int((~encoder.is_categorical_).sum() + sum(len(c) for c in encoder.categories_))


def prepare(cell, data_home):
    """The cell's split, its one-hot matrices with their groups, and the native
    (categories kept) preprocessor."""
    data = split_table(TABLES[cell["table"]], cell["seed"], data_home)
    prep = make_preprocessor().fit(_as_object(data.X_train))
    data.X_onehot_train = prep.transform(_as_object(data.X_train)).astype(np.float32)
    data.X_onehot_test = prep.transform(_as_object(data.X_test)).astype(np.float32)
    data.groups = one_hot_groups(prep)
    data.native = make_preprocessor(one_hot=False).fit(data.X_train)
    return data


def run(contender, data, seed, smoke):
    """The contender's encoder fitted on the training rows and the ``logreg`` recipe on
    the labeled rows' embeddings; the test predictions and the encoder."""
    train, test = data.X_onehot_train, data.X_onehot_test
    if contender == "native":
        train, test = data.native.transform(data.X_train), data.native.transform(data.X_test)
    encoder = make_encoder(seed, smoke).set_params(
        feature_groups=data.groups if contender == "grouped" else None,
    ).fit(train)
    labeled = train[data.labeled] if contender != "native" else (
        train.iloc[np.flatnonzero(data.labeled)])
    model, _ = fit_logistic(encoder.transform(labeled), data.y_train[data.labeled], seed)
    return model.predict(encoder.transform(test)), encoder


def measure(contender, data, cell, smoke):
    (predicted, encoder), seconds = timed(run, contender, data, cell["seed"], smoke)
    return {**class_scores(data.y_test, predicted), "n_groups": len(data.groups),
            "grouped_columns": sum(len(g) for g in data.groups),
            "n_columns": encoder_input_width(encoder), **split_sizes(data),
            "fit_seconds": seconds}


def main(argv=None):
    args = study_parser(__doc__, TABLES, CONTENDERS, RESULTS, DEFAULT_TABLES).parse_args(argv)
    cells = [{"table": table, "seed": seed}
             for seed in args.seeds for table in TABLES if table in args.tables]
    run_grid(args, Store(args.out, FIELDS, KEY), cells,
             lambda cell: prepare(cell, args.data_home),
             lambda contender, data, cell: measure(contender, data, cell, args.smoke),
             lambda row: f"{row['table']} seed {row['seed']} {row['contender']}: "
                         f"{row['accuracy']:.2f}%")


if __name__ == "__main__":
    main()
