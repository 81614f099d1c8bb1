"""The boosted member of the few-label classifier head (``heads/_boosting.py``, its
prediction module ``heads._prediction.Trees``)."""

import os
import pickle
import tempfile

import numpy as np
import pytest
import scipy.sparse as sp
import skops.io
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax, softmax
from sklearn.model_selection import StratifiedKFold

from qmatch_sklearn import (
    QMatchClassifier,
    QMatchEncoder,
    load,
    save,
)
from qmatch_sklearn.heads._boosting import (
    LOG_TEMPERATURE_BOUNDS,
    MAX_BINS,
    MAX_MIN_SAMPLES_LEAF,
    MIN_BOOSTING_ROWS,
    MIN_BOOSTING_ROWS_PER_CLASS,
    MIN_CAPPED_BINS,
    boosting_model,
    check_trees,
    export_trees,
    fit_member_trees,
    histogram_bins,
    member_out_of_fold,
    min_samples_leaf,
    splittable_columns,
    stacking_weight,
    tries_boosted_member,
    vector_boosting_model,
)
from qmatch_sklearn.heads._logistic import HEAD_FOLDS
from qmatch_sklearn.heads._prediction import Trees, tree_depth

from .conftest import tiny_encoder_params


def member_model(X, y, seed, n_classes=2):
    """The boosting as the member fits it on all columns of ``X``: for two classes its
    bins hold at least a leaf of rows; for more, one tree of vector leaves a round."""
    if n_classes > 2:
        return vector_boosting_model(len(y), n_classes, seed).fit(X, y)
    bins = histogram_bins(X, min_samples_leaf(len(y)))
    return boosting_model(len(y), seed, bins).fit(X, y)


def tree_log_proba(trees, X, temperature):
    """The member's log class probabilities of the rows ``X`` by its prediction module."""
    rows = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    with torch.no_grad():
        return Trees(trees, temperature)(torch.from_numpy(rows)).numpy()


def table(seed, n_rows=120, n_classes=2, missing=0.1, n_features=5):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_rows, n_features))
    y = (np.digitize(X[:, 0] * X[:, 1], [-0.5, 0.0, 0.5][: n_classes - 1])).astype(np.int64)
    X[rng.rand(*X.shape) < missing] = np.nan
    return X.astype(np.float32), y


@given(st.integers(0, 100_000))
def test_a_leaf_holds_one_row_in_20_capped(n_rows):
    """One row in 20 of the labeled rows, at least 1 and at most the cap: tables of up
    to 119 rows keep one row in 20 (uncapped), larger ones get the cap."""
    leaf = min_samples_leaf(n_rows)
    assert 1 <= leaf <= MAX_MIN_SAMPLES_LEAF and leaf <= max(1, n_rows // 20)
    assert leaf == (max(1, n_rows // 20) if n_rows < 20 * (MAX_MIN_SAMPLES_LEAF + 1)
                    else MAX_MIN_SAMPLES_LEAF)
    assert leaf <= min_samples_leaf(n_rows + 1)


@pytest.mark.parametrize(("n_rows", "leaf"), [(0, 1), (30, 1), (86, 4), (119, 5), (378, 5),
                                              (1134, 5)])
def test_the_members_leaf_on_the_judges_tables(n_rows, leaf):
    """Adult's 86 labeled rows keep 4 a leaf; diamonds' 378 and Cover Type's 1,134 get 5."""
    assert boosting_model(n_rows, 0).min_samples_leaf == leaf


def test_each_split_chooses_among_half_the_features_drawn_by_the_seed():
    """Feature sampling at every node: seeded, the member grows the same trees
    again; with another seed it draws other features and grows other trees."""
    X, y = table(5, n_rows=200, n_classes=3, missing=0.0, n_features=8)
    assert boosting_model(len(y), 0).max_features == 0.5

    def trees(seed):
        return export_trees(boosting_model(len(y), seed).fit(X, y), np.arange(X.shape[1]))

    first, again, other = trees(0), trees(0), trees(1)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert (len(first["feature"]) != len(other["feature"])
            or not np.array_equal(first["feature"], other["feature"]))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 4), st.sampled_from([0.0, 0.2]))
