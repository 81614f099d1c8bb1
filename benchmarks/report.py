"""Regenerate ``benchmarks/results/README.md`` and its figures from ``fewshot.csv``.

Every number and every figure comes from rows of the CSV; a figure whose runs are
not in the CSV is not drawn, and the README gives the command that produces them.

    python -m benchmarks.report
"""

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from qmatch_sklearn import QMatchClassifier

from ._fewshot_params import BUDGETS, paper_dataset
from ._harness import mean_std
from .fewshot import ALL_METHODS, DOWNSTREAM_PROTOCOL, LABEL_FRACTION, RESULTS, SEARCH, SKLEARN

#: Dataset columns in the paper's order, with the paper's headings; a stand-in (see
#: ``STAND_INS``) follows the configuration it stands for and is compared with its numbers.
DATASET_TITLES = {
    "covtype_1p": "Cover Type 1%", "higgs_1p": "Higgs100k 1%",
    "higgs_1p_sample": "Higgs 1% (10,984-row sample)", "adult_1p": "Adult 1%",
    "mnist_1p": "MNIST 1%",
}
#: The columns of the paper's tables, in order.
PAPER_COLUMNS = tuple(d for d in DATASET_TITLES if paper_dataset(d) == d)
#: Pretext rows of the paper's configurations; other sizes are flagged as not comparable.
PAPER_PRETEXT_ROWS = {"covtype_1p": 113_400, "higgs_1p": 98_000, "adult_1p": 8_170,
                      "mnist_1p": 57_000}
METHOD_TITLES = {
    "supervised": "Supervised Baseline", "tabnet": "TabNet", "dino": "DINO", "imix": "i-Mix",
    "simclr_large": "SimCLR (large batch)", "simsiam": "SimSiam", "vime": "VIME",
    "vicreg": "VICReg", "simclr": "SimCLR", "qmatch": "Q-Match",
    "logreg": "LogisticRegression", "hgb": "HistGradientBoostingClassifier",
    "mlp": "MLPClassifier",
}
# The paper's Table 4 (tab:big_table_lc) and Table 5 (tab:big_table), copied from the .tex:
# per method, (mean, std) for Cover Type, Higgs100k, Adult, MNIST (1% labels), then the rank.
PAPER = {
    "linear": {
        "supervised": ((70.45, .18), (60.39, .39), (78.63, .20), (85.97, .15), 5.3),
        "tabnet": ((51.28, 3.51), (61.15, .56), (76.46, .41), (24.20, 6.57), 8.8),
        "dino": ((57.18, 4.61), (56.87, 1.66), (76.84, .85), (64.63, 3.59), 8.5),
        "imix": ((67.90, .45), (60.19, .40), (75.62, .79), (90.66, .32), 7.3),
        "simclr_large": ((66.87, .25), (64.22, 1.08), (76.66, 1.95), (91.01, .68), 6.0),
        "simsiam": ((64.66, 1.22), (60.11, 1.55), (78.75, 2.28), (92.98, .53), 5.8),
        "vime": ((68.42, .31), (64.37, .62), (79.01, 2.26), (88.02, .59), 4.3),
        "vicreg": ((64.86, .16), (65.81, .34), (76.67, 1.93), (97.36, .25), 4.3),
        "simclr": ((69.66, .16), (65.42, .22), (76.87, .52), (91.84, .16), 3.8),
        "qmatch": ((70.90, .36), (66.84, .34), (80.33, .47), (97.13, .23), 1.3),
    },
    "finetune": {
        "supervised": ((71.63, .25), (58.41, .14), (78.14, .72), (88.98, .30), 6.8),
        "tabnet": ((70.58, .63), (61.80, 1.00), (77.25, 1.28), (86.70, 1.33), 8.0),
        "simclr_large": ((69.73, .71), (58.18, 1.99), (77.72, 1.66), (92.54, .62), 8.0),
        "simsiam": ((71.80, .11), (60.87, 1.96), (68.99, 6.52), (93.05, .46), 6.0),
        "imix": ((71.30, .35), (61.98, .45), (77.83, .88), (92.00, .22), 6.0),
        "dino": ((72.43, .5), (55.76, 3.17), (78.22, .66), (89.58, .93), 5.8),
        "vicreg": ((68.66, .34), (60.86, 4.09), (80.36, .29), (97.47, .10), 5.0),
        "simclr": ((71.77, .30), (63.49, .60), (79.09, .78), (93.13, .27), 3.5),
        "vime": ((71.51, .24), (64.42, .80), (80.50, 1.74), (93.54, .12), 3.0),
        "qmatch": ((72.42, .37), (66.03, 1.01), (77.75, 1.89), (96.44, .41), 3.0),
    },
}
#: One colour per method in every figure: matplotlib's ten for the torch methods, dark
#: ones for the scikit-learn classifiers.
METHOD_COLORS = dict(zip(ALL_METHODS, [f"C{i}" for i in range(10)]
                         + ["black", "dimgray", "saddlebrown"], strict=True))
