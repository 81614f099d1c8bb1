"""Write ``benchmarks/results/fewlabel.md`` and ``fewlabel.png`` from ``fewlabel.csv``.

Every number comes from the CSV; cells show ``mean ± std (seeds)`` so a partial cell
is visible. "Best raw" is the better of ``logreg`` and ``hgb`` on that table (by mean
accuracy over its seeds); a gap "ours − best raw" is the mean ± std over the seeds both
have of the per-seed difference, in accuracy points. The goal of issue #16: every gap
at or above -0.5 on every table and on the mean.

    python -m benchmarks.fewlabel_report --data-home ../shared/data
"""

import argparse
import json
import platform
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from ._fewlabel_tables import MAX_TEST_ROWS, TABLES, describe_table
from ._harness import GPU_MARK, markdown_table, mean_std
from .fewlabel import FIELDS, PEERS, PREPROCESSED, RAW, RESULTS
from .fewlabel import OURS as EVERY_OURS

TOLERANCE = 0.5  # accuracy points: "at or above the best raw contender (within 0.5 points)"
#: The main table's contenders; ours on the raw table have a section of their own.
CONTENDERS = (*RAW, "tabnet", *PREPROCESSED)
OURS = PREPROCESSED
_COMMAND = "python -m benchmarks.fewlabel_report"


def paired_gap(frame, table, ours, raw, metric="accuracy"):
    """Per-seed ``ours - raw`` on ``table`` over the seeds both have (a Series)."""
    rows = frame[frame["table"] == table].pivot_table(index="seed", columns="contender",
                                                      values=metric)
    if ours not in rows or raw not in rows:
        return pd.Series(dtype=float)
    return (rows[ours] - rows[raw]).dropna()


def gap_cell(gap, in_standard_errors=False):
    """A gap's mean ± std (seeds), ✗ below ``-TOLERANCE``; with ``in_standard_errors``
    also the mean in standard errors of the mean, std / sqrt(seeds) (none for one seed
    or no spread): how far the draws put it from zero."""
    if gap.empty:
        return "-"
    cell = mean_std(gap, signed=True) + ("" if gap.mean() >= -TOLERANCE else " ✗")
    if in_standard_errors and len(gap) > 1 and gap.std() > 0:
        cell += f" [{gap.mean() / (gap.std() / np.sqrt(len(gap))):+.1f} s.e.]"
    return cell


def best_raw(frame, table, metric="accuracy"):
    """The raw contender with the higher mean ``metric`` on ``table``, or None."""
    means = frame[(frame["table"] == table) & frame["contender"].isin(RAW)].groupby(
        "contender")[metric].mean()
    return None if means.empty else means.idxmax()


def summary(frame, metric="accuracy"):
    """Per table (registry order): each contender's cell, the best raw one, our gaps.

    Also returns the per-table means and gaps used by the mean row and the plot.
    """
    tables = [t for t in TABLES if t in set(frame["table"])]
    lines, means, gaps = [], {}, {}
    for table in tables:
        rows = frame[frame["table"] == table]
        cells = []
        for contender in CONTENDERS:
            values = rows.loc[rows["contender"] == contender, metric]
            cells.append(mean_std(values) if len(values) else "-")
            if len(values):
                means[table, contender] = values.mean()
        raw = best_raw(frame, table, metric)
        for contender in (*OURS, "tabnet"):
            gaps[table, contender] = (paired_gap(frame, table, contender, raw, metric)
                                      if raw else pd.Series(dtype=float))
        lines.append([table, *cells, raw or "-",
                      *(gap_cell(gaps[table, contender]) for contender in OURS)])
    return tables, lines, means, gaps


def mean_row(tables, means, gaps):
    """Means over the tables where every contender of the configuration has results
    (and how many those are)."""
    present = [c for c in CONTENDERS if any((t, c) in means for t in tables)]
    complete = [t for t in tables if all((t, c) in means for c in present)]
    if not complete or not set(RAW) <= set(present):
        return None, complete
    cells = [f"{np.mean([means[t, c] for t in complete]):.2f}" if c in present else "-"
             for c in CONTENDERS]
    best = np.mean([max(means[t, c] for c in RAW) for t in complete])
    ours = []
    for contender in OURS:
        if contender not in present:
            ours.append("-")
            continue
        gap = np.mean([means[t, contender] - max(means[t, c] for c in RAW) for t in complete])
        ours.append(f"{gap:+.2f}" + ("" if gap >= -TOLERANCE else " ✗"))
    return [f"**mean of {len(complete)} tables**", *cells, f"{best:.2f} (per-table best)",
            *ours], complete


def timed_alone(frame):
    """The rows whose fit seconds compare: those of machines without a GPU. A lent GPU
    machine (its ``machine`` names the GPU) fitted several cells side by side on a few
    threads each, so its seconds are neither this machine's nor a fit's alone."""
    return frame[~frame["machine"].str.contains(GPU_MARK, regex=False)]


def raw_vs_preprocessed(part, metric="accuracy"):
    """Rows of ours on the raw table beside the same contender on the preprocessed one
    (issue #30): both cells, the per-seed gap raw - preprocessed, raw - best raw, and
    the ratio of their mean fit seconds; the mean over the tables that have both."""
    rows, gaps, vs_best, ratios = [], [], [], []
    tables = [t for t in TABLES if t in set(part["table"])]
    for name in PREPROCESSED:
        raw_name = f"{name}_raw"
        for table in tables:
            rows_of = part[part["table"] == table]
            raw_values = rows_of.loc[rows_of["contender"] == raw_name, metric]
            if raw_values.empty:
                continue
            values = rows_of.loc[rows_of["contender"] == name, metric]
            gap = paired_gap(part, table, raw_name, name, metric)
            best = best_raw(part, table, metric)
            to_best = (paired_gap(part, table, raw_name, best, metric) if best
                       else pd.Series(dtype=float))
            seconds = timed_alone(rows_of).groupby("contender")["fit_seconds"].mean()
            ratio = seconds[raw_name] / seconds[name] if name in seconds else np.nan
            quantile = rows_of.loc[rows_of["contender"] == f"{name}_quantile", metric]
            rows.append([name, table, mean_std(values) if len(values) else "-",
                         mean_std(raw_values), gap_cell(gap), gap_cell(to_best),
                         f"{ratio:.2f}" if np.isfinite(ratio) else "-",
                         mean_std(quantile) if len(quantile) else "-"])
            if not gap.empty:
                gaps.append((name, gap.mean()))
            if not to_best.empty:
                vs_best.append((name, to_best.mean()))
            if np.isfinite(ratio):
                ratios.append((name, ratio))
    for name in PREPROCESSED:
        mine = [g for n, g in gaps if n == name]
        if mine:
            best = [g for n, g in vs_best if n == name]
            ratio = [r for n, r in ratios if n == name]
            rows.append([name, f"**mean of {len(mine)} tables**", "", "",
                         f"{np.mean(mine):+.2f}", f"{np.mean(best):+.2f}" if best else "-",
                         f"{np.mean(ratio):.2f}" if ratio else "-", ""])
    return markdown_table(["Contender", "Table", "preprocessed", "raw table",
                           "raw − preprocessed", "raw − best raw contender",
                           "fit s raw / preprocessed", "quantile-normal instead"],
                          rows) if rows else []


#: Every other contender a table's best is taken over in the peers' view (issue #31).
OTHERS = (*RAW, *PEERS)


def every_contender_columns(part, ours):
    """The tables of ``part`` in the registry's order, and the contenders the
    every-contender view shows: those of ``ours`` and of ``OTHERS`` with rows."""
    tables = [t for t in TABLES if t in set(part["table"])]
    return tables, [c for c in (*ours, *OTHERS) if c in set(part["contender"])]