def test_the_exported_trees_predict_what_the_boosting_does(seed, n_classes, missing):
    X, y = table(seed, n_classes=n_classes, missing=missing)
    model = boosting_model(len(y), seed).fit(X, y)
    fresh, _ = table(seed + 1, n_rows=300, n_classes=n_classes, missing=missing)
    log_proba = tree_log_proba(export_trees(model, np.arange(X.shape[1])), fresh, 1.0)
    np.testing.assert_allclose(np.exp(log_proba), model.predict_proba(fresh), atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.1, 10.0))
def test_the_temperature_divides_the_log_odds(seed, temperature):
    X, y = table(seed, n_classes=3)
    model = boosting_model(len(y), seed).fit(X, y)
    expected = log_softmax(model.decision_function(X) / temperature, axis=1)
    trees = export_trees(model, np.arange(X.shape[1]))
    np.testing.assert_allclose(tree_log_proba(trees, X, temperature), expected, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 12))
def test_a_column_splits_when_it_holds_two_values_nan_counting_as_one(seed, n_rows):
    rng = np.random.RandomState(seed)
    # few distinct values, NaN among them, so that constant and one-value columns occur
    X = rng.choice([0.0, 1.0, np.nan], size=(n_rows, 30), p=[0.6, 0.2, 0.2])
    two_values = [len({"nan" if np.isnan(v) else v for v in column}) >= 2 for column in X.T]
    np.testing.assert_array_equal(splittable_columns(X), np.flatnonzero(two_values))


def test_a_column_it_cannot_split_is_left_out_and_the_others_keep_their_index():
    """A column all NaN, or of one value, among the labeled rows (or among one
    fold's) cannot split: the trees split on the others, indexed in the whole
    input, and draw their features among those alone."""
    X, y = table(4, n_rows=150, missing=0.0)
    X = np.c_[np.full(len(y), np.nan, np.float32), np.ones(len(y), np.float32), X]
    X[:20, 3] = np.nan  # missing in the training part of a fold, or more
    folds = list(StratifiedKFold(5, shuffle=False).split(X, y))
    X = np.c_[X, np.zeros(len(y), np.float32)]
    X[folds[0][1][0], -1] = 1.0  # constant in the training part of the first fold only
    _, out_of_fold = member_out_of_fold(X, y, folds, 0)
    trees = fit_member_trees(X, y, 0)
    assert np.isfinite(out_of_fold).all()
    assert not {0, 1} & set(trees["feature"][~trees["is_leaf"]])
    reference = member_model(X[:, 2:], y, 0)
    np.testing.assert_allclose(np.exp(tree_log_proba(trees, X, 1.0)),
                               reference.predict_proba(X[:, 2:]), atol=1e-12)
    assert member_out_of_fold(np.full_like(X, np.nan), y, folds, 0) is None
    assert member_out_of_fold(np.ones_like(X), y, folds, 0) is None


def test_the_member_is_scored_out_of_fold_at_its_best_temperature():
    """Its out-of-fold log-probabilities: each held-out row under trees fitted on
    the other folds, log-odds divided by T; T is where their mean over folds of
    the rows' mean log-likelihood peaks."""
    X, y = table(3, n_rows=150, n_classes=3)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=3).split(X, y))
    temperature, out_of_fold = member_out_of_fold(X, y, folds, 3)
    assert np.exp(LOG_TEMPERATURE_BOUNDS[0]) <= temperature <= np.exp(LOG_TEMPERATURE_BOUNDS[1])
    held_out = np.zeros((len(y), 3))
    for train, test in folds:
        held_out[test] = member_model(X[train], y[train], 3, 3).decision_function(X[test])

    def score(t):
        log_proba = log_softmax(held_out / t, axis=1)[np.arange(len(y)), y]
        return np.mean([log_proba[test].mean() for _, test in folds])

    np.testing.assert_allclose(out_of_fold, log_softmax(held_out / temperature, axis=1),
                               atol=1e-9)
    assert score(temperature * 1.5) < score(temperature) > score(temperature / 1.5)
    whole = member_model(X, y, 3, 3)
    np.testing.assert_allclose(tree_log_proba(fit_member_trees(X, y, 3), X, 1.0),
                               log_softmax(whole.decision_function(X), axis=1), atol=1e-12)


