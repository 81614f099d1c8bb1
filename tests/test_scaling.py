"""Results that do not depend on the units of a numeric column (``_table.py``, the numeric map)."""

import warnings
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split

import qmatch_sklearn
from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor, _table
from qmatch_sklearn._networks import InputScale
from qmatch_sklearn._table import (
    MAX_DEVIATION,
    SCAN_ROWS,
    apply_scaling,
    fit_scaling,
    input_statistics,
    mean_and_std,
)

from .conftest import tiny_encoder_params

WINE = load_wine().data

#: The units the issue names: factors a in [1e-3, 1e5], offsets b in [-1e4, 1e4].
factors = st.floats(1e-3, 1e5)
offsets = st.floats(-1e4, 1e4)


def units(n_columns):
    return st.tuples(st.lists(factors, min_size=n_columns, max_size=n_columns),
                     st.lists(offsets, min_size=n_columns, max_size=n_columns))


@settings(max_examples=60, deadline=None)
@given(ab=units(WINE.shape[1]), missing=st.floats(0.0, 0.3), seed=st.integers(0, 2**16))
def test_the_network_input_does_not_depend_on_the_units(ab, missing, seed):
    a, b = map(np.asarray, ab)
    X = WINE.copy()
    X[np.random.default_rng(seed).random(X.shape) < missing] = np.nan
    X[0] = WINE[0]  # every column keeps an observed value
    reference = apply_scaling(X, *fit_scaling(X))
    rescaled = a * X + b
    mapped = apply_scaling(rescaled, *fit_scaling(rescaled))
    np.testing.assert_array_equal(np.isnan(mapped), np.isnan(X))
    np.testing.assert_allclose(mapped, reference, atol=1e-4, equal_nan=True)
    # standardised over the observed entries
    np.testing.assert_allclose(np.nanmean(mapped, axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(np.nanstd(mapped, axis=0), 1.0, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(exponent=st.integers(-300, 300), sparse=st.booleans(), seed=st.integers(0, 2**16))
def test_columns_in_extreme_units_are_standardised(exponent, sparse, seed):
    """Units of 1e-300 to 1e300: deviations whose squares overflowed (from
    ~1e154) or vanished (below ~1e-154) gave the column an infinite scale or
    none (it read as zeros, or unscaled); they are squared divided by a power
    of two above the column's largest value."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3)) * (rng.random((60, 3)) < 0.6)
    X[:3] = np.eye(3)  # every column has three values or more
    rows = sp.csr_matrix if sparse else np.asarray
    reference = fit_scaling(rows(X))
    center, scale = fit_scaling(rows(X * 10.0**exponent))
    np.testing.assert_allclose(scale / 10.0**exponent, reference[1], rtol=1e-12)
    np.testing.assert_allclose(center / 10.0**exponent, reference[0], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("case", ["a range beyond float64", "a sum beyond float64",
                                  "two values beyond float64's range"])
def test_columns_near_float64_s_largest_get_a_finite_map_that_saves(case, tmp_path):
    """Finite values near float64's largest: a range (high - low) or a column sum
    that overflows gave an infinite scale (the column read as 0, and load refused
    the saved file) or an infinite center (every value NaN, refused as "all NaN");
    the mean is summed again in units of a power of two, and a range beyond
    float64 is no scale: the standard deviation is."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    if case == "a range beyond float64":
        X[:2, 0] = -1e308, 1e308
    elif case == "a sum beyond float64":
        X[:, 0] = rng.uniform(0.5, 1.5, 100) * 1e308
    else:
        X[:, 0] = np.where(np.arange(100) < 50, 1.5e308, -1.5e308)
    center, scale = fit_scaling(X)
    assert np.isfinite(center).all() and np.isfinite(scale).all() and (scale > 0).all()
    for columns_first in (np.asfortranarray(X), pd.DataFrame(X)):  # summed pairwise there
        got_center, got_scale = fit_scaling(np.asarray(columns_first))
        # the same map up to rounding, which at 1e308 cancels differently by order
        np.testing.assert_allclose(got_center, center, rtol=0, atol=1e-9 * scale.max())
        np.testing.assert_allclose(got_scale, scale, rtol=1e-9)
    mapped = apply_scaling(X, center, scale)
    assert np.isfinite(mapped).all() and np.unique(mapped[:, 0]).size > 1
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    qmatch_sklearn.save(encoder, tmp_path / "encoder.safetensors")
    loaded = qmatch_sklearn.load(tmp_path / "encoder.safetensors")
    np.testing.assert_array_equal(loaded.transform(X), encoder.transform(X))


@settings(max_examples=40, deadline=None)
@given(a=factors, b=offsets, low=st.floats(-50, 50), gap=st.floats(0.1, 50),
       seed=st.integers(0, 2**16))
def test_a_two_valued_column_becomes_0_1_and_a_constant_one_0(a, b, low, gap, seed):
    rng = np.random.default_rng(seed)
    flags = rng.integers(0, 2, 40)
    flags[:2] = (0, 1)
    X = np.column_stack([a * (low + gap * flags) + b, np.full(40, b)])
    mapped = apply_scaling(X, *fit_scaling(X))
    np.testing.assert_allclose(mapped[:, 0], flags, atol=1e-5)
    np.testing.assert_array_equal(mapped[:, 1], 0.0)
    zero_one = flags[:, None].astype(float)
    np.testing.assert_array_equal(apply_scaling(zero_one, *fit_scaling(zero_one)), zero_one)


@settings(max_examples=40, deadline=None)
@given(a=st.lists(factors, min_size=6, max_size=6), seed=st.integers(0, 2**16))
def test_sparse_columns_are_scaled_not_centred_and_stay_sparse(a, seed):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(50, 6)) * (rng.random((50, 6)) < 0.3)
    dense[:, 5] = 3.0 * (rng.random(50) < 0.5)  # a two-valued column with implicit zeros
    dense[:2, 5] = (0.0, 3.0)
    X = sp.csr_matrix(dense * np.asarray(a))
    center, scale = fit_scaling(X)
    mapped = apply_scaling(X, center, scale)
    assert sp.issparse(mapped) and mapped.dtype == np.float32 and mapped.nnz == X.nnz
    np.testing.assert_array_equal(center, 0.0)
    reference = apply_scaling(sp.csr_matrix(dense), *fit_scaling(sp.csr_matrix(dense)))
    np.testing.assert_allclose(mapped.toarray(), reference.toarray(), atol=1e-5)
    np.testing.assert_allclose(mapped.toarray()[:, :5].std(axis=0), 1.0, atol=1e-5)
    np.testing.assert_array_equal(np.unique(mapped.toarray()[:, 5]), [0.0, 1.0])


def test_sparse_rows_read_by_a_map_fitted_on_dense_rows_are_centred():
    """Fitted on dense rows, the map centres the same rows given as CSR: they
    become the dense rows' network input (a classifier with boosted trees
    predicted on them differently, by up to 0.48 in probability)."""
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(40, 3)) * (rng.random((40, 3)) < 0.5) + 2.0
    center, scale = fit_scaling(dense)
    np.testing.assert_array_equal(apply_scaling(sp.csr_matrix(dense), center, scale),
                                  apply_scaling(dense, center, scale))


def test_sparse_statistics_equal_the_dense_ones():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(200, 4)) * (rng.random((200, 4)) < 0.4)
    dense[rng.random((200, 4)) < 0.1] = np.nan
    _, scale = fit_scaling(sp.csr_matrix(dense))
    np.testing.assert_allclose(scale, np.nanstd(np.where(dense == 0, 0, dense), axis=0))


