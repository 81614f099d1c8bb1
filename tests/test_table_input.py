"""The fitted table input (``_table.TableInput``, issue #56): kept only once it has read
``X``, shared with a frozen encoder, and read through the estimators' attributes."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.frozen import FrozenEstimator

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, SupervisedMLPClassifier

from .conftest import tiny_encoder_params

RNG = np.random.default_rng(0)
X = RNG.normal(size=(80, 4))
Y = np.where(np.arange(80) % 4 == 0, np.arange(80) % 3, -1)
Y_FULL = np.arange(80) % 3


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit()


@pytest.mark.parametrize("make, y", [
    (lambda: QMatchEncoder(**tiny_encoder_params()), None),
    (lambda: QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), random_state=0), Y),
    (lambda: SupervisedMLPClassifier(hidden_sizes=(8,), embedding_dim=4, max_epochs=2,
                                     random_state=0), Y_FULL),
], ids=["encoder", "classifier", "mlp"])
def test_a_refit_refused_leaves_the_fitted_model_as_it_was(make, y):
    estimator = _quiet(lambda: make().fit(X, y))
    before = pickle.dumps(estimator)
    output = estimator.transform if hasattr(estimator, "transform") else estimator.predict_proba
    expected = output(X)
    with pytest.raises(ValueError, match="infinity"):
        estimator.fit(np.where(np.arange(4) == 1, np.inf, X), y)
    np.testing.assert_array_equal(output(X), expected)
    np.testing.assert_array_equal(pickle.loads(before).center_, estimator.center_)


def test_an_estimator_whose_fit_failed_still_pickles():
    """cross_validate with error_score returns (and with n_jobs pickles) such estimators."""
    holes = X.copy()
    holes[:, 2] = np.nan  # a column with no observed value: refused
    estimator = SupervisedMLPClassifier(hidden_sizes=(8,), embedding_dim=4, max_epochs=2)
    with pytest.raises(ValueError, match="no observed value"):
        estimator.fit(holes, Y_FULL)
    assert not hasattr(pickle.loads(pickle.dumps(estimator)), "missing_features_")


def test_unfitted_table_attributes_are_named_when_missing():
    with pytest.raises(AttributeError, match="'QMatchEncoder' object has no attribute 'center_'"):
        QMatchEncoder().center_  # noqa: B018
    assert not hasattr(QMatchClassifier(), "categories_")


def test_a_frozen_encoders_table_input_is_the_classifiers():
    frame = pd.DataFrame(X, columns=list("abcd")).assign(
        kind=pd.Categorical(np.arange(80) % 2))
    encoder = _quiet(lambda: QMatchEncoder(**tiny_encoder_params(passthrough=True)).fit(frame))
    clf = _quiet(lambda: QMatchClassifier(FrozenEstimator(encoder), random_state=0)
                 .fit(frame, Y))
    assert clf._table_input is encoder._table_input
    assert clf.categories_ is encoder.categories_ and clf.missing_features_.size == 0
    # an array of the same columns fits as before the table input was kept whole: its
    # kinds are checked where X's columns are checked against fit's (predict, transform)
    _quiet(lambda: QMatchClassifier(FrozenEstimator(encoder), random_state=0)
           .fit(frame.to_numpy(dtype=object), Y))
