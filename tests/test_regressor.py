"""QMatchRegressor and SupervisedMLPRegressor: NaN marks unlabeled rows, standardised
targets, multi-output, every freeze_encoder mode, a fixed validation set, saving, NaN in X."""

import pickle

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import is_regressor
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import cross_val_score

from qmatch_sklearn import (
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPRegressor,
    load,
    save,
)
from qmatch_sklearn.heads import RIDGE_ALPHAS

from .conftest import tiny_encoder_params

TRAIN, TEST = slice(0, 300), slice(300, None)


def _regressor(encoder=None, **params):
    params = {"lr": 1e-2, "max_epochs": 40, "validation_fraction": 0.1, "freeze_encoder": False,
              "random_state": 0, "device": "cpu", **params}
    return QMatchRegressor(encoder or QMatchEncoder(**tiny_encoder_params()), **params)


def _mlp(**params):
    params = {"hidden_sizes": (32,), "embedding_dim": 8, "lr": 1e-2, "max_epochs": 40,
              "validation_fraction": 0.1, "random_state": 0, "device": "cpu", **params}
    return SupervisedMLPRegressor(**params)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 10))
    y = 2 * X[:, 0] - X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + 0.1 * rng.normal(size=400)
    return X, y


def _rows_seen(history):
    """Rows one epoch of ``history`` trained and validated on."""
    batches = history[-1]["batches"]
    trained = sum(b.get("train_batch_size", 0) for b in batches)
    validated = sum(b.get("valid_batch_size", 0) for b in batches)
    return trained, validated


@pytest.mark.parametrize("make", [_regressor, _mlp], ids=["qmatch", "supervised"])
def test_learns_a_simple_target_much_better_than_the_mean(data, make):
    X, y = data
    reg = make().fit(X[TRAIN], y[TRAIN])
    assert is_regressor(reg)
    prediction = reg.predict(X[TEST])
    assert prediction.shape == (100,) and prediction.dtype == np.float64
    assert reg.score(X[TEST], y[TEST]) > 0.8  # R²: the mean scores 0
    assert {"train_loss", "valid_loss"} <= set(reg.history_[-1])
    assert "valid_acc" not in reg.history_[-1]


def test_nan_marks_unlabeled_rows_which_feed_pretraining_only(data):
    X, y = data
    y_semi = np.where(np.arange(len(y)) % 2 == 0, y, np.nan)
    reg = _regressor(validation_fraction=None).fit(X, y_semi)
    assert reg.encoder_.n_features_in_ == 10
    assert sum(_rows_seen(reg.encoder_.history_)) == 400  # every row reached pretraining
    assert _rows_seen(reg.history_) == (200, 0)  # the labeled half trained the head
    labeled = ~np.isnan(y_semi)
    assert reg.target_mean_ == pytest.approx([y_semi[labeled].mean()])
    assert reg.target_scale_ == pytest.approx([y_semi[labeled].std()])
    assert reg.score(X[1::2], y[1::2]) > 0.7  # the unlabeled rows, predicted


def test_minus_one_is_a_target_like_any_other(data):
    X, _ = data
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    reg = _regressor(validation_fraction=None).fit(X, y)
    assert _rows_seen(reg.history_) == (400, 0)
    assert reg.target_mean_ == pytest.approx([y.mean()])
    assert reg.score(X, y) > 0.5


@pytest.mark.parametrize("make", [_regressor, _mlp], ids=["qmatch", "supervised"])
def test_multi_output_shapes(data, make):
    X, y = data
    Y = np.c_[y, -3 * y + X[:, 4], X[:, 5]]
    Y[::5] = np.nan  # whole rows unlabeled
    reg = make().fit(X[TRAIN], Y[TRAIN])
    assert reg.n_outputs_ == 3 and reg.target_mean_.shape == (3,)
    prediction = reg.predict(X[TEST])
    assert prediction.shape == (100, 3) and prediction.dtype == np.float64
    labeled = ~np.isnan(Y[TEST]).any(axis=1)
    assert reg.score(X[TEST][labeled], Y[TEST][labeled]) > 0.7
    column = make().fit(X[TRAIN], y[TRAIN, None])
    assert column.n_outputs_ == 1 and column.predict(X[TEST]).shape == (100, 1)
    flat = make().fit(X[TRAIN], y[TRAIN])
    assert flat.predict(X[TEST]).shape == (100,)
    # the same network and seeds: a column vector and a 1-D y train alike
    np.testing.assert_allclose(column.predict(X[TEST])[:, 0], flat.predict(X[TEST]), rtol=1e-6)


@pytest.mark.parametrize("freeze", ["auto", True, False])
def test_targets_are_standardised_so_their_scale_does_not_matter(data, freeze):
    X, y = data
    small = _regressor(freeze_encoder=freeze).fit(X[TRAIN], y[TRAIN])
    large = _regressor(freeze_encoder=freeze).fit(X[TRAIN], 1e6 * y[TRAIN] + 3e6)
    assert large.target_scale_[0] == pytest.approx(1e6 * small.target_scale_[0])
    assert large.score(X[TEST], 1e6 * y[TEST] + 3e6) == pytest.approx(
        small.score(X[TEST], y[TEST]), abs=1e-3
    )


