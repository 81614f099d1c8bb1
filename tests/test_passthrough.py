"""``passthrough=True``: the input features beside the embedding, in ``transform`` and in
the head of a ``QMatchClassifier`` built on such an encoder."""

import importlib.util
import warnings
from contextlib import nullcontext

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.datasets import load_wine
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import qmatch_sklearn
from qmatch_sklearn import METHODS, QMatchClassifier, QMatchEncoder
from qmatch_sklearn._base import BALANCE_ROWS, balance_rows
from qmatch_sklearn._passthrough import balanced, column_variances, embedding_balance

from .conftest import tiny_encoder_params, tiny_method_params


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32), y


@pytest.mark.parametrize("name", sorted(METHODS))
def test_transform_puts_the_input_before_the_embedding(name, wine):
    X, _ = wine
    params = tiny_method_params(name, max_epochs=1)
    plain = METHODS[name](**params).fit(X)
    both = METHODS[name](passthrough=True, **params).fit(X)
    Z = both.transform(X)
    assert Z.shape == (len(X), X.shape[1] + plain.embedding_dim)
    assert Z.dtype == np.float32
    # the input in the network's units: each column standardised over the fit rows
    inputs = (X - X.mean(0)) / X.std(0)
    np.testing.assert_allclose(Z[:, : X.shape[1]], inputs, atol=1e-5)
    # the embedding, standardised over the fit rows and scaled to the input's total variance
    embedding = plain.transform(X)
    np.testing.assert_allclose(
        Z[:, X.shape[1] :], (embedding - embedding.mean(0)) / embedding.std(0)
        * np.sqrt(inputs.var(0).sum() / plain.embedding_dim), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(Z[:, X.shape[1] :].var(0).sum(), X.shape[1], rtol=1e-3)


def test_sparse_input_gives_sparse_output(wine):
    X, _ = wine
    X_sparse = sp.csr_matrix(X)
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1)).fit(X_sparse)
    Z = encoder.transform(X_sparse)
    assert sp.issparse(Z) and Z.format == "csr" and Z.dtype == np.float32
    np.testing.assert_allclose(Z.toarray(), encoder.transform(X))


def test_feature_names_are_the_input_names_then_the_embedding_names(wine):
    X, _ = wine
    columns = [f"c{i}" for i in range(X.shape[1])]
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1))
    encoder.fit(pd.DataFrame(X, columns=columns))
    names = encoder.get_feature_names_out()
    assert list(names[: X.shape[1]]) == columns
    assert list(names[X.shape[1] :]) == [f"qmatchencoder{i}" for i in range(encoder.embedding_dim)]
    assert len(names) == encoder.transform(pd.DataFrame(X, columns=columns)).shape[1]
    with pytest.raises(ValueError, match="input_features"):
        encoder.get_feature_names_out(["wrong"] * X.shape[1])


def _clashing_tables():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    color = pd.Series(rng.choice(["red", "blue"], size=200)).astype("category")
    gappy = np.where(x > 0.5, np.nan, rng.normal(size=200))  # missing where x is large
    return {
        "a number named like a category's column": (
            pd.DataFrame({"color": color, "color_red": x}), "'color_red'"),
        "a number named like an embedding column": (
            pd.DataFrame({"qmatchencoder0": x, "y": -x}), "'qmatchencoder0'"),
        "a number named like a missing-value indicator": (
            pd.DataFrame({"x": gappy, "missingindicator_x": x}), "'missingindicator_x'"),
    }


@pytest.mark.parametrize("case", sorted(_clashing_tables()))
def test_output_names_that_clash_are_refused_by_name(case):
    """Output columns named alike would make a DataFrame with a duplicated column
    (which scikit-learn's estimators refuse) or fail in polars: refused, naming the
    name, where the names are asked for; a NumPy output and an ONNX export, which
    need no names, are unaffected."""
    X, name = _clashing_tables()[case]
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1))
    with pytest.warns(UserWarning) if X.isna().any().any() else nullcontext():
        Z = encoder.fit(X).transform(X)
    assert Z.shape == (len(X), encoder._output_width())
    if importlib.util.find_spec("onnxruntime"):
        qmatch_sklearn.to_onnx(encoder, X.iloc[:20])  # its parity check runs
    with pytest.raises(ValueError, match=rf"name two output columns alike: {name}"):
        encoder.get_feature_names_out()
    with pytest.raises(ValueError, match="rename the input columns"):
        encoder.set_output(transform="pandas").transform(X)


