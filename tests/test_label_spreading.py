"""Label spreading for the few-label head (issue #31): labels spread over the neighbour
graph label whole clusters, weigh as much as the labels in total, never come from a
held-out row, and the classifier weighs the twin they train by its held-out likelihood."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.model_selection import StratifiedKFold

from qmatch_sklearn.heads import _label_spreading, _self_training
from qmatch_sklearn.heads._label_spreading import spread_and_fit, spread_labels, spread_logistic

from .conftest import fit_tiny_classifier, record_training_rows


def _blobs(seed=0, n=400):
    """Two compact Gaussian clusters, at x = -3 and x = 3, and a labeled row at the
    centre of each."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = np.c_[np.where(y == 1, 3.0, -3.0) + 0.5 * rng.normal(size=n), 0.5 * rng.normal(size=n)]
    return np.array([[-3.0, 0.0], [3.0, 0.0]]), np.array([0, 1]), X, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_labels_spread_within_a_cluster_and_never_across_the_gap(seed):
    features, targets, unlabeled, truth = _blobs(seed)
    proba = spread_labels(features, targets, unlabeled)
    assert proba.shape == (len(unlabeled), 2)
    reached = proba.sum(axis=1) > 0
    # alpha = 0.2 keeps most of each label at home: it reaches its neighbourhood
    assert reached.mean() > 0.1
    np.testing.assert_array_equal(proba[reached].argmax(axis=1), truth[reached])
    np.testing.assert_array_equal(proba[reached].max(axis=1), 1.0)  # no mixing across
    model, n_pseudo = spread_and_fit(1.0, 1000, features, targets, unlabeled)
    assert n_pseudo == reached.sum() and model.score(unlabeled, truth) == 1.0


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n_classes=st.integers(2, 4))
def test_spread_probabilities_are_distributions_or_zero_where_no_label_reaches(seed, n_classes):
    rng = np.random.default_rng(seed)
    targets = np.arange(3 * n_classes) % n_classes
    features = rng.normal(size=(len(targets), 3)) + targets[:, None]
    far = rng.normal(size=(8, 3)) + 1e6  # a part of the graph no labeled row is in
    proba = spread_labels(features, targets, np.vstack([rng.normal(size=(20, 3)), far]))
    assert proba.shape == (28, n_classes) and np.all(proba >= 0)
    sums = proba.sum(axis=1)
    np.testing.assert_allclose(sums[:20], 1.0, rtol=1e-9)
    np.testing.assert_array_equal(proba[20:], 0.0)


def test_a_labeled_row_of_weight_zero_spreads_nothing():
    features, targets, unlabeled, _ = _blobs()
    weights = np.array([1.0, 0.0])  # class 1's labeled row counts for nothing
    proba = spread_labels(features, targets, unlabeled, weights)
    np.testing.assert_array_equal(proba[:, 1], 0.0)


def test_pseudo_labeled_rows_weigh_as_much_in_total_as_the_labeled_rows(monkeypatch):
    features, targets, unlabeled, _ = _blobs()
    weights = np.array([2.0, 0.5])
    seen = {}
    original = _self_training.fit_logistic

    def spy(C, max_iter, rows, labels, sample_weight):
        seen["weights"] = sample_weight
        return original(C, max_iter, rows, labels, sample_weight)

    monkeypatch.setattr(_self_training, "fit_logistic", spy)
    _, n_pseudo = spread_and_fit(1.0, 1000, features, targets, unlabeled, weights)
    np.testing.assert_array_equal(seen["weights"][:2], weights)
    assert n_pseudo > 0 and len(seen["weights"]) == 2 + n_pseudo
    assert seen["weights"][2:].sum() == pytest.approx(weights.sum())


def test_held_out_rows_never_spread_labels_in_their_fold(monkeypatch):
    rng = np.random.default_rng(1)
    features = rng.normal(size=(30, 3))
    targets = np.arange(30) % 3
    features[:, 0] += 4 * targets
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(features, targets))
    seen = record_training_rows(monkeypatch, _label_spreading, "spread_and_fit")
    _, score = spread_logistic(1.0, 1000, features, targets,
                               rng.normal(size=(60, 3)) * 4 + 4, folds)
    assert len(seen) == len(folds) + 1  # all labeled rows, then one per fold
    for rows, (train, _) in zip(seen[1:], folds, strict=True):
        np.testing.assert_array_equal(rows, features[train])
    assert score < 0


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    labeled = np.random.default_rng(0).random(len(y)) < 0.03
    return X, np.where(labeled, y, -1), y


def test_on_clustered_classes_the_spread_twin_takes_the_weight_and_helps(digits):
    X, y_semi, y = digits
    unlabeled = y_semi == -1
    spread = fit_tiny_classifier(X, y_semi, label_spreading=True)
    plain = fit_tiny_classifier(X, y_semi)
    assert plain.label_spreading_weight_ == 0.0
    assert spread.label_spreading_weight_ > 0.5
    # the same encoder: only the twins differ
    np.testing.assert_array_equal(spread.encoder_.transform(X), plain.encoder_.transform(X))
    assert spread.score(X[unlabeled], y[unlabeled]) > plain.score(X[unlabeled], y[unlabeled])
