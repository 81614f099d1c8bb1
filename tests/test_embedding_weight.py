"""The closed-form heads average over weights of the embedding block beside the input
(``average_blocks``; the ridge head fits each weight through ``weigh_embedding_block``)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import expit
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.model_selection import StratifiedKFold

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor
from qmatch_sklearn.heads import (
    EMBEDDING_WEIGHTS,
    RIDGE_ALPHAS,
    fit_logistic_head_,
    fit_ridge_head_,
    weigh_embedding_block,
)

N_EMBEDDING = 32


def rows(signal_in, seed=0, n=80):
    """Input block (4 columns) and embedding block (32): the signal is in one of them,
    the other is noise."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    signal = (2 * y - 1)[:, None] + 0.7 * rng.normal(size=(n, 4))
    x = signal if signal_in == "input" else rng.normal(size=(n, 4))
    z = np.tile(signal, 8) + rng.normal(size=(n, N_EMBEDDING)) if signal_in == "embedding" \
        else rng.normal(size=(n, N_EMBEDDING))
    return np.hstack([x, z]).astype(np.float32), y


def pseudo_bma(log_likelihoods, n):
    """The averaging weights p_k proportional to exp(n * log_likelihood_k)."""
    evidence = n * np.asarray(log_likelihoods)
    p = np.exp(evidence - evidence.max())
    return p / p.sum()