def log_proba_of(seed, n_rows, n_classes):
    rng = np.random.RandomState(seed)
    return log_softmax(rng.normal(scale=2.0, size=(n_rows, n_classes)), axis=1)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 60), st.integers(2, 4), st.booleans())
def test_the_stacking_weight_maximises_the_mixtures_likelihood(seed, n_rows, n_classes,
                                                                weighted):
    """Within [0, 1], and no point of a fine grid mixes the two better (the
    objective is concave, so the grid's best is within a step of it)."""
    head, member = log_proba_of(seed, n_rows, n_classes), log_proba_of(seed + 1, n_rows, n_classes)
    targets = np.random.RandomState(seed + 2).randint(n_classes, size=n_rows)
    weights = np.random.RandomState(seed + 3).uniform(0.1, 2.0, n_rows) if weighted else None
    pi = stacking_weight(head, member, targets, weights)
    assert 0.0 <= pi <= 1.0

    def mean_log_likelihood(p):
        mixed = (1 - p) * np.exp(head) + p * np.exp(member)
        return np.average(np.log(mixed[np.arange(n_rows), targets]), weights=weights)

    grid = np.linspace(0.0, 1.0, 201)
    assert mean_log_likelihood(pi) >= max(map(mean_log_likelihood, grid)) - 1e-6


def test_a_member_better_on_every_row_takes_all_the_weight_and_a_worse_one_none():
    head = log_proba_of(0, 30, 3)
    targets = np.arange(30) % 3
    better = head.copy()
    better[np.arange(30), targets] += 0.1  # a higher probability of every row's class
    better = log_softmax(better, axis=1)
    assert stacking_weight(head, better, targets) == 1.0
    assert stacking_weight(better, head, targets) == 0.0


def semi_supervised(n_labeled, rule, seed=0, n_rows=900):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_rows, 6)).astype(np.float32)
    y = rule(X).astype(int)
    y_semi = np.full(n_rows, -1)
    y_semi[:n_labeled] = y[:n_labeled]
    return X, y, y_semi


def classifier():
    return QMatchClassifier(QMatchEncoder(**tiny_encoder_params(max_epochs=2), passthrough=True),
                            random_state=0, device="cpu")


def xor(X):
    return (X[:, 0] > 0) ^ (X[:, 1] > 0)


def linear(X):
    return X[:, 0] + X[:, 1] > 0


def test_where_trees_predict_better_they_take_the_weight():
    """An interaction no linear head can read: the member takes the weight and
    the classifier reads the interaction on fresh rows."""
    X, y, y_semi = semi_supervised(300, xor)
    model = classifier().fit(X, y_semi)
    assert model.boosting_weight_ > 0.9 and model.boosted_trees_ is not None
    assert (model.predict(X[300:]) == y[300:]).mean() > 0.8
    # the same rows as a sparse matrix: centred as the dense ones, and (for a map
    # that leaves them sparse) read by the trees a densified batch at a time
    sparse_rows = sp.csr_matrix(np.where(np.abs(X) < 0.3, 0.0, X))
    np.testing.assert_allclose(model.predict_proba(sparse_rows),
                               model.predict_proba(sparse_rows.toarray()), rtol=1e-6)
    np.testing.assert_array_equal(tree_log_proba(model.boosted_trees_, sparse_rows, 1.5),
                                  tree_log_proba(model.boosted_trees_, sparse_rows.toarray(), 1.5))


def test_where_a_linear_head_predicts_better_the_trees_weigh_little():
    X, y, y_semi = semi_supervised(300, linear)
    model = classifier().fit(X, y_semi)
    assert model.boosting_weight_ < 0.1
    assert (model.predict(X[300:]) == y[300:]).mean() > 0.9


