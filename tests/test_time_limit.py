"""``max_time``: the one-call estimators stop training when it runs out, and say so."""

import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.frozen import FrozenEstimator
from sklearn.utils._param_validation import InvalidParameterError

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor, load, save
from qmatch_sklearn._time_limit import deadline, expired, time_limit

TINY = dict(hidden_sizes=(16,), embedding_dim=8, projection_sizes=(16, 8), queue_size=64,
            batch_size=64, passthrough=True)


def classes():
    X, y = load_breast_cancer(return_X_y=True)
    # 60 labeled rows, 30 a class: enough for the boosted member and the twins
    labeled = np.r_[np.flatnonzero(y == 0)[:30], np.flatnonzero(y == 1)[:30]]
    return X, np.where(np.isin(np.arange(len(y)), labeled), y, -1)


def test_no_limit_by_default_and_none_when_the_fit_is_quicker():
    X, y = classes()
    clf = QMatchClassifier(QMatchEncoder(max_epochs=3, **TINY), random_state=0).fit(X, y)
    assert clf.max_time is None and clf.max_time_reached_ is None
    assert clf.encoder_.n_epochs_ == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        roomy = QMatchClassifier(QMatchEncoder(max_epochs=3, **TINY), max_time=3600,
                                 random_state=0).fit(X, y)
    assert roomy.max_time_reached_ is None
    np.testing.assert_array_equal(roomy.predict_proba(X), clf.predict_proba(X))


def test_pretraining_stops_after_the_epoch_that_runs_out_and_the_head_is_cheapest():
    X, y = classes()
    unlimited = QMatchClassifier(QMatchEncoder(max_epochs=1, **TINY), random_state=0).fit(X, y)
    assert unlimited.self_training_weight_ > 0  # the twins count when there is time
    clf = QMatchClassifier(QMatchEncoder(max_epochs=50, **TINY), max_time=1e-9,
                           random_state=0)
    with pytest.warns(UserWarning, match=r"max_time=1e-09 s ran out during pretraining"):
        clf.fit(X, y)
    assert clf.max_time_reached_ == "pretraining"
    assert clf.encoder_.n_epochs_ == clf.encoder_.best_epoch_ == 1
    # the head's regressions alone: no self-trained twin, no boosted member
    assert clf.self_training_weight_ == 0.0 and clf.boosting_weight_ == 0.0
    assert clf.boosted_trees_ is None
    assert np.isfinite(clf.predict_proba(X)).all()
    assert deadline() is None  # the limit ends with the fit


def test_a_saved_fit_keeps_the_stage_that_ran_out(tmp_path):
    X, y = classes()
    with pytest.warns(UserWarning, match="max_time"):
        clf = QMatchClassifier(QMatchEncoder(max_epochs=5, **TINY), max_time=1e-9,
                               random_state=0).fit(X, y)
    save(clf, tmp_path / "clf.qmatch")
    same = load(tmp_path / "clf.qmatch")
    assert same.max_time == 1e-9 and same.max_time_reached_ == "pretraining"
    np.testing.assert_array_equal(same.predict_proba(X), clf.predict_proba(X))


def test_a_frozen_encoder_runs_out_before_the_head():
    X, y = classes()
    encoder = QMatchEncoder(max_epochs=1, random_state=0, **TINY).fit(X)
    clf = QMatchClassifier(FrozenEstimator(encoder), max_time=1e-9, random_state=0)
    with pytest.warns(UserWarning, match="ran out during the head's fit"):
        clf.fit(X, y)
    assert clf.max_time_reached_ == "head"


def test_an_adamw_head_stops_after_its_first_epoch():
    X, y = load_diabetes(return_X_y=True)
    reg = QMatchRegressor(QMatchEncoder(max_epochs=2, **TINY), freeze_encoder=True,
                          validation_fraction=0.2, max_epochs=40, max_time=1e-9,
                          random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg.fit(X, y)
    # one warning, the time limit's (no early-stopping warning: no early stopping chose)
    assert [str(w.message) for w in caught if w.category is UserWarning] == [
        "QMatchRegressor: max_time=1e-09 s ran out during pretraining, which stopped at "
        "epoch 1; the head was fitted in its cheapest form. The result depends on this "
        "machine's speed."]
    assert reg.max_time_reached_ == "pretraining"
    assert reg.encoder_.n_epochs_ == 1 and reg.n_epochs_ == 1
    assert np.isfinite(reg.predict(X)).all()


@pytest.mark.parametrize("max_time", [0, -1.0, "60", np.inf * 0])
def test_a_max_time_that_is_not_a_positive_number_is_refused_before_training(max_time):
    X, y = classes()
    with pytest.raises(InvalidParameterError, match="max_time"):
        QMatchClassifier(QMatchEncoder(**TINY), max_time=max_time).fit(X, y)


def test_the_limit_nests_and_ends_with_its_block():
    assert not expired()
    with time_limit(3600):
        outer = deadline()
        with time_limit(None):  # no limit of its own: the enclosing one stays
            assert deadline() == outer
        with time_limit(1e-9):
            time.sleep(1e-6)
            assert expired()
        assert deadline() == outer and not expired()
    assert deadline() is None