def against_every_contender(part, ours=("qmatch_clf", "qmatch_clf_raw")):
    """Rows of ours against the best of every other contender (``OTHERS``) per table:
    each contender's mean accuracy, the best one, and ours minus it per seed; a mean row
    over the tables where every contender has results. Empty without peer results."""
    tables, shown = every_contender_columns(part, ours)
    ours = [name for name in ours if name in shown]  # a config may lack the raw call
    if not set(PEERS) & set(shown) or not ours:
        return []
    rows, means = [], {}
    for table in tables:
        rows_of = part[part["table"] == table]
        cells = []
        for contender in shown:
            values = rows_of.loc[rows_of["contender"] == contender, "accuracy"]
            cells.append(mean_std(values) if len(values) else "-")
            if len(values):
                means[table, contender] = values.mean()
        others = {c: means[table, c] for c in OTHERS if (table, c) in means}
        best = max(others, key=others.get) if others else None
        gaps = [gap_cell(paired_gap(part, table, name, best), in_standard_errors=True)
                if best else "-" for name in ours]
        rows.append([table, *cells, best or "-", *gaps])
    # the tables every other contender has; a column of ours with fewer says over how many
    complete = [t for t in tables if all((t, c) in means for c in shown if c in OTHERS)]
    if complete:
        best = {t: max(means[t, c] for c in OTHERS if c in shown) for t in complete}

        def mean_cell(column, signed):
            have = [t for t in complete if (t, column) in means]
            if not have:
                return "-"
            values = [means[t, column] - (best[t] if signed else 0.0) for t in have]
            cell = f"{np.mean(values):+.2f}" if signed else f"{np.mean(values):.2f}"
            return cell + ("" if len(have) == len(complete) else f" ({len(have)} tables)")

        rows.append([f"**mean of {len(complete)} tables**",
                     *(mean_cell(c, signed=False) for c in shown),
                     f"{np.mean(list(best.values())):.2f} (per-table best)",
                     *(mean_cell(n, signed=True) for n in ours)])
    return markdown_table(["Table", *shown, "best other", *(f"{n} − best other" for n in ours)],
                          rows)


def seconds_cell(value):
    """A mean fit time in seconds as a table cell: one decimal, "<0.1" below 0.05
    (rather than "0.0", which reads as free), "-" where there is none (None)."""
    if value is None:
        return "-"
    return "<0.1" if value < 0.05 else f"{value:.1f}"


def seconds_of_every_contender(part, ours=("qmatch_clf", "qmatch_clf_raw")):
    """Mean fit seconds per table of ours and of every other contender (``OTHERS``),
    over the ``timed_alone`` rows: the cost beside the accuracy of
    ``against_every_contender``."""
    tables, shown = every_contender_columns(part, ours)
    seconds = timed_alone(part).groupby(["table", "contender"])["fit_seconds"].mean()

    rows = [[table, *(seconds_cell(seconds.get((table, c))) for c in shown)]
            for table in tables]
    return markdown_table(["Table", *(f"{c} s" for c in shown)], rows)


def picked_without_hindsight(part, ours="qmatch_clf"):
    """Rows of ours against the other contender a user would pick without seeing the
    draws it is scored on: on each table, the seeds where ours and every other contender
    (``OTHERS``) have results are split by parity, the contender best on the even seeds'
    mean is scored on the odd ones and the reverse (two-fold cross-fitting). The per-table
    best of the same seeds (``against_every_contender``) picks its winner on the draws it
    scores, which favours it by the luck of the winner: with several contenders within a
    few points on 10-30 labeled rows, the best mean of 20 draws is biased upwards. A
    mean row over the tables. Empty without peer results or ours."""
    tables = [t for t in TABLES if t in set(part["table"])]
    present = [c for c in OTHERS if c in set(part["contender"])]
    if not set(PEERS) & set(present) or ours not in set(part["contender"]):
        return []
    rows, gaps_of_tables, picked_means = [], [], []
    for table in tables:
        accuracy = part[part["table"] == table].pivot_table(
            index="seed", columns="contender", values="accuracy")
        if ours not in accuracy or not all(c in accuracy for c in present):
            continue
        accuracy = accuracy[[ours, *present]].dropna()
        halves = [accuracy.index[accuracy.index % 2 == parity] for parity in (0, 1)]
        if not all(len(half) for half in halves):
            continue
        # the contender chosen on one half, scored on the other
        chosen = [accuracy.loc[halves[1 - h], present].mean().idxmax() for h in (0, 1)]
        picked = pd.concat([accuracy.loc[halves[h], chosen[h]] for h in (0, 1)]).sort_index()
        gap = accuracy[ours] - picked
        gaps_of_tables.append(gap.mean())
        picked_means.append(picked.mean())
        rows.append([table, mean_std(accuracy[ours]), f"{chosen[0]} / {chosen[1]}",
                     mean_std(picked), gap_cell(gap, in_standard_errors=True)])
    if not rows:
        return []
    rows.append([f"**mean of {len(rows)} tables**", "", "", f"{np.mean(picked_means):.2f}",
                 f"{np.mean(gaps_of_tables):+.2f}"])
    return markdown_table(["Table", ours, "picked for even / odd seeds", "picked contender",
                           f"{ours} − picked"], rows)


#: The configuration of the library's defaults: the one compared with every contender
#: (a later configuration may be a variant that was not adopted).
DEFAULTS_CONFIG = "batched-twins"

#: The few-label head's changes of issue #31 as (label, config, contender), the first
#: the head before them; each is compared with it on the same tables and seeds.
HEAD_STEPS = (
    ("before (auto-v10)", "auto-v10", "qmatch_clf"),
    ("+ self-training", "auto-v10", "qmatch_clf_selftrain"),
    ("+ self-training + regularised trees (auto-v11)", "auto-v11", "qmatch_clf"),
    ("+ a twin shares its regression's weight against the trees (auto-v12)", "auto-v12",
     "qmatch_clf"),
    ("+ the trees stacked with the regressions (auto-v13)", "auto-v13", "qmatch_clf"),
    ("+ no trees under 10 labeled rows a class (auto-v14)", "auto-v14", "qmatch_clf"),
    ("+ label-spreading twins (auto-v15, not adopted)", "auto-v15", "qmatch_clf"),
    ("auto-v14 + pseudo-labels weigh as much as the labels (auto-v16)", "auto-v16",
     "qmatch_clf"),
    ("auto-v16 + label-spreading twins (auto-v17, not adopted)", "auto-v17", "qmatch_clf"),
)

#: The boosted member stacked against the plain head refitted in each fold (honest
#: out-of-fold predictions), against the head before it, on all of its seeds.
HONEST_STACKING = (
    ("before (auto-v16)", "auto-v16", "qmatch_clf"),
    ("honest stacking (auto-v18)", "auto-v18", "qmatch_clf"),
)

#: The boosted member's leaves asking at most 5 rows (``heads._boosting.min_samples_leaf``)
#: against the head before, on all of its seeds.
LEAF_CAP = (
    ("before (auto-v18)", "auto-v18", "qmatch_clf"),
    ("leaves of at most 5 rows (auto-v19)", "auto-v19", "qmatch_clf"),
)

#: The boosted member's splits each choosing among half the features
#: (``max_features`` in ``heads._boosting.BOOSTING_PARAMS``) against the head before.
FEATURE_SAMPLING = (
    ("before (auto-v19)", "auto-v19", "qmatch_clf"),
    ("half the features at each split (auto-v20)", "auto-v20", "qmatch_clf"),
)

