"""``sample_weight`` (classifiers and regressors) and ``class_weight`` (classifiers)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import (
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
)
from qmatch_sklearn._engine import FineTuneNet, all_rows
from qmatch_sklearn.heads._logistic import fit_logistic_head_, head_folds

from .conftest import tiny_encoder_params


@pytest.fixture(scope="module")
def imbalanced():
    X, y = make_classification(n_samples=300, n_features=8, weights=[0.85, 0.15],
                               class_sep=0.6, random_state=0)
    return StandardScaler().fit_transform(X).astype(np.float32), y


def mlp(**params):
    return SupervisedMLPClassifier(hidden_sizes=(16,), embedding_dim=8, max_epochs=30,
                                   validation_fraction=None, random_state=0, device="cpu",
                                   **params)


def test_the_weighted_loss_is_the_weighted_mean_of_row_losses():
    torch.manual_seed(0)
    module = torch.nn.Linear(3, 2)
    X, y = torch.randn(6, 3), torch.tensor([0, 1, 0, 1, 1, 0])
    weight = torch.tensor([1.0, 0.0, 2.0, 0.5, 3.0, 1.0])
    net = FineTuneNet(module, criterion=torch.nn.CrossEntropyLoss, classes=[0, 1]).initialize()
    batch = all_rows(X.numpy(), y.numpy(), "cpu", weight.numpy()).batch(torch.arange(6))
    (Xb, wb), yb = batch
    torch.testing.assert_close(wb, weight)
    loss = net.get_loss(net.infer(batch[0]), yb, X=batch[0])
    rows = torch.nn.functional.cross_entropy(module(X), y, reduction="none")
    torch.testing.assert_close(loss, (rows * weight).sum() / weight.sum())
    assert net.criterion_.reduction == "mean"  # restored after the weighted loss
    torch.testing.assert_close(Xb, X)


@pytest.mark.parametrize("weight", [None, 1.0, 3.5])
def test_uniform_weights_are_the_unweighted_fit_exactly(weight, imbalanced):
    X, y = imbalanced
    reference = mlp().fit(X, y).predict_proba(X)
    sample_weight = None if weight is None else np.full(len(y), weight)
    np.testing.assert_array_equal(mlp().fit(X, y, sample_weight=sample_weight).predict_proba(X),
                                  reference)
    np.testing.assert_array_equal(
        mlp(class_weight={0: weight or 1.0, 1: weight or 1.0}).fit(X, y).predict_proba(X),
        reference)


def test_balanced_class_weight_predicts_the_rare_class_more_often(imbalanced):
    X, y = imbalanced
    plain = mlp().fit(X, y).predict(X)
    balanced = mlp(class_weight="balanced").fit(X, y).predict(X)
    assert (balanced == 1).sum() > (plain == 1).sum()
    rare = y == 1
    assert (balanced[rare] == 1).mean() > (plain[rare] == 1).mean()


def test_the_logistic_head_weighs_rows_as_scikit_learn_does(imbalanced):
    """The closed-form head is LogisticRegressionCV, given the same weights (to the
    precision both solvers stop at: a gradient of 1e-4, scikit-learn's tol)."""
    X, y = imbalanced
    sample_weight = np.random.RandomState(0).uniform(0.2, 3.0, len(y))
    head = torch.nn.Linear(X.shape[1], 2)
    fit_logistic_head_(head, X, y, 7, sample_weight)
    model = LogisticRegressionCV(
        cv=StratifiedKFold(5, shuffle=True, random_state=7), scoring="neg_log_loss",
        l1_ratios=(0.0,), use_legacy_attributes=False, max_iter=1000,
    ).fit(X, y, sample_weight=sample_weight)
    np.testing.assert_allclose(head.weight.detach().numpy()[1], model.coef_[0], atol=1e-3)
    unweighted = torch.nn.Linear(X.shape[1], 2)
    fit_logistic_head_(unweighted, X, y, 7)
    assert not torch.allclose(unweighted.weight, head.weight)


def test_a_classifier_weighs_only_its_head(imbalanced):
    """Pretraining treats rows alike: the same encoder, another head (one that
    gives the heavy class more probability)."""
    X, y = imbalanced
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=2))
    weighted = QMatchClassifier(encoder, random_state=0, device="cpu")
    weighted.fit(X, y, sample_weight=np.where(y == 1, 5.0, 1.0))
    unweighted = QMatchClassifier(encoder, random_state=0, device="cpu").fit(X, y)
    np.testing.assert_array_equal(weighted.encoder_.transform(X), unweighted.encoder_.transform(X))
    assert weighted.predict_proba(X)[:, 1].mean() > unweighted.predict_proba(X)[:, 1].mean()