PROTOCOL_TITLES = {"linear": "Linear evaluation (paper Table 4)",
                   "finetune": "Fine-tuning (paper Table 5)"}


@dataclass(frozen=True)
class MoreLabelsCell:
    """One configuration of the paper's Tables 1-3: its table, title and sizes, Q-Match's
    (mean, std) per protocol the paper reports, and the other methods of that table."""

    table: int
    title: str
    pretext_rows: int
    labeled_rows: int
    qmatch: dict
    others: str


#: The paper's Tables 1 (tab:Higgscomp), 2 (tab:CoverTypeComp) and 3 (tab:MNIST10p),
#: copied from the .tex; the keys are the split configurations of ``load_paper_split``.
PAPER_MORE_LABELS = {
    "higgs_5k": MoreLabelsCell(1, "Higgs 50k pretext / 5k labels", 50_000, 5_000,
                               {"finetune": (68.13, 1.02)}, "CORE 66.92 ± 0.55"),
    "higgs_10k": MoreLabelsCell(1, "Higgs 10M pretext / 10k labels", 10_000_000, 10_000,
                                {"finetune": (71.13, .21)}, "TabNet 68.96 ± 0.39"),
    "higgs_100k": MoreLabelsCell(1, "Higgs 100k pretext / 100k labels", 100_000, 100_000,
                                 {"finetune": (73.27, .19)},
                                 "TabNet (10M pretext) 73.19 ± 0.15; i-Mix 72.9 (linear)"),
    "covtype_10p": MoreLabelsCell(2, "Cover Type 10%", 464_809, 46_480,
                                  {"finetune": (90.26, .11)},
                                  "Contrastive MixUp 80.41 ± 0.21 (fine-tuning)"),
    "covtype_15k": MoreLabelsCell(2, "Cover Type 15k", 11_340, 11_340,
                                  {"linear": (73.79, .22), "finetune": (82.76, .07)},
                                  "i-Mix N-Pair 72.1 ± 0.2, MoCo v2 73.1 ± 0.1, "
                                  "BYOL 74.1 ± 0.2 (linear)"),
    "mnist_10p": MoreLabelsCell(3, "MNIST 10%", 60_000, 10_000, {"finetune": (97.67, .21)},
                                "VIME 95.77 ± 0.22, Contrastive MixUp 97.58 ± 0.08"),
}
#: Where our row of a paper table comes from when it is not (method, protocol) itself.
OUR_SOURCE = {("linear", "supervised"): ("logreg", "raw")}
_COMMAND = "python -m benchmarks.fewshot"


def read_results(path):
    """The CSV with the sweep parsed into columns of its own (NaN where not swept)."""
    frame = pd.read_csv(path, dtype={"sweep": str})
    swept = pd.json_normalize(frame["sweep"].map(json.loads).tolist())
    return frame.join(swept.set_index(frame.index)), list(swept.columns)


def average_ranks(means):
    """Per method, the rank (1 = best) averaged over the datasets it has results on."""
    return means.rank(axis=0, ascending=False).mean(axis=1)


def paper_cell(protocol, method, dataset):
    """The paper's (mean, std) for ``method`` in the column ``dataset`` stands for."""
    return PAPER[protocol][method][PAPER_COLUMNS.index(paper_dataset(dataset))]


def paper_table(main, protocol):
    """Markdown lines of one paper table, our mean ± std (seeds) beside the paper's numbers."""
    datasets = [d for d in DATASET_TITLES if d in set(main["dataset"])]
    ours = {method: rows.groupby("dataset")["accuracy"]
            for method, rows in table_rows(main, protocol).items()}
    means = table_means(main, protocol)
    ranks = average_ranks(means.reindex(columns=datasets)) if len(means) else pd.Series()
    header = ["Algorithm"] + [title for d in datasets for title in (
        f"{DATASET_TITLES[d]} ours", f"{DATASET_TITLES[paper_dataset(d)]} paper")]
    header += ["rank ours", "rank paper"]
    lines = [_row(header), _row(["---"] * len(header))]
    for method, (*_, paper_rank) in PAPER[protocol].items():
        cells = [METHOD_TITLES[method]]
        for dataset in datasets:
            groups = ours.get(method)
            present = groups is not None and dataset in groups.groups
            cells.append(mean_std(groups.get_group(dataset)) if present else "not run")
            mean, std = paper_cell(protocol, method, dataset)
            cells.append(f"{mean:.2f} ± {std:.2f}")
        cells.append(f"{ranks[method]:.1f}" if method in ranks else "-")
        cells.append(f"{paper_rank:.1f}")
        lines.append(_row(cells))
    return lines


