"""Self-training of the few-label head (issue #31): pseudo-labels move the boundary into
the gap between clusters, held-out rows never label anything, and the classifier
weighs the self-trained regressions by their held-out likelihood."""


import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from qmatch_sklearn.heads import _self_training
from qmatch_sklearn.heads._averaging import EMBEDDING_WEIGHTS, scale_block
from qmatch_sklearn.heads._self_training import (
    MAX_UNLABELED_ROWS,
    self_trained_logistic,
    self_trained_logistics,
    unlabeled_sample,
)

from .conftest import fit_tiny_classifier


def _clusters(seed=0, n=400):
    """Two Gaussian clusters on the x axis with a gap between them, and four labeled rows
    placed so that the regression on them alone puts its boundary inside class 1."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = np.c_[np.where(y == 1, 3.0, -3.0) + 0.7 * rng.normal(size=n), rng.normal(size=n)]
    labeled = np.array([[-1.0, 0.5], [-1.0, -0.5], [6.0, 0.5], [6.0, -0.5]])
    return labeled, np.array([0, 0, 1, 1]), X, y


def _two_folds(features, targets):
    return list(StratifiedKFold(2, shuffle=True, random_state=0).split(features, targets))


def _boundary(model):
    """Where the model's score is 0 on the x axis."""
    return -model.intercept_[0] / model.coef_[0, 0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_self_training_moves_the_boundary_into_the_gap_between_the_clusters(seed):
    features, targets, unlabeled, truth = _clusters(seed)
    plain = LogisticRegression(C=1.0).fit(features, targets)
    trained, _ = self_trained_logistic(1.0, 1000, features, targets, unlabeled,
                                       _two_folds(features, targets))
    assert plain.score(unlabeled, truth) < 0.9  # the plain boundary cuts class 1
    assert np.mean(trained.predict_proba(unlabeled).argmax(axis=1) == truth) > 0.99
    # from 2.5 (between the labeled rows) towards the gap at 0, out of class 1's bulk
    # (the pseudo-labeled rows weigh only as much as the four labels: C=1 holds it
    # back from the middle of the gap)
    assert _boundary(plain) == pytest.approx(2.5, abs=0.1)
    assert abs(_boundary(trained)) < _boundary(plain) - 0.75


def test_without_a_confident_unlabeled_row_there_is_no_twin():
    features, targets, _, _ = _clusters()
    on_the_boundary = np.c_[np.full(5, 2.5), np.linspace(-1, 1, 5)]
    plain = LogisticRegression(C=1.0, max_iter=1000).fit(features, targets)
    assert plain.predict_proba(on_the_boundary).max() < _self_training.THRESHOLD
    # no twin: it would be the plain regression counted twice
    assert self_trained_logistic(1.0, 1000, features, targets, on_the_boundary,
                                 _two_folds(features, targets)) is None


@pytest.mark.parametrize("weighted", [False, True])
def test_the_held_out_likelihood_is_that_of_regressions_that_never_saw_their_fold(weighted):
    """Each fold's twin is the twin self-trained on the fold's training rows alone (the
    held-out rows neither train nor pseudo-label), and its held-out rows are scored
    weighted as the plain regressions' are."""
    rng = np.random.default_rng(2)
    features, targets = rng.normal(size=(40, 3)), np.arange(40) % 2
    features[:, 0] += 2 * targets
    weights = rng.uniform(0.1, 3.0, size=40) if weighted else np.ones(40)
    unlabeled = rng.normal(size=(60, 3))
    unlabeled[:, 0] += 2 * (np.arange(60) % 2)
    folds = list(StratifiedKFold(4, shuffle=True, random_state=0).split(features, targets))
    _, score = self_trained_logistic(1.0, 1000, features, targets, unlabeled, folds,
                                     weights if weighted else None)

    def alone(train):  # the twin of the training rows alone: its model on all of them
        inner = _two_folds(features[train], targets[train])
        return self_trained_logistic(1.0, 1000, features[train], targets[train], unlabeled,
                                     inner, weights[train])[0]

    expected = np.mean([
        np.average(np.log(alone(train).predict_proba(features[test])[np.arange(len(test)),
                                                                     targets[test]]),
                   weights=weights[test])
        for train, test in folds])
    assert score < 0  # a mean log-likelihood
    assert score == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("n_unlabeled", [20, 200])
def test_every_block_weight_s_twin_in_one_batch_is_its_twin_alone(n_unlabeled):
    """The head self-trains the twins of all block weights in one batch (each at its own
    C, its embedding columns scaled): each is the twin of its block-weighted columns
    self-trained alone, to the solver's tolerance, with the same held-out score; a block
    weight that pseudo-labels nothing has no twin while the others do. With 20 unlabeled
    rows the embedding block (100 columns) is wider than the rows, and reduced; with 200
    it is not."""
    rng = np.random.default_rng(0)
    n_embedding, n_labeled = 100, 24
    y = np.arange(n_labeled + n_unlabeled) % 2
    X = rng.normal(size=(len(y), 4 + n_embedding))
    X[:, 0] += 3 * y  # the input's signal
    X[:, 4:] *= 0.05  # the embedding: noise
    features, targets, unlabeled = X[:n_labeled], y[:n_labeled], X[n_labeled:]
    folds = _two_folds(features, targets)
    Cs = [1.0, 1e-4, 3.0]
    together = self_trained_logistics(Cs, 1000, features, targets, unlabeled, folds,
                                      n_embedding=n_embedding)
    for C, weight, twin in zip(Cs, EMBEDDING_WEIGHTS, together, strict=True):
        alone = self_trained_logistic(C, 1000, scale_block(features, n_embedding, weight),
                                      targets, scale_block(unlabeled, n_embedding, weight),
                                      folds)
        assert (twin is None) == (alone is None)
        if twin is not None:
            np.testing.assert_allclose(twin[0].coef_, alone[0].coef_, atol=1e-3)
            np.testing.assert_allclose(twin[0].intercept_, alone[0].intercept_, atol=1e-3)
            assert twin[1] == pytest.approx(alone[1], abs=1e-4)
    assert together[1] is None and together[0] is not None  # C=1e-4: nothing confident


def test_a_twin_of_one_regression_is_called_on_each_block_weight_s_columns():
    """Label spreading's twin fits one regression: the head calls it once per block
    weight, at that weight's C, with the embedding columns of the labeled and the
    unlabeled rows scaled alike."""
    from qmatch_sklearn.heads._logistic import _each_block_weight

    calls = []

    def twin(C, max_iter, features, targets, unlabeled, folds, sample_weight):
        calls.append((C, features[0, -1], unlabeled[0, -1], features[0, 0], unlabeled[0, 0]))
        return C

    features, unlabeled = np.full((6, 3), 2.0), np.full((4, 3), 3.0)
    Cs = [0.1, 1.0, 10.0]
    twins = _each_block_weight(twin)(Cs, 100, features, np.arange(6) % 2, unlabeled, None,
                                     None, 1)
    assert twins == Cs
    assert calls == [(C, 2.0 * w, 3.0 * w, 2.0, 3.0)
                     for C, w in zip(Cs, EMBEDDING_WEIGHTS, strict=True)]


@given(n=st.integers(0, 3 * MAX_UNLABELED_ROWS), seed=st.integers(0, 2**32 - 1))
def test_the_unlabeled_sample_is_sorted_distinct_and_bounded(n, seed):
    rows = unlabeled_sample(n, seed)
    assert len(rows) == min(n, MAX_UNLABELED_ROWS)
    assert np.all(np.diff(rows) > 0) and (len(rows) == 0 or (rows[0] >= 0 and rows[-1] < n))
    np.testing.assert_array_equal(rows, unlabeled_sample(n, seed))


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return X, np.where(np.arange(len(y)) % 6 == 0, y, -1), y


def test_the_classifier_weighs_the_self_trained_regressions(wine):
    X, y_semi, y = wine
    trained = fit_tiny_classifier(X, y_semi)
    plain = fit_tiny_classifier(X, y_semi, self_training=False)
    assert 0.0 <= trained.self_training_weight_ <= 1.0
    assert plain.self_training_weight_ == 0.0
    # the same encoder and the same plain regressions: only the self-trained twins differ
    np.testing.assert_array_equal(trained.encoder_.transform(X), plain.encoder_.transform(X))
    assert trained.score(X, y) >= plain.score(X, y) - 0.05
    # every row labeled: nothing to self-train on
    assert fit_tiny_classifier(X, y).self_training_weight_ == 0.0