def test_the_member_is_read_out_of_the_head_s_folds_and_refitted_only_where_it_weighs(
        monkeypatch):
    """Its out-of-fold log-odds come from the head's HEAD_FOLDS stratified folds,
    which partition the labeled rows; its trees on all of them are fitted only
    when its stacking weight counts (a weight of 0 costs no fit on all rows)."""
    import qmatch_sklearn.heads._logistic as logistic

    seen, fitted = [], []
    out_of_fold = logistic.member_out_of_fold
    monkeypatch.setattr(logistic, "member_out_of_fold",
                        lambda X, targets, folds, *args: seen.append((targets, folds))
                        or out_of_fold(X, targets, folds, *args))
    trees = logistic.fit_member_trees
    monkeypatch.setattr(logistic, "fit_member_trees",
                        lambda *args: fitted.append(True) or trees(*args))
    X, _, y_semi = semi_supervised(300, xor)
    assert classifier().fit(X, y_semi).boosted_trees_ is not None and fitted
    (targets, folds), = seen
    assert len(folds) == HEAD_FOLDS
    tests = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tests), np.arange(len(targets)))
    for train, test in folds:
        assert not np.intersect1d(train, test).size
        assert abs(targets[test].mean() - targets.mean()) < 0.02  # stratified
    seen.clear()
    fitted.clear()
    monkeypatch.setattr(logistic, "stacking_weight", lambda *args: 0.0)
    model = classifier().fit(X, y_semi)
    assert seen and not fitted
    assert model.boosting_weight_ == 0.0 and model.boosted_trees_ is None


def test_below_the_minimum_of_labeled_rows_no_member_is_tried():
    X, _, y_semi = semi_supervised(MIN_BOOSTING_ROWS - 1, xor)
    model = classifier().fit(X, y_semi)
    assert model.boosting_weight_ == 0.0 and model.boosted_trees_ is None
    assert model.boosting_temperature_ == 1.0


@pytest.mark.parametrize("n_rows, n_classes, tries", [
    (MIN_BOOSTING_ROWS - 1, 2, False),
    (MIN_BOOSTING_ROWS, 2, True),
    (MIN_BOOSTING_ROWS, 5, True),
    (MIN_BOOSTING_ROWS, 6, False),
    (MIN_BOOSTING_ROWS_PER_CLASS * 10 - 1, 10, False),
    (MIN_BOOSTING_ROWS_PER_CLASS * 10, 10, True),
])
def test_the_member_needs_enough_rows_in_all_and_per_class(n_rows, n_classes, tries):
    targets = np.arange(n_rows) % n_classes
    assert tries_boosted_member(targets) is tries


def test_ten_classes_of_five_labeled_rows_try_no_member():
    """Above MIN_BOOSTING_ROWS in all but under MIN_BOOSTING_ROWS_PER_CLASS a
    class: the head is the linear one alone, however the trees would read it."""
    def ten_cells(X):
        return 5 * (X[:, 0] > 0) + np.digitize(X[:, 1], [-0.8, -0.25, 0.25, 0.8])

    X, _, y_semi = semi_supervised(MIN_BOOSTING_ROWS_PER_CLASS * 10 - 10, ten_cells)
    assert len(np.unique(y_semi[y_semi >= 0])) == 10
    model = classifier().fit(X, y_semi)
    assert model.boosting_weight_ == 0.0 and model.boosted_trees_ is None


