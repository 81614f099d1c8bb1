"""Gradient-boosted trees on the input features: a member of the few-label classifier head.

With a few hundred labeled rows, gradient boosting on the raw features beats any
linear head on some tables (on the few-label benchmark's diamonds table, 64% against
58%), and loses badly on others. The closed-form head of ``QMatchClassifier``
therefore mixes a boosted member with its logistic regressions in the
proportion whose out-of-fold predictions are likeliest (stacking, see
:func:`stacking_weight` and :func:`~._logistic.fit_logistic_head_`): this
module fits that member, weighs it and evaluates it.

The member is scikit-learn's ``HistGradientBoostingClassifier`` (gradient
boosting, Friedman, 2001, "Greedy function approximation: a gradient boosting
machine"; NaN read natively, a leaf's rows scaled to the data), its log-odds
divided by a temperature fitted on out-of-fold predictions (temperature scaling,
Guo et al., 2017, "On calibration of modern neural networks", section 4.2):
boosting on few rows is overconfident, and an untempered member loses every
likelihood comparison even where it classifies better. It is tried on dense
input only: densifying a wide sparse matrix would cost what keeping it sparse
saves. Once fitted, its trees are kept as plain arrays (:func:`export_trees`),
evaluated by the torch module :class:`~._prediction.Trees`, so that the fitted
classifier stores numbers only and loads without unpickling anything.
"""

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.ensemble import HistGradientBoostingClassifier

from .._scaling import observed_moments

#: Labeled rows below which no boosted member is tried: on a dozen rows its
#: out-of-fold likelihood is too noisy to weigh it by (on the few-label
#: benchmark's attrition table, 14 labeled rows, it cost 5.8 points).
MIN_BOOSTING_ROWS = 50
#: Labeled rows per class (on average) below which no boosted member is tried:
#: the boosting grows one tree per class and round, and a class of five rows
#: gives its trees nothing to split (on the few-label benchmark's digits table,
#: 10 classes of 5 labeled rows, the member took up to 0.39 of the weight and
#: cost 0.56 points against the head alone).
MIN_BOOSTING_ROWS_PER_CLASS = 10
#: A member weighed below this is dropped (its trees are not kept): it would
#: move no probability by more than this.
MIN_BOOSTING_WEIGHT = 1e-6
#: Bounds of the log-temperature dividing the member's log-odds.
LOG_TEMPERATURE_BOUNDS = (np.log(0.05), np.log(20.0))


#: Shrinkage, rounds, leaf-value penalty, depth and feature sampling of the member:
#: slower and more regularised than scikit-learn's defaults (0.1, 100, 0, unbounded,
#: every feature), as small data needs. The learning rate and the L2 penalty of 3 are
#: CatBoost's defaults for small data (Prokhorenkova et al., 2018, "CatBoost: unbiased
#: boosting with categorical features"); depth 4 rather than CatBoost's 6, as a free
#: tree of depth 6 has far more splits than CatBoost's symmetric one. On the few-label
#: benchmark's five tables with 50 or more labeled rows the member alone gained
#: 0.4-1.8 points over the defaults on every one. Each split then chooses among half
#: the features it can split (:func:`splittable_columns`), drawn afresh at every node
#: (``max_features``; the feature sampling of random forests, Breiman, 2001, "Random
#: forests", section 4; in boosting, the column
#: subsampling of Chen & Guestrin, 2016, "XGBoost", section 2.3): on a few dozen rows
#: the best split over all features often fits noise, and trees that cannot all take
#: it overfit less. On five of the benchmark's six tables with a member (MNIST not
#: tried; 20 seeds of loans, the HIGGS sample and Adult, 5 of diamonds and Cover Type)
#: the member alone gained: loans +0.89, HIGGS +0.35, Adult +0.38, diamonds +0.28,
#: Cover Type +0.16 points. Half is the conventional middle, not the best fraction
#: tried (a third gained more on loans and Adult).
BOOSTING_PARAMS = {"learning_rate": 0.03, "max_iter": 300, "l2_regularization": 3.0,
                   "max_depth": 4, "max_features": 0.5}