def test_input_feature_names_need_not_be_strings(wine):
    X, _ = wine
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1)).fit(X)
    names = encoder.get_feature_names_out(list(range(X.shape[1])))
    assert list(names[: X.shape[1]]) == list(range(X.shape[1]))


def test_a_second_passthrough_encoder_in_a_pipeline_is_told_to_drop_passthrough(wine):
    X, _ = wine
    pipe = make_pipeline(
        QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1)),
        QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1)),
    ).set_output(transform="pandas")
    # the second one is refused before it trains: its DataFrame output would repeat names
    with pytest.raises(ValueError, match=r"'qmatchencoder0'.*give it passthrough=False"):
        pipe.fit(pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])]))
    assert not hasattr(pipe[-1], "n_epochs_")
    pipe.set_output(transform="default").fit(X)  # an array output names nothing
    with pytest.raises(ValueError, match=r"'qmatchencoder0'.*give it passthrough=False"):
        pipe.get_feature_names_out()


def test_a_name_clash_is_refused_before_training_when_the_output_is_a_frame():
    """A categorical column's one-hot name clashing with another column ('s' = 'a' beside a
    column 's_a') is refused before training where the output is a DataFrame."""
    frame = pd.DataFrame({"s": ["a", "b"] * 30, "s_a": np.linspace(0.0, 1.0, 60)})
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1))
    with pytest.raises(ValueError, match=r"would name two output columns alike: 's_a'"):
        encoder.set_output(transform="pandas").fit(frame)
    assert not hasattr(encoder, "n_epochs_")
    assert encoder.set_output(transform="default").fit(frame).transform(frame).shape[1] == 11
    # scikit-learn's global output setting leaves a classifier, which reads its encoder's
    # arrays, fitting as before
    y = np.where(np.arange(60) % 4 == 0, np.arange(60) // 4 % 2, -1)
    with sklearn.config_context(transform_output="pandas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        QMatchClassifier(QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1)),
                         random_state=0).fit(frame, y)


def test_feature_names_follow_the_fitted_embedding_not_a_later_parameter():
    X = np.random.default_rng(0).normal(size=(40, 3))
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=1)).fit(X)
    width = encoder.transform(X).shape[1]
    encoder.set_params(embedding_dim=encoder.embedding_dim + 2)
    assert len(encoder.get_feature_names_out()) == width
    assert encoder.set_output(transform="pandas").transform(X).shape[1] == width


@pytest.mark.parametrize(
    ("freeze_encoder", "validation_fraction", "frozen"),
    [("auto", "auto", True), (True, 0.3, True), (False, 0.3, False)],
)
def test_the_classifier_head_sees_the_input_and_survives_saving(
    freeze_encoder, validation_fraction, frozen, wine, tmp_path
):
    X, y = wine
    y_partly = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=2))
    classifier = QMatchClassifier(
        encoder, freeze_encoder=freeze_encoder, validation_fraction=validation_fraction,
        max_epochs=3, random_state=0, device="cpu",
    ).fit(X, y_partly)
    head = classifier.network_[1]
    assert head.in_features == X.shape[1] + encoder.embedding_dim
    assert classifier.frozen_encoder_ is frozen
    proba = classifier.predict_proba(X)
    assert np.isfinite(proba).all()
    path = tmp_path / "classifier.qmatch"
    qmatch_sklearn.save(classifier, path)
    np.testing.assert_array_equal(qmatch_sklearn.load(path).predict_proba(X), proba)


def test_the_balance_keeps_constant_columns_and_sparse_variances():
    Z = np.c_[np.arange(6.0), np.full(6, 3.0)]
    X = np.c_[np.arange(6.0), np.zeros(6)]
    mean, scale = embedding_balance(X, Z)
    out = balanced(Z, mean, scale)
    assert np.isfinite(out).all() and np.allclose(out[:, 1], 0)
    # each non-constant column carries 1 / embedding_dim of the input block's variance
    np.testing.assert_allclose(out[:, 0].var(), X.var(axis=0).sum() / 2, rtol=1e-6)
    np.testing.assert_allclose(column_variances(sp.csr_matrix(X)), X.var(axis=0))