def test_the_probabilities_are_the_weighted_mixture_and_survive_saving():
    X, _, y_semi = semi_supervised(200, lambda X: np.digitize(X[:, 0] * X[:, 1], [-0.3, 0.3]))
    X[np.random.RandomState(1).rand(*X.shape) < 0.05] = np.nan
    model = classifier().fit(X, y_semi)
    weight = model.boosting_weight_
    assert 0.0 < weight <= 1.0
    proba = model.predict_proba(X)
    logits, rows = model._network_outputs(X, return_rows=True)  # rows: the network's input
    network = softmax(logits.astype(np.float64), axis=1)
    trees = np.exp(tree_log_proba(model.boosted_trees_, rows, model.boosting_temperature_))
    np.testing.assert_allclose(proba, (1 - weight) * network + weight * trees, atol=1e-6)
    assert np.isfinite(model.decision_function(X)).all()
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.safetensors")
        save(model, path)
        np.testing.assert_array_equal(load(path).predict_proba(X), proba)
        skops.io.dump(model, os.path.join(folder, "model.skops"))
        restored = skops.io.load(os.path.join(folder, "model.skops"),
                                 trusted=skops.io.get_untrusted_types(
                                     file=os.path.join(folder, "model.skops")))
        np.testing.assert_array_equal(restored.predict_proba(X), proba)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict_proba(X), proba)


def test_one_labeled_row_of_a_class_or_sparse_input_tries_no_member():
    """C=1 without folds when a class has a single row; no densified copy of a
    sparse matrix: the head is the logistic regression alone."""
    X, y, _ = semi_supervised(300, lambda X: np.digitize(X[:, 0] * X[:, 1], [-0.3, 0.3]))
    y_semi = np.full(len(y), -1)
    y_semi[:120] = np.where(y[:120] == 2, 1, y[:120])
    y_semi[120] = 2  # the only labeled row of class 2
    model = classifier().fit(X, y_semi)
    assert model.boosting_weight_ == 0.0 and model.boosted_trees_ is None
    assert np.isfinite(model.predict_proba(X)).all()
    y_semi[120] = 1
    sparse = classifier().fit(sp.csr_matrix(np.where(np.abs(X) < 0.3, 0.0, X)), y_semi)
    assert sparse.boosted_trees_ is None


def test_a_row_of_weight_zero_counts_for_nothing_even_at_log_zero():
    with np.errstate(divide="ignore"):  # row 1: log(0) of its class
        head = np.log(np.array([[0.5, 0.5], [1.0, 0.0], [0.5, 0.5]]))
    member = np.log(np.array([[0.2, 0.8], [0.5, 0.5], [0.2, 0.8]]))
    targets = np.array([1, 1, 1])
    assert stacking_weight(head, member, targets, np.array([1.0, 0.0, 1.0])) == 1.0


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_member_is_stacked_against_the_plain_heads_regressions_of_each_fold(
    monkeypatch, n_classes
):
    """The head's side of the stacking: on each fold, the plain regressions
    fitted without the held-out rows, each at the C that the other folds' scores
    choose, averaged with weights from those scores alone (computed here with
    scikit-learn's own ``LogisticRegressionCV`` scores and ``LogisticRegression``
    refits). The self-trained twins take no part: the same probabilities with or
    without unlabeled rows."""
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV

    from qmatch_sklearn.heads import _logistic
    from qmatch_sklearn.heads._averaging import EMBEDDING_WEIGHTS, pseudo_bma_weights

    X, y = table(5, n_rows=90, n_classes=n_classes, missing=0.0)
    rng = np.random.RandomState(5)
    n_embedding = 3
    features = np.c_[X, rng.normal(size=(len(y), n_embedding))]
    unlabeled = np.c_[table(6, n_rows=200, n_classes=n_classes, missing=0.0)[0],
                      rng.normal(size=(200, n_embedding))]
    seen, original_stack = [], _logistic.stacking_weight

    def stack(head_log_proba, *args):
        seen.append(head_log_proba)
        return original_stack(head_log_proba, *args)

    monkeypatch.setattr(_logistic, "stacking_weight", stack)
    for rows in (unlabeled, None):
        _, fitted = _logistic.fit_logistic_head_(
            torch.nn.Linear(features.shape[1], n_classes), features, y, 0,
            n_embedding=n_embedding, inputs=X, unlabeled=rows,
        )
    assert fitted["boosting_weight_"] > 0 and len(seen) == 2
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    scaled = [np.c_[X, weight * features[:, -n_embedding:]] for weight in EMBEDDING_WEIGHTS]
    searches = [LogisticRegressionCV(cv=folds, scoring="neg_log_loss", l1_ratios=(0.0,),
                                     use_legacy_attributes=False, max_iter=1000).fit(rows, y)
                for rows in scaled]
    expected = np.zeros((len(y), n_classes))
    for k, (train, test) in enumerate(folds):
        scores = [np.delete(s.scores_[:, 0], k, axis=0).mean(axis=0) for s in searches]
        p = pseudo_bma_weights([score.max() for score in scores], len(train))
        for p_m, rows, search, score in zip(p, scaled, searches, scores, strict=True):
            refit = LogisticRegression(C=search.Cs_[score.argmax()], max_iter=1000)
            refit.fit(rows[train], y[train])
            logits = refit.decision_function(rows[test])
            expected[test] += p_m * (np.c_[np.zeros(len(test)), logits] if n_classes == 2
                                     else logits)
    for head_log_proba in seen:
        # the path's warm-started solves against cold refits: the solver's tolerance
        np.testing.assert_allclose(head_log_proba, log_softmax(expected, axis=1), atol=2e-3)