#: The pretraining budget of issue #54: the earlier defaults' 100 epochs against a budget
#: a tenth of it (``QMatchEncoder(passthrough=True, max_epochs=10)``, the head unchanged),
#: and against today's defaults (10 epochs, small batches on small tables, and the changes
#: since ``auto-v20``).
PRETRAINING_BUDGET = (
    ("100 epochs (auto-v20)", "auto-v20", "qmatch_clf"),
    ("10 epochs (epochs10-v20)", "epochs10-v20", "qmatch_clf"),
    ("10 epochs, small batches on small tables (budget-v1)", "budget-v1", "qmatch_clf"),
    ("+ at most 1,000 steps on large tables (budget-v2, not adopted)", "budget-v2",
     "qmatch_clf"),
    ("10 epochs everywhere, the solver in NumPy (budget-v3)", "budget-v3", "qmatch_clf"),
    ("the member splits only columns that vary (budget-v4)", "budget-v4", "qmatch_clf"),
    ("+ the member's bins at most one per leaf of rows (member-bins, not adopted)",
     "member-bins", "qmatch_clf"),
    ("+ never below 64 bins (member-bins-floor, a screen)", "member-bins-floor", "qmatch_clf"),
    ("budget-v4 + pretext validation in train mode (pretext-trainmode, a screen)",
     "pretext-trainmode", "qmatch_clf"),
    ("the defaults: both (budget-v5)", "budget-v5", "qmatch_clf"),
    ("+ the member's 150 rounds at twice the rate (member-150, a screen)", "member-150",
     "qmatch_clf"),
    ("+ batch-norm statistics of the clean rows (clean-stats, a screen)", "clean-stats",
     "qmatch_clf"),
    ("member-150 + two exact speed-ups (budget-v6, not adopted)", "budget-v6",
     "qmatch_clf"),
    ("budget-v5 + the two exact speed-ups (budget-v7, the code of the defaults)", "budget-v7",
     "qmatch_clf"),
    ("+ at least 100 steps on tables under 1,280 rows (steps-floor, a screen)", "steps-floor",
     "qmatch_clf"),
    ("+ the learning rate cosine-annealed to 0 over the budget (cosine, a screen)", "cosine",
     "qmatch_clf"),
    ("+ cosine, at most 1,000 steps (cap1000-cosine, a screen)", "cap1000-cosine",
     "qmatch_clf"),
    ("budget-v7's code judged whole with CatBoost (budget-v7-full)", "budget-v7-full",
     "qmatch_clf"),
    ("+ the corruption's permutations as a stable NumPy sort (stable-perm)", "stable-perm",
     "qmatch_clf"),
    ("+ the member's rounds early-stopped on its folds (member-es, not adopted)", "member-es",
     "qmatch_clf"),
    ("stable-perm + the member at 0.1 x 100 rounds (member-sk, not adopted)", "member-sk",
     "qmatch_clf"),
    ("stable-perm + pretraining ends where an epoch gains under 0.01% a step (tol-step)",
     "tol-step", "qmatch_clf"),
    ("+ the member read out of 3 folds of its own (member-3fold, not adopted)",
     "member-3fold", "qmatch_clf"),
    ("tol-step + a faster logistic objective, the member refitted only where it weighs "
     "(fast-head)", "fast-head", "qmatch_clf"),
    ("+ the member's trees of vector leaves, one a round for three classes or more "
     "(vector-member)", "vector-member", "qmatch_clf"),
    ("+ each tree stored once with a value per class (compact-trees)", "compact-trees",
     "qmatch_clf"),
    ("+ no weights passed for rows of weight 1 (lean-member)", "lean-member", "qmatch_clf"),
    ("+ a linear projector instead of the 512-128 head (linear-projector, not adopted)",
     "linear-projector", "qmatch_clf"),
    ("lean-member + a 128-128 projection head (narrow-projector, not adopted)",
     "narrow-projector", "qmatch_clf"),
    ("lean-member + the head's small regressions solved by Newton's method to their "
     "optimum (newton-head, not adopted)", "newton-head", "qmatch_clf"),
    ("lean-member + the head's L-BFGS in fewer NumPy calls (quick-lbfgs)", "quick-lbfgs",
     "qmatch_clf"),
    ("+ batches of 128 rows on every table (batch128-all, not adopted)", "batch128-all",
     "qmatch_clf"),
    ("quick-lbfgs + pretraining under bf16 autocast where the CPU has bf16 units "
     "(bf16-auto)", "bf16-auto", "qmatch_clf"),
    ("+ the head's block weights' paths solved as one batch (batched-blocks)",
     "batched-blocks", "qmatch_clf"),
    ("+ their self-trained twins as one batch too, the defaults' code (batched-twins)",
     "batched-twins", "qmatch_clf"),
)

#: The head's stacking read from its own folds (``heads._logistic.honest_out_of_fold``) against
#: the head refitted whole in each fold, both on the 10-epoch encoder (issue #54).
SHARED_FOLDS = (
    ("head refitted in each fold (epochs10-v20)", "epochs10-v20", "qmatch_clf"),
    ("the head's own folds (epochs10-shared)", "epochs10-shared", "qmatch_clf"),
)

#: The input path of issue #55 (a scale at least the range over K, values clipped to +-K,
#: a non-normalising first layer) at K = 10 and 3, against the path before, all on the
#: 10-epoch encoder with the shared-folds head: the base is ``epochs10-shared`` where it
#: ran and ``epochs10-v20`` elsewhere, on the tables without a boosted member, where the
#: two heads are the same code.
INPUT_PATH = (
    ("before (epochs10-shared / -v20)", ("epochs10-shared", "epochs10-v20"), "qmatch_clf"),
    ("bounded at 10 (epochs10-input10)", "epochs10-input10", "qmatch_clf"),
    ("bounded at 3 (epochs10-input3)", "epochs10-input3", "qmatch_clf"),
)