def table_rows(main, protocol):
    """Per method of the paper's ``protocol`` table that has results, our rows for it."""
    selected = {}
    for method in PAPER[protocol]:
        source, source_protocol = OUR_SOURCE.get((protocol, method), (method, protocol))
        rows = main[(main["method"] == source) & (main["protocol"] == source_protocol)]
        if len(rows):
            selected[method] = rows
    return selected


def table_means(main, protocol):
    """Per method of the paper's ``protocol`` table, our mean accuracy per dataset."""
    return pd.DataFrame({method: rows.groupby("dataset")["accuracy"].mean()
                         for method, rows in table_rows(main, protocol).items()}).T


def goal_table(main, searched):
    """Markdown lines: Q-Match against the paper's number and against our other methods,
    per dataset and protocol (the issue's goal: at or above the paper, ranked first), and
    what a search on the val rows gave Q-Match where one was run."""
    lines = [_row(["Dataset", "Protocol", "Q-Match ours", "paper", "ours - paper",
                   "rank among ours", "best of ours", "best scikit-learn (raw)",
                   "Q-Match, searched on val"]),
             _row(["---"] * 9)]
    sklearn = main[main["method"].isin(SKLEARN)].groupby(["dataset", "method"])["accuracy"].mean()
    off_size = off_paper_sizes(main)
    searches = {}
    if len(searched):
        for (dataset, protocol, n), accuracies in searched[searched["method"] == "qmatch"].groupby(
                ["dataset", "protocol", SEARCH])["accuracy"]:
            searches.setdefault((dataset, protocol), []).append(
                f"{int(n)} configs: {mean_std(accuracies)}")
    for protocol in PAPER:
        means = table_means(main, protocol)
        for dataset in [d for d in DATASET_TITLES if d in means.columns]:
            column = means[dataset].dropna()
            if "qmatch" not in column:
                continue
            ours = column["qmatch"]
            paper = paper_cell(protocol, "qmatch", dataset)[0]
            best = column.idxmax()
            rank = int(column.rank(ascending=False, method="min")["qmatch"])
            baseline = sklearn.get(dataset)
            lines.append(_row([
                DATASET_TITLES[dataset], protocol, f"{ours:.2f}", f"{paper:.2f}",
                "not comparable" if dataset in off_size else f"{ours - paper:+.2f}",
                f"{rank} of {len(column)}",
                f"{METHOD_TITLES[best]} {column[best]:.2f}",
                "-" if baseline is None else
                f"{METHOD_TITLES[baseline.idxmax()]} {baseline.max():.2f}",
                "; ".join(searches.get((dataset, protocol), ["not run"])),
            ]))
    return lines


def configurations_table(frame):
    """Markdown lines: Q-Match's mean test accuracy and its distance to the paper in every
    configuration in the CSV (each budget with the tuned values, each ``--search N``), per
    dataset and protocol: what was tried where it falls short of the paper."""
    qmatch = frame[(frame["method"] == "qmatch") & frame["protocol"].isin(PAPER)]
    configurations = {}
    for budget in BUDGETS:
        tuned = qmatch[(qmatch["budget"] == budget) & (qmatch["sweep"] == "{}")]
        if len(tuned):
            configurations[f"budget `{budget}`, tuned values"] = tuned
        if SEARCH in qmatch:
            searched = qmatch[(qmatch["budget"] == budget) & qmatch[SEARCH].notna()]
            for n, rows in searched.groupby(SEARCH):
                configurations[f"budget `{budget}`, `--search {int(n)}`"] = rows
    off_size = off_paper_sizes(frame)
    header = ["Dataset", "Protocol", "paper", *configurations]
    lines = [_row(header), _row(["---"] * len(header))]
    accuracies = [rows.groupby(["dataset", "protocol"])["accuracy"].agg(["mean", "count"])
                  for rows in configurations.values()]
    datasets = [d for d in DATASET_TITLES if d in set(qmatch["dataset"])]
    for protocol in PAPER:
        for dataset in datasets:
            paper = paper_cell(protocol, "qmatch", dataset)[0]
            cells = [DATASET_TITLES[dataset], protocol, f"{paper:.2f}"]
            for accuracy in accuracies:
                if (dataset, protocol) not in accuracy.index:
                    cells.append("not run")
                    continue
                mean, count = accuracy.loc[(dataset, protocol)]
                gap = "not comparable" if dataset in off_size else f"{mean - paper:+.2f}"
                cells.append(f"{mean:.2f} ({int(count)}), {gap}")
            lines.append(_row(cells))
    return lines