def tries_boosted_member(targets):
    """Whether ``targets`` (class indices of the labeled rows) are enough for a
    boosted member: at least ``MIN_BOOSTING_ROWS`` rows and
    ``MIN_BOOSTING_ROWS_PER_CLASS`` per class on average."""
    n_classes = len(np.unique(targets))
    return len(targets) >= max(MIN_BOOSTING_ROWS, MIN_BOOSTING_ROWS_PER_CLASS * n_classes)


#: Most rows a leaf of the member must hold (see :func:`min_samples_leaf`).
MAX_MIN_SAMPLES_LEAF = 5


def min_samples_leaf(n_rows):
    """Rows a leaf of the member must hold on ``n_rows`` labeled rows: one in 20,
    at least 1 and at most ``MAX_MIN_SAMPLES_LEAF``.

    scikit-learn's default of 20 rows (LightGBM's ``min_data_in_leaf``, Ke et al.,
    2017) is meant for large data: it would forbid any split on 30 rows, hence
    one row in 20. That fraction still asks 56 rows of a leaf on 1,134 labeled rows,
    which a member of depth 4 whose leaf values the L2 penalty of ``BOOSTING_PARAMS``
    already shrinks does not need (CatBoost, whose penalty it borrows, asks one row
    of a leaf). Capped at 5, on the few-label benchmark's three tables of 378-1,134
    labeled rows the member alone gained 0.4-1.3 points (Cover Type +1.02, diamonds
    +1.29), while tables of fewer than 120 rows keep their leaves (one row in 50,
    uncapped, cost its two tables of ~80 rows 0.3 points).
    """
    return int(np.clip(n_rows // 20, 1, MAX_MIN_SAMPLES_LEAF))


#: scikit-learn's largest (and default) number of bins for a column's non-missing values.
MAX_BINS = 255
#: The fewest bins the leaf-size cap of :func:`histogram_bins` leaves: below it a
#: histogram is cheap anyway, and a coarser one lost the HIGGS sample's member on
#: one seed of 20 (16 bins on its 64 training rows a fold: weight 0.75 -> 0).
MIN_CAPPED_BINS = 64


def histogram_bins(X, rows_per_leaf=1):
    """The bins the member's columns ``X`` need: their most distinct non-missing
    values, and at most one bin per ``rows_per_leaf`` rows unless that is fewer
    than ``MIN_CAPPED_BINS`` (at least 2, at most ``MAX_BINS``).

    A column with no more distinct values than bins is binned between its
    values whatever the bin count, so the trees are those of ``MAX_BINS``
    bins, bit for bit; but every node's histograms are as wide as the bin
    count, which on a few dozen labeled rows was most of a fit (loans' 77
    rows: 0.59x the time). A bin cut between quantiles holds about
    ``len(X) / bins`` rows, so bins of fewer rows than a leaf must hold
    (:func:`min_samples_leaf`) only offer thresholds a few rows apart, the
    noise the leaf size is there to ignore (LightGBM's ``min_data_in_bin``,
    Ke et al., 2017, at the leaf size); they widen every histogram (one
    member fit on MNIST's 600 labeled rows: 34.3 s at 165 bins, 15.9 s at 64)."""
    distinct = max((len(np.unique(column[~np.isnan(column)])) for column in X.T), default=0)
    cap = max(len(X) // rows_per_leaf, MIN_CAPPED_BINS)
    return int(np.clip(min(distinct, cap), 2, MAX_BINS))


def boosting_model(n_rows, seed, max_bins=MAX_BINS):
    """The member's estimator for ``n_rows`` labeled rows: ``BOOSTING_PARAMS``,
    :func:`min_samples_leaf` rows in a leaf, no early stopping (no rows to spare),
    ``max_bins`` bins (see :func:`histogram_bins`)."""
    return HistGradientBoostingClassifier(
        min_samples_leaf=min_samples_leaf(n_rows), early_stopping=False, random_state=seed,
        max_bins=max_bins, **BOOSTING_PARAMS,
    )


def _class_log_odds(raw):
    """Per-class log-odds from the boosting's raw scores: one column (the
    log-odds of class 1 against class 0) becomes ``[0, raw]``."""
    return np.hstack([np.zeros_like(raw), raw]) if raw.shape[1] == 1 else raw


def export_trees(model, columns):
    """A fitted ``HistGradientBoostingClassifier``'s trees as a dict of arrays.

    The nodes of every tree are concatenated (``feature``, ``threshold``,
    ``missing_left``, ``left``, ``right``, ``value``, ``is_leaf``; children
    indices point into the concatenation), ``roots`` is each tree's first node,
    ``output`` the raw-score column each tree adds to, ``baseline`` the raw
    score before any tree. ``model`` was fitted on the input columns
    ``columns``; ``feature`` indexes the whole input. Only numeric splits occur:
    the member is fitted on the library's numeric input (categorical columns
    one-hot encoded).
    """
    nodes = [tree.nodes for iteration in model._predictors for tree in iteration]
    sizes = np.array([len(node) for node in nodes])
    roots = np.r_[0, np.cumsum(sizes)[:-1]]
    offset = np.repeat(roots, sizes)
    flat = np.concatenate(nodes)
    return {
        "feature": np.asarray(columns, dtype=np.int64)[flat["feature_idx"]],
        "threshold": flat["num_threshold"].astype(np.float64),
        "missing_left": flat["missing_go_to_left"].astype(bool),
        "left": flat["left"].astype(np.int64) + offset,
        "right": flat["right"].astype(np.int64) + offset,
        "value": flat["value"].astype(np.float64),
        "is_leaf": flat["is_leaf"].astype(bool),
        "roots": roots.astype(np.int64),
        "output": np.tile(np.arange(model.n_trees_per_iteration_), len(model._predictors)),
        "baseline": np.asarray(model._baseline_prediction, dtype=np.float64).ravel(),
    }


#: The arrays of the member's trees as :func:`export_trees` writes them, and their dtypes.
TREE_DTYPES = {"feature": np.int64, "threshold": np.float64, "missing_left": bool,
               "left": np.int64, "right": np.int64, "value": np.float64, "is_leaf": bool,
               "roots": np.int64, "output": np.int64, "baseline": np.float64}
TREE_ARRAYS = tuple(TREE_DTYPES)


def check_trees(trees, n_inputs, n_classes):
    """Raise a ValueError saying what is wrong unless ``trees`` are arrays that
    :func:`export_trees` could have written for ``n_inputs`` input columns and
    ``n_classes`` classes: ``load`` reads them from a file it does not trust, and
    their prediction (:class:`~._prediction.Trees`) walks them without checks."""
    def require(condition, message):
        if not condition:
            raise ValueError(message)

    require(isinstance(trees, dict) and set(trees) == set(TREE_ARRAYS),
            f"boosted_trees_ must hold the arrays {', '.join(TREE_ARRAYS)}.")
    for name, dtype in TREE_DTYPES.items():
        require(isinstance(trees[name], np.ndarray) and trees[name].ndim == 1
                and trees[name].dtype == np.dtype(dtype),
                f"boosted_trees_[{name!r}] must be a 1-D array of {np.dtype(dtype)}.")
    n_nodes = len(trees["feature"])
    require(all(len(trees[name]) == n_nodes for name in TREE_ARRAYS[:7]),
            "boosted_trees_ has node arrays of different lengths.")
    inner = ~trees["is_leaf"].astype(bool)
    nodes = np.arange(n_nodes)
    for name in ("left", "right"):
        # children after their parent: a walk down a tree always ends
        require(np.all((trees[name][inner] > nodes[inner]) & (trees[name][inner] < n_nodes)),
                f"boosted_trees_[{name!r}] must point from each inner node to a later node.")
    children = np.r_[trees["left"][inner], trees["right"][inner]]
    # trees, not graphs: a node shared by two parents would make the walk's levels grow
    # exponentially (tree_depth)
    require(len(np.unique(children)) == len(children)
            and not np.isin(trees["roots"], children).any(),
            "boosted_trees_ must be trees: each node the child of at most one node, and "
            "no root a child.")
    # every node's, leaves' too: the walk reads a leaf's feature before it stays there
    require(np.all((trees["feature"] >= 0) & (trees["feature"] < n_inputs)),
            f"boosted_trees_['feature'] must index the {n_inputs} input columns.")
    n_scores = 1 if n_classes == 2 else n_classes
    require(len(trees["baseline"]) == n_scores and len(trees["output"]) == len(trees["roots"])
            and np.all((trees["output"] >= 0) & (trees["output"] < n_scores))
            and np.all((trees["roots"] >= 0) & (trees["roots"] < max(n_nodes, 1))),
            "boosted_trees_ has roots, outputs or a baseline that do not fit its trees.")


def _mean_log_likelihood(log_proba, targets, weights):
    return np.average(log_proba[np.arange(len(targets)), targets], weights=weights)


def stacking_weight(head_log_proba, member_log_proba, targets, sample_weight=None):
    """The member's weight pi in the mixture (1 - pi) p_head + pi p_member that
    maximises the (weighted) mean log-likelihood of the labeled rows' out-of-fold
    class probabilities: stacking of predictive distributions (Yao et al., 2018,
    "Using stacking to average Bayesian predictive distributions", eq. 4, with
    two models; Wolpert, 1992, "Stacked generalization"). Unlike weights from
    each model's own likelihood, it mixes two models that predict differently
    well, and it does not hand everything to the one whose likelihood is a
    little higher on a few dozen rows. The objective is concave in pi."""
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
    """The indices of the columns of ``X`` a tree can split: two distinct observed
    values, or one beside missing values (a split sends NaN one way)."""
    count, _, low, high = observed_moments(X)
    return np.flatnonzero((high > low) | ((count > 0) & (count < len(X))))


def _fit_trees(X, targets, weights, seed):
    """The boosting fitted on the columns of ``X`` it can split among the rows of
    positive weight (:func:`splittable_columns`); ``(model, columns)``, or None
    when there is none. The others would only be drawn among the features a
    split may choose (``max_features``) to be of no use, and cost their
    histograms: 222 of MNIST's 784 pixels are 0 on all of the few-label
    benchmark's 600 labeled rows, 28 of loans' 115 columns are constant on its 77."""
    columns = splittable_columns(X[weights > 0])
    if not len(columns):
        return None
    X = X[:, columns]
    bins = histogram_bins(X, min_samples_leaf(len(targets)))
    # rows of weight 1 are passed as no weights: the same bins and trees on the float32
    # rows the network reads (a test holds it), while weights send scikit-learn's binning
    # through one weighted percentile per bin and column (on MNIST's 600 labeled rows,
    # 68 s of the member's 115 s)
    unweighted = np.all(weights == 1)
    model = boosting_model(len(targets), seed, bins).fit(
        X, targets, sample_weight=None if unweighted else weights
    )
    return model, columns


def fit_boosted_member(X, targets, folds, seed, sample_weight=None):
    """Fit the boosted member on the dense labeled rows ``X``; ``(trees,
    temperature, out_of_fold)``, or None when some fit has no column to
    split on (every column constant or missing).

    ``folds`` (``(train, test)`` row indices, the logistic heads') give
    out-of-fold log-odds for every row; the temperature T maximises their
    likelihood (the mean over folds of the rows' mean log-likelihood, weighted
    by ``sample_weight``), and ``out_of_fold`` are the rows' out-of-fold log
    class probabilities at T, by which the head weighs the member against its
    logistic regressions. The trees are then fitted on every row.
    """
    n_rows = len(targets)
    weights = np.ones(n_rows) if sample_weight is None else np.asarray(sample_weight)
    out_of_fold = np.zeros((n_rows, int(targets.max()) + 1))
    for train, test in folds:
        fitted = _fit_trees(X[train], targets[train], weights[train], seed)
        if fitted is None:
            return None
        model, columns = fitted
        raw = model.decision_function(X[test][:, columns]).reshape(len(test), -1)
        out_of_fold[test] = _class_log_odds(raw)

    def negative_log_likelihood(log_temperature):
        log_proba = log_softmax(out_of_fold / np.exp(log_temperature), axis=1)
        return -np.mean([
            _mean_log_likelihood(log_proba[test], targets[test], weights[test])
            for _, test in folds
        ])

    best = minimize_scalar(
        negative_log_likelihood, bounds=LOG_TEMPERATURE_BOUNDS, method="bounded"
    )
    # every column observed in a fold's training part is observed in all the rows
    trees = export_trees(*_fit_trees(X, targets, weights, seed))
    return trees, float(np.exp(best.x)), log_softmax(out_of_fold / np.exp(best.x), axis=1)