def test_a_constant_target_is_only_centred(data):
    X, _ = data
    # the ridge head of standardised targets that are all 0 is 0: the mean comes back
    reg = _regressor(freeze_encoder="auto", validation_fraction=None).fit(X, np.full(400, 7.5))
    assert reg.target_scale_ == pytest.approx([1.0])
    np.testing.assert_allclose(reg.predict(X), 7.5, rtol=1e-12)


def test_auto_without_validation_fits_a_cross_validated_ridge_head(data):
    X, y = data
    y_semi = np.where(np.arange(len(y)) % 10 == 0, y, np.nan)  # 40 labeled rows
    reg = _regressor(freeze_encoder="auto", validation_fraction="auto").fit(X, y_semi)
    assert reg.frozen_encoder_ and reg.network_[0] is reg.encoder_.network_
    assert reg.n_epochs_ == 0 and len(reg.history_) == 0
    # ridge is linear in y and its leave-one-out choice of alpha is scale-free: the
    # head standardised then de-standardised equals RidgeCV on the raw targets
    embeddings, labeled = reg.encoder_.transform(X), ~np.isnan(y_semi)
    ridge = RidgeCV(alphas=RIDGE_ALPHAS).fit(embeddings[labeled].astype(np.float64),
                                             y_semi[labeled])
    expected = np.clip(ridge.predict(embeddings), y_semi[labeled].min(), y_semi[labeled].max())
    np.testing.assert_allclose(reg.predict(X), expected, rtol=1e-4, atol=1e-4)


def test_predictions_are_clipped_to_the_labeled_range_unless_told_not_to(data):
    """The same fit with and without clip_predictions: the clipped predictions are the
    unclipped ones within [target_min_, target_max_], per output."""
    X, y = data
    Y = np.c_[y, -3.0 * y + 100.0]
    Y_semi = np.where((np.arange(len(y)) % 10 == 0)[:, None], Y, np.nan)  # 40 labeled rows
    clipped = _regressor(freeze_encoder="auto").fit(X, Y_semi)
    free = _regressor(freeze_encoder="auto", clip_predictions=False).fit(X, Y_semi)
    labeled = Y[::10]
    np.testing.assert_array_equal(clipped.target_min_, labeled.min(axis=0))
    np.testing.assert_array_equal(clipped.target_max_, labeled.max(axis=0))
    unclipped = free.predict(X)
    outside = (unclipped < labeled.min(axis=0)) | (unclipped > labeled.max(axis=0))
    assert outside.any(axis=0).all()  # the test means something for both outputs
    np.testing.assert_array_equal(
        clipped.predict(X), np.clip(unclipped, labeled.min(axis=0), labeled.max(axis=0)))


def test_a_labeled_row_of_weight_zero_does_not_widen_the_range(data):
    X, y = data
    y_semi = np.where(np.arange(len(y)) % 10 == 0, y, np.nan)
    y_semi[0] = 1e6  # labeled, weighs nothing
    weights = np.ones(len(y))
    weights[0] = 0.0
    model = _regressor(freeze_encoder="auto").fit(X, y_semi, sample_weight=weights)
    counted = y_semi[10::10]
    assert model.target_min_ == pytest.approx([counted.min()])
    assert model.target_max_ == pytest.approx([counted.max()])
    assert model.predict(X).max() <= counted.max()


def test_auto_keeps_the_head_with_the_better_validation_loss(data):
    X, y = data
    fits = {freeze: _regressor(freeze_encoder=freeze).fit(X, y) for freeze in (True, False)}
    auto = _regressor(freeze_encoder="auto").fit(X, y)
    best = min(fits, key=lambda freeze: fits[freeze].history_[
        fits[freeze].best_epoch_ - 1, "valid_loss"])
    assert auto.frozen_encoder_ == best
    np.testing.assert_array_equal(auto.predict(X), fits[best].predict(X))


def test_frozen_encoder_trains_only_the_head(data):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    before = {k: v.clone() for k, v in encoder.network_.state_dict().items()}
    reg = _regressor(freeze_encoder=True, encoder=FrozenEstimator(encoder)).fit(X, y)
    assert reg.frozen_encoder_ and reg.network_[0] is encoder.network_
    for key, value in before.items():
        torch.testing.assert_close(encoder.network_.state_dict()[key], value)


def test_fine_tuning_changes_a_copy_of_the_encoder(data):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    reference = encoder.transform(X)
    reg = _regressor(encoder=FrozenEstimator(encoder)).fit(X, y)
    assert not reg.frozen_encoder_
    np.testing.assert_array_equal(encoder.transform(X), reference)
    tuned = reg.network_[0](torch.tensor(X, dtype=torch.float32)).numpy()
    assert not np.allclose(tuned, reference)


