"""``passthrough=True``: the input features beside the embedding, in ``transform`` and in
the head of a ``QMatchClassifier`` built on such an encoder."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import qmatch_sklearn
from qmatch_sklearn import METHODS, QMatchClassifier, QMatchEncoder
from qmatch_sklearn._passthrough import ColumnMoments, balanced, embedding_balance

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
    np.testing.assert_array_equal(Z[:, : X.shape[1]], X)
    # the embedding, standardised over the fit rows and scaled to the input's total variance
    embedding = plain.transform(X)
    np.testing.assert_allclose(
        Z[:, X.shape[1] :], (embedding - embedding.mean(0)) / embedding.std(0)
        * np.sqrt(X.var(0).sum() / plain.embedding_dim), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(Z[:, X.shape[1] :].var(0).sum(), X.var(0).sum(), rtol=1e-3)


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
    mean, scale = embedding_balance([(X[:4], Z[:4]), (X[4:], Z[4:])])  # in row blocks
    out = balanced(Z, mean, scale)
    assert np.isfinite(out).all() and np.allclose(out[:, 1], 0)
    sparse, dense = ColumnMoments(), ColumnMoments()
    sparse.add(sp.csr_matrix(X))
    dense.add(X)
    np.testing.assert_allclose(sparse.variance, dense.variance)
    np.testing.assert_allclose(dense.variance, X.var(0))


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
