"""Boosting with one tree of vector leaves a round (``heads/_vector_boosting.py``): the
boosted member's trees for three classes or more."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax, softmax

from qmatch_sklearn.heads._boosting import (
    BOOSTING_PARAMS,
    VECTOR_BOOSTING_PARAMS,
    check_trees,
    fit_member_trees,
    min_samples_leaf,
    vector_boosting_model,
)
from qmatch_sklearn.heads._prediction import Trees
from qmatch_sklearn.heads._vector_boosting import MIN_CLASS_SHARE, VectorLeafBoosting


def table(seed, n_rows=150, n_classes=3, missing=0.1, n_features=5):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n_rows, n_features))
    cuts = np.quantile(X[:, 0] * X[:, 1], np.linspace(0, 1, n_classes + 1)[1:-1])
    y = np.digitize(X[:, 0] * X[:, 1], cuts).astype(np.int64)
    X[rng.rand(*X.shape) < missing] = np.nan
    return X.astype(np.float32), y


def booster(n_classes, **changes):
    params = {**BOOSTING_PARAMS, "min_samples_leaf": 5, "random_state": 0, **changes}
    return VectorLeafBoosting(n_classes, **params)


def walked(trees, X):
    """The log-probabilities the prediction module (and the ONNX graph) computes."""
    with torch.no_grad():
        return Trees(trees, 1.0)(torch.from_numpy(X.astype(np.float64))).numpy()


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 5), st.sampled_from([0.0, 0.2]))
def test_the_exported_trees_predict_what_the_boosting_does(seed, n_classes, missing):
    """Each tree exported once, its leaves holding every class's value, walks to the
    booster's own log-odds, missing values routed as its splits learned."""
    X, y = table(seed, n_classes=n_classes, missing=missing)
    model = booster(n_classes, max_iter=40, random_state=seed).fit(X, y)
    fresh, _ = table(seed + 1, n_rows=300, n_classes=n_classes, missing=0.2)
    trees = model.export(np.arange(X.shape[1]))
    check_trees(trees, X.shape[1], n_classes)
    assert len(trees["roots"]) == 40 and trees["value"].shape[1] == n_classes
    np.testing.assert_allclose(walked(trees, fresh),
                               log_softmax(model.decision_function(fresh), axis=1), atol=1e-12)


def test_one_tree_a_round_whose_leaves_take_each_class_s_newton_step():
    """After one round every leaf holds -lr G_k / (H_k + lambda) for each class k, the
    sums over its rows of the (weighted) softmax gradient p - y and Hessian p (1 - p) at
    the starting log-odds, the log of the rows' weighted class shares."""
    X, y = table(3, n_classes=4, missing=0.1)
    weights = np.random.RandomState(3).uniform(0.5, 2.0, len(y))
    model = booster(4, max_iter=1).fit(X, y, sample_weight=weights)
    assert len(model.trees_) == 1
    one_hot = np.eye(4)[y]
    share = weights @ one_hot / weights.sum()
    np.testing.assert_allclose(model.baseline_, np.log(share))
    proba = softmax(np.tile(model.baseline_, (len(y), 1)), axis=1)
    leaf = model.trees_[0].apply(X)
    for node in np.unique(leaf):
        rows = leaf == node
        gradient = weights[rows] @ (proba[rows] - one_hot[rows])
        hessian = weights[rows] @ (proba[rows] * (1 - proba[rows]))
        expected = -BOOSTING_PARAMS["learning_rate"] * gradient / (
            hessian + BOOSTING_PARAMS["l2_regularization"])
        np.testing.assert_allclose(model.leaf_values_[0][node], expected, rtol=1e-10)
    np.testing.assert_allclose(model.decision_function(X),
                               model.baseline_ + model.leaf_values_[0][leaf])


def test_a_class_absent_from_the_rows_keeps_its_column_at_the_floor():
    """A fold's training rows may lack a class the labeled rows hold: its column stays,
    starting at log(MIN_CLASS_SHARE), and only falls from there."""
    X, y = table(5, n_classes=3, missing=0.0)
    model = booster(4, max_iter=20).fit(X, y)  # class 3: no row
    raw = model.decision_function(X)
    assert raw.shape == (len(y), 4)
    assert model.baseline_[3] == np.log(MIN_CLASS_SHARE)
    assert (raw[:, 3] <= np.log(MIN_CLASS_SHARE)).all()
    assert (softmax(raw, axis=1)[:, 3] < 1e-10).all()


