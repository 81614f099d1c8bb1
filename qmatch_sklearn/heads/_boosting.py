"""Gradient-boosted trees on the input features: a member of the few-label classifier head.

It wins on some tables and loses badly on others, so it is stacked (:func:`stacking_weight`).
``HistGradientBoostingClassifier`` (Friedman, 2001, "Greedy function approximation: a
gradient boosting machine") for two classes, one tree of vector leaves a round for more
(:mod:`._vector_boosting`), its log-odds tempered out of fold (Guo et al., 2017, "On
calibration of modern neural networks", section 4.2) as boosting on few rows is
overconfident; its trees are kept as arrays (:func:`export_trees`), so loading unpickles nothing.
"""

from functools import partial

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.ensemble import HistGradientBoostingClassifier

from .._table import observed_moments
from ._vector_boosting import VectorLeafBoosting

#: Labeled rows, and rows per class on average, below which no member is tried: its
#: out-of-fold likelihood is too noisy, and a class of a few rows gives its trees nothing to
#: split. Tuned on the few-label benchmark (benchmarks/results/fewlabel.md).
MIN_BOOSTING_ROWS = 50
MIN_BOOSTING_ROWS_PER_CLASS = 10
#: A member weighed below this is dropped: it would move no probability by more.
MIN_BOOSTING_WEIGHT = 1e-6
#: Bounds of the log-temperature dividing the member's log-odds.
LOG_TEMPERATURE_BOUNDS = (np.log(0.05), np.log(20.0))


#: Regularised for small data: CatBoost's learning rate and L2 penalty (Prokhorenkova et al.,
#: 2018, "CatBoost: unbiased boosting with categorical features"), depth 4 (a free tree, not
#: CatBoost's symmetric 6), half the features at each node (Breiman, 2001, "Random forests",
#: section 4; Chen & Guestrin, 2016, "XGBoost", section 2.3). Tuned on the few-label
#: benchmark (benchmarks/results/fewlabel.md).
BOOSTING_PARAMS = {"learning_rate": 0.03, "max_iter": 300, "l2_regularization": 3.0,
                   "max_depth": 4, "max_features": 0.5}


def tries_boosted_member(targets):
    """Whether the labeled rows' ``targets`` reach ``MIN_BOOSTING_ROWS`` and
    ``MIN_BOOSTING_ROWS_PER_CLASS``."""
    n_classes = len(np.unique(targets))
    return len(targets) >= max(MIN_BOOSTING_ROWS, MIN_BOOSTING_ROWS_PER_CLASS * n_classes)


#: Most rows a leaf of the member must hold (see :func:`min_samples_leaf`).
MAX_MIN_SAMPLES_LEAF = 5