def test_the_balance_of_many_rows_comes_from_a_sample_within_its_standard_error():
    """Past BALANCE_ROWS rows the balance is estimated on a random sample of them:
    close to the balance over every row, and from the same rows in fit and in
    partial_fit (a fixed seed: also the same in every data-parallel process)."""
    rng = np.random.RandomState(0)
    X = (rng.normal(size=(3 * BALANCE_ROWS, 6)) * [1, 2, 3, 4, 5, 6]).astype(np.float32)
    params = tiny_encoder_params(max_epochs=1, passthrough=True)
    encoder = QMatchEncoder(**params).fit(X)
    Z = encoder.set_params(passthrough=False).transform(X)
    inputs = (X - encoder.center_) / encoder.scale_  # the rows in the network's units
    mean, scale = embedding_balance(inputs, Z)
    # one standard error is 1/sqrt(2 n) = 0.8% of a scale, 1/sqrt(n) = 1.1% of a
    # column's deviation for its mean: allow 5
    np.testing.assert_allclose(encoder.embedding_scale_, scale, rtol=0.04)
    np.testing.assert_array_less(np.abs(encoder.embedding_mean_ - mean), 0.055 * Z.std(axis=0))
    again = QMatchEncoder(**params).fit(X)
    np.testing.assert_array_equal(again.embedding_scale_, encoder.embedding_scale_)
    rows = balance_rows(len(X))
    assert len(np.unique(rows)) == BALANCE_ROWS and np.all(np.diff(rows) > 0)
    chunked = QMatchEncoder(**params).partial_fit(X)
    mean = chunked.embedding_mean_
    Z = chunked.set_params(passthrough=False).transform(X[rows])
    np.testing.assert_allclose(mean, embedding_balance(inputs[rows], Z)[0], rtol=1e-5,
                               atol=1e-6)


def test_a_frozen_logistic_head_on_both_matches_logistic_regression_on_transform(wine):
    """Without validation the head's network part is logistic regression on what
    ``transform`` returns (a boosted member may join it: ``test_boosting.py``)."""
    X, y = wine
    y_partly = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    encoder = QMatchEncoder(passthrough=True, **tiny_encoder_params(max_epochs=2))
    classifier = QMatchClassifier(encoder, random_state=0, device="cpu").fit(X, y_partly)
    features = classifier.encoder_.transform(X)
    head = classifier.network_[1]
    logits = features @ head.weight.detach().numpy().T + head.bias.detach().numpy()
    np.testing.assert_allclose(classifier._network_outputs(X), logits, rtol=1e-4, atol=1e-4)


def test_an_encoder_fitted_without_passthrough_keeps_no_balance_and_says_so(wine):
    """The balance costs a forward pass over up to 8,192 rows, so only a
    ``passthrough=True`` fit computes it; switching passthrough on afterwards is an
    error that names the fix, in ``transform`` and in a classifier built on it, and a
    refit without passthrough drops the balance of an earlier one."""
    X, y = wine
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=1)).fit(X)
    assert not hasattr(encoder, "embedding_mean_")
    assert not hasattr(encoder, "embedding_scale_")
    encoder.set_params(passthrough=True)
    with pytest.raises(ValueError, match=r"fitted with passthrough=False.*passthrough=True"):
        encoder.transform(X)
    with pytest.raises(ValueError, match="fitted with passthrough=False"):
        encoder.get_feature_names_out()
    y_partly = np.where(np.arange(len(y)) % 3 == 0, y, -1)
    frozen = QMatchClassifier(FrozenEstimator(encoder), random_state=0, device="cpu")
    with pytest.raises(ValueError, match="fitted with passthrough=False"):
        frozen.fit(X, y_partly)
    encoder.fit(X)  # passthrough=True now: the balance is there
    assert encoder.transform(X).shape == (len(X), X.shape[1] + encoder.embedding_dim)
    encoder.set_params(passthrough=False).fit(X)
    assert not hasattr(encoder, "embedding_mean_")