@settings(max_examples=30, deadline=None)
@given(a=factors, b=offsets, n_rows=st.integers(20, 3000), bright=st.floats(1.0, 255.0),
       seed=st.integers(0, 2**16))
def test_no_mapped_value_exceeds_the_bound_at_fit_or_later(a, b, n_rows, bright, seed):
    """A column 0 in every row but one (a pixel, a rare indicator with a third
    value), a heavy-tailed one and a constant one: every fit row maps within
    MAX_DEVIATION, and so does every row given later, the constant column's new
    values included (0: nothing was learned about them)."""
    rng = np.random.default_rng(seed)
    rare = np.zeros(n_rows)
    rare[0], rare[1] = bright, bright / 2
    X = a * np.column_stack([rare, rng.standard_cauchy(n_rows), np.ones(n_rows)]) + b
    center, scale = fit_scaling(X)
    assert np.abs(apply_scaling(X, center, scale)).max() <= MAX_DEVIATION
    later = a * np.array([[1e6, -1e9, 5.0], [-3e3, 1e12, -1.0]]) + b
    mapped = apply_scaling(later, center, scale)
    assert np.abs(mapped).max() <= MAX_DEVIATION
    np.testing.assert_array_equal(mapped[:, 2], 0.0)
    sparse = apply_scaling(sp.csr_matrix(later - b), *fit_scaling(sp.csr_matrix(X - b)))
    assert np.abs(sparse.toarray()).max() <= MAX_DEVIATION