def min_samples_leaf(n_rows):
    """Rows a leaf must hold: one in 20 of ``n_rows``, between 1 and ``MAX_MIN_SAMPLES_LEAF``.

    scikit-learn's 20 (LightGBM's ``min_data_in_leaf``, Ke et al., 2017) forbids any split
    on 30 rows. Tuned on the few-label benchmark (benchmarks/results/fewlabel.md)."""
    return int(np.clip(n_rows // 20, 1, MAX_MIN_SAMPLES_LEAF))


#: scikit-learn's largest (and default) number of bins for a column's non-missing values.
MAX_BINS = 255
#: The fewest bins :func:`histogram_bins`' cap leaves: below it a histogram is cheap anyway,
#: and coarser ones cost the member its weight on the few-label benchmark.
MIN_CAPPED_BINS = 64


def histogram_bins(X, rows_per_leaf=1):
    """The bins ``X`` needs: its most distinct non-missing values, capped at one per
    ``rows_per_leaf`` rows (not below ``MIN_CAPPED_BINS``), as thinner bins only offer noise
    (LightGBM's ``min_data_in_bin``, Ke et al., 2017); between 2 and ``MAX_BINS``."""
    distinct = max((len(np.unique(column[~np.isnan(column)])) for column in X.T), default=0)
    cap = max(len(X) // rows_per_leaf, MIN_CAPPED_BINS)
    return int(np.clip(min(distinct, cap), 2, MAX_BINS))


def boosting_model(n_rows, seed, max_bins=MAX_BINS):
    """The member's estimator for ``n_rows`` labeled rows of two classes (no early
    stopping: no rows to spare)."""
    return HistGradientBoostingClassifier(
        min_samples_leaf=min_samples_leaf(n_rows), early_stopping=False, random_state=seed,
        max_bins=max_bins, **BOOSTING_PARAMS,
    )


#: ``BOOSTING_PARAMS`` for one tree of vector leaves a round (:mod:`._vector_boosting`):
#: one tree serves every class where K trees of depth 4 did, so it is a free tree of
#: CatBoost's depth, 6. Tuned on the few-label benchmark (benchmarks/results/fewlabel.md;
#: depth 4 lost Cover Type 0.17 points, the development log).
VECTOR_BOOSTING_PARAMS = {**BOOSTING_PARAMS, "max_depth": 6}


def vector_boosting_model(n_rows, n_classes, seed):
    """The member's estimator for ``n_rows`` labeled rows of ``n_classes`` (three or more)
    classes: ``VECTOR_BOOSTING_PARAMS``, one tree a round instead of one per class."""
    return VectorLeafBoosting(n_classes, min_samples_leaf=min_samples_leaf(n_rows),
                              random_state=seed, **VECTOR_BOOSTING_PARAMS)


def export_trees(model, columns):
    """A fitted ``HistGradientBoostingClassifier``'s trees as a dict of arrays.

    The nodes of all trees are concatenated; ``roots`` are the trees' first nodes;
    ``value`` holds each node's raw scores, one column per output (a tree of scikit-learn's
    adds to its class's column alone); ``feature`` indexes the whole input, not ``columns``.
    """
    nodes = [tree.nodes for iteration in model._predictors for tree in iteration]
    sizes = np.array([len(node) for node in nodes])
    roots = np.r_[0, np.cumsum(sizes)[:-1]]
    offset = np.repeat(roots, sizes)
    flat = np.concatenate(nodes)
    n_outputs = model.n_trees_per_iteration_
    value = np.zeros((len(flat), n_outputs))
    output = np.repeat(np.tile(np.arange(n_outputs), len(model._predictors)), sizes)
    value[np.arange(len(flat)), output] = flat["value"]
    return {
        "feature": np.asarray(columns, dtype=np.int64)[flat["feature_idx"]],
        "threshold": flat["num_threshold"].astype(np.float64),
        "missing_left": flat["missing_go_to_left"].astype(bool),
        "left": flat["left"].astype(np.int64) + offset,
        "right": flat["right"].astype(np.int64) + offset,
        "value": value,
        "is_leaf": flat["is_leaf"].astype(bool),
        "roots": roots.astype(np.int64),
        "baseline": np.asarray(model._baseline_prediction, dtype=np.float64).ravel(),
    }


#: The arrays :func:`export_trees` writes, and their dtypes: ``value`` is (nodes, outputs),
#: the others one entry per node (``roots`` and ``baseline``: per tree and per output).
TREE_DTYPES = {"feature": np.int64, "threshold": np.float64, "missing_left": bool,
               "left": np.int64, "right": np.int64, "value": np.float64, "is_leaf": bool,
               "roots": np.int64, "baseline": np.float64}


def check_trees(trees, n_inputs, n_classes):
    """Raise a ValueError unless :func:`export_trees` could have written ``trees``:
    ``load`` reads them from an untrusted file, and :class:`~._prediction.Trees` walks
    them without checks."""
    def require(condition, message):
        if not condition:
            raise ValueError(message)

    require(isinstance(trees, dict) and set(trees) == set(TREE_DTYPES),
            f"boosted_trees_ must hold the arrays {', '.join(TREE_DTYPES)}.")
    for name, dtype in TREE_DTYPES.items():
        ndim = 2 if name == "value" else 1
        require(isinstance(trees[name], np.ndarray) and trees[name].ndim == ndim
                and trees[name].dtype == np.dtype(dtype),
                f"boosted_trees_[{name!r}] must be a {ndim}-D array of {np.dtype(dtype)}.")
    n_nodes = len(trees["feature"])
    require(all(len(trees[name]) == n_nodes for name in list(TREE_DTYPES)[:7]),
            "boosted_trees_ has node arrays of different lengths.")
    inner = ~trees["is_leaf"].astype(bool)
    nodes = np.arange(n_nodes)
    for name in ("left", "right"):
        # children after their parent: a walk down a tree always ends
        require(np.all((trees[name][inner] > nodes[inner]) & (trees[name][inner] < n_nodes)),
                f"boosted_trees_[{name!r}] must point from each inner node to a later node.")
    children = np.r_[trees["left"][inner], trees["right"][inner]]
    # trees, not graphs: a shared node would make the walk's levels grow exponentially
    require(len(np.unique(children)) == len(children)
            and not np.isin(trees["roots"], children).any(),
            "boosted_trees_ must be trees: each node the child of at most one node, and "
            "no root a child.")
    # every node's, leaves' too: the walk reads a leaf's feature before it stays there
    require(np.all((trees["feature"] >= 0) & (trees["feature"] < n_inputs)),
            f"boosted_trees_['feature'] must index the {n_inputs} input columns.")
    n_scores = 1 if n_classes == 2 else n_classes
    require(trees["value"].shape[1] == n_scores and len(trees["baseline"]) == n_scores
            and np.all((trees["roots"] >= 0) & (trees["roots"] < max(n_nodes, 1))),
            "boosted_trees_ has values, roots or a baseline that do not fit its trees.")


def stacking_weight(head_log_proba, member_log_proba, targets, sample_weight=None):
    """The pi of (1 - pi) p_head + pi p_member likeliest out of fold: stacking (Yao et al.,
    2018, "Using stacking to average Bayesian predictive distributions", eq. 4; Wolpert,
    1992, "Stacked generalization"), which mixes models that predict differently well."""
    rows = np.arange(len(targets))
    if sample_weight is not None:  # a row of weight 0 counts for nothing, even at log(0)
        rows = rows[np.asarray(sample_weight) > 0]
        sample_weight = np.asarray(sample_weight)[rows]
    head, member = head_log_proba[rows, targets[rows]], member_log_proba[rows, targets[rows]]

    def negative_log_likelihood(pi):
        with np.errstate(divide="ignore"):
            mixed = np.logaddexp(np.log1p(-pi) + head, np.log(pi) + member)
        return -np.average(mixed, weights=sample_weight)

    candidates = [0.0, 1.0, minimize_scalar(
        negative_log_likelihood, bounds=(0.0, 1.0), method="bounded").x]
    return float(min(candidates, key=negative_log_likelihood))


def splittable_columns(X):
    """The columns of ``X`` with two observed values, or one beside missing values."""
    count, _, low, high = observed_moments(X)
    return np.flatnonzero((high > low) | ((count > 0) & (count < len(X))))


def _fit_trees(X, targets, sample_weight, seed, n_classes):
    """``(model, columns, export)``: the boosting for ``n_classes`` classes fitted on the
    :func:`splittable_columns` of the rows of positive weight (all rows for no
    ``sample_weight``; the others would waste ``max_features`` draws and histograms), and
    ``export()``, its trees as :func:`export_trees` gives them; None when there is no such
    column."""
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight)
    columns = splittable_columns(X if sample_weight is None else X[sample_weight > 0])
    if not len(columns):
        return None
    X = X[:, columns]
    # rows all of weight 1 pass no weights: the same trees (tests hold it), without
    # scikit-learn's slow weighted binning or its check of the weights in every round
    if sample_weight is not None and np.all(sample_weight == 1):
        sample_weight = None
    if n_classes > 2:
        model = vector_boosting_model(len(targets), n_classes, seed)
        model.fit(X, targets, sample_weight=sample_weight)
        return model, columns, partial(model.export, columns)
    bins = histogram_bins(X, min_samples_leaf(len(targets)))
    model = boosting_model(len(targets), seed, bins).fit(X, targets, sample_weight=sample_weight)
    return model, columns, partial(export_trees, model, columns)


def member_out_of_fold(X, targets, folds, seed, sample_weight=None):
    """``(temperature, out_of_fold)`` of the member on the dense labeled rows ``X``, or None
    when some fold's fit has no column to split on: each row's log-odds from trees fitted
    on the other ``folds``, divided by the temperature that maximises their likelihood;
    ``out_of_fold`` are the resulting log-probabilities."""
    n_rows, n_classes = len(targets), int(targets.max()) + 1
    weights = np.ones(n_rows) if sample_weight is None else np.asarray(sample_weight)
    out_of_fold = np.zeros((n_rows, n_classes))
    for train, test in folds:
        fitted = _fit_trees(X[train], targets[train], weights[train], seed, n_classes)
        if fitted is None:
            return None
        model, columns, _ = fitted
        raw = model.decision_function(X[test][:, columns]).reshape(len(test), -1)
        # per-class log-odds: one column of raw scores is [0, raw]
        out_of_fold[test, -raw.shape[1]:] = raw

    def negative_log_likelihood(log_temperature):
        row_log_proba = log_softmax(out_of_fold / np.exp(log_temperature), axis=1)[
            np.arange(n_rows), targets]
        return -np.mean([np.average(row_log_proba[test], weights=weights[test])
                         for _, test in folds])

    best = minimize_scalar(
        negative_log_likelihood, bounds=LOG_TEMPERATURE_BOUNDS, method="bounded"
    )
    temperature = float(np.exp(best.x))
    return temperature, log_softmax(out_of_fold / temperature, axis=1)


def fit_member_trees(X, targets, seed, sample_weight=None):
    """The member's trees (:func:`export_trees`) fitted on all the dense labeled rows ``X``,
    once :func:`member_out_of_fold` found a column to split on in every fold (a column
    splittable among a fold's training rows of positive weight is among all of them)."""
    _, _, export = _fit_trees(X, targets, sample_weight, seed, int(targets.max()) + 1)
    return export()