CONFIGURATIONS_NOTE = """\
Mean test accuracy (number of seeds), then ours minus the paper's. Every configuration
selects on the `val` rows only or uses the paper's tuned values. What still differs from the
paper: the budget's network and pretext epochs (see its section) instead of the paper's i-Mix
network and at most 200 epochs; one pretraining serving both protocols, with the linear
protocol's tuned values, in every budget but `paper` (whose rows so far did the same, see its
note); and a split drawn anew per seed."""


def sklearn_table(main):
    """Markdown lines: the scikit-learn classifiers on the preprocessed features."""
    datasets = [d for d in DATASET_TITLES if d in set(main["dataset"])]
    lines = [_row(["Classifier (raw features)", *(DATASET_TITLES[d] for d in datasets)]),
             _row(["---"] * (len(datasets) + 1))]
    for method in SKLEARN:
        rows = main[main["method"] == method]
        if len(rows):
            groups = rows.groupby("dataset")["accuracy"]
            cells = [mean_std(groups.get_group(d)) if d in groups.groups else "not run"
                     for d in datasets]
            lines.append(_row([METHOD_TITLES[method], *cells]))
    return lines


RUN = ["dataset", "method", "seed", "sweep"]


def pretrainings(frame):
    """One row per pretraining: the rows of a run that share their encoder (both
    protocols, unless the budget pretrains each with its own values) report the same
    pretraining seconds, and count them once."""
    return frame.drop_duplicates([*RUN, "pretrain_seconds"])


def wall_time_lines(frame):
    """Total compute of the rows (each pretraining counted once) and seconds per seed."""
    per_run = pd.DataFrame({
        "pretrain": pretrainings(frame).groupby(RUN, sort=False)["pretrain_seconds"].sum(),
        "evaluate": frame.groupby(RUN, sort=False)["eval_seconds"].sum()})
    per_run["total"] = per_run["pretrain"] + per_run["evaluate"]
    lines = [f"{len(frame)} results in {_minutes(frame):.1f} min "
             f"({per_run['pretrain'].sum() / 60:.1f} min pretraining, "
             f"{per_run['evaluate'].sum() / 60:.1f} min downstream fits and scoring) on: "
             + "; ".join(sorted(set(frame["machine"]))) + ". Seconds per seed "
             "(each pretraining once + every protocol's fit and scoring), mean over seeds:", ""]
    seconds = per_run.groupby(["method", "dataset"])["total"].mean().unstack()
    seconds = seconds.reindex([m for m in ALL_METHODS if m in seconds.index])
    datasets = [d for d in DATASET_TITLES if d in seconds.columns]
    lines += [_row(["Method", *(DATASET_TITLES[d] for d in datasets)]),
              _row(["---"] * (len(datasets) + 1))]
    for method, row in seconds.iterrows():
        lines.append(_row([METHOD_TITLES[method],
                           *("-" if np.isnan(row[d]) else f"{row[d]:.1f}" for d in datasets)]))
    lines += ["", *first_epoch_stops(frame)]
    encoders = frame[frame["pretrain_epochs"].notna()]
    if len(encoders):
        epochs = encoders.groupby("dataset")["pretrain_epochs"].agg(["mean", "max"])
        lines += ["", "Pretext epochs run (mean, max): " + ", ".join(
            f"{DATASET_TITLES[d]} {row['mean']:.1f}, {row['max']:.0f}"
            for d, row in epochs.iterrows()) + "."]
    return lines


def first_epoch_stops(frame):
    """Downstream fits whose best validation epoch was the first: they ran patience + 1 epochs."""
    fits = frame[frame["eval_epochs"].notna()]
    patience = DOWNSTREAM_PROTOCOL["patience"]
    stopped = fits[fits["eval_epochs"] == patience + 1]
    if not len(stopped):
        return [f"No downstream fit stopped at its first epoch (of {len(fits)})."]
    listed = ", ".join(f"{r.method} {r.protocol} {DATASET_TITLES[r.dataset]} seed {r.seed} "
                       f"({r.accuracy:.1f}%)" for r in stopped.itertuples())
    return [(f"Downstream fits whose best epoch on the `val` rows was the first (they stopped "
             f"after {patience + 1} epochs): {len(stopped)} of {len(fits)}: {listed}.")]