@given(st.lists(st.floats(-5, 0), min_size=3, max_size=3), st.integers(2, 500))
def test_heads_are_averaged_by_their_cross_validated_likelihood(log_likelihoods, n):
    """coef and intercept are the p-weighted averages of the heads' (on the unscaled
    features: the embedding coefficients times the block's weight)."""
    scores = dict(zip(EMBEDDING_WEIGHTS, log_likelihoods, strict=True))

    def fit(features):
        weight = float(features[0, -1])  # the embedding column, scaled by the weight
        head = SimpleNamespace(coef_=np.array([[1.0 + weight, 1.0]]),
                               intercept_=np.array([weight]))
        return [(head, scores[weight])]

    coef, intercept, weight, slots, p_heads = weigh_embedding_block(
        fit, np.ones((n, 2), np.float32), 1)
    p = pseudo_bma(log_likelihoods, n)
    w = np.asarray(EMBEDDING_WEIGHTS)
    np.testing.assert_allclose(coef, [[p @ (1 + w), p @ w]], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(intercept, [p @ w], rtol=1e-9, atol=1e-12)
    assert weight == pytest.approx(p @ w) and 0.0 <= weight <= 1.0
    assert slots == [[ll] for ll in log_likelihoods]
    np.testing.assert_allclose(p_heads, p)


def test_a_twin_is_weighed_in_its_block_weights_slot():
    """fit may return several heads per block weight (a regression and its self-trained
    twin): each is weighed on its own; the block weights come in their order."""
    seen = []

    def fit(features):
        weight = float(features[0, -1])
        seen.append(weight)
        plain = SimpleNamespace(coef_=np.array([[0.0, 1.0]]), intercept_=np.array([0.0]))
        twin = SimpleNamespace(coef_=np.array([[1.0, 1.0]]), intercept_=np.array([1.0]))
        return [(plain, -1.0), (twin, -1.0 + 0.01 * weight)]

    n = 50
    _, intercept, _, slots, p = weigh_embedding_block(fit, np.ones((n, 2), np.float32), 1)
    assert seen == list(EMBEDDING_WEIGHTS)
    assert [len(slot) for slot in slots] == [2, 2, 2]
    expected = pseudo_bma([ll for slot in slots for ll in slot], n)
    np.testing.assert_allclose(p, expected)
    np.testing.assert_allclose(intercept, [p[1::2].sum()], rtol=1e-12)


def test_a_far_better_head_takes_all_and_without_an_input_block_one_head_is_fitted():
    def fit(features):
        weight = float(features[0, -1])
        head = SimpleNamespace(coef_=np.array([[weight]]), intercept_=np.array([0.0]))
        return [(head, (0.0 if weight == 0.5 else -1.0))]

    coef, _, weight, _, _ = weigh_embedding_block(fit, np.ones((100, 1), np.float32), 1)
    assert weight == 0.5 and coef[0, 0] == 0.25
    assert weigh_embedding_block(fit, np.ones((100, 1), np.float32), None)[2] == 1.0


def accuracy(head, features, y):
    with torch.no_grad():
        logits = head(torch.from_numpy(features)).numpy()
    return np.mean(logits.argmax(axis=1) == y)


@pytest.mark.parametrize("signal_in", ["input", "embedding"])
def test_the_logistic_head_ignores_a_noise_embedding_and_uses_an_informative_one(signal_in):
    """On fresh rows: as accurate as the input alone when the embedding is noise,
    far more when the signal is in the embedding alone (judged over draws: 80 rows
    are few)."""
    ours, alone, weights = [], [], []
    for seed in range(8):
        features, y = rows(signal_in, seed)
        test_features, test_y = rows(signal_in, seed + 100, n=2000)
        head = torch.nn.Linear(features.shape[1], 2)
        weights.append(
            fit_logistic_head_(head, features, y, seed, n_embedding=N_EMBEDDING)[1][
                "embedding_weight_"]
        )
        ours.append(accuracy(head, test_features, test_y))
        inputs = LogisticRegressionCV(max_iter=1000).fit(features[:, :-N_EMBEDDING], y)
        alone.append(inputs.score(test_features[:, :-N_EMBEDDING], test_y))
    if signal_in == "input":
        assert np.mean(ours) >= np.mean(alone) - 0.01, (ours, alone)
    else:
        assert np.mean(ours) >= np.mean(alone) + 0.3 and np.mean(weights) >= 0.75, weights


def test_the_logistic_head_is_the_average_of_cross_validated_regressions():
    """Its logits: the pseudo-BMA average of LogisticRegressionCV's decision functions,
    one per weight of the embedding block, on the same folds. Both solvers stop at a
    gradient of 1e-4 (scikit-learn's tol), from different starts, so on these nearly
    separable rows their margins differ by up to a tenth (they agree to 1e-6 at
    tol=1e-10): compared are the probabilities and the weights."""
    features, y = rows("input", seed=3)
    head = torch.nn.Linear(features.shape[1], 2)
    _, fitted = fit_logistic_head_(head, features, y, 3, n_embedding=N_EMBEDDING)
    weight = fitted["embedding_weight_"]
    folds = StratifiedKFold(5, shuffle=True, random_state=3)
    margins, log_likelihoods = [], []
    for w in EMBEDDING_WEIGHTS:
        weighted = features.copy()
        weighted[:, -N_EMBEDDING:] *= w
        model = LogisticRegressionCV(cv=folds, scoring="neg_log_loss", l1_ratios=(0.0,),
                                     use_legacy_attributes=False, max_iter=1000)
        model.fit(weighted, y)
        margins.append(model.decision_function(weighted))
        log_likelihoods.append(model.scores_.mean(axis=0).max())
    p = pseudo_bma(log_likelihoods, len(y))
    with torch.no_grad():
        logits = head(torch.from_numpy(features)).numpy()
    np.testing.assert_allclose(expit(logits[:, 1] - logits[:, 0]),
                               expit(p @ np.array(margins)), atol=1e-3)
    assert weight == pytest.approx(p @ np.asarray(EMBEDDING_WEIGHTS), abs=1e-2)


@pytest.mark.parametrize("signal_in", ["input", "embedding"])
def test_the_ridge_head_is_the_average_of_leave_one_out_ridges(signal_in):
    """Its predictions: the average of RidgeCV's, one per weight of the embedding
    block, weighted by the Gaussian likelihood of their leave-one-out errors."""
    features, y = rows(signal_in)
    targets = (y - y.mean()).astype(np.float32)
    head = torch.nn.Linear(features.shape[1], 1)
    fit_ridge_head_(head, features, targets[:, None], n_embedding=N_EMBEDDING)
    predictions, log_likelihoods = [], []
    for w in EMBEDDING_WEIGHTS:
        weighted = features.copy()
        weighted[:, -N_EMBEDDING:] *= w
        model = RidgeCV(alphas=RIDGE_ALPHAS).fit(weighted.astype(np.float64), targets[:, None])
        predictions.append(model.predict(weighted).ravel())
        log_likelihoods.append(-0.5 * np.log(-model.best_score_))
    p = pseudo_bma(log_likelihoods, len(y))
    with torch.no_grad():
        predicted = head(torch.from_numpy(features)).numpy()
    np.testing.assert_allclose(predicted.ravel(), p @ np.array(predictions), rtol=1e-4,
                               atol=1e-4)


def test_estimators_report_the_weight():
    features, y = rows("input", n=120)
    encoder = QMatchEncoder(passthrough=True, hidden_sizes=(16,), embedding_dim=8,
                            max_epochs=2, random_state=0)
    classifier = QMatchClassifier(encoder=encoder, random_state=0).fit(features, y)
    assert 0.0 <= classifier.embedding_weight_ <= 1.0
    regressor = QMatchRegressor(encoder=encoder, random_state=0).fit(features, y.astype(float))
    assert 0.0 <= regressor.embedding_weight_ <= 1.0
    without = QMatchClassifier(encoder=encoder.set_params(passthrough=False),
                               random_state=0).fit(features, y)
    assert without.embedding_weight_ == 1.0