def test_the_seed_draws_the_columns_each_split_chooses_among():
    X, y = table(6, n_rows=200, n_classes=3, missing=0.0, n_features=8)

    def trees(seed):
        return booster(3, max_iter=30, random_state=seed).fit(X, y).export(np.arange(8))

    first, again, other = trees(0), trees(0), trees(1)
    for key in first:
        np.testing.assert_array_equal(first[key], again[key])
    assert (len(first["feature"]) != len(other["feature"])
            or not np.array_equal(first["feature"], other["feature"]))


@pytest.mark.parametrize("n_classes", [3, 5])
def test_the_member_grows_vector_leaves_for_three_classes_or_more(n_classes):
    """The member's estimator: ``VECTOR_BOOSTING_PARAMS`` (``BOOSTING_PARAMS`` two levels
    deeper) and its leaf of rows, one tree a round; the splits index the whole input."""
    X, y = table(7, n_rows=200, n_classes=n_classes, missing=0.1)
    model = vector_boosting_model(len(y), n_classes, 7)
    assert model.min_samples_leaf == min_samples_leaf(len(y))
    assert VECTOR_BOOSTING_PARAMS == {**BOOSTING_PARAMS, "max_depth": 6}
    assert {name: getattr(model, name) for name in BOOSTING_PARAMS} == VECTOR_BOOSTING_PARAMS
    X = np.c_[np.ones(len(y), np.float32), X]  # a column that cannot split
    trees = fit_member_trees(X, y, 7)
    assert len(trees["roots"]) == VECTOR_BOOSTING_PARAMS["max_iter"]
    assert 0 not in set(trees["feature"][~trees["is_leaf"]])
    reference = vector_boosting_model(len(y), n_classes, 7).fit(X[:, 1:], y)
    np.testing.assert_allclose(walked(trees, X),
                               log_softmax(reference.decision_function(X[:, 1:]), axis=1),
                               atol=1e-12)


def test_the_callers_rows_are_left_as_they_were():
    X, y = table(8, n_classes=3, missing=0.2)
    weights = np.linspace(0.5, 1.5, len(y))
    copies = X.copy(), y.copy(), weights.copy()
    booster(3, max_iter=5).fit(X, y, sample_weight=weights).decision_function(X)
    for passed, copy in zip((X, y, weights), copies, strict=True):
        np.testing.assert_array_equal(passed, copy)


def test_rows_of_weight_zero_count_for_nothing_and_leave_the_log_odds_finite():
    """Rows of weight 0, a whole class of them included: their class keeps its column
    at the floor, the leaves they alone would hold take no step, and the walk agrees."""
    X, y = table(9, n_rows=200, n_classes=4, missing=0.1)
    weights = np.where(y == 2, 0.0, 1.0)
    weights[:15] = 0.0
    model = booster(4, max_iter=30).fit(X, y, sample_weight=weights)
    assert model.baseline_[2] == np.log(MIN_CLASS_SHARE)
    raw = model.decision_function(X)
    assert np.isfinite(raw).all()
    kept = weights > 0
    reweighted = booster(4, max_iter=30).fit(X[kept], y[kept])
    np.testing.assert_allclose(reweighted.baseline_[[0, 1, 3]], model.baseline_[[0, 1, 3]])
    np.testing.assert_allclose(walked(model.export(np.arange(X.shape[1])), X),
                               log_softmax(raw, axis=1), atol=1e-12)


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.2]))
def test_rows_of_weight_one_grow_the_trees_of_no_weights(seed, missing):
    """The member passes rows that all weigh 1 as no weights (no check of them in every
    round): the same trees and leaves, node for node."""
    X, y = table(seed, n_classes=3, missing=missing)
    weighted, unweighted = (booster(3, max_iter=20, random_state=seed).fit(
        X, y, sample_weight=weights).export(np.arange(X.shape[1]))
        for weights in (np.ones(len(y)), None))
    for key in weighted:
        np.testing.assert_array_equal(weighted[key], unweighted[key])