def _minutes(frame):
    """Compute time of the rows in minutes, each pretraining counted once."""
    return (pretrainings(frame)["pretrain_seconds"].sum() + frame["eval_seconds"].sum()) / 60


def off_paper_sizes(frame):
    """Per dataset whose pretext rows are not its paper configuration's (e.g. the HIGGS
    sample): (our pretext rows, the paper's). Their results are not comparable with it."""
    sizes = {}
    for dataset, n_pretext in frame.groupby("dataset")["n_pretext"].max().items():
        paper_rows = PAPER_PRETEXT_ROWS[paper_dataset(dataset)]
        if n_pretext != paper_rows:
            sizes[dataset] = (n_pretext, paper_rows)
    return sizes


def size_notes(frame):
    """Warn about datasets whose pretext size is not the paper's."""
    return [f"**{DATASET_TITLES[dataset]}: {ours:,} pretext rows instead of the paper's "
            f"{paper:,} (a scaled-down sample); these numbers are not comparable with the "
            "paper's.**" for dataset, (ours, paper) in off_paper_sizes(frame).items()]


def reproduce_command(frame, budget):
    """The harness command that (re)produces the given rows."""
    datasets = [d for d in DATASET_TITLES if d in set(frame["dataset"])]
    methods = list(dict.fromkeys(frame["method"]))
    seeds = sorted(set(frame["seed"]))
    return (f"{_COMMAND} --datasets {' '.join(datasets)} --methods {' '.join(methods)} "
            f"--seeds {' '.join(map(str, seeds))} --budget {budget}")


def budget_section(frame, budget):
    """README lines for one budget: the two paper tables, the sklearn table, the times."""
    main = frame[frame["sweep"] == "{}"]
    lines = [f"## Budget `{budget}`", "", f"Budget: {BUDGETS[budget].note}.", "",
             "Re-run (results already in the CSV are skipped) or complete these tables with:", "",
             f"    {reproduce_command(main, budget)}", ""]
    lines += [*size_notes(main), ""]
    for protocol in PAPER:
        lines += [f"### {PROTOCOL_TITLES[protocol]}", "", *paper_table(main, protocol), ""]
    if main["method"].isin(SKLEARN).any():
        lines += ["### scikit-learn on the preprocessed features (the same labeled rows)", ""]
        lines += [*sklearn_table(main), ""]
    searched = frame[frame[SEARCH].notna()] if SEARCH in frame else frame[:0]
    lines += ["### Q-Match against the paper and against our other methods", "",
              ("Means over the seeds run, with the paper's tuned values; ranks among the methods "
               "of the paper's table that have a result (the supervised linear row is the "
               "logistic regression). The last column: `--search N`, chosen on the val rows "
               "only, where it was run (its table below compares every method searched)."), ""]
    lines += [*goal_table(main, searched), ""]
    if len(searched):
        lines += ["### Tuned values vs a search on the `val` rows", ""]
        lines += [*search_table(main, searched), ""]
    lines += ["### Wall time", "", *wall_time_lines(main), ""]
    return lines


def search_table(main, searched):
    """Markdown lines: per (dataset, method, protocol) the tuned values' accuracy beside the
    searched one's, on the seeds that have both."""
    lines = [_row(["Dataset", "Algorithm", "Protocol", "Candidates", "Seeds",
                   "tuned: test", "search: val", "search: test", "search compute (min)"]),
             _row(["---"] * 9)]
    keys = ["dataset", "method", "protocol", "seed"]
    for (dataset, method, protocol, n_search), rows in searched.groupby(
            ["dataset", "method", "protocol", SEARCH], sort=False):
        tuned = main.merge(rows[keys], on=keys)
        cells = [DATASET_TITLES[dataset], METHOD_TITLES[method], protocol, int(n_search),
                 " ".join(map(str, sorted(rows["seed"]))),
                 mean_std(tuned["accuracy"]) if len(tuned) else "not run",
                 mean_std(rows["val_accuracy"]), mean_std(rows["accuracy"]),
                 f"{_minutes(rows):.1f}"]
        lines.append(_row(cells))
    return lines


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _subplots(n):
    figure, axes = plt.subplots(1, n, figsize=(4.5 * n, 3.6), squeeze=False)
    return figure, axes[0]


