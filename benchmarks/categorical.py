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

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from threadpoolctl import threadpool_limits

from qmatch_sklearn import one_hot_groups

from ._fewlabel_tables import TABLES, split_table
from .fewlabel import (
    _as_object,
    fit_logistic,
    library_commit,
    machine_description,
    make_encoder,
    make_preprocessor,
)
from .fewshot import append_rows, read_done

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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(DEFAULT_TABLES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--max-minutes", type=float, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny networks, 2 epochs: tests the harness, not the methods")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    start = time.monotonic()
    commit, machine = library_commit(), machine_description()
    done = read_done(args.out, FIELDS, KEY)
    with threadpool_limits(1):
        for seed in args.seeds:
            for table in [t for t in TABLES if t in args.tables]:
                todo = [c for c in args.contenders if (table, str(seed), c) not in done]
                if not todo:
                    continue
                data = split_table(TABLES[table], seed, args.data_home)
                prep = make_preprocessor().fit(_as_object(data.X_train))
                X_train = prep.transform(_as_object(data.X_train)).astype(np.float32)
                X_test = prep.transform(_as_object(data.X_test)).astype(np.float32)
                groups = one_hot_groups(prep)
                native = make_preprocessor(one_hot=False).fit(data.X_train)
                for contender in todo:
                    if args.max_minutes and time.monotonic() - start > 60 * args.max_minutes:
                        print(f"stopping: --max-minutes {args.max_minutes} reached")
                        return
                    began = time.perf_counter()
                    train, test = X_train, X_test
                    if contender == "native":
                        train, test = native.transform(data.X_train), native.transform(data.X_test)
                    encoder = make_encoder(seed, args.smoke).set_params(
                        feature_groups=groups if contender == "grouped" else None,
                    ).fit(train)
                    labeled = train[data.labeled] if contender != "native" else (
                        train.iloc[np.flatnonzero(data.labeled)])
                    model, _ = fit_logistic(encoder.transform(labeled),
                                            data.y_train[data.labeled], seed)
                    predicted = model.predict(encoder.transform(test))
                    row = {
                        "table": table, "seed": seed, "contender": contender, "commit": commit,
                        "accuracy": round(100 * accuracy_score(data.y_test, predicted), 4),
                        "balanced_accuracy": round(
                            100 * balanced_accuracy_score(data.y_test, predicted), 4),
                        "n_groups": len(groups),
                        "grouped_columns": sum(len(g) for g in groups),
                        "n_columns": encoder_input_width(encoder),
                        "n_labeled": int(data.labeled.sum()),
                        "n_unlabeled": int((~data.labeled).sum()),
                        "n_test": len(data.y_test),
                        "fit_seconds": round(time.perf_counter() - began, 2),
                        "machine": machine,
                        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
                    }
                    append_rows(args.out, [row], FIELDS)
                    print(f"{table} seed {seed} {contender}: {row['accuracy']:.2f}%", flush=True)


if __name__ == "__main__":
    main()