def test_no_fold_chooses_the_regressions_that_predict_it():
    """A fold whose own held-out scores favour one C is predicted at the C that the
    other folds favour, by its own point of the regularisation path; two classes'
    single score is the second logit."""
    from qmatch_sklearn.heads._logistic import LogisticAverage, honest_out_of_fold

    rows = np.arange(8.0).reshape(4, 2)
    folds = [(np.array([2, 3]), np.array([0, 1])), (np.array([0, 1]), np.array([2, 3]))]
    path = np.zeros((2, 2, 1, 3))  # (folds, Cs, outputs, features + intercept)
    path[0, 0, 0] = [100.0, 0.0, 0.0]  # fold 0 at C 0
    path[0, 1, 0] = [1.0, 0.0, 0.5]  # fold 0 at C 1
    path[1, 0, 0] = [0.0, 1.0, -1.0]  # fold 1 at C 0
    path[1, 1, 0] = [0.0, 100.0, 0.0]
    scores = np.array([[-9.0, -0.1], [-0.1, -9.0]])  # fold 0 favours C 1, fold 1 favours C 0
    average = LogisticAverage(None, None, 1.0, {}, [], folds, [(1.0, path, scores)])
    logits = honest_out_of_fold(average, rows)
    # fold 0 (rows 0-1) at the C fold 1 favours (C 0): x0 * 100; fold 1 at C 1: x1 * 100
    np.testing.assert_allclose(logits[:, 0], 0.0)
    np.testing.assert_allclose(logits[:, 1], [0.0, 200.0, 500.0, 700.0])