def test_a_value_in_one_row_of_1000_stays_within_the_bound_in_the_network():
    """The issue's column, 1 in one row of 1,000: it reaches the encoder's first
    layer as the 0/1 column it is, at every pretraining step and at transform
    (a normalising batch norm put it at 22 standard deviations in a batch of
    512, and at thousands in eval mode), and a pixel-like column 0 in all rows
    but three, within MAX_DEVIATION; the first layer is a per-column scale of
    them, centred and bounded at InputScale.BOUND (the 0/1 column uncompressed)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 4))
    X[:, 0] = 0.0
    X[7, 0] = 1.0
    X[:, 1] = 0.0
    X[[3, 50, 900], 1] = (255.0, 30.0, 3.0)
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=2, batch_size=512,
                                                  validation_fraction=None))
    seen = []

    def record(module, inputs, output):
        if isinstance(module, InputScale):
            x = inputs[0].detach()
            seen.append((x.abs().amax(dim=0), x[:, 0]))
            bounded = torch.clamp((x - module.mean) * module.compression, -module.bound,
                                  module.bound)
            np.testing.assert_allclose(output.detach(), bounded * module.weight.detach(),
                                       rtol=1e-6)
            assert module.compression[0] == 1.0  # the 0/1 column enters as it is

    hook = torch.nn.modules.module.register_module_forward_hook(record)
    try:
        encoder.fit(X)
        encoder.transform(np.r_[X, [[1.0, 1e9, 0.0, 0.0]]])
    finally:
        hook.remove()
    assert len(seen) > 4  # student and teacher in every step, then transform
    for largest, rare in seen:
        assert largest.max() <= MAX_DEVIATION
        assert set(np.unique(rare.numpy())) <= {0.0, 1.0}


def test_the_input_layer_centres_on_the_fit_rows():
    X = sp.csr_matrix(np.abs(WINE) * (np.arange(WINE.shape[0]) % 3 == 0)[:, None])
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=1))
    encoder._validate_params()
    rows, _, module, *_ = encoder._start(X)
    expected = np.asarray(rows.mean(axis=0)).ravel()
    for layer in (module.encoder[0], module.teacher[0][0]):
        np.testing.assert_allclose(layer.mean.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_early_stopping_is_not_fooled_by_an_offset():
    # the table: with running statistics starting at 0/1 the offset made epoch 5
    # look best and stopped the run at epoch 37
    X, _ = make_classification(2000, 20, n_informative=10, random_state=0)
    params = tiny_encoder_params(max_epochs=30, patience=5, hidden_sizes=(64,))
    plain = QMatchEncoder(**params).fit(X)
    shifted = QMatchEncoder(**params).fit(X + 1000)
    assert shifted.best_epoch_ == plain.best_epoch_ > 5
    # the same run up to float32 rounding, which training amplifies a little
    Z = plain.transform(X)
    assert np.abs(shifted.transform(X + 1000) - Z).mean() < 0.05 * np.abs(Z).mean()


def _rescale(X, ab, columns):
    a, b = map(np.asarray, ab)
    X = X.copy()
    X[:, columns] = a[: len(columns)] * X[:, columns] + b[: len(columns)]
    return X


def _classifier_accuracy(X_train, y_train, X_test, y_test, seed):
    classifier = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(
        random_state=seed, passthrough=True, max_epochs=5)), random_state=seed)
    return accuracy_score(y_test, classifier.fit(X_train, y_train).predict(X_test))


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                        stratify=y)
    y_semi = np.where(np.random.default_rng(0).random(len(y_train)) < 0.1, y_train, -1)
    reference = _classifier_accuracy(X_train, y_semi, X_test, y_test, 0)
    spread = abs(reference - _classifier_accuracy(X_train, y_semi, X_test, y_test, 1))
    return X_train, y_semi, X_test, y_test, reference, max(spread, 2 / len(y_test))


@settings(max_examples=4, deadline=None)
@given(ab=units(30), columns=st.lists(st.integers(0, 29), min_size=1, max_size=30,
                                      unique=True))
def test_classifier_accuracy_does_not_depend_on_the_units(cancer, ab, columns):
    X_train, y_semi, X_test, y_test, reference, spread = cancer
    rescaled = _classifier_accuracy(_rescale(X_train, ab, columns), y_semi,
                                    _rescale(X_test, ab, columns), y_test, 0)
    assert abs(rescaled - reference) <= spread


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 400), columns=st.integers(1, 6), exponent=st.integers(-200, 200),
       two_valued=st.booleans(), seed=st.integers(0, 2**16))
def test_rows_without_nan_skip_the_masks_for_the_same_numbers(rows, columns, exponent,
                                                              two_valued, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, columns)) * 10.0**exponent
    if two_valued:
        X[:, 0] = rng.integers(0, 2, rows) * 7.5
    fast = fit_scaling(X), _table.observed_moments(X)
    with mock.patch.object(_table, "_observed", lambda block: ~np.isnan(block)):
        masked = fit_scaling(X), _table.observed_moments(X)
    for got, want in zip((*fast[0], *fast[1]), (*masked[0], *masked[1]), strict=True):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(2, 200), columns=st.integers(1, 3), exponent=st.floats(-8, 12),
       offset=st.floats(-1e9, 1e9), seed=st.integers(0, 2**16))
def test_mean_and_std_are_numpy_s_in_ordinary_units(rows, columns, exponent, offset, seed):
    values = np.random.default_rng(seed).normal(size=(rows, columns)) * 10.0**exponent + offset
    mean, std = mean_and_std(values)
    np.testing.assert_array_equal(mean, values.mean(axis=0))
    np.testing.assert_array_equal(std, values.std(axis=0))


@settings(max_examples=40, deadline=None)
@given(exponent=st.integers(-300, 300), seed=st.integers(0, 2**16))
def test_mean_and_std_neither_overflow_nor_underflow(exponent, seed):
    # numpy's std squares the deviations: 0 below ~1e-154, infinity beyond ~1e154
    # means away from 0, where a relative tolerance means something
    values = np.random.default_rng(seed).normal(size=(50, 2)) + np.array([-5.0, 3.0])
    mean, std = mean_and_std(values * 10.0**exponent)
    np.testing.assert_allclose(mean / 10.0**exponent, values.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(std / 10.0**exponent, values.std(axis=0), rtol=1e-12)


@settings(max_examples=4, deadline=None)
@given(exponent=st.sampled_from([-300, -200, -12, 12, 200, 300]))
def test_regression_targets_in_extreme_units_give_the_same_predictions(exponent):
    X, y = load_diabetes(return_X_y=True)
    y = np.where(np.arange(len(y)) % 5 == 0, (y - y.mean()) / y.std(), np.nan)

    def predict(targets):
        regressor = QMatchRegressor(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                    random_state=0)
        return regressor.fit(X, targets).predict(X)

    np.testing.assert_allclose(predict(y * 10.0**exponent) / 10.0**exponent, predict(y),
                               rtol=1e-6, atol=1e-9)
    # and score in any units: r2_score squared 1e200 targets to NaN
    labeled = ~np.isnan(y)
    fitted = QMatchRegressor(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                             random_state=0).fit(X, y * 10.0**exponent)
    score = fitted.score(X[labeled], y[labeled] * 10.0**exponent)
    assert np.isfinite(score)
    np.testing.assert_allclose(score, QMatchRegressor(
        QMatchEncoder(**tiny_encoder_params(passthrough=True)), random_state=0).fit(X, y).score(
        X[labeled], y[labeled]), rtol=1e-5, atol=1e-6)


@settings(max_examples=3, deadline=None)
@given(ab=units(10), columns=st.lists(st.integers(0, 9), min_size=1, max_size=10, unique=True))
def test_regressor_r2_does_not_depend_on_the_units(ab, columns):
    X, y = load_diabetes(return_X_y=True)
    X_train, X_test, y_train, y_test = X[:300], X[300:], y[:300], y[300:]

    def r2(X_train, X_test, seed=0):
        regressor = QMatchRegressor(QMatchEncoder(**tiny_encoder_params(
            random_state=seed, passthrough=True, max_epochs=5)), random_state=seed)
        return r2_score(y_test, regressor.fit(X_train, y_train).predict(X_test))

    spread = max(abs(r2(X_train, X_test) - r2(X_train, X_test, seed=1)), 0.01)
    assert abs(r2(_rescale(X_train, ab, columns), _rescale(X_test, ab, columns))
               - r2(X_train, X_test)) <= spread


@settings(max_examples=3, deadline=None)
@given(ab=units(13), columns=st.lists(st.integers(0, 12), min_size=1, max_size=13, unique=True))
def test_encoder_and_logistic_regression_do_not_depend_on_the_units(ab, columns):
    X, y = load_wine(return_X_y=True)
    encoder_params = tiny_encoder_params(passthrough=True, max_epochs=10, patience=4)

    def accuracy(X):
        encoder = QMatchEncoder(**encoder_params).fit(X)
        Z = encoder.transform(X)
        labeled = np.arange(len(y)) % 10 == 0
        model = LogisticRegression(max_iter=1000).fit(Z[labeled], y[labeled])
        return accuracy_score(y[~labeled], model.predict(Z[~labeled])), encoder.best_epoch_

    rescaled, best_epoch = accuracy(_rescale(X, ab, columns))
    reference, reference_epoch = accuracy(X)
    assert abs(rescaled - reference) <= 2 / len(y)
    # early stopping keeps the same kind of epoch: not one of the first, fooled by offsets
    assert best_epoch > 2 or reference_epoch <= 2


def test_a_raw_table_with_categories_and_missing_values_in_any_units():
    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.assign(color=pd.Categorical(np.where(X["color_intensity"] > 5, "dark", "light")))
    X.loc[::7, "alcohol"] = np.nan
    y_semi = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    in_cents = X.assign(proline=X["proline"] * 1e4 + 5e5, alcohol=X["alcohol"] * 1e-3 - 7)

    def fitted(X):
        return QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0).fit(X, y_semi)

    plain, rescaled = fitted(X), fitted(in_cents)
    np.testing.assert_allclose(rescaled.predict_proba(in_cents), plain.predict_proba(X),
                               atol=1e-3)
    assert plain.scale_[-1] == 1.0 and plain.center_[-1] == 0.0  # the categorical column


def test_the_logistic_head_converges_on_a_raw_table_with_large_units():
    X, y = load_wine(return_X_y=True)
    X = X * 1e5 + 1e4
    y_semi = np.where(np.arange(len(y)) % 8 == 0, y, -1)
    classifier = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                  random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        classifier.fit(X, y_semi)
    assert classifier.head_ == "logistic"
    assert classifier.embedding_weight_ > 1e-3


def test_unused_training_parameters_are_named_once_before_training():
    X, y = load_wine(return_X_y=True)
    y_semi = np.where(np.arange(len(y)) % 8 == 0, y, -1)
    classifier = QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), max_epochs=50,
                                  lr=0.01)
    with pytest.warns(UserWarning, match=r"lr=0\.01, max_epochs=50 not used") as record:
        classifier.fit(X, y_semi)
    assert len([w for w in record if "not used" in str(w.message)]) == 1
    assert classifier.head_ == "logistic"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        QMatchClassifier(QMatchEncoder(**tiny_encoder_params())).fit(X, y_semi)
    assert not [w for w in record if "not used" in str(w.message)]


def test_head_names_the_head_trained_with_adamw():
    X, y = load_wine(return_X_y=True)
    classifier = QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), freeze_encoder=False,
                                  max_epochs=2).fit(X, y)
    assert classifier.head_ == "fine-tuned"
    regressor = QMatchRegressor(QMatchEncoder(**tiny_encoder_params())).fit(X, y.astype(float))
    assert regressor.head_ == "ridge"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), n_rows=st.integers(2, 300), rare=st.integers(1, 5),
       dark=st.floats(0.5, 1.0))
def test_the_first_layer_bounds_columns_of_rare_values_only(seed, n_rows, rare, dark):
    """Compression at most 1; a column at one end of its range in more than half of
    the rows (a pixel dark in a share ``dark`` of them) within InputScale.BOUND of its
    standard deviations; a 0/1 column (rare or not) and a column spread over its
    range left as they are; the same statistics from CSR rows."""
    rng = np.random.default_rng(seed)
    pixel = np.where(rng.random(n_rows) < dark, 0.0, rng.uniform(1, 255, n_rows))
    X = np.c_[rng.normal(size=n_rows) * 10, np.zeros(n_rows), rng.integers(0, 2, n_rows),
              pixel].astype(np.float32)
    X[rng.choice(n_rows, min(rare, n_rows), replace=False), 1] = 1.0
    mean, compression = input_statistics(X)
    assert np.all(compression <= 1.0) and np.all(compression > 0.0)
    assert compression[0] == compression[1] == compression[2] == 1.0
    if 2 * (X[:, 3] == 0).sum() > n_rows:
        assert np.abs((X[:, 3] - mean[3]) * compression[3]).max() <= InputScale.BOUND * (1 + 1e-9)
    sparse_mean, sparse_compression = input_statistics(sp.csr_matrix(X))
    np.testing.assert_allclose(sparse_mean, mean, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse_compression, compression, rtol=1e-9)


def test_the_statistics_of_many_blocks_are_those_of_all_rows():
    rng = np.random.default_rng(0)
    n_rows = 2 * SCAN_ROWS + 5
    X = np.where(rng.random((n_rows, 3)) < 0.8, 0.0, rng.normal(size=(n_rows, 3)) ** 2)
    X = X.astype(np.float32)
    X[-1] = 40.0  # the last block holds the extreme
    mean, compression = input_statistics(X)
    np.testing.assert_allclose(mean, X.astype(np.float64).mean(axis=0), rtol=1e-9, atol=1e-12)
    spread = np.maximum(X.std(axis=0, dtype=np.float64), np.ptp(X, axis=0) / InputScale.BOUND)
    np.testing.assert_allclose(compression, 1 / spread, rtol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), n_rows=st.integers(2, 60), block=st.integers(1, 9))
def test_blocks_of_any_size_give_the_statistics_of_one_block(seed, n_rows, block):
    """One pass over the blocks: an extreme that a later block lowers (or raises)
    restarts the count of rows at it, an equal one adds to it, dense or CSR."""
    rng = np.random.default_rng(seed)
    X = rng.choice([0.0, 1.0, 2.0, 7.0], size=(n_rows, 4), p=[0.6, 0.2, 0.1, 0.1])
    X[:, 1] = -X[:, 1]  # its extreme is the low end
    X = X.astype(np.float32)
    whole = input_statistics(X)
    with mock.patch.object(_table, "SCAN_ROWS", block):
        for rows in (X, sp.csr_matrix(X)):
            for got, expected in zip(input_statistics(rows), whole, strict=True):
                np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
