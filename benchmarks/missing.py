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

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
from sklearn.impute import SimpleImputer
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from ._fewlabel_tables import TABLES, split_table
from .fewlabel import (
    CATEGORICAL_DTYPES,
    _as_object,
    fit_logistic,
    library_commit,
    machine_description,
    make_encoder,
    make_preprocessor,
)
from .fewshot import append_rows, read_done

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(DEFAULT_TABLES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--missing", nargs="+", choices=MISSING, default=list(MISSING))
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--max-minutes", type=float, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny networks, 2 epochs: tests the harness, not the methods")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    start = time.monotonic()
    commit, machine = library_commit(), machine_description()
    done = read_done(args.out, FIELDS, KEY)
    with threadpool_limits(1):
        for seed in args.seeds:  # seeds outermost: every cell gets seed 0 first
            for table in [t for t in TABLES if t in args.tables]:
                for missing in args.missing:
                    todo = [c for c in args.contenders
                            if (table, str(seed), missing, c) not in done]
                    if not todo:
                        continue
                    data = split_table(TABLES[table], seed, args.data_home)
                    if missing != "real":
                        data = remove_entries(data, int(missing) / 100, seed)
                    elif numeric_missing_pct(data.X_train) == 0:
                        continue  # nothing missing: every contender sees the same rows
                    for contender in todo:
                        if args.max_minutes and time.monotonic() - start > 60 * args.max_minutes:
                            print(f"stopping: --max-minutes {args.max_minutes} reached")
                            return
                        began = time.perf_counter()
                        predicted = run(contender, data, seed, args.smoke)
                        row = {
                            "table": table, "seed": seed, "missing": missing,
                            "contender": contender, "commit": commit,
                            "accuracy": round(100 * accuracy_score(data.y_test, predicted), 4),
                            "balanced_accuracy": round(
                                100 * balanced_accuracy_score(data.y_test, predicted), 4),
                            "numeric_missing_pct": numeric_missing_pct(data.X_train),
                            "n_labeled": int(data.labeled.sum()),
                            "n_unlabeled": int((~data.labeled).sum()),
                            "n_test": len(data.y_test),
                            "fit_seconds": round(time.perf_counter() - began, 2),
                            "machine": machine,
                            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
                        }
                        append_rows(args.out, [row], FIELDS)
                        print(f"{table} seed {seed} missing {missing} {contender}: "
                              f"{row['accuracy']:.2f}%", flush=True)


if __name__ == "__main__":
    main()