#: The head's later steps, each its own section: (heading, steps, paragraph). Columns
#: as in the head-steps table.
STEP_SECTIONS = (
    ("The boosted member stacked against the head refitted in each fold", HONEST_STACKING,
     "The trees' weight in the head from out-of-fold predictions of the plain "
     "head refitted whole in each fold (its Cs and its regressions' weights "
     "chosen without the held-out rows) instead of regressions refitted at the C "
     "and weight that every row chose (`heads._logistic.honest_out_of_fold`). Only "
     "tables with a boosted member (50 labeled rows and 10 a class) can move; "
     "the others are identical, seed for seed. Columns as above."),
    ("The boosted member's leaves capped at 5 rows", LEAF_CAP,
     "A leaf of the trees asks one labeled row in 20, as before, but at most 5 "
     "(`_boosting.min_samples_leaf`): only tables of 120 labeled rows or more "
     "(folds of them from 150) get other trees. The smaller ones move by the "
     "machine alone: `auto-v18` ran on an AMD EPYC (or a lent GPU), `auto-v19` "
     "on an Intel Xeon, whose float32 kernels round differently, and pretraining "
     "carries the difference to the embedding (wine, 15 labeled rows, has no "
     "trees at all). Columns as above; a fit-seconds ratio only where both steps "
     "ran on one machine (\"-\" otherwise)."),
    ("The boosted member's splits among half the features", FEATURE_SAMPLING,
     "Each split of the trees chooses among half the features, drawn afresh at "
     "every node (`max_features=0.5` in `_boosting.BOOSTING_PARAMS`). Only tables "
     "with a boosted member (50 labeled rows and 10 a class: loans, the HIGGS "
     "sample, Adult, diamonds, MNIST, Cover Type) can move; both configs ran on "
     "the same Intel Xeon, so the others are identical, seed for seed. Columns as "
     "above; a fit-seconds ratio only where both steps ran on one machine."),
    ("The stacking read from the head's own folds (issue #54)", SHARED_FOLDS,
     "The boosted member stacked against out-of-fold logits of the plain head's own "
     "cross-validation regressions, each fold's C and weights chosen on the other folds' "
     "scores (`heads._logistic.honest_out_of_fold`), instead of the whole head, "
     "cross-validation inside, refitted in every fold; the same 10-epoch encoders (the "
     "same seeds). Only tables with a boosted member (50 labeled rows and 10 a class) "
     "can move. Gaps per seed, mean ± std, [in standard errors]; fit-seconds ratio of "
     "whole fits."),
    ("The input path (issue #55)", INPUT_PATH,
     "Each numeric column's scale at least its range over K and every mapped value "
     "clipped to +-K (a constant column reads 0), and a learnable per-column scale of "
     "the centred input as the encoder's first layer instead of a normalising batch "
     "norm; K = 10 (`4ac42ed`) and K = 3 (`edaa963`, branch `input-k3`: that one "
     "constant), against the "
     "path before, all with the 10-epoch encoder and the shared-folds head. Gaps per "
     "seed, mean ± std, [in standard errors]."),
    ("A tenth of the pretraining (issue #54)", PRETRAINING_BUDGET,
     "`QMatchClassifier(QMatchEncoder(passthrough=True, max_epochs=10))`, the default "
     "encoder of `auto-v20` with a tenth of its epochs and the head unchanged, and "
     "`budget-v1` (10 epochs, in batches of 128 rows on tables of up to 4,608 rows, and "
     "the head and input path of issues #54 and #55), `budget-v2` (the regularisation "
     "paths stopped past their best C, and the fewest epochs that make 1,000 steps on "
     "tables of more than 51,200 rows: Cover Type 5, MNIST 9; not adopted), "
     "`budget-v3` (`budget-v2` with 10 epochs everywhere, the solver in NumPy) and "
     "`budget-v4` (the boosted member splits only the "
     "columns that vary among its rows), `member-bins` (`budget-v4` with the member's "
     "histogram bins at most one per leaf of rows, `n_rows // min_samples_leaf`; on the "
     "six tables with a member, CatBoost in the same run; not adopted: it lost the HIGGS "
     "sample's member on seed 12 at 16 bins), `member-bins-floor` (that cap never "
     "below 64 bins; a screen on four tables without CatBoost, commit 8bda409: Cover Type "
     "and MNIST, whose caps are above 64, are `member-bins`' code path), "
     "`pretext-trainmode` (`budget-v4` with the pretext validation loss measured in train "
     "mode, each batch normalised by its own statistics; a screen without CatBoost, "
     "commit 0f361ac), `budget-v5` (both, judged whole "
     "with CatBoost) and two screens on it without CatBoost: `member-150` (the member's "
     "150 rounds at learning rate 0.06 for 300 at 0.03, commit 146b422) and `clean-stats` "
     "(the encoder's batch norms given the statistics of clean fit rows after "
     "pretraining, commit c46b67b); screen commits are reachable from main's history, "
     "their code not merged unless adopted; `budget-v6` (`member-150` with two changes "
     "that leave every prediction as it was, the logistic solver skipping the rows no "
     "problem weighs and the member binning rows of weight 1 without weights; with "
     "CatBoost on 13 tables, MNIST not run, commit 74aa8c5; not adopted: Cover Type "
     "-0.11 at -2.5 standard errors), and `budget-v7`, the defaults' code until `tol-step`: "
     "`budget-v5`'s model with the two exact changes (a run of the six tables with a "
     "boosted member, without CatBoost, commit f31b2e2: the same predictions as "
     "`budget-v5`, which the tables above report, in less time), and three screens "
     "on `budget-v7` without CatBoost: `steps-floor` (the default encoder trains the epochs "
     "that make at least 100 steps where 10 epochs make fewer, tables under 1,280 rows; "
     "commit 742b655), `cosine` (the default encoder's learning rate annealed to 0 along a "
     "cosine over its steps) and `cap1000-cosine` (that, with the fewest epochs that make "
     "1,000 steps where 10 would make more: Cover Type 5; both commit 9e8104a), and "
     "`budget-v7-full`: the code of the defaults (`budget-v7`'s) judged on every table "
     "with CatBoost in the same run (commit 89d25ac), `stable-perm` (`budget-v7-full` with "
     "the corruption's per-column permutations the stable argsort of its uniforms, sorted by "
     "NumPy on the CPU, where torch's unstable argsort ordered tied keys otherwise: the same "
     "distribution, other draws where keys tie; judged whole with CatBoost, commit cb972b2), "
     "`member-es` (`stable-perm` with the "
     "boosted member's rounds chosen by early stopping on its folds' held-out rows: grown 25 "
     "rounds between looks at their tempered held-out likelihood, stopped two looks past "
     "the best, at most 300; with CatBoost on every table but MNIST, where the member's "
     "likelihood still rose at 300 rounds, commit 9c84abc; Adult and diamonds ran beside "
     "the test suite, so their fit seconds do not compare; not adopted: the HIGGS sample "
     "-0.51, Adult -0.15 and Cover Type -0.08 at -2.0 to -2.2 standard errors, for loans "
     "+0.19 and diamonds +1.09), `member-sk` (`stable-perm` with the boosted member at "
     "scikit-learn's learning rate and rounds, 0.1 x 100, instead of 0.03 x 300: a third of "
     "its trees; with CatBoost on the tables with a member but MNIST (five), on an AMD EPYC "
     "with AVX512-BF16, commit 89d7f80; not adopted: diamonds -0.18 at -7.2 standard "
     "errors, its `stable-perm` rows reproduced on that machine to 0.02 points), "
     "`tol-step` (`stable-perm` with the default encoder's "
     "`tol=1e-4`: pretraining ends at the first epoch, once 300 steps have run, that lowers "
     "the pretext training loss by less than 0.01% of it a step; only Cover Type, MNIST and "
     "diamonds make 300 steps within 10 epochs, so the other tables train as before; judged "
     "whole with CatBoost on the AMD EPYC with AVX512-BF16, commit f5aa211; diamonds at "
     "commit f734c66, where the share an epoch must remove became `1 - (1 - tol) ** "
     "steps`), `member-3fold` (`tol-step` with the boosted member's out-of-fold log-odds "
     "from 3 stratified folds of its own instead of the head's 5: 4 fits of the member "
     "instead of 6; with CatBoost, stopped after Cover Type, MNIST and four seeds of "
     "diamonds, commit 07738a8; not adopted: Cover Type -0.19 at -2.0 standard errors, its "
     "member's weight about 0.1 lower on the four seeds where the head has 4 folds), "
     "`fast-head` (`tol-step`'s model, fitted faster: the "
     "logistic head's objective with one exp and no one-hot copy, equal to 2e-16, and the "
     "member's trees on all rows fitted only where its stacking weight counts; judged "
     "whole with CatBoost on the AMD EPYC with AVX512-BF16, commit 8e97e1c), "
     "`vector-member` (`fast-head` with the "
     "boosted member of three classes or more grown as one tree of vector leaves a round, "
     "depth 6, "
     "where scikit-learn grows one tree per class and round, depth 4: each leaf takes every "
     "class's Newton step; two classes keep scikit-learn's booster, so their tables run "
     "`fast-head`'s code path; judged whole with CatBoost on the AMD EPYC with AVX512-BF16, "
     "commit 6b75675), `compact-trees` (`vector-member`'s "
     "model, its trees stored once with one value per class in each leaf instead of once "
     "per class, so that predicting the test rows, which the judge times with the fit, "
     "walks a K-th of the trees: the same predictions; with CatBoost on the two tables "
     "where the member weighs and the test rows are many, Cover Type and diamonds, commit "
     "8afaef3), `lean-member` (`compact-trees` with the "
     "member's rows of weight 1 passed without weights, which scikit-learn checked in "
     "every round, and its softmax inline: the same trees bit for bit; with CatBoost on "
     "Cover Type and diamonds, commit 7d69ec6), `linear-projector` (`lean-member` with "
     "the default encoder's projection one linear layer to the loss's 128 dimensions "
     "instead of the (512, 128) head, which the paper found no better for Q-Match: over a "
     "quarter of the pretraining's multiply-adds on tables of a few dozen columns; judged "
     "whole with CatBoost on the AMD EPYC with AVX512-BF16, commit de70af1; not adopted: "
     "MNIST -0.50 and Adult -0.09, which put Adult 3.3 standard errors below `auto-v20`), "
     "`narrow-projector` (`lean-member` with a projection head as wide as the embedding, "
     "(128, 128): about 9% of those multiply-adds; judged whole with CatBoost on the AMD "
     "EPYC with AVX512-BF16, commit 6306dc7; not adopted: -0.06 on the mean of 14 tables "
     "against `vector-member`, MNIST -0.31, and Adult 2.8 standard errors below "
     "`auto-v20`), `newton-head` (`lean-member`'s model with the head's logistic "
     "regressions of at most 128 parameters (a few dozen labeled rows of a few classes, "
     "on as many features as rows) solved by Newton's method to a gradient of 1e-8 "
     "instead of by L-BFGS to 1e-4: a few iterations where L-BFGS took about ten, and "
     "their optimum where L-BFGS stopped within 1e-4 of it, which on the flat objectives "
     "of large Cs leaves the regressions a tenth apart in margin; Cover Type, MNIST, "
     "diamonds, loans and digits keep L-BFGS and `lean-member`'s results bit for bit; "
     "judged whole with CatBoost on the AMD EPYC with AVX512-BF16, commits 5f84aa5 "
     "(Cover Type, MNIST) and 212e816; not adopted: -0.05 on the mean of 14 tables "
     "against `vector-member`, penguins -0.53 (-2.6 standard errors), breast cancer "
     "-0.35; L-BFGS solved to 1e-8 loses penguins' same 0.53 on the same seeds, so the "
     "head's accuracy there leans on L-BFGS stopping at 1e-4), `quick-lbfgs`, the defaults' "
     "code until `bf16-auto` (`lean-member` with the head's L-BFGS doing the same arithmetic in "
     "fewer NumPy calls: its predictions bit for bit; judged whole with CatBoost on the AMD "
     "EPYC with AVX512-BF16, commit 46a2736), `batch128-all` (`quick-lbfgs` with the "
     "default encoder's batches of 128 rows on every table, not only where 512 would make "
     "fewer than 100 steps: four times the steps for the same rows, and `tol`, judged per "
     "step, ends the large tables' pretraining after fewer epochs (Cover Type 2, diamonds 3, "
     "MNIST 4-5, the HIGGS sample 6-8); with CatBoost on the six tables it changes "
     "(tables of more than 4,608 rows) and on wine, whose rows it leaves as they were, "
     "commit c51e2a9; not adopted: MNIST -0.77 (-3.6 "
     "standard errors) for Cover Type +0.08 at 3.7x CatBoost's fit time instead of 5.1x), "
     "`bf16-auto` (`quick-lbfgs` with `QMatchClassifier`'s "
     "`precision` defaulting to \"auto\": the default encoder pretrains under bf16 "
     "autocast on CPUs with bf16 matrix units, as this judge's AMD EPYC with AVX512-BF16 "
     "has, and in float32 elsewhere; "
     "judged whole with CatBoost, commit d31893c), `batched-blocks` (`bf16-auto` with the "
     "head's cross-validated regularisation paths of its three embedding-block weights "
     "solved as one batch of L-BFGS problems per C, the block weight a scale of the "
     "embedding's columns: the same optimum to the solver's tolerance, not bit for bit; "
     "judged whole with CatBoost, commit 6eda92b), `batched-twins`, the code of today's "
     "defaults (`batched-blocks` with the three self-trained twins also one batch per "
     "round; judged whole with CatBoost, commit 342949f), "
     "against `auto-v20`'s 100 epochs on the same draws (the encoder of `epochs10-v20` "
     "is seeded by the judge's seed, the default one by the classifier's: the same "
     "rows, other initialisations). What the accuracy pays for the fit time of issue "
     "#54's goal. Gaps per seed, mean ± std, [in standard errors of the mean]; the "
     "fit-seconds ratio where both ran on one machine (see each config's CatBoost "
     "ratios for the others)."),
)