def test_an_encoder_fitted_once_is_reused_across_folds(data):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    reg = _regressor(encoder=FrozenEstimator(encoder))
    assert cross_val_score(reg, X, y, cv=3).mean() > 0.7


@pytest.mark.parametrize("make", [_regressor, _mlp], ids=["qmatch", "supervised"])
def test_a_fixed_validation_set_drives_early_stopping(data, make):
    X, y = data
    # float32: the validation loss is computed in training's precision, predict in float32
    reg = make(patience=3, max_epochs=200, precision="32-true").fit(
        X[TRAIN], y[TRAIN], X_val=X[TEST], y_val=y[TEST])
    assert _rows_seen(reg.history_) == (300, 100)  # validation_fraction is ignored
    assert reg.n_epochs_ < 200
    assert reg.best_epoch_ == int(np.argmin(reg.history_[:, "valid_loss"])) + 1
    assert reg.n_epochs_ == reg.best_epoch_ + 3
    # the validation loss is the MSE of the standardised targets
    best = reg.history_[reg.best_epoch_ - 1, "valid_loss"]
    standardised = (reg.predict(X[TEST]) - y[TEST]) / reg.target_scale_[0]
    assert best == pytest.approx(np.mean(standardised**2), rel=1e-3)


REGRESSORS = {
    "fine-tuned": lambda: _regressor(max_epochs=5, validation_fraction=None),
    "frozen": lambda: _regressor(freeze_encoder=True, max_epochs=5, validation_fraction=None),
    "auto, ridge head": lambda: _regressor(freeze_encoder="auto", validation_fraction=None),
    "supervised MLP": lambda: _mlp(max_epochs=5, validation_fraction=None),
}


@pytest.mark.parametrize("case", list(REGRESSORS))
@pytest.mark.parametrize("outputs", [1, 2])
def test_round_trips_give_identical_predictions(data, case, outputs, tmp_path):
    X, y = data
    y = np.where(np.arange(len(y)) % 3 == 0, np.nan, y)
    if outputs == 2:
        y = np.c_[y, 2 * y]
    reg = REGRESSORS[case]().fit(X, y)
    expected = reg.predict(X)
    joblib.dump(reg, tmp_path / "model.joblib")
    save(reg, tmp_path / "model.safetensors")
    restored = {
        "pickle": pickle.loads(pickle.dumps(reg)),
        "joblib": joblib.load(tmp_path / "model.joblib"),
        "save/load": load(tmp_path / "model.safetensors"),
    }
    for how, other in restored.items():
        assert type(other) is type(reg), how
        np.testing.assert_array_equal(other.predict(X), expected, err_msg=how)
        assert other.predict(X).shape == expected.shape, how
        np.testing.assert_array_equal(other.target_mean_, reg.target_mean_, err_msg=how)
        np.testing.assert_array_equal(other.target_scale_, reg.target_scale_, err_msg=how)
        assert other.n_outputs_ == reg.n_outputs_, how
        assert other.get_params().keys() == reg.get_params().keys(), how
        if case != "supervised MLP" and reg.frozen_encoder_:
            assert other.network_[0] is other.encoder_.network_, how


@pytest.mark.parametrize("make", [_regressor, _mlp], ids=["qmatch", "supervised"])
def test_missing_values_in_X(data, make):
    X, y = data
    rng = np.random.default_rng(1)
    X_nan = np.where(rng.random(X.shape) < 0.1, np.nan, X)
    reg = make().fit(X_nan[TRAIN], y[TRAIN])
    features = reg.encoder_.missing_features_ if hasattr(reg, "encoder_") else (
        reg.missing_features_)
    np.testing.assert_array_equal(features, np.arange(10))
    prediction = reg.predict(X_nan[TEST])
    assert np.isfinite(prediction).all()
    assert reg.score(X_nan[TEST], y[TEST]) > 0.5
    with pytest.warns(UserWarning, match="X has missing values"):
        assert np.isfinite(make().fit(X[TRAIN], y[TRAIN]).predict(X_nan[TEST])).all()


def test_sparse_X_predicts_as_dense(data):
    X, y = data
    X_sparse = np.where(np.abs(X) < 0.5, 0.0, X)
    dense = _mlp(max_epochs=5).fit(X_sparse, y)
    sparse = _mlp(max_epochs=5).fit(sp.csr_matrix(X_sparse), y)
    np.testing.assert_allclose(sparse.predict(sp.csr_matrix(X_sparse)), dense.predict(X_sparse),
                               rtol=1e-5, atol=1e-5)


def test_errors_name_the_problem(data):
    X, y = data
    with pytest.raises(ValueError, match="at least 2 labeled rows"):
        _regressor().fit(X, np.full(len(y), np.nan))
    with pytest.raises(ValueError, match="requires y to be passed"):
        _regressor().fit(X, None)
    with pytest.raises(ValueError, match="y_val has 1 target"):
        _regressor().fit(X, np.c_[y, y], X_val=X[:5], y_val=y[:5])
    with pytest.raises(ValueError, match=r"'scoring' .*'loss'"):
        _regressor(scoring="accuracy").fit(X, y)