def plot_label_fractions(rows, path):
    """Accuracy vs fraction of pretext rows labeled: one panel per (dataset, budget, protocol)
    of the torch methods, the scikit-learn classifiers (protocol "raw") dashed in each."""
    raw = rows[rows["protocol"] == "raw"]
    panels = list(rows[rows["protocol"] != "raw"].groupby(["dataset", "budget", "protocol"]))
    figure, axes = _subplots(len(panels))
    for ax, ((dataset, budget, protocol), panel) in zip(axes, panels, strict=True):
        baselines = raw[(raw["dataset"] == dataset) & (raw["budget"] == budget)]
        for style, curves in (("-", panel), ("--", baselines)):
            for method, curve in curves.groupby("method"):
                stats = curve.groupby(LABEL_FRACTION)["accuracy"].agg(["mean", "std"]).fillna(0)
                ax.errorbar(stats.index, stats["mean"], yerr=stats["std"], marker="o",
                            capsize=3, linestyle=style, label=METHOD_TITLES[method],
                            color=METHOD_COLORS[method])
        ax.set(xscale="log", xlabel="fraction of pretext rows labeled", ylabel="test accuracy (%)",
               title=f"{DATASET_TITLES[dataset]}, {protocol} ({budget})")
        ax.legend(fontsize="small")
    _save(figure, path)


def plot_queue_sizes(rows, path):
    """Q-Match linear accuracy vs queue size, every seed as a dot and the mean ± std."""
    panels = list(rows.groupby(["dataset", "budget"]))
    figure, axes = _subplots(len(panels))
    for ax, ((dataset, budget), panel) in zip(axes, panels, strict=True):
        stats = panel.groupby("queue_size")["accuracy"].agg(["mean", "std"]).fillna(0)
        ax.scatter(panel["queue_size"], panel["accuracy"], s=10, alpha=0.5, color="gray")
        ax.errorbar(stats.index, stats["mean"], yerr=stats["std"], marker="o", capsize=3)
        ax.set(xscale="log", xlabel="queue size K", ylabel="linear test accuracy (%)",
               title=f"{DATASET_TITLES[dataset]} ({budget})")
        ax.set_xscale("log", base=2)
    _save(figure, path)


def plot_corruption(rows, path):
    """Q-Match linear accuracy over student x teacher corruption (mean over seeds)."""
    panels = list(rows.groupby(["dataset", "budget"]))
    figure, axes = _subplots(len(panels))
    for ax, ((dataset, budget), panel) in zip(axes, panels, strict=True):
        grid = panel.pivot_table(index="teacher_corruption", columns="student_corruption",
                                 values="accuracy", aggfunc="mean")
        image = ax.imshow(grid.values, origin="lower", cmap="viridis")
        ax.set_xticks(range(grid.shape[1]), [f"{v:g}" for v in grid.columns])
        ax.set_yticks(range(grid.shape[0]), [f"{v:g}" for v in grid.index])
        for (i, j), value in np.ndenumerate(grid.values):
            ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=7, color="w")
        ax.set(xlabel="student corruption", ylabel="teacher corruption",
               title=f"{DATASET_TITLES[dataset]} ({budget})")
        figure.colorbar(image, ax=ax, label="linear test accuracy (%)")
    _save(figure, path)


def _save(figure, path):
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


@dataclass(frozen=True)
class Figure:
    """A figure: its file, title, the sweep columns that select its rows, the protocols it
    reads, how it is drawn, and the harness arguments that produce its runs."""

    filename: str
    title: str
    columns: tuple
    protocols: tuple
    draw: Callable
    arguments: str


FIGURES = [
    Figure("label_fraction.png", "Accuracy vs fraction of labels", (LABEL_FRACTION,),
           ("linear", "finetune", "raw"), plot_label_fractions,
           "--datasets adult_1p --methods qmatch vime supervised logreg --seeds 0 1 2 "
           "--label-fractions 0.01 0.1 0.2 1.0"),
    Figure("queue_size.png", "Q-Match linear accuracy vs queue size", ("queue_size",),
           ("linear",), plot_queue_sizes,
           "--datasets adult_1p --methods qmatch --seeds 0 1 2 --queue-sizes 64 256 1024 4096"),
    Figure("corruption_heatmap.png", "Q-Match linear accuracy vs student/teacher corruption",
           ("student_corruption", "teacher_corruption"), ("linear",), plot_corruption,
           "--datasets adult_1p --methods qmatch --seeds 0 --corruption-grid 0 0.1 0.3 0.5 0.7"),
]


