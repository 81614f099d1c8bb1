"""The closed-form heads weigh the embedding block beside the input (``weigh_embedding_block``)."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.model_selection import StratifiedKFold

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor
from qmatch_sklearn._classifier import fit_logistic_head_
from qmatch_sklearn._head import EMBEDDING_WEIGHTS, weigh_embedding_block
from qmatch_sklearn._regressor import RIDGE_ALPHAS, fit_ridge_head_

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


def test_the_best_cross_validated_score_wins_and_ties_keep_the_embedding():
    scores = {1.0: -1.0, 0.5: -0.5, 0.0: -0.5}  # 0.5 and 0 tie: the first one stays

    def fit(features):
        weight = float(features[0, -1])  # the embedding column, scaled by the weight
        return SimpleNamespace(name=f"model {weight}", coef_=np.ones((1, 2))), scores[weight]

    model, weight, coef = weigh_embedding_block(fit, np.ones((3, 2), dtype=np.float32), 1)
    assert (model.name, weight) == ("model 0.5", 0.5)
    np.testing.assert_array_equal(coef, [[1.0, 0.5]])  # of the unscaled features
    np.testing.assert_array_equal(model.coef_, [[1.0, 1.0]])  # the model's own: untouched
    assert weigh_embedding_block(fit, np.ones((3, 2), dtype=np.float32), None)[1] == 1.0
    assert EMBEDDING_WEIGHTS[0] == 1.0 and 0.0 in EMBEDDING_WEIGHTS


@pytest.mark.parametrize("signal_in", ["input", "embedding"])
def test_the_logistic_head_drops_a_noise_embedding_and_keeps_an_informative_one(signal_in):
    weights = []
    for seed in range(8):  # a choice on 80 rows is noisy: judged over draws
        features, y = rows(signal_in, seed)
        head = torch.nn.Linear(features.shape[1], 2)
        weights.append(fit_logistic_head_(head, features, y, seed, n_embedding=N_EMBEDDING)[1])
    if signal_in == "input":
        assert np.mean(weights) <= 0.25, weights
    else:
        assert np.mean(weights) >= 0.75 and min(weights) > 0, weights


def test_weight_zero_is_logistic_regression_on_the_input_alone():
    features, y = rows("input", seed=3)
    head = torch.nn.Linear(features.shape[1], 2)
    _, weight = fit_logistic_head_(head, features, y, 3, n_embedding=N_EMBEDDING)
    assert weight == 0.0  # on these rows; test_the_logistic_head_drops_... covers others
    assert (head.weight[:, -N_EMBEDDING:] == 0).all()
    folds = StratifiedKFold(5, shuffle=True, random_state=3)
    alone = LogisticRegressionCV(cv=folds, scoring="neg_log_loss", l1_ratios=(0.0,),
                                 use_legacy_attributes=False, max_iter=1000)
    alone.fit(features[:, :-N_EMBEDDING], y)
    with torch.no_grad():
        logits = head(torch.from_numpy(features)).numpy()
    np.testing.assert_allclose(logits[:, 1] - logits[:, 0],
                               alone.decision_function(features[:, :-N_EMBEDDING]),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("signal_in", ["input", "embedding"])
def test_the_ridge_head_reads_the_unscaled_features(signal_in):
    features, y = rows(signal_in)
    targets = (y - y.mean()).astype(np.float32)
    head = torch.nn.Linear(features.shape[1], 1)
    _, weight = fit_ridge_head_(head, features, targets[:, None], n_embedding=N_EMBEDDING)
    weighted = features.copy()
    weighted[:, -N_EMBEDDING:] *= weight
    reference = RidgeCV(alphas=RIDGE_ALPHAS).fit(weighted.astype(np.float64), targets[:, None])
    with torch.no_grad():
        predicted = head(torch.from_numpy(features)).numpy()
    np.testing.assert_allclose(predicted.ravel(), reference.predict(weighted).ravel(), rtol=1e-4,
                               atol=1e-4)


def test_estimators_report_the_weight():
    features, y = rows("input", n=120)
    encoder = QMatchEncoder(passthrough=True, hidden_sizes=(16,), embedding_dim=8,
                            max_epochs=2, random_state=0)
    classifier = QMatchClassifier(encoder=encoder, random_state=0).fit(features, y)
    assert classifier.embedding_weight_ in EMBEDDING_WEIGHTS
    regressor = QMatchRegressor(encoder=encoder, random_state=0).fit(features, y.astype(float))
    assert regressor.embedding_weight_ in EMBEDDING_WEIGHTS
    without = QMatchClassifier(encoder=encoder.set_params(passthrough=False),
                               random_state=0).fit(features, y)
    assert without.embedding_weight_ == 1.0