def ratio_cell(ratio):
    """A ratio of fit seconds, "-" where no seconds compare (NaN)."""
    return "-" if np.isnan(ratio) else f"{ratio:.2f}"


def _step_rows(frame, configs, contender):
    """The rows of ``contender`` under ``configs`` (one name, or several in order of
    preference: each (table, seed) from the first that has it), indexed by (table, seed)."""
    configs = (configs,) if isinstance(configs, str) else configs
    rows = pd.concat([frame[(frame["config"] == config) & (frame["contender"] == contender)]
                      for config in configs])
    return rows.drop_duplicates(["table", "seed"]).set_index(["table", "seed"])


def head_steps(frame, steps=HEAD_STEPS, in_standard_errors=False):
    """Rows of each step's accuracy and its per-seed gap to the first step, and its mean
    fit seconds over the first's (on the seeds both have ``timed_alone`` on one machine;
    "-" where there are none), per table and on the mean of the tables every step has;
    empty until two steps have results. A step's config may name several
    (:func:`_step_rows`)."""
    runs = {label: _step_rows(frame, config, contender) for label, config, contender in steps}
    runs = {label: run for label, run in runs.items() if len(run)}
    if len(runs) < 2 or steps[0][0] not in runs:
        return []
    base = runs[steps[0][0]]
    rows, gaps, ratios = [], {}, {}
    for table in [t for t in TABLES if t in set(base.index.get_level_values("table"))]:
        cells = [mean_std(base.loc[table, "accuracy"])]
        for label, run in list(runs.items())[1:]:
            if table not in run.index.get_level_values("table"):
                cells += ["-", "-", "-"]
                continue
            before = base.loc[table]
            mine = run.loc[table]
            mine = mine[mine.index.isin(before.index)]  # the first step's seeds alone
            gap = (mine["accuracy"] - before["accuracy"]).dropna()
            timed = timed_alone(mine).index.intersection(timed_alone(before).index)
            timed = timed[mine.loc[timed, "machine"] == before.loc[timed, "machine"]]
            ratio = (mine.loc[timed, "fit_seconds"].mean()
                     / before.loc[timed, "fit_seconds"].mean()) if len(timed) else np.nan
            gaps.setdefault(label, {})[table] = gap.mean()
            ratios.setdefault(label, {})[table] = ratio
            cells += [mean_std(mine["accuracy"]), gap_cell(gap, in_standard_errors),
                      ratio_cell(ratio)]
        rows.append([table, *cells])
    complete = set.intersection(*(set(g) for g in gaps.values())) if gaps else set()
    if complete:
        mean = [f"**mean of {len(complete)} tables**", ""]
        for label in list(runs)[1:]:
            mean += ["", f"{np.mean([gaps[label][t] for t in complete]):+.2f}",
                     ratio_cell(np.mean([ratios[label][t] for t in complete]))]
        rows.append(mean)
    header = ["Table", steps[0][0]]
    for label in list(runs)[1:]:
        header += [label, "gap", "fit s ratio"]
    return markdown_table(header, rows)


#: The fit-time goal of issue #54: ours in at most this many times CatBoost's default
#: fit on every table, and the geometric mean of the ratios at most ``MEAN_TIME_GOAL``.
TIME_GOAL, MEAN_TIME_GOAL = 5.0, 2.0


def geometric_mean(values):
    """The geometric mean of positive ``values`` (the mean of fit-time ratios)."""
    return float(np.exp(np.mean(np.log(values))))


def ratio_against_goal(ratio, goal):
    """A fit-time ratio to one decimal, ✗ where it is above ``goal``."""
    return f"{ratio:.1f}" + (" ✗" if ratio > goal else "")


