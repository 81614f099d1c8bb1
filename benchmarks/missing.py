"""Missing values: the encoder's native NaN handling against imputing first (issue #15).

The few-label protocol of ``benchmarks/fewlabel.py`` (same tables, splits, labeled rows
and logistic-regression recipe), on tables whose numeric columns have missing entries:
their own (``missing="real"``), or with a further 10% or 30% of the numeric entries of
every row, train and test, removed completely at random (seeded by the seed). Per
(table, seed, missing) every contender sees the same rows:

- ``logreg_imputed``: ``logreg`` on median-imputed numeric columns with missing
  indicators (``SimpleImputer(add_indicator=True)``), standardised.
- ``qmatch_imputed``: ``QMatchEncoder()`` on the same imputed rows, then the
  ``logreg`` recipe on the embeddings of the labeled rows (``qmatch_lr``).
- ``qmatch_imputed_indicator``: the same with the missing indicators, i.e. the
  input the library's native layer computes, given from outside.
- ``qmatch_native``: ``QMatchEncoder()`` on the standardised numeric columns with
  their NaN (the scaler ignores them), the same recipe. Its input layer fills each
  missing entry and adds an indicator channel where the missingness is informative;
  the rows ``qmatch_native_all_indicators`` of the results are this contender as it
  was up to commit 5c4eb99, with an indicator for every column with NaN.

Categorical columns are most-frequent-imputed and one-hot encoded in every contender:
the comparison is about numeric missing values. Results are appended to
``benchmarks/results/missing.csv``; (table, seed, missing, contender) already there are
skipped. ``python -m benchmarks.realtables_report`` writes ``missing.md``.

    OMP_NUM_THREADS=1 nice -n 10 python -m benchmarks.missing --data-home ../shared/data
"""

from pathlib import Path

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import StandardScaler

from ._fewlabel_tables import TABLES, split_table
from ._harness import Store, class_scores, run_grid, split_sizes, study_parser, timed
from .fewlabel import (
    CATEGORICAL_DTYPES,
    _as_object,
    fit_logistic,
    make_encoder,
    make_preprocessor,
)

RESULTS = Path(__file__).parent / "results" / "missing.csv"
FIELDS = ["table", "seed", "missing", "contender", "commit", "accuracy", "balanced_accuracy",
          "numeric_missing_pct", "n_labeled", "n_unlabeled", "n_test", "fit_seconds",
          "machine", "finished"]
KEY = ("table", "seed", "missing", "contender")
#: Tables with numeric columns: the few-label suite's small ones, cheap tables first.
DEFAULT_TABLES = ("penguins", "titanic", "breast_cancer", "digits", "credit", "loans")
MISSING = ("real", "10", "30")
CONTENDERS = ("logreg_imputed", "qmatch_imputed", "qmatch_imputed_indicator", "qmatch_native")
NUMERIC_STEPS = {
    "imputed": lambda: [SimpleImputer(strategy="median"), StandardScaler()],
    "imputed_indicator": lambda: [SimpleImputer(strategy="median", add_indicator=True),
                                  StandardScaler()],
    "native": lambda: [StandardScaler()],
}
INPUT_OF = {"logreg_imputed": "imputed_indicator", "qmatch_imputed": "imputed",
            "qmatch_imputed_indicator": "imputed_indicator", "qmatch_native": "native"}


def remove_entries(data, rate, seed):
    """Remove a share ``rate`` of the numeric entries of every train and test row, MCAR."""
    rng = np.random.RandomState(10_000 + seed)
    for part in ("X_train", "X_test"):
        X = data[part].copy()
        for column in X.select_dtypes(exclude=CATEGORICAL_DTYPES).columns:
            X[column] = X[column].astype("float64").mask(rng.rand(len(X)) < rate)
        data[part] = X
    return data


def numeric_missing_pct(X):
    numeric = X.select_dtypes(exclude=CATEGORICAL_DTYPES)
    return round(100 * float(numeric.isna().to_numpy().mean()), 2) if numeric.size else 0.0


def run(contender, data, seed, smoke=False):
    prep = make_preprocessor(NUMERIC_STEPS[INPUT_OF[contender]]())
    X_train = prep.fit_transform(_as_object(data.X_train)).astype(np.float32)
    X_test = prep.transform(_as_object(data.X_test)).astype(np.float32)
    y_labeled = data.y_train[data.labeled]
    if contender == "logreg_imputed":
        model, _ = fit_logistic(X_train[data.labeled], y_labeled, seed)
        return model.predict(X_test)
    encoder = make_encoder(seed, smoke).fit(X_train)
    model, _ = fit_logistic(encoder.transform(X_train[data.labeled]), y_labeled, seed)
    return model.predict(encoder.transform(X_test))


def parse_args(argv=None):
    parser = study_parser(__doc__, TABLES, CONTENDERS, RESULTS, DEFAULT_TABLES)
    parser.add_argument("--missing", nargs="+", choices=MISSING, default=list(MISSING))
    return parser.parse_args(argv)


def prepare(cell, data_home):
    """The cell's split with its missing entries; None for ``missing="real"`` on a
    table whose numeric columns have none (nothing to compare there)."""
    data = split_table(TABLES[cell["table"]], cell["seed"], data_home)
    if cell["missing"] != "real":
        return remove_entries(data, int(cell["missing"]) / 100, cell["seed"])
    return data if numeric_missing_pct(data.X_train) else None


def measure(contender, data, cell, smoke):
    predicted, seconds = timed(run, contender, data, cell["seed"], smoke)
    return {**class_scores(data.y_test, predicted),
            "numeric_missing_pct": numeric_missing_pct(data.X_train), **split_sizes(data),
            "fit_seconds": seconds}


def main(argv=None):
    args = parse_args(argv)
    # seeds outermost: every cell gets seed 0 first
    cells = [{"table": table, "seed": seed, "missing": missing}
             for seed in args.seeds for table in TABLES if table in args.tables
             for missing in args.missing]
    run_grid(args, Store(args.out, FIELDS, KEY), cells,
             lambda cell: prepare(cell, args.data_home),
             lambda contender, data, cell: measure(contender, data, cell, args.smoke),
             lambda row: f"{row['table']} seed {row['seed']} missing {row['missing']} "
                         f"{row['contender']}: {row['accuracy']:.2f}%")


if __name__ == "__main__":
    main()