def test_zero_weights_silence_rows(imbalanced):
    """Rows of weight 0 are as good as absent from the supervised loss."""
    X, y = imbalanced
    sample_weight = np.where(y == 1, 0.0, 1.0)
    sample_weight[np.flatnonzero(y == 1)[:2]] = 1e-6  # both classes keep a row of weight > 0
    # a learning rate at which 30 epochs converge: at the default's, what the network
    # predicts still depended on its initial weights (0.59 to 0.97 class 0 over 5 seeds)
    predicted = mlp(lr=0.01).fit(X, y, sample_weight=sample_weight).predict(X)
    assert (predicted == 0).mean() > 0.99  # unweighted: 0.91-0.92 over 5 seeds


def test_regressors_lean_towards_heavy_rows():
    rng = np.random.RandomState(0)
    X = rng.randn(240, 4).astype(np.float32)
    group = X[:, 0] > 0
    # the two halves disagree on the slope of the second feature
    y = np.where(group, 2.0, -2.0) * X[:, 1]
    heavy_group = np.where(group, 50.0, 1.0)
    for regressor in (
        SupervisedMLPRegressor(hidden_sizes=(16,), embedding_dim=8, max_epochs=40,
                               validation_fraction=None, random_state=0, device="cpu"),
        QMatchRegressor(QMatchEncoder(**tiny_encoder_params(max_epochs=2)), random_state=0,
                        device="cpu"),
    ):
        predicted = regressor.fit(X, y, sample_weight=heavy_group).predict(X)
        error = (predicted - y) ** 2
        assert error[group].mean() < error[~group].mean(), type(regressor).__name__


def test_the_ridge_head_matches_ridge_cv_with_the_same_weights():
    rng = np.random.RandomState(1)
    X = rng.randn(80, 5).astype(np.float32)
    y = X @ rng.randn(5) + 0.1 * rng.randn(80)
    sample_weight = rng.uniform(0.1, 5.0, 80)
    regressor = QMatchRegressor(QMatchEncoder(**tiny_encoder_params(max_epochs=2)),
                                random_state=0, device="cpu")
    regressor.fit(X, y, sample_weight=sample_weight)
    Z = regressor.encoder_.transform(X)
    standardised = (y - regressor.target_mean_) / regressor.target_scale_
    # the head reads the weights scaled to a mean of 1: only their ratios count
    expected = RidgeCV(alphas=np.logspace(-4, 4, 17)).fit(
        Z.astype(np.float64), standardised.reshape(-1, 1),
        sample_weight=sample_weight / sample_weight.mean())
    np.testing.assert_allclose(regressor.network_[1].weight.numpy().ravel(),
                               expected.coef_.ravel(), rtol=1e-4, atol=1e-5)


def _stratified_targets(draw_sizes):
    return np.repeat(np.arange(len(draw_sizes)), draw_sizes)


@given(sizes=st.lists(st.integers(2, 12), min_size=2, max_size=4), seed=st.integers(0, 2**16),
       weighted=st.booleans())
def test_without_zero_weights_the_head_s_folds_are_stratified_k_fold_s(sizes, seed, weighted):
    """Positive weights or none: the folds ``StratifiedKFold`` gives, unchanged."""
    targets = np.random.default_rng(seed).permutation(_stratified_targets(sizes))
    weights = np.random.default_rng(seed).uniform(0.1, 2.0, len(targets)) if weighted else None
    expected = StratifiedKFold(min(5, min(sizes)), shuffle=True, random_state=seed)
    for (train, test), (train_, test_) in zip(
        head_folds(targets, seed, weights), expected.split(targets, targets), strict=True
    ):
        np.testing.assert_array_equal(train, train_)
        np.testing.assert_array_equal(test, test_)


@given(sizes=st.lists(st.integers(1, 12), min_size=2, max_size=4), seed=st.integers(0, 2**16),
       zero_share=st.floats(0.0, 0.95))
def test_every_fold_of_the_head_trains_and_scores_on_rows_that_count(sizes, seed, zero_share):
    """Rows of weight 0 never fill a fold: each fold's training and held-out
    rows hold a row of positive weight of every class that has one (a class
    may weigh 0 in all); every fold trains on every class; the held-out rows
    cover every row once but those of a class that weighs 0 in all, which
    train in every fold. No folds when a class has exactly one row that counts."""
    rng = np.random.default_rng(seed)
    targets = rng.permutation(_stratified_targets(sizes))
    weights = np.where(rng.uniform(size=len(targets)) < zero_share, 0.0, 1.0)
    weights[0] = 1.0  # some row counts (the estimators refuse weights all 0)
    folds = head_folds(targets, seed, weights)
    counting = np.bincount(targets[weights > 0], minlength=len(sizes))
    if counting[counting > 0].min() < 2:
        assert folds is None
        return
    assert len(folds) == min(5, counting[counting > 0].min())
    for train, test in folds:
        for rows in (train, test):
            assert set(targets[rows[weights[rows] > 0]]) == set(np.flatnonzero(counting))
        assert set(targets[train]) == set(range(len(sizes)))
        np.testing.assert_array_equal(np.sort(np.r_[train, test]), np.arange(len(targets)))
    of_counting_classes = np.flatnonzero(counting[targets] > 0)
    np.testing.assert_array_equal(np.sort(np.concatenate([test for _, test in folds])),
                                  of_counting_classes)