def test_the_walk_takes_as_many_steps_as_the_deepest_tree():
    """``tree_depth`` is the most edges from a root to a leaf: 0 for a lone leaf,
    and on fitted trees what a walk needs (one step fewer leaves a row short of
    its leaf on the deepest tree)."""
    leaf = {"roots": np.array([0]), "is_leaf": np.array([True]),
            "left": np.array([0]), "right": np.array([0])}
    assert tree_depth(leaf) == 0
    # a root whose right child splits again: depth 2 (nodes: 0 -> 1, 2; 2 -> 3, 4)
    chain = {"roots": np.array([0]), "is_leaf": np.array([False, True, False, True, True]),
             "left": np.array([1, 0, 3, 0, 0]), "right": np.array([2, 0, 4, 0, 0])}
    assert tree_depth(chain) == 2
    X, y = table(2, n_rows=200, n_classes=3, missing=0.0)
    trees = export_trees(boosting_model(len(y), 2).fit(X, y), np.arange(X.shape[1]))
    module = Trees(trees, 1.0)
    assert module.depth == 4  # BOOSTING_PARAMS' max_depth, reached on 200 rows
    rows = torch.from_numpy(X.astype(np.float64))
    full = module(rows)
    module.depth -= 1
    assert not torch.allclose(module(rows), full)


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.integers(20, 300), st.sampled_from([0.0, 0.2]))
def test_as_many_bins_as_distinct_values_grow_the_same_trees(seed, n_rows, missing):
    """Bins cut to the columns' distinct values (``histogram_bins``) leave the trees of
    255 bins unchanged, node for node, also with missing values and rounded columns."""
    X, y = table(seed, n_rows=n_rows, n_classes=3, missing=missing)
    X[:, 1] = np.round(X[:, 1])  # a column of few distinct values
    bins = histogram_bins(X)
    assert 2 <= bins <= min(n_rows, MAX_BINS)
    cut, full = (export_trees(boosting_model(len(y), seed, max_bins).fit(X, y),
                              np.arange(X.shape[1])) for max_bins in (bins, MAX_BINS))
    for key in full:
        np.testing.assert_array_equal(cut[key], full[key])


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.integers(70, 300), st.sampled_from([0.0, 0.2]))
def test_rows_of_weight_one_grow_the_trees_of_no_weights(seed, n_rows, missing):
    """The member passes rows that all weigh 1 as no weights (the fast binning): with
    fewer bins than distinct values, so that the bins are cut at quantiles, scikit-learn
    grows the same trees, node for node, either way."""
    X, y = table(seed, n_rows=n_rows, n_classes=3, missing=missing)
    model = boosting_model(len(y), seed, max_bins=32)
    weighted, unweighted = (export_trees(model.fit(X, y, sample_weight=weights),
                                         np.arange(X.shape[1]))
                            for weights in (np.ones(len(y)), None))
    for key in weighted:
        np.testing.assert_array_equal(weighted[key], unweighted[key])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 600), st.integers(1, 5))
def test_bins_hold_at_least_a_leaf_of_rows(seed, n_rows, rows_per_leaf):
    """No more bins than the rows can fill at ``rows_per_leaf`` a bin (unless that
    is fewer than ``MIN_CAPPED_BINS``), nor than the columns' distinct values;
    never fewer than 2 or more than ``MAX_BINS``."""
    X = np.random.default_rng(seed).normal(size=(n_rows, 3))
    bins = histogram_bins(X, rows_per_leaf)
    assert 2 <= bins <= MAX_BINS
    cap = max(n_rows // rows_per_leaf, MIN_CAPPED_BINS)
    assert bins == max(2, min(cap, n_rows, MAX_BINS))


def test_check_trees_refuses_shared_children_and_leaves_pointing_outside():
    """A file's trees are walked without checks: a node that two parents share (a
    graph whose walk would double at every level), a leaf's feature outside the
    input, values of another number of outputs than the classes' scores and a root
    past the nodes are refused, as exported trees never hold them."""
    X, y = table(2, n_rows=200, n_classes=2, missing=0.0)
    trees = export_trees(boosting_model(len(y), 2).fit(X, y), np.arange(X.shape[1]))
    check_trees(trees, X.shape[1], 2)
    n = 40  # a chain of nodes whose two children are both the next node
    chain = {**{name: np.zeros(n, dtype=trees[name].dtype) for name in trees},
             "left": np.arange(1, n + 1) % n, "right": np.arange(1, n + 1) % n,
             "is_leaf": np.arange(n) == n - 1, "roots": np.array([0]),
             "value": np.zeros((n, 1)), "baseline": np.zeros(1)}
    with pytest.raises(ValueError, match="must be trees"):
        check_trees(chain, X.shape[1], 2)
    leaf = np.flatnonzero(trees["is_leaf"])[0]
    outside = {**trees, "feature": trees["feature"].copy()}
    outside["feature"][leaf] = 10**6
    with pytest.raises(ValueError, match="must index the 5 input columns"):
        check_trees(outside, X.shape[1], 2)
    for changed in ({"value": np.zeros((len(trees["feature"]), 3))},  # 3 outputs, 2 classes
                    {"roots": np.array([len(trees["feature"])])}):
        with pytest.raises(ValueError, match="do not fit its trees"):
            check_trees({**trees, **changed}, X.shape[1], 2)
    with pytest.raises(ValueError, match=r"'value'\] must be a 2-D array"):
        check_trees({**trees, "value": trees["value"][:, 0]}, X.shape[1], 2)