def fit_split(rows):
    """A table's cells "pretraining s", "rest s" and "head s" from ``rows`` (one a seed)
    with ``fit_seconds`` and ``details``: the means of the pretraining epochs' seconds, of
    the rest of the fit (the head, and the set-up around both), and of the head's fit alone
    (``head_seconds``: the fit again with the encoder frozen; ✗ where it is not under the
    pretraining, issue #54's goal for the head); each blank where a row predates its
    measurement."""
    details = rows.get("details", pd.Series(np.nan, rows.index))

    def measured(name):
        return details.map(lambda cell: (json.loads(cell).get(name, np.nan)
                                         if isinstance(cell, str) else np.nan))

    pretrained, head_fit = measured("pretraining_seconds"), measured("head_seconds")
    cells = ["", "", ""]
    if pretrained.notna().all():
        cells[:2] = [seconds_cell(pretrained.mean()),
                     seconds_cell((rows["fit_seconds"] - pretrained).mean())]
        if head_fit.notna().all():
            cells[2] = seconds_cell(head_fit.mean()) + (
                " ✗" if head_fit.mean() >= pretrained.mean() else "")
    return cells


def against_catboost_time(frame, config, ours="qmatch_clf", tables=TABLES):
    """Rows of ours' fit seconds over CatBoost's default fit on the same rows (issue
    #54), from the rows of ``config`` alone: both fitted in the same run, on the same
    machine and one thread each. Per table of ``tables`` (in their order), the seeds both
    have ``timed_alone`` on one machine: each mean, the geometric mean over seeds of the
    per-seed ratio (✗ above ``TIME_GOAL``), and the accuracy of each; ours' fit split
    (:func:`fit_split`); a last row with the geometric mean of the tables' ratios. Empty
    where the run has no CatBoost rows."""
    part = timed_alone(frame[frame["config"] == config])
    # a pair: the same table, seed and machine
    pairs = part[part["contender"] == ours].merge(
        part[part["contender"] == "catboost"], on=["table", "seed", "machine"],
        suffixes=("", "_catboost"))
    rows, ratios = [], []
    for table in [t for t in tables if t in set(pairs["table"])]:
        both = pairs[pairs["table"] == table]
        ratio = geometric_mean(both["fit_seconds"] / both["fit_seconds_catboost"])
        ratios.append(ratio)
        rows.append([table, seconds_cell(both["fit_seconds"].mean()),
                     seconds_cell(both["fit_seconds_catboost"].mean()),
                     ratio_against_goal(ratio, TIME_GOAL),
                     mean_std(both["accuracy"]), mean_std(both["accuracy_catboost"]),
                     *fit_split(both)])
    if not rows:
        return []
    rows.append([f"**geometric mean of {len(rows)} tables**", "", "",
                 ratio_against_goal(geometric_mean(ratios), MEAN_TIME_GOAL), "", "", "", "",
                 ""])
    return markdown_table(["Table", f"{ours} s", "catboost s", f"{ours} / catboost",
                           f"{ours} accuracy", "catboost accuracy", "pretraining s",
                           "rest s (head, set-up, prediction)", "head s"], rows)


