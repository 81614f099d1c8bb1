"""The pretext loss epoch by epoch on the few-label judge's tables (issue #54).

Does pretraining stop learning after a few epochs on some tables and keep learning on
others? ``QMatchEncoder(passthrough=True)`` (the encoder ``QMatchClassifier`` builds)
is fitted on each table's training rows as the judge prepares them, for
``--max-epochs`` epochs and without early stopping, and its per-epoch training loss
(and the loss on the held-out 10% where the table has enough rows) is stored as one
JSON list per (table, seed). ``benchmarks/fewlabel_report.py`` does not read it; the
development log quotes it where a default was chosen from it.

    python -m benchmarks.pretext_curves --data-home ../shared/data --seeds 0
"""

import json

from qmatch_sklearn import QMatchEncoder

from ._fewlabel_tables import TABLES
from ._harness import Store, run_grid, study_parser, timed
from .fewlabel import RESULTS, prepare

OUT = RESULTS.parent / "pretext_curves.csv"
FIELDS = ["table", "seed", "max_epochs", "contender", "commit", "n_rows", "seconds",
          "train_loss", "valid_loss", "machine", "finished"]
KEY = ("table", "seed", "max_epochs", "contender")


def measure(data, seed, max_epochs):
    """The per-epoch pretext losses of one fit on the table's training rows."""
    encoder = QMatchEncoder(passthrough=True, max_epochs=max_epochs, patience=max_epochs + 1,
                            random_state=seed)
    _, seconds = timed(encoder.fit, data.Xp_train)
    history = encoder.history_
    valid = [row.get("valid_loss") for row in history]
    return {"n_rows": len(data.Xp_train), "seconds": seconds,
            "train_loss": json.dumps([round(row["train_loss"], 5) for row in history]),
            "valid_loss": json.dumps([None if v is None else round(v, 5) for v in valid])}


def main(argv=None):
    parser = study_parser(__doc__, TABLES, ["qmatch"], OUT)
    parser.add_argument("--max-epochs", type=int, default=100)
    args = parser.parse_args(argv)
    cells = [{"table": table, "seed": seed, "max_epochs": args.max_epochs}
             for table in TABLES if table in args.tables
             and TABLES[table].task == "classification" for seed in args.seeds]
    run_grid(args, Store(args.out, FIELDS, KEY), cells,
             lambda cell: prepare(cell["table"], cell["seed"], args.data_home),
             lambda contender, data, cell: measure(data, cell["seed"], cell["max_epochs"]),
             lambda row: f"{row['table']} seed {row['seed']}: {row['seconds']} s")


if __name__ == "__main__":
    main()