def test_the_logistic_head_leaves_rows_of_weight_0_out(imbalanced):
    """Weight 0 on most rows, on more than a fold's worth of the rare class:
    the head fitted on the rows that count alone (to the solver's rounding)."""
    X, y = imbalanced
    weights = np.random.RandomState(1).uniform(0.2, 3.0, len(y))
    weights[np.flatnonzero(y == 1)[6:]] = 0.0  # six rows of the rare class count
    weights[np.flatnonzero(y == 0)[100:]] = 0.0
    heads = []
    for rows, row_weights in ((slice(None), weights), (weights > 0, weights[weights > 0])):
        head = torch.nn.Linear(X.shape[1], 2)
        fit_logistic_head_(head, X[rows], y[rows], 7, row_weights)
        heads.append(head.weight.detach().numpy())
    np.testing.assert_allclose(*heads, rtol=1e-4, atol=1e-6)


def test_a_class_of_weight_0_keeps_the_head_s_cross_validation():
    """``class_weight`` 0 for a class: the other classes' rows still choose C on
    folds and weigh the boosted member (one fold of C=1 alone before)."""
    X, y = make_classification(n_samples=300, n_features=8, n_informative=5, n_classes=3,
                               random_state=0)
    assert len(head_folds(y, 0, np.where(y == 2, 0.0, 1.0))) == 5
    model = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(max_epochs=2)),
                             class_weight={0: 1.0, 1: 1.0, 2: 0.0}, random_state=0,
                             device="cpu").fit(X, y)
    assert model.boosting_weight_ > 0 and np.isfinite(model.predict_proba(X)).all()


@pytest.mark.parametrize("counting", [1, 2, 4])
def test_a_classifier_fits_when_few_rows_count(imbalanced, counting):
    """``counting`` rows of each class weigh more than 0, the others 0 (a
    cross-validation fold of rows of weight 0 alone stopped the fit before)."""
    X, y = imbalanced
    weights = np.zeros(len(y))
    for label in (0, 1):
        weights[np.flatnonzero(y == label)[:counting]] = 1.0
    model = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(max_epochs=2)),
                             random_state=0, device="cpu").fit(X, y, sample_weight=weights)
    assert np.isfinite(model.predict_proba(X)).all()


@pytest.mark.parametrize("n_labeled, self_training", [(13, True), (13, False), (60, False)],
                         ids=["self-trained twins", "regressions", "boosted member"])
@pytest.mark.parametrize("how", ["class_weight", "sample_weight"])
def test_a_class_whose_one_row_weighs_0_is_in_every_fold_s_fit(n_labeled, self_training, how):
    """Held out in one fold, the row left its class out of the other folds' fits, whose
    predictions then lacked its column (log_loss's or numpy's shape error)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = np.full(300, -1)
    half = (n_labeled - 1) // 2
    y[:half], y[half:n_labeled - 1], y[n_labeled - 1] = 0, 1, 2
    X[half:n_labeled - 1, 0] += 2
    weights = np.ones(300)
    weights[n_labeled - 1] = 0.0
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                           random_state=0, self_training=self_training,
                           class_weight={2: 0.0} if how == "class_weight" else None)
    clf.fit(X, y, sample_weight=weights if how == "sample_weight" else None)
    proba = clf.predict_proba(X)
    assert clf.classes_.tolist() == [0, 1, 2] and np.isfinite(proba).all()
    assert (clf.boosting_weight_ > 0) == (n_labeled == 60)
    assert proba[:, 2].max() < 0.5  # a class that counts for nothing is predicted for none


@pytest.mark.parametrize("make", [QMatchClassifier, QMatchRegressor])
def test_only_the_weights_ratios_count(make):
    """Weights are scaled to a mean of 1: c * w fits as w does, for c from 1e-8 to
    1e39 (beyond float32's range, which the losses read the weights in)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    labeled = np.arange(300) < 60
    if make is QMatchClassifier:
        y = np.where(labeled, (X[:, 0] > 0).astype(int), -1)
    else:
        y = np.where(labeled, X[:, 0] + 0.1 * rng.normal(size=300), np.nan)
    weights = np.linspace(0.5, 2.0, 300)

    def predict(scale):
        model = make(QMatchEncoder(**tiny_encoder_params(passthrough=True)), random_state=0)
        model.fit(X, y, sample_weight=weights * scale)
        return model.predict_proba(X) if make is QMatchClassifier else model.predict(X)

    reference = predict(1.0)
    for scale in (1e-8, 1e8, 1e39):
        np.testing.assert_allclose(predict(scale), reference, rtol=1e-5, atol=1e-6)
