"""``partial_fit``: pretraining chunk by chunk, continuing optimiser, teacher and queue."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import METHODS, QMatchEncoder

from .conftest import tiny_method_params


@pytest.fixture(scope="module")
def X():
    return StandardScaler().fit_transform(load_wine(return_X_y=True)[0]).astype(np.float32)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_partial_fit_over_the_rows_twice_is_fit_for_two_epochs(name, X):
    """The same seeds, shuffles and corruptions, and the optimiser, teacher and queue
    carried over: bit for bit the weights of fit."""
    params = tiny_method_params(name, max_epochs=2, validation_fraction=None)
    fitted = METHODS[name](**params).fit(X)
    partial = METHODS[name](**params).partial_fit(X).partial_fit(X)
    np.testing.assert_array_equal(partial.transform(X), fitted.transform(X))
    assert partial.n_epochs_ == partial.best_epoch_ == 2
    assert len(partial.history_) == 2


def test_chunks_train_one_epoch_each_and_transform_after_any(X):
    encoder = QMatchEncoder(**tiny_method_params("qmatch"), passthrough=True)
    before = None
    for i, chunk in enumerate(np.array_split(X, 4), start=1):
        encoder.partial_fit(chunk)
        assert encoder.n_epochs_ == i
        Z = encoder.transform(X)
        assert np.isfinite(Z).all() and Z.shape == (len(X), X.shape[1] + 8)
        assert before is None or not np.array_equal(Z, before)
        before = Z


def test_changed_parameters_wider_rows_and_new_missing_values_are_errors(X):
    encoder = QMatchEncoder(**tiny_method_params("qmatch")).partial_fit(X)
    with pytest.raises(ValueError, match=r"parameters \['lr'\] .* changed since the first"):
        clone(encoder).set_params(lr=0.5).partial_fit(X)  # a clone starts afresh: fine
        encoder.set_params(lr=0.5).partial_fit(X)
    encoder.set_params(lr=tiny_method_params("qmatch").get("lr", 1e-3))
    with pytest.raises(ValueError, match="X has 5 features, but QMatchEncoder is expecting 13"):
        encoder.partial_fit(X[:, :5])
    holes = np.where(np.arange(X.shape[1]) == 2, np.nan, X)
    with pytest.raises(ValueError, match="X has missing values"):
        encoder.partial_fit(holes)


def test_fit_then_partial_fit_warns_and_starts_over(X):
    params = tiny_method_params("qmatch", max_epochs=2, validation_fraction=None)
    encoder = QMatchEncoder(**params).fit(X)
    with pytest.warns(UserWarning, match="starts a new run"):
        encoder.partial_fit(X)
    assert encoder.n_epochs_ == 1
    fresh = QMatchEncoder(**params).partial_fit(X)
    np.testing.assert_array_equal(encoder.transform(X), fresh.transform(X))


def test_a_pickled_run_keeps_the_network_but_cannot_continue(X):
    encoder = QMatchEncoder(**tiny_method_params("qmatch")).partial_fit(X)
    loaded = pickle.loads(pickle.dumps(encoder))
    assert "_partial_net" not in loaded.__dict__
    np.testing.assert_array_equal(loaded.transform(X), encoder.transform(X))
    with pytest.raises(ValueError, match="loaded from a file or a pickle"):
        loaded.partial_fit(X)
    encoder.partial_fit(X)  # the original goes on
    assert encoder.n_epochs_ == 2
