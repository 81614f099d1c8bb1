"""Peer comparison on Cover Type 1%: pytorch-tabnet against Q-Match, in the same run.

For each seed, on the same ``load_paper_split("covtype_1p", random_state=seed)`` rows,
preprocessed the same way (``benchmarks.fewshot.prepare_data``), one process runs:

* **pytorch-tabnet**: ``TabNetPretrainer`` at its defaults on the pretext rows,
  early-stopped on the pretext-validation rows, then ``TabNetClassifier(...).fit(
  from_unsupervised=pretrainer)`` on the labeled rows, early-stopped on the ``val``
  rows' accuracy; plus the same ``TabNetClassifier`` from random weights
  (protocol "scratch"), to show what its pretraining adds;
* **qmatch_sklearn**: the few-shot harness's Q-Match run (``benchmarks.fewshot.execute``:
  the paper's tuned values, the budget's network), both protocols.

Both sides get the budget's pretext epochs (``--budget``, default ``cpu-small``: at
most 20) with their library's early stopping on the pretext-validation rows, the
paper's downstream protocol (at most 500 epochs, patience 64, the ``val`` rows'
accuracy) and the same number of torch threads. Each library keeps its own
defaults otherwise (TabNet: n_d = n_a = 8, 3 steps, batch 1024 with ghost batches of
128, Adam lr 2e-2; Q-Match: batch 512, AdamW).

**Pretraining samples/s** = pretext rows x epochs run / pretraining wall seconds,
the per-epoch validation pass included on both sides.

Rows are appended to ``benchmarks/results/peer_tabnet.csv`` as each seed finishes
(seeds already there are skipped), and ``peer_tabnet.md`` is rewritten from the CSV.

    python -m benchmarks.peer_tabnet --seeds 0 1 2 --data-home ../shared/data
"""

import argparse
import json
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from . import _bare_qmatch, fewshot
from ._fewshot_params import BUDGETS
from ._harness import Store, mean_std

RESULTS = Path(__file__).parent / "results" / "peer_tabnet.csv"
DATASET = "covtype_1p"
FIELDS = [
    "library", "protocol", "seed", "budget", "accuracy", "val_accuracy", "pretrain_seconds",
    "pretrain_epochs", "pretrain_samples_per_s", "eval_seconds", "eval_epochs", "n_pretext",
    "n_labeled", "n_test", "params", "machine", "finished",
]


def tabnet_rows(data, seed, budget):
    """Fit pytorch-tabnet's pretrainer and classifiers; one row per protocol."""
    from pytorch_tabnet.pretraining import TabNetPretrainer
    from pytorch_tabnet.tab_model import TabNetClassifier

    max_epochs = budget.pretext["max_epochs"]
    pretrainer = TabNetPretrainer(seed=seed, device_name="cpu", verbose=0)
    start = time.perf_counter()
    pretrainer.fit(data.X_pretext, eval_set=[data.X_pretext_val], max_epochs=max_epochs,
                   patience=32, **_batches(data.X_pretext, data.X_pretext_val))
    pretrain_seconds = time.perf_counter() - start
    pretrain_epochs = len(pretrainer.history["loss"])
    rows = []
    for protocol, pretrained in (("finetune", pretrainer), ("scratch", None)):
        classifier = TabNetClassifier(seed=seed, device_name="cpu", verbose=0)
        start = time.perf_counter()
        classifier.fit(data.X_train, data.y_train, eval_set=[(data.X_val, data.y_val)],
                       eval_metric=["accuracy"], max_epochs=500, patience=64,
                       from_unsupervised=pretrained, **_batches(data.X_train, data.X_val))
        val_accuracy = 100 * np.mean(classifier.predict(data.X_val) == data.y_val)
        accuracy = 100 * np.mean(classifier.predict(data.X_test) == data.y_test)
        rows.append({
            "library": "pytorch-tabnet", "protocol": protocol, "accuracy": accuracy,
            "val_accuracy": val_accuracy,
            "pretrain_seconds": pretrain_seconds if pretrained else 0.0,
            "pretrain_epochs": pretrain_epochs if pretrained else "",
            "eval_seconds": time.perf_counter() - start,
            "eval_epochs": len(classifier.history["loss"]),
            "params": {"pretrainer": "TabNetPretrainer()" if pretrained else None,
                       "classifier": "TabNetClassifier()", "pretext_max_epochs": max_epochs},
        })
    return rows


def _batches(*sets):
    """TabNet's default batch sizes, shrunk for sets smaller than a batch (it drops the
    last partial batch, of the evaluation sets too, so a larger batch sees nothing)."""
    batch_size = min(1024, *(len(rows) for rows in sets))
    return {"batch_size": batch_size, "virtual_batch_size": min(128, batch_size)}


def qmatch_rows(data, seed, budget, data_home, max_rows_test, machine):
    """The few-shot harness's Q-Match run on the same split; one row per protocol."""
    run = fewshot.Run(DATASET, "qmatch", seed, "{}", ("linear", "finetune"))
    rows = []
    for row in fewshot.execute(run, budget, max_rows_test, data_home, machine):
        rows.append({
            "library": "qmatch_sklearn", "protocol": row["protocol"],
            "accuracy": row["accuracy"], "val_accuracy": row["val_accuracy"],
            "pretrain_seconds": row["pretrain_seconds"],
            "pretrain_epochs": row["pretrain_epochs"], "eval_seconds": row["eval_seconds"],
            "eval_epochs": row["eval_epochs"], "params": json.loads(row["params"])["model"],
        })
    return rows