def figure_section(frame, swept, out_dir):
    """Draw each figure whose runs are in the CSV; otherwise say how to produce them."""
    lines = ["## Figures", ""]
    for figure in FIGURES:
        path = out_dir / figure.filename
        selected = frame[frame["protocol"].isin(figure.protocols)]
        for column in figure.columns:
            selected = selected[selected[column].notna()] if column in swept else selected[:0]
        lines += [f"### {figure.title}", ""]
        if len(selected):
            figure.draw(selected, path)
            lines += [f"![{figure.title}]({figure.filename})", "",
                      (f"From {len(selected)} results ({_seed_summary(selected)}; "
                       f"{_minutes(selected):.1f} min of compute)."), ""]
        else:
            path.unlink(missing_ok=True)
            lines += ["No runs in the CSV yet. Produce them with:", "",
                      f"    {_COMMAND} {figure.arguments}", ""]
    return lines


def _seed_summary(rows):
    return "; ".join(f"{DATASET_TITLES[d]}, budget {b}: seeds {sorted(set(g['seed']))}"
                     for (d, b), g in rows.groupby(["dataset", "budget"]))


HEADER = """\
# Few-shot benchmark (1% labels): the paper's Tables 4 and 5 on this library

Generated by `python -m benchmarks.report` from `fewshot.csv`, which
`python -m benchmarks.fewshot` fills (see its docstring for the protocol). Every number
and figure below comes from a row of the CSV. The harness reads the dataset files from
`--data-home` (or `$QMATCH_DATA`); these runs used `--data-home ../shared/data`.

- **Cells:** our test accuracy (%) as mean ± sample std over seeds (number of seeds), beside
  the paper's (5 trials). "not run": no result yet. Ranks: 1 = best, averaged over the
  datasets shown (ours: among the methods that have a result on each dataset).
- **Per seed** the split, the labeled rows, the network initialisation and the test sample
  change (`load_paper_split(random_state=seed)`); the paper varied only the initialisation.
- **Hyper-parameters:** the paper's tuned values (`benchmarks/_fewshot_params.py`, from
  `reference_impl.md` §8.2). Each encoder is pretrained once, with the linear-protocol (LC)
  pretext values, and serves both protocols; the reference pretrains separately per
  protocol. The downstream learning rate follows the protocol. Where a search was run
  (`--search N`), its table compares it with the tuned values; it selects on `val` only.
- **Early stopping and labels, as in the paper:** pretraining early-stops on the split's
  pretext-validation rows (patience 32); the torch classifiers train on the labels of the
  split's `train` rows and early-stop on the accuracy of its `val` rows (patience 64, at most
  500 epochs). The scikit-learn classifiers use the `val` rows as their API allows:
  `LogisticRegression` picks `C` in {1e-3, ..., 100} on them,
  `HistGradientBoostingClassifier` early-stops on them, `MLPClassifier` runs at its defaults.
- **Supervised Baseline:** fine-tuning row = `SupervisedMLPClassifier` (same network from
  random weights); linear row = `StandardScaler + LogisticRegression` on the preprocessed
  inputs (the paper's supervised linear classifier is a logistic regression on the inputs
  trained with AdamW).
- **Times** are wall seconds on a shared machine where other jobs sometimes ran: read them
  as rough.
- **Networks:** the budget's MLP, not the paper's 63M-parameter i-Mix network (budget
  `paper`), so differences from the paper's numbers are expected.

Other studies in this folder: `defaults.md` (how the defaults were chosen),
`early_stopping.md` (validation loss vs accuracy), `throughput.md` (training speed),
`held_out.md` and `held_out_regression.md` (the few-label defaults on real tables no default
was chosen on).
"""


MORE_LABELS_NOTE = """\
The paper's Tables 1-3 compare Q-Match with published numbers of other methods on
configurations with more labels. The harness runs them with the protocol above and, for
want of tuned values of their own, the tuned values of the same data's 1% configuration.
Cells: Q-Match's test accuracy, mean ± std (seeds), then ours minus the paper's ("not
comparable" where our pretext set is not the paper's size); the best scikit-learn
classifier on the same labeled rows (`val` rows used as above) gives the context. Without
the full 11,000,000-row `HIGGS.csv.gz` in the data home, `load_paper_split` scales each
HIGGS configuration down to the 10,984-row sample (every part by the same factor, with a
warning): those rows are marked not comparable."""