def pareto_plot(path, part, tables, config):
    """Accuracy against fit seconds (log scale), one point per contender per table, one
    panel a table (``timed_alone`` rows, means over seeds): what a fit costs beside what
    it gains, for every contender of ``part`` (issue #54)."""
    timed = timed_alone(part)
    shown = [t for t in tables if t in set(timed["table"])]
    contenders = [c for c in (*EVERY_OURS, "tabnet", *OTHERS) if c in set(timed["contender"])]
    columns = 4
    grid_rows = -(-len(shown) // columns)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(3.2 * columns, 2.6 * grid_rows),
                             squeeze=False)
    colors = {c: f"C{k % 10}" for k, c in enumerate(contenders)}
    for ax, table in zip(axes.flat, shown, strict=False):
        means = timed[timed["table"] == table].groupby("contender")[
            ["fit_seconds", "accuracy"]].mean()
        for contender in [c for c in contenders if c in means.index]:
            ours = contender in EVERY_OURS
            ax.scatter(max(means.loc[contender, "fit_seconds"], 0.01),
                       means.loc[contender, "accuracy"], color=colors[contender],
                       marker="*" if ours else "o", s=90 if ours else 30, label=contender,
                       edgecolors="black" if ours else "none", linewidths=0.5)
        ax.set_xscale("log")
        ax.set_title(table, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(shown):]:
        ax.axis("off")
    handles = {h.get_label(): h for ax in axes.flat for h in ax.collections}
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=6, fontsize=8)
    fig.supxlabel("fit seconds, one thread (log scale; mean over seeds)", fontsize=9, y=0.05)
    fig.supylabel("test accuracy (%)", fontsize=9)
    fig.suptitle(f"Few labels: accuracy against fit time (config {config})", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: The defaults' rows under float32 (this machine) and under bf16 autocast (a machine
#: whose CPU has AMX, where ``precision="auto"`` picks it): (config, label) pairs.
PRECISIONS = (("auto-v16", "float32"), ("auto-v16-bf16", "bf16 autocast"))


def precision_pairs(frame, pairs=PRECISIONS, contender="qmatch_clf"):
    """Per table, ``contender``'s accuracy under each precision of ``pairs`` on the seeds
    both have, and the per-seed gap (the second minus the first); empty when no seed
    has both."""
    (first, first_label), (second, second_label) = pairs
    runs = [frame[(frame["config"] == config) & (frame["contender"] == contender)]
            .drop_duplicates(["table", "seed"]).set_index(["table", "seed"])["accuracy"]
            for config, _ in pairs]
    both = pd.concat(runs, axis=1, keys=[first, second]).dropna()
    rows = []
    for table in [t for t in TABLES if t in set(both.index.get_level_values("table"))]:
        pair = both.loc[table]
        rows.append([table, mean_std(pair[first]), mean_std(pair[second]),
                     mean_std(pair[second] - pair[first], signed=True)])
    if not rows:
        return []
    return markdown_table(["Table", f"{first_label} (`{first}`)", f"{second_label} (`{second}`)",
                           "gap"], rows)


def paired_timing(csv_path):
    """The last config's rows of ``qmatch_clf`` against ``qmatch_clf_plain`` fitted one
    after the other in one run (``fewlabel_timing.csv``), and that config: mean fit
    seconds, their per-seed ratio and the accuracy gap; ``([], None)`` when the file is
    absent."""
    if not Path(csv_path).exists():
        return [], None
    frame = pd.read_csv(csv_path)
    config = frame["config"].iloc[-1]
    frame = frame[frame["config"] == config]
    rows, ratios = [], []
    for table in [t for t in TABLES if t in set(frame["table"])]:
        pair = frame[frame["table"] == table].pivot_table(
            index="seed", columns="contender", values=["fit_seconds", "accuracy"])
        seconds, accuracy = pair["fit_seconds"], pair["accuracy"]
        ratio = seconds["qmatch_clf"] / seconds["qmatch_clf_plain"]
        ratios += list(ratio)
        rows.append([table, f"{seconds['qmatch_clf'].mean():.1f}",
                     f"{seconds['qmatch_clf_plain'].mean():.1f}",
                     f"{ratio.mean():.2f} (max {ratio.max():.2f})",
                     gap_cell(accuracy["qmatch_clf"] - accuracy["qmatch_clf_plain"])])
    rows.append(["**all runs**", "", "", f"{np.mean(ratios):.2f} (max {np.max(ratios):.2f})",
                 ""])
    return markdown_table(["Table", "self_training=True s", "self_training=False s",
                           "ratio", "accuracy gap"], rows), config


def table_descriptions(frame, data_home):
    """One line per table in the CSV: source, size, classes, missing cells, categoricals,
    and the labeled / unlabeled / test rows of its first result."""
    rows = []
    for name in [t for t in TABLES if t in set(frame["table"])]:
        table = TABLES[name]
        try:
            info = describe_table(table, data_home)
            described = [f"{info['rows']:,}", info["features"], info["classes"],
                         f"{info['missing_pct']:.2f}",
                         ", ".join(info["categorical"]) if info["categorical"] else "none"]
        except Exception as error:  # a package or file missing here: the rest still renders
            described = [f"({type(error).__name__})", "-", "-", "-", "-"]
        first = frame[frame["table"] == name].iloc[0]
        sizes = f"{first['n_labeled']} / {first['n_unlabeled']:,} / {first['n_test']:,}"
        rows.append([name, table.source, *described, table.split, sizes, table.note or ""])
    return markdown_table(["Table", "Source", "Rows", "Features", "Classes", "Missing %",
                           "Categorical columns", "Split", "Labeled / unlabeled / test",
                           "Note"], rows)


def timing_rows(frame, tables):
    """Mean fit seconds per contender and table (``timed_alone`` rows), and our
    encoders' epochs."""
    rows = []
    for table in tables:
        part = frame[frame["table"] == table]
        seconds = timed_alone(part).groupby("contender")["fit_seconds"].mean()
        epochs = []
        for contender in ("tabnet", *OURS):
            runs = part[part["contender"] == contender]
            best = pd.to_numeric(runs["encoder_best_epoch"], errors="coerce").dropna()
            total = pd.to_numeric(runs["encoder_n_epochs"], errors="coerce").dropna()
            epochs.append(f"{best.mean():.1f} / {total.mean():.1f}" if len(total) else "-")
        rows.append([table, *(seconds_cell(seconds.get(c)) for c in CONTENDERS), *epochs])
    return markdown_table(["Table", *(f"{c} s" for c in CONTENDERS),
                           *(f"{c} pretext best / run epochs" for c in ("tabnet", *OURS))],
                          rows)


def plot(path, tables, gaps, config):
    """Ours (and TabNet) minus the best raw contender per table, with the tolerance band."""
    shown = [t for t in tables if any(not gaps[t, c].empty for c in (*OURS, "tabnet"))]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(shown) + 1.5))
    y = np.arange(len(shown))
    styles = {"qmatch_lr": ("C0", -0.3), "qmatch_clf": ("C3", -0.1), "qmatch_hgb": ("C2", 0.1),
              "tabnet": ("gray", 0.3)}
    for contender, (color, offset) in styles.items():
        mean = [gaps[t, contender].mean() if not gaps[t, contender].empty else np.nan
                for t in shown]
        std = [gaps[t, contender].std(ddof=1) if len(gaps[t, contender]) > 1 else 0
               for t in shown]
        ax.barh(y + offset, mean, height=0.2, xerr=std, color=color, label=contender,
                error_kw={"lw": 0.8})
    ax.axvspan(-TOLERANCE, TOLERANCE, color="green", alpha=0.15, label="±0.5 points")
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(y, shown)
    ax.invert_yaxis()
    ax.set_xlabel("test accuracy minus best of logreg / hgb (points, mean ± std over seeds)")
    ax.set_title(f"Few labels: ours vs the best raw contender (config {config})")
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(csv_path, out_dir, data_home=None):
    frame = pd.read_csv(csv_path, dtype={"commit": str})
    if list(frame.columns) != FIELDS:
        raise ValueError(f"{csv_path} has columns {list(frame.columns)}, expected {FIELDS}.")
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Few-label benchmark on real tables (issue #16)",
        "",
        f"Generated by `{_COMMAND}` from `{Path(csv_path).name}`; the protocol is the "
        "docstring of `benchmarks/fewlabel.py` (run with `python -m benchmarks.fewlabel`). "
        "Per (table, seed) every contender gets the same labeled, unlabeled and test rows; "
        "library estimators run at their defaults (`random_state` only). Cells: test "
        "accuracy (%), mean ± sample std over seeds, with the number of seeds in "
        "parentheses. Gaps: ours minus the best raw contender (`logreg` or `hgb`, whichever "
        "has the higher mean on that table), per seed, mean ± std; ✗ marks a gap below "
        f"-{TOLERANCE} points, i.e. a miss of the issue's goal.",
        "",
        f"Machines: {'; '.join(sorted(set(frame['machine'])))}. Most rows: a 2-core AMD "
        "EPYC (KVM; `budget-v2` and `budget-v3` too; `budget-v4` to `budget-v7` on a "
        "slower one, about "
        "1.7x the fit seconds of the same code: ratios pair within a run) or a 2-core "
        "Intel Xeon (KVM; configs from `auto-v19` to `budget-v1`, CatBoost on Cover Type, "
        "CatBoost and self-training on MNIST seeds 3-4, LightGBM and XGBoost), every fit "
        "on one thread (torch, BLAS and OpenMP), "
        "`nice -n 10`, beside other work. Rows whose machine names a GPU ran on a lent "
        "GPU machine, several fits side by side on a few threads each "
        "(`QMatchClassifier()` trains on the GPU there: `device=\"auto\"`, float32 by "
        "default); the fit-seconds tables "
        f"leave their seconds out. Python {platform.python_version()}. Test rows: all of a "
        "random split's 30%; "
        f"a seeded sample of at most {MAX_TEST_ROWS:,} for the paper's splits.",
        "",
        "## Tables",
        "",
        *table_descriptions(frame, data_home),
        "",
    ]
    # a configuration of the library: one with rows of ours (peer rows have a label of
    # their own, and join every configuration's tables)
    configs = [config for config in dict.fromkeys(frame["config"])
               if frame.loc[frame["config"] == config, "contender"].isin(EVERY_OURS).any()]
    if DEFAULTS_CONFIG in configs:  # the release's defaults first, then the others newest first
        configs = [DEFAULTS_CONFIG, *reversed([c for c in configs if c != DEFAULTS_CONFIG])]
        lines += [f"The first configuration below, `{DEFAULTS_CONFIG}`, is the model of "
                  "this release's defaults, with its comparison against every contender "
                  "(issue #31); "
                  "the configurations after it are earlier defaults and variants, newest "
                  "first, kept for their measurements (the development log, "
                  "`DEVELOPMENT_LOG.md`, says what each changed).", ""]
    for config in configs:
        part = frame[frame["config"] == config]
        commits = ", ".join(dict.fromkeys(part["commit"]))
        # logreg, hgb and tabnet do not depend on the library's configuration: a table
        # on which one re-ran only our contenders is compared with their rows of another run
        measured = pd.MultiIndex.from_frame(part[["table", "contender"]])
        others = frame[~frame["contender"].isin(EVERY_OURS)
                       & ~pd.MultiIndex.from_frame(frame[["table", "contender"]]).isin(measured)]
        part = pd.concat([part, others.drop_duplicates(["table", "seed", "contender"])])
        # on a table of ours, the others' rows of our seeds alone (the same label draws)
        seeds_of_ours = part.loc[part["contender"].isin(EVERY_OURS), ["table", "seed"]]
        drawn = pd.MultiIndex.from_frame(seeds_of_ours)
        part = part[part["contender"].isin(EVERY_OURS)
                    | ~part["table"].isin(seeds_of_ours["table"])
                    | pd.MultiIndex.from_frame(part[["table", "seed"]]).isin(drawn)]
        tables, rows, means, gaps = summary(part)
        mean, complete = mean_row(tables, means, gaps)
        header = ["Table", *CONTENDERS, "best raw", *(f"{c} − best raw" for c in OURS)]
        lines += [f"## Config `{config}` (library commit {commits})", "",
                  "### Accuracy (%)", "",
                  *markdown_table(header, rows + ([mean] if mean else [])), ""]
        if mean:
            lines += [f"The mean row averages the per-table means over the {len(complete)} "
                      "tables where every contender has results; the best raw column there "
                      "averages each table's better raw contender.", ""]
        _, balanced_rows, _, _ = summary(part, "balanced_accuracy")
        lines += ["### Balanced accuracy (%)", "",
                  *markdown_table(header, balanced_rows), "",
                  "### Fit seconds (mean over seeds) and pretext epochs", "",
                  "Pretraining and the prediction of the test rows included (for every "
                  "contender); preprocessing and scoring excluded. Epochs: the "
                  "encoder's best (kept) epoch and the epochs it ran, means over seeds "
                  "(TabNet's pretrainer: its early-stopping best epoch, 1-based).", "",
                  *timing_rows(part, tables), ""]
        against_catboost = against_catboost_time(part, config)
        if against_catboost:
            lines += ["### Fit time against CatBoost (issue #54)", "",
                      "`QMatchClassifier()` over CatBoost's default fit on the same labeled "
                      "rows, both in this config's run (the same machine, one thread each; "
                      "each fit timed with its prediction of the test rows), "
                      "the geometric mean over seeds of the per-seed ratio; ✗ above "
                      f"{TIME_GOAL:g}x on a table or {MEAN_TIME_GOAL:g}x on the geometric "
                      "mean, the goals of issue #54. Ours' fit split into its pretraining "
                      "epochs and the rest (the head, the set-up around both and the "
                      "prediction of the test rows; the first seed of a table also pays "
                      "the process's one-time imports, about 1 s: torch loads its compiler "
                      "package at its optimizers' first use); then the head's fit alone, "
                      "timed as the fit again with the fitted encoder frozen "
                      "(`FrozenEstimator`: the same seeds, so the same head), ✗ where it "
                      "is not under the pretraining (the goal for the head); blank "
                      "where the rows predate a measurement.", "", *against_catboost, ""]
        on_raw = raw_vs_preprocessed(part)
        if on_raw:
            lines += ["### Ours on the raw table vs on the preprocessed one", "",
                      "`<contender>_raw` reads the table as loaded (numeric columns in "
                      "their units with their NaN, categorical columns as categories); "
                      "the preprocessed contender reads the median-imputed, standardised, "
                      "one-hot matrix. Gaps per seed, mean ± std; ✗ below "
                      f"-{TOLERANCE} points. The goal of issue #30: raw within 0.5 points "
                      "of preprocessed on every table, fit time within 1.2x. The last column "
                      "maps the numeric columns to a normal by their quantiles instead of "
                      "standardising them (`qmatch_clf_quantile`).", "",
                      *on_raw, ""]
        peers = against_every_contender(part) if config == DEFAULTS_CONFIG else []
        if peers:
            lines += ["### Against every contender (issue #31)", "",
                      "The best of logistic regression, gradient boosting, CatBoost, "
                      "LightGBM, XGBoost and self-training (around the `logreg` and `hgb` "
                      "recipes) per table, by mean accuracy; gaps per seed, mean ± std, ✗ "
                      f"below -{TOLERANCE} points, and in brackets the mean gap in standard "
                      "errors of the mean (std / sqrt(seeds)): within two of zero, the draws "
                      "cannot tell the two apart. Peer rows are those of config `peers-v1` "
                      "(they do not depend on the library). LightGBM at its defaults "
                      "(`min_child_samples=20`) grows no split under 40 labeled rows: on "
                      "those tables its column is the labeled rows' most frequent class, "
                      "kept as the default's result.", "", *peers, "",
                      "Fit seconds of the same rows, mean over seeds (one thread; the "
                      "prediction of the test rows included, preprocessing and scoring "
                      "excluded; the machines of each contender's "
                      "rows are in the list above and differ between some of them, so the "
                      "ratios are rough):", "", *seconds_of_every_contender(part), ""]
            lines += ["### Against the contender picked on other draws (issue #31)", "",
                      "The per-table best above is chosen on the draws it is scored on. "
                      "Here the other contender is chosen on the even seeds and scored on "
                      "the odd ones, and the reverse (the seeds every contender has): what "
                      "a user who had tried every contender on other draws of the table "
                      "would get. Gaps per seed, mean ± std, ✗ below "
                      f"-{TOLERANCE} points, [in standard errors].", "",
                      *picked_without_hindsight(part), ""]
        if config == DEFAULTS_CONFIG:
            pareto_plot(out_dir / "fewlabel_pareto.png", part, tables, config)
            lines += ["### Accuracy against fit time", "",
                      "Every contender's mean accuracy against its mean fit seconds per "
                      "table (log scale; rows timed on a lent GPU machine left out; the "
                      "machines of the contenders' rows differ, see the list above).", "",
                      "![accuracy against fit seconds per table](fewlabel_pareto.png)", ""]
        if config == configs[0]:  # earlier configs keep their tables; git keeps their figures
            plot(out_dir / "fewlabel.png", tables, gaps, config)
            lines += [f"![ours minus best raw per table, config {config}](fewlabel.png)", ""]
    steps = head_steps(frame)
    if steps:
        lines += ["## The few-label head's use of the unlabeled rows (issue #31)", "",
                  "`QMatchClassifier()` before and after each change of the head, on the "
                  "same tables and seeds (the same pretrained encoder: the seeds are the "
                  "same, and the head is fitted after pretraining). Gap: each step minus "
                  "the first column (the head before all of them), per seed, mean ± std; ✗ "
                  f"below -{TOLERANCE} points. Fit seconds: each step's mean over the first "
                  "column's (whole fits, pretraining included), from runs made under "
                  "different loads of the shared machine (tests and other benchmarks beside "
                  "them): read them as rough; the paired measurement below is the cost. "
                  "The candidates screened outside the judge and not adopted (consistency "
                  "training as in FixMatch, the unlabeled rows' class prior by EM, boosted "
                  "members trained on pseudo-labels or bagged, averaging over the Cs, "
                  "others) are in the development log (`DEVELOPMENT_LOG.md`, "
                  "\"Changed\"), each with its paired numbers.", "",
                  *steps, ""]
    for heading, steps, paragraph in STEP_SECTIONS:
        table = head_steps(frame, steps, in_standard_errors=steps in (
            PRETRAINING_BUDGET, SHARED_FOLDS, INPUT_PATH))
        if table:
            lines += [f"### {heading}", "", paragraph, "", *table, ""]
    precision = precision_pairs(frame)
    if precision:
        lines += ["### The defaults under bf16 autocast and float32", "",
                  "`QMatchClassifier()` on the same draws: float32 on this machine "
                  "(AMD EPYC without bf16 units), bf16 autocast on the 16-core Intel Xeon "
                  "(AMX) of a lent GPU machine with CUDA hidden, one thread per fit, where "
                  '`precision="auto"` picks bf16 for pretraining (the closed-form head '
                  "fits in float64 either way). Gap: bf16 minus float32, per seed.", "",
                  *precision, ""]
    timing, timing_config = paired_timing(Path(csv_path).parent / "fewlabel_timing.csv")
    if timing:
        lines += ["### The cost of self-training, paired", "",
                  f"`fewlabel_timing.csv`: `QMatchClassifier()` ({timing_config}) with "
                  "`self_training=True` and `False` fitted one after the other in one run, "
                  "seeds 0 and 1, diamonds left out (its 300 s of pretraining would hide the "
                  "head's cost); only light work ran beside it (editing, a report, a few "
                  "seconds of tests).",
                  "", *timing, ""]
    (out_dir / "fewlabel.md").write_text("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=RESULTS)
    parser.add_argument("--out-dir", type=Path, default=RESULTS.parent)
    parser.add_argument("--data-home", default=None,
                        help="folder of the paper datasets' raw files (table descriptions)")
    args = parser.parse_args(argv)
    write_report(args.csv, args.out_dir, args.data_home)


if __name__ == "__main__":
    main()
