"""QMatchClassifier: semi-supervised fit, both protocols, labels, reuse across folds."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn import config_context
from sklearn.base import is_classifier
from sklearn.datasets import make_classification
from sklearn.ensemble import StackingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor
from qmatch_sklearn.heads import fit_logistic_head_

from .conftest import tiny_encoder_params


def _classifier(**params):
    params = {"lr": 1e-2, "max_epochs": 40, "validation_fraction": 0.1, "freeze_encoder": False,
              "random_state": 0, "device": "cpu", **params}
    return QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), **params)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=400, n_features=10, n_informative=6, n_classes=3, random_state=0
    )
    return X, y


def test_unlabeled_rows_feed_pretraining_only(data):
    X, y = data
    y_semi = np.where(np.arange(len(y)) % 2 == 0, y, -1)
    clf = _classifier().fit(X, y_semi)
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])
    assert clf.encoder_.n_features_in_ == 10
    assert clf.score(X, y) > 0.6
    proba = clf.predict_proba(X)
    assert proba.shape == (400, 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    assert clf.decision_function(X).shape == (400, 3)
    assert {"train_loss", "valid_loss", "valid_acc"} <= set(clf.history_[-1])


@pytest.mark.parametrize("make", [QMatchClassifier, QMatchRegressor])
def test_an_unseeded_encoder_is_seeded_from_the_estimator(data, make):
    # QMatchClassifier(QMatchEncoder(...), random_state=0): the README's call refits to
    # the same result; the encoder passed keeps its None, one with a seed its own
    X, y = data
    y_semi = np.where(np.arange(len(y)) % 2 == 0, y, -1 if make is QMatchClassifier else np.nan)
    unseeded = QMatchEncoder(**tiny_encoder_params(random_state=None))
    first, second = (make(unseeded, random_state=0).fit(X, y_semi) for _ in range(2))
    assert unseeded.random_state is None
    assert isinstance(first.encoder_.random_state, int)
    np.testing.assert_array_equal(first.predict(X), second.predict(X))
    seeded = make(QMatchEncoder(**tiny_encoder_params(random_state=7)), random_state=0)
    assert seeded.fit(X, y_semi).encoder_.random_state == 7
    unseeded_both = make(unseeded).fit(X, y_semi)
    assert unseeded_both.encoder_.random_state is None


def test_string_labels_and_binary_decision_function(data):
    X, y = data
    keep = y < 2
    names = np.array(["cat", "dog"])[y[keep]].astype(object)
    names[::3] = -1
    clf = _classifier().fit(X[keep], names)
    np.testing.assert_array_equal(clf.classes_, ["cat", "dog"])
    assert set(clf.predict(X[:10])) <= {"cat", "dog"}
    scores = clf.decision_function(X[:10])
    assert scores.shape == (10,)
    np.testing.assert_array_equal(clf.predict(X[:10]) == "dog", scores > 0)


def test_frozen_encoder_trains_only_the_head(data):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    before = {k: v.clone() for k, v in encoder.network_.state_dict().items()}
    clf = _classifier(freeze_encoder=True).set_params(encoder=FrozenEstimator(encoder)).fit(X, y)
    after = clf.network_[0].state_dict()
    for key, value in before.items():
        torch.testing.assert_close(after[key], value)
        torch.testing.assert_close(encoder.network_.state_dict()[key], value)
    np.testing.assert_allclose(
        # the network reads the rows in the encoder's units
        clf.network_[0](torch.tensor((X[:5] - encoder.center_) / encoder.scale_,
                                     dtype=torch.float32)).numpy(),
        encoder.transform(X[:5]),
        rtol=1e-5, atol=1e-6,
    )


@pytest.mark.parametrize("columns", [list("jihgfedcba"), list("klmnopqrst")])
def test_a_frozen_encoder_refuses_columns_it_was_not_fitted_on(data, columns):
    """Its network reads the columns by position: reordered or renamed ones are
    refused by name, as its own transform refuses them (read as they came, a
    column got another's center and scale)."""
    X, y = data
    table = pd.DataFrame(X, columns=list("abcdefghij"))
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(table)
    changed = table[columns] if columns[0] in table else table.set_axis(columns, axis=1)
    clf = _classifier(freeze_encoder=True).set_params(encoder=FrozenEstimator(encoder))
    with pytest.raises(ValueError, match="The feature names should match"):
        clf.fit(changed, y)


def test_fine_tuning_changes_a_copy_of_the_encoder(data):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    reference = encoder.transform(X)
    clf = _classifier().set_params(encoder=FrozenEstimator(encoder)).fit(X, y)
    np.testing.assert_array_equal(encoder.transform(X), reference)  # the fitted encoder is intact
    tuned = clf.network_[0](torch.tensor(X, dtype=torch.float32)).numpy()
    assert not np.allclose(tuned, reference)


def test_an_encoder_fitted_once_is_reused_across_folds(data):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    fitted_weights = encoder.network_[1].weight.clone()
    clf = _classifier(freeze_encoder=True).set_params(encoder=FrozenEstimator(encoder))
    scores = cross_val_score(clf, X, y, cv=3)
    assert scores.mean() > 0.5
    torch.testing.assert_close(encoder.network_[1].weight, fitted_weights)


def test_is_a_classifier_for_meta_estimators(data):
    X, y = data
    keep = y < 2
    assert is_classifier(QMatchClassifier())
    auc = cross_val_score(_classifier(), X[keep], y[keep], cv=2, scoring="roc_auc")
    assert auc.mean() > 0.6
    stack = StackingClassifier([("qm", _classifier())], LogisticRegression(), cv=2)
    assert stack.fit(X, y).score(X, y) > 0.5


def test_errors_name_the_problem(data):
    X, y = data
    with pytest.raises(ValueError, match="at least 2 classes"):
        _classifier().fit(X, np.zeros(len(y), dtype=int))
    with pytest.raises(ValueError, match="at least 2 classes"):
        _classifier().fit(X, np.full(len(y), -1))
    with pytest.raises(ValueError, match="features"):
        encoder = QMatchEncoder(**tiny_encoder_params()).fit(X[:, :5])
        _classifier().set_params(encoder=FrozenEstimator(encoder)).fit(X, y)


@pytest.mark.parametrize("scoring, column, best", [("loss", "valid_loss", np.argmin),
                                                   ("accuracy", "valid_acc", np.argmax)])
def test_early_stopping_watches_the_chosen_score(data, scoring, column, best):
    X, y = data
    clf = _classifier(scoring=scoring, patience=3, max_epochs=200).fit(X, y)
    values = clf.history_[:, column]
    assert clf.n_epochs_ < 200
    # strict improvement: the first epoch reaching the best value is kept
    assert clf.best_epoch_ == int(best(values)) + 1
    assert clf.n_epochs_ == clf.best_epoch_ + 3


@pytest.mark.parametrize("freeze", [True, False])
def test_a_fixed_validation_set_drives_early_stopping(data, freeze):
    X, y = data
    clf = _classifier(freeze_encoder=freeze, patience=3, max_epochs=200)
    clf.fit(X[:300], y[:300], X_val=X[300:], y_val=y[300:])
    validated_rows = sum(b["valid_batch_size"] for b in clf.history_[-1]["batches"]
                         if "valid_batch_size" in b)
    trained_rows = sum(b["train_batch_size"] for b in clf.history_[-1]["batches"]
                       if "train_batch_size" in b)
    assert validated_rows == 100 and trained_rows == 300  # validation_fraction is ignored
    assert clf.best_epoch_ == int(np.argmin(clf.history_[:, "valid_loss"])) + 1
    assert clf.score(X[300:], y[300:]) > 0.5


def test_validation_set_errors_name_the_problem(data):
    X, y = data
    with pytest.raises(ValueError, match="both X_val and y_val"):
        _classifier().fit(X, y, X_val=X[:10])
    with pytest.raises(ValueError, match="labels not among the labeled rows"):
        _classifier().fit(X, y, X_val=X[:3], y_val=[0, 1, 7])
    with pytest.raises(ValueError, match="same, non-zero number of rows"):
        _classifier().fit(X, y, X_val=X[:3], y_val=[0, 1])
    with pytest.raises(ValueError, match="X has 4 features"):
        _classifier().fit(X, y, X_val=X[:3, :4], y_val=[0, 1, 1])


def test_auto_keeps_the_head_with_the_better_validation_score(data):
    X, y = data
    fits = {freeze: _classifier(freeze_encoder=freeze).fit(X, y) for freeze in (True, False)}
    auto = _classifier(freeze_encoder="auto").fit(X, y)
    best = min(fits, key=lambda freeze: fits[freeze].history_[
        fits[freeze].best_epoch_ - 1, "valid_loss"])
    assert auto.frozen_encoder_ == best
    np.testing.assert_array_equal(auto.predict_proba(X), fits[best].predict_proba(X))


def test_auto_without_validation_fits_a_cross_validated_logistic_head(data):
    X, y = data
    y_semi = np.where(np.arange(len(y)) % 10 == 0, y, -1)  # 40 labeled rows
    clf = _classifier(freeze_encoder="auto", validation_fraction="auto", self_training=False)
    clf.fit(X, y_semi)
    assert clf.frozen_encoder_ and clf.network_[0] is clf.encoder_.network_
    assert clf.n_epochs_ == 0 and len(clf.history_) == 0
    # the head is a logistic regression on the embeddings, with one of the Cs
    # LogisticRegressionCV searches by default
    embeddings, labeled = clf.encoder_.transform(X), y_semi != -1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        regressions = [LogisticRegression(C=C, max_iter=1000).fit(embeddings[labeled],
                                                                   y_semi[labeled])
                       for C in np.logspace(-4, 4, 10)]
    proba = clf.predict_proba(X)
    assert min(np.abs(r.predict_proba(embeddings) - proba).max() for r in regressions) < 1e-3


def test_with_metadata_routing_the_head_fits_with_the_weights_as_without(data):
    """scikit-learn's metadata routing does not reach the head's own solver: with
    routing on, the weighted head is the head fitted without routing."""
    X, y = data[0][:150], data[1][:150]
    weights = np.random.RandomState(0).uniform(0.2, 3.0, len(y))
    heads = []
    for routing in (False, True):
        with config_context(enable_metadata_routing=routing):
            head = torch.nn.Linear(X.shape[1], 3)
            fit_logistic_head_(head, X, y, 7, weights)
            heads.append(head.weight.detach().numpy())
    np.testing.assert_array_equal(*heads)


def test_predict_log_proba_is_the_log_of_predict_proba(data):
    # cross_val_predict(method="predict_log_proba") and meta-estimators ask for it
    X, y = data
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), random_state=0).fit(
        X, np.where(np.arange(len(y)) % 2 == 0, y, -1))
    log_proba = clf.predict_log_proba(X)
    assert log_proba.dtype == np.float32 and np.isfinite(log_proba).all()
    np.testing.assert_allclose(np.exp(log_proba), clf.predict_proba(X), rtol=1e-5, atol=1e-7)