def epoch_cap_hits(frame):
    """Markdown line: per configuration, how many Q-Match fine-tuning fits ran every epoch
    ``QMatchClassifier`` allows, i.e. stopped while the `val` accuracy still improved."""
    cap = QMatchClassifier().max_epochs
    fits = frame[(frame["method"] == "qmatch") & (frame["protocol"] == "finetune")]
    counts = [f"{PAPER_MORE_LABELS[d].title} `{b}` {(g['eval_epochs'] >= cap).sum()} of {len(g)}"
              for (d, b), g in fits.groupby(["dataset", "budget"])]
    if not counts:
        return []
    return [f"Q-Match fine-tuning fits that ran all {cap} epochs (each reached a new best "
            f"`val` accuracy within its last {DOWNSTREAM_PROTOCOL['patience']} epochs, so more "
            "epochs would likely have helped): " + ", ".join(counts) + "."]


def more_labels_table(frame):
    """Markdown lines: Q-Match per configuration of the paper's Tables 1-3, protocol and
    budget, beside the paper's number and the best scikit-learn classifier."""
    budgets = [b for b in BUDGETS if b in set(frame["budget"])] or ["cpu-small"]
    header = ["Paper table", "Configuration", "Protocol", "Q-Match paper",
              *(f"Q-Match ours, budget `{b}`" for b in budgets),
              "best scikit-learn (raw)", "other methods in the paper's table"]
    lines = [_row(header), _row(["---"] * len(header))]
    sizes = frame.groupby("dataset")[["n_pretext", "n_labeled"]].max()
    for dataset, paper in PAPER_MORE_LABELS.items():
        rows = frame[frame["dataset"] == dataset]
        sklearn = rows[rows["method"].isin(SKLEARN)].groupby("method")["accuracy"]
        best = sklearn.mean().idxmax() if len(sklearn.groups) else None
        baseline = ("not run" if best is None
                    else f"{METHOD_TITLES[best]} {mean_std(sklearn.get_group(best))}")
        comparable = (dataset not in sizes.index
                      or sizes.loc[dataset, "n_pretext"] == paper.pretext_rows)
        title = f"{paper.title} (`{dataset}`)"
        if not comparable:
            title += (f"; ours: {sizes.loc[dataset, 'n_pretext']:,} pretext / "
                      f"{sizes.loc[dataset, 'n_labeled']:,} labeled rows")
        for protocol in PAPER:
            reported = paper.qmatch.get(protocol)
            cells = [str(paper.table), title, protocol,
                     "-" if reported is None else f"{reported[0]:.2f} ± {reported[1]:.2f}"]
            for budget in budgets:
                ours = rows[(rows["method"] == "qmatch") & (rows["protocol"] == protocol)
                            & (rows["budget"] == budget)]["accuracy"]
                if not len(ours):
                    cells.append("not run")
                    continue
                gap = ("" if reported is None else ", not comparable" if not comparable
                       else f", {ours.mean() - reported[0]:+.2f}")
                cells.append(mean_std(ours) + gap)
            lines.append(_row([*cells, baseline, paper.others]))
    return lines


def write_readme(frame, swept, out_dir):
    more_labels = frame[frame["dataset"].isin(PAPER_MORE_LABELS)]
    frame = frame[frame["dataset"].isin(DATASET_TITLES)]
    lines = [*HEADER.splitlines(), ""]
    lines += ["## Q-Match against the paper in every configuration tried", "",
              *CONFIGURATIONS_NOTE.splitlines(), "", *configurations_table(frame), ""]
    for budget in sorted(set(frame["budget"])):
        lines += budget_section(frame[frame["budget"] == budget], budget)
    lines += ["## The paper's Tables 1-3: more labels", "", *MORE_LABELS_NOTE.splitlines(), "",
              *more_labels_table(more_labels[more_labels["sweep"] == "{}"]), "",
              *epoch_cap_hits(more_labels[more_labels["sweep"] == "{}"]), "",
              "Run them with:", "",
              f"    {_COMMAND} --datasets {' '.join(PAPER_MORE_LABELS)} --methods qmatch "
              "logreg hgb", ""]
    lines += figure_section(frame, swept, out_dir)
    (out_dir / "README.md").write_text("\n".join(lines).rstrip() + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=RESULTS)
    parser.add_argument("--out-dir", type=Path, default=RESULTS.parent)
    args = parser.parse_args(argv)
    frame, swept = read_results(args.csv)
    write_readme(frame, swept, args.out_dir)
    print(f"wrote {args.out_dir / 'README.md'}")


if __name__ == "__main__":
    main()
