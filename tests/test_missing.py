"""Missing values, natively (``_table.py``, ``_networks.MissingValues``): the input layer, the
losses that skip missing entries, and every estimator fitted and used on rows with NaN."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import qmatch_sklearn
from qmatch_sklearn import METHODS, QMatchClassifier, QMatchEncoder, SupervisedMLPClassifier
from qmatch_sklearn._table import fill_and_indicate, missing_values_layer
from qmatch_sklearn.methods.tabnet import tabnet_loss
from qmatch_sklearn.methods.vime import observed_mean_squares

from .conftest import tiny_encoder_params, tiny_method_params


def with_holes(X, rate, seed=0):
    """``X`` with a share ``rate`` of its entries set to NaN, the first column kept whole."""
    holes = np.random.RandomState(seed).rand(*X.shape) < rate
    holes[:, 0] = False
    return np.where(holes, np.nan, X).astype(np.float32)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32), y


finite = st.floats(-1e3, 1e3, width=32)
rows_with_holes = arrays(np.float32, st.tuples(st.integers(2, 12), st.integers(1, 5)),
                         elements=st.one_of(finite, st.just(np.nan)))


@settings(max_examples=60, deadline=None)
@given(rows_with_holes)
def test_the_layer_fills_with_observed_means_and_flags_missing_entries(X):
    if np.isnan(X).all(axis=0).any():
        with pytest.raises(ValueError, match="no observed value"):
            missing_values_layer(X)
        return
    layer = missing_values_layer(X)
    if not np.isnan(X).any():
        assert layer is None
        return
    isnan = np.isnan(X)
    np.testing.assert_allclose(layer.fill_values.numpy(), np.nanmean(X.astype(np.float64), axis=0),
                               rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(layer.missing_columns, np.flatnonzero(isnan.any(axis=0)))
    indicated = layer.indicated.numpy()
    assert set(indicated) <= set(layer.missing_columns)
    out = layer(torch.from_numpy(X)).numpy()
    np.testing.assert_array_equal(out[:, : X.shape[1]][~isnan], X[~isnan])
    np.testing.assert_array_equal(out[:, X.shape[1] :], isnan[:, indicated])
    assert np.isfinite(out).all()
    # transform's NumPy and SciPy versions give what the network receives
    np.testing.assert_array_equal(fill_and_indicate(X, layer), out)
    sparse = fill_and_indicate(sp.csr_matrix(np.where(isnan, np.nan, X)), layer)
    np.testing.assert_array_equal(sparse.toarray(), out)


def test_sparse_and_dense_rows_give_the_same_layer(wine):
    X = with_holes(wine[0], 0.2)
    dense, sparse = missing_values_layer(X), missing_values_layer(sp.csr_matrix(X))
    np.testing.assert_allclose(sparse.fill_values, dense.fill_values, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(sparse.indicated, dense.indicated)


@settings(max_examples=60, deadline=None)
@given(rows_with_holes, st.integers(0, 2**31 - 1))
def test_reconstruction_losses_score_observed_entries_only(x, seed):
    x = torch.from_numpy(x).double()
    prediction = torch.randn(x.shape, generator=torch.Generator().manual_seed(seed)).double()
    observed = ~torch.isnan(x)
    loss = observed_mean_squares(prediction, x)
    expected = ((prediction - x)[observed] ** 2).mean() if observed.any() else torch.tensor(0.0)
    torch.testing.assert_close(loss, expected.double())
    # what a missing entry's prediction is does not matter
    moved = prediction.where(observed, prediction + 100.0)
    torch.testing.assert_close(observed_mean_squares(moved, x), loss)
    mask = torch.ones_like(observed)
    torch.testing.assert_close(tabnet_loss(moved, x, mask), tabnet_loss(prediction, x, mask))


def test_without_missing_values_the_losses_are_the_usual_ones():
    generator = torch.Generator().manual_seed(0)
    x, prediction = torch.randn(16, 5, generator=generator), torch.randn(16, 5, generator=generator)
    mask = torch.rand(16, 5, generator=generator) < 0.3
    torch.testing.assert_close(observed_mean_squares(prediction, x),
                               torch.nn.functional.mse_loss(prediction, x))
    scale = x.std(dim=0, unbiased=False).clamp_min(1e-3)
    usual = (((prediction - x) / scale) ** 2 * mask).sum() / (mask.sum() + 1e-3)
    torch.testing.assert_close(tabnet_loss(prediction, x, mask), usual)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_trains_and_embeds_rows_with_missing_values(name, wine):
    X = with_holes(wine[0], 0.3)
    kept = X.copy()
    encoder = METHODS[name](**tiny_method_params(name, max_epochs=2)).fit(X)
    np.testing.assert_array_equal(X, kept)  # the user's array is not filled in place
    assert np.isfinite(encoder.history_[:, "train_loss"]).all()
    np.testing.assert_array_equal(encoder.missing_features_, np.arange(1, X.shape[1]))
    Z = encoder.transform(X)
    assert np.isfinite(Z).all()
    # a NaN in the column that had none at fit is filled (it has no indicator)
    X_new = X.copy()
    X_new[:5, 0] = np.nan
    assert np.isfinite(encoder.transform(X_new)).all()


def informative_holes(X, seed=0):
    """``X`` with column 1 missing where column 0 is high (missing at random given
    column 0), and 30% of columns 2-4 missing completely at random."""
    rng = np.random.RandomState(seed)
    X = X.copy()
    X[X[:, 0] > np.quantile(X[:, 0], 0.7), 1] = np.nan
    X[:, 2:5][rng.rand(len(X), 3) < 0.3] = np.nan
    return X.astype(np.float32)


def test_only_informative_missingness_gets_an_indicator(wine):
    X = informative_holes(wine[0])
    layer = missing_values_layer(X)
    np.testing.assert_array_equal(layer.missing_columns, [1, 2, 3, 4])
    np.testing.assert_array_equal(layer.indicated.numpy(), [1])
    # holes that come with other holes are informative too
    together = X.copy()
    together[np.isnan(X[:, 2]), 5] = np.nan
    np.testing.assert_array_equal(missing_values_layer(together).indicated.numpy(), [1, 2, 5])


def test_values_missing_completely_at_random_rarely_get_an_indicator():
    """Each column's test is at level 0.01 (Bonferroni over the columns it is compared
    with): over 60 tables of 19 columns missing completely at random, false indicators
    stay rare (a false correlation between two holes flags both)."""
    false = total = 0
    for seed in range(20):
        for rate in (0.1, 0.3, 0.6):
            rng = np.random.RandomState(seed)
            X = rng.normal(size=(400, 20))
            X[:, 1:][rng.rand(400, 19) < rate] = np.nan
            false += len(missing_values_layer(X).indicated)
            total += 19
    assert false <= 0.02 * total, (false, total)


def test_an_indicated_missing_entry_is_not_the_same_as_its_fill_value(wine):
    X = informative_holes(wine[0])
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    np.testing.assert_array_equal(encoder.missing_features_, [1, 2, 3, 4])
    np.testing.assert_array_equal(encoder.missing_indicators_, [1])
    # the fill values are in the network's units: back in X's
    fill_values = encoder.network_[0].fill_values.numpy() * encoder.scale_ + encoder.center_
    filled = np.where(np.isnan(X), fill_values, X)
    assert not np.allclose(encoder.transform(filled), encoder.transform(X))
    # an entry missing completely at random is its column's fill value
    random_filled = filled.copy()
    random_filled[:, 1] = X[:, 1]  # the informative holes stay
    np.testing.assert_allclose(encoder.transform(random_filled), encoder.transform(X), atol=1e-6)


@pytest.mark.parametrize(
    "classifier",
    [
        QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), random_state=0, device="cpu"),
        QMatchClassifier(QMatchEncoder(passthrough=True, **tiny_encoder_params()),
                         freeze_encoder=False, validation_fraction=0.3, max_epochs=3,
                         random_state=0, device="cpu"),
        SupervisedMLPClassifier(hidden_sizes=(16,), embedding_dim=8, max_epochs=3,
                                validation_fraction=0.3, random_state=0, device="cpu"),
    ],
    ids=["qmatch-logistic", "qmatch-passthrough-fine-tuned", "supervised-mlp"],
)
def test_classifiers_fit_predict_and_save_with_missing_values(classifier, wine, tmp_path):
    X, y = wine
    X = with_holes(X, 0.3)
    if isinstance(classifier, QMatchClassifier):
        y = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    classifier.fit(X, y)
    proba = classifier.predict_proba(X)
    assert np.isfinite(proba).all()
    path = tmp_path / "classifier.qmatch"
    qmatch_sklearn.save(classifier, path)
    np.testing.assert_array_equal(qmatch_sklearn.load(path).predict_proba(X), proba)


def test_a_classifier_fitted_without_missing_values_reads_them_as_the_column_mean(wine):
    X, y = wine
    classifier = SupervisedMLPClassifier(hidden_sizes=(16,), embedding_dim=8, max_epochs=2,
                                         random_state=0, device="cpu").fit(X, y)
    assert len(classifier.missing_features_) == 0
    holes = with_holes(X, 0.1)
    given = holes.copy()
    with pytest.warns(UserWarning, match=r"missing values \(NaN\) in column\(s\) \[1, 2,"):
        proba = classifier.predict_proba(holes)
    np.testing.assert_array_equal(holes, given)  # the caller's rows are left as they were
    filled = np.where(np.isnan(holes), classifier.center_, holes)
    np.testing.assert_array_equal(proba, classifier.predict_proba(filled))
    with pytest.raises(ValueError, match=r"X has missing values.*SimpleImputer"):
        clone(classifier).fit(X, y, X_val=holes[:20], y_val=y[:20])  # more rows to train on


def test_a_raw_table_without_missing_values_at_fit_predicts_rows_with_them():
    """The raw-DataFrame path: a column with NaN only at predict is read as its fit
    mean (a standardised column) or its lower value (a two-valued one); a missing
    category is a block of zeros, as ever. Column names are given in the warning."""
    rng = np.random.default_rng(0)
    n = 240
    frame = pd.DataFrame({
        "income": rng.normal(5e4, 1e4, n),
        "owner": rng.choice([1.0, 2.0], n),
        "region": pd.Categorical(rng.choice(["north", "south"], n)),
    })
    y = np.where(frame["income"] > 5e4, 1, 0)
    y_semi = np.where(np.arange(n) % 4 == 0, y, -1)
    classifier = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(), passthrough=True),
                                  random_state=0, device="cpu").fit(frame, y_semi)
    holes = frame.iloc[:6].copy()
    holes.loc[[0, 3], "income"] = np.nan
    holes.loc[[1], "owner"] = np.nan
    holes.loc[[2], "region"] = np.nan
    with pytest.warns(UserWarning, match=r"column\(s\) \['income', 'owner'\]"):
        proba = classifier.predict_proba(holes)
    assert np.isfinite(proba).all()
    filled = holes.copy()
    filled["income"] = filled["income"].fillna(frame["income"].mean())
    filled["owner"] = filled["owner"].fillna(1.0)
    np.testing.assert_allclose(classifier.predict_proba(filled), proba, rtol=1e-5, atol=1e-6)


def test_an_encoder_fitted_without_missing_values_fills_them_in_sparse_rows_too(wine):
    X, _ = wine
    encoder = QMatchEncoder(**tiny_encoder_params(), passthrough=True).fit(X)
    holes = sp.csr_matrix(with_holes(X, 0.1))
    with pytest.warns(UserWarning, match="read as the column's mean"):
        Z = encoder.transform(holes)
    filled = np.where(np.isnan(holes.toarray()), encoder.center_, holes.toarray())
    expected = encoder.transform(sp.csr_matrix(filled))
    # fitted on dense rows, the encoder centres sparse ones: dense out, as they were
    np.testing.assert_allclose(Z, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(Z, encoder.transform(filled), rtol=1e-6, atol=1e-6)
    assert np.isnan(holes.data).any()  # the caller's matrix is left as it was


@pytest.mark.parametrize("freeze_encoder", ["auto", False])
def test_a_frozen_encoder_without_missing_values_reads_the_fit_rows_nan_as_predict_does(
        wine, freeze_encoder):
    """A classifier around a FrozenEstimator encoder fitted without NaN reads the NaN of
    its own fit rows as predict reads them (the column's center, with a warning), not
    as values for a network with no input for them; rows without NaN fit as before."""
    from sklearn.frozen import FrozenEstimator

    X, y = wine
    encoder = QMatchEncoder(**tiny_encoder_params(passthrough=True)).fit(X)
    holes = with_holes(X, 0.1)
    filled = np.where(np.isnan(holes), encoder.center_, holes)
    y_semi = np.where(np.arange(len(y)) % 3 == 0, y, -1)

    def fit(rows):
        return QMatchClassifier(FrozenEstimator(encoder), freeze_encoder=freeze_encoder,
                                max_epochs=3, device="cpu", random_state=0).fit(rows, y_semi)

    with pytest.warns(UserWarning, match=r"missing values \(NaN\) in column\(s\) \[1, 2,"):
        from_holes = fit(holes)
    np.testing.assert_array_equal(from_holes.predict_proba(filled),
                                  fit(filled).predict_proba(filled))


def test_a_frozen_encoder_with_missing_values_takes_a_validation_set_with_them(wine):
    from sklearn.frozen import FrozenEstimator

    X, y = wine
    holes = with_holes(X, 0.1)
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(holes)  # its network reads NaN
    classifier = QMatchClassifier(FrozenEstimator(encoder), freeze_encoder=True, max_epochs=2,
                                  device="cpu", random_state=0)
    classifier.fit(X, y, X_val=holes[:30], y_val=y[:30])  # X itself has none
    assert np.isfinite(classifier.predict_proba(holes)).all()


def test_a_frozen_encoder_without_missing_values_reads_a_validation_set_s_nan_as_x_s(wine):
    from sklearn.frozen import FrozenEstimator

    X, y = wine
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)  # its network reads no NaN
    holes = with_holes(X, 0.1)
    filled = np.where(np.isnan(holes), encoder.center_, holes)

    def fit(X_val):
        return QMatchClassifier(FrozenEstimator(encoder), freeze_encoder=True, max_epochs=3,
                                device="cpu", random_state=0).fit(
            holes, y, X_val=X_val, y_val=y[:30]).predict_proba(X)

    with pytest.warns(UserWarning, match="X_val has missing values"):  # named as X_val
        proba = fit(holes[:30])
    np.testing.assert_array_equal(proba, fit(filled[:30]))