def finish(row, data, seed, budget, machine):
    """Fill the columns every row shares and round the measurements."""
    epochs = row["pretrain_epochs"]
    row.update(
        seed=seed, budget=budget.name, n_pretext=len(data.X_pretext),
        n_labeled=len(data.y_train), n_test=len(data.y_test), machine=machine,
        pretrain_samples_per_s=(round(len(data.X_pretext) * epochs / row["pretrain_seconds"])
                                if epochs else ""),
        params=json.dumps(row["params"], sort_keys=True),
        finished=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    for name in ("accuracy", "val_accuracy", "pretrain_seconds", "eval_seconds"):
        row[name] = round(float(row[name]), 4 if "accuracy" in name else 2)
    return row


def pretraining_parameters(budget, n_features, seed=0):
    """Trainable parameters each library's pretraining updates, for the report's context:
    the networks differ in size, so samples/s compares the libraries at their settings,
    not their efficiency per parameter. Q-Match: the student (encoder and projection; the
    EMA teacher doubles the weights held but is not trained). TabNet: its pretraining
    network, read after a one-epoch fit on 256 random rows (it is built inside ``fit``)."""
    from pytorch_tabnet.pretraining import TabNetPretrainer

    encoder = fewshot.make_encoder(fewshot.Run(DATASET, "qmatch", seed, "{}", ()), budget)
    student = _bare_qmatch.build(encoder, n_features, seed)
    tabnet = TabNetPretrainer(seed=seed, device_name="cpu", verbose=0)
    X = np.random.RandomState(seed).standard_normal((256, n_features)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tabnet.fit(X, max_epochs=1, **_batches(X))
    return {
        "qmatch_sklearn": sum(t.numel() for t in student.parameters() if t.requires_grad),
        "pytorch-tabnet": sum(t.numel() for t in tabnet.network.parameters()
                              if t.requires_grad),
    }


def write_report(path, out, n_features):
    """``peer_tabnet.md``: accuracy per library and protocol, pretraining speed and its ratio."""
    frame = pd.read_csv(path)
    n_parameters = {}
    for budget in sorted(set(frame["budget"])):
        for library, count in pretraining_parameters(BUDGETS[budget], n_features).items():
            n_parameters[library, budget] = count
    lines = [
        "# Peer comparison on Cover Type 1%: pytorch-tabnet vs qmatch_sklearn",
        "",
        "Generated by `python -m benchmarks.peer_tabnet` from `peer_tabnet.csv` (the protocol is "
        "in its docstring). Same split, rows, preprocessing, threads and epoch budget per seed; "
        "each library at its own defaults otherwise. Accuracy cells: mean ± sample std (seeds); "
        "the other columns: means over the seeds.",
        "",
        f"Machine: {'; '.join(sorted(set(frame['machine'])))}. Budget: "
        f"{'; '.join(BUDGETS[b].note for b in sorted(set(frame['budget'])))}.",
        "",
        "| Library | Protocol | Test accuracy (%) | Val accuracy (%) | Pretraining samples/s "
        "| Pretraining s | Pretext epochs | Trained parameters (pretraining) | Downstream s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (library, protocol, budget), rows in frame.groupby(
            ["library", "protocol", "budget"], sort=False):
        pretext = ("-", "-", "-", "-")
        if rows["pretrain_samples_per_s"].notna().all():
            pretext = (f"{rows['pretrain_samples_per_s'].mean():,.0f}",
                       f"{rows['pretrain_seconds'].mean():.1f}",
                       f"{rows['pretrain_epochs'].mean():.1f}",
                       f"{n_parameters[library, budget]:,}")
        cells = [library, protocol, mean_std(rows["accuracy"]), mean_std(rows["val_accuracy"]),
                 *pretext, f"{rows['eval_seconds'].mean():.1f}"]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    speed = frame[frame["protocol"] == "finetune"].pivot_table(
        index="seed", columns="library", values="pretrain_samples_per_s")
    if {"pytorch-tabnet", "qmatch_sklearn"} <= set(speed.columns):
        ratio = speed["qmatch_sklearn"] / speed["pytorch-tabnet"]
        lines += ["", "Pretraining speed ratio qmatch_sklearn / pytorch-tabnet, per seed (same "
                  "process, one after the other): " + ", ".join(
                      f"seed {seed}: {value:.2f}" for seed, value in ratio.items()) + ". "
                  "The networks differ (see the parameter counts), so this compares the "
                  "libraries at these settings, not their cost per parameter."]
    out.write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--budget", choices=sorted(BUDGETS), default="cpu-small")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--data-home", default=None, help="folder of the raw dataset files")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    budget = BUDGETS[args.budget]
    machine = fewshot.machine_description(budget)
    store = Store(args.out, FIELDS, ("budget", "seed"))
    done = store.done()
    data = None
    for seed in args.seeds:
        if (budget.name, str(seed)) in done:
            continue
        # The harness's own call, so that both libraries see the same rows (and the cache hits).
        data = fewshot.prepare_data(DATASET, seed, None, budget.max_rows_test, args.data_home,
                                    max_rows_val=budget.max_rows_val)
        rows = [*tabnet_rows(data, seed, budget),
                *qmatch_rows(data, seed, budget, args.data_home, budget.max_rows_test, machine)]
        store.append([finish(row, data, seed, budget, machine) for row in rows])
        print(f"seed {seed}: " + ", ".join(f"{r['library']} {r['protocol']} {r['accuracy']:.2f}%"
                                           for r in rows))
    if data is None:  # every seed was recorded: the report still needs the feature count
        data = fewshot.prepare_data(DATASET, args.seeds[0], None, budget.max_rows_test,
                                    args.data_home, max_rows_val=budget.max_rows_val)
    write_report(args.out, args.out.with_suffix(".md"), data.X_pretext.shape[1])


if __name__ == "__main__":
    main()
