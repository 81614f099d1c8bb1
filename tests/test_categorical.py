"""Categorical columns, natively (``categorical_features``, ``_table.py``)."""

import io
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import OneHotEncoder

import qmatch_sklearn
from qmatch_sklearn import (
    METHODS,
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
)
from qmatch_sklearn._corruption import vime_corruption, zero_corruption
from qmatch_sklearn._table import expand_groups, input_widths

TINY = dict(hidden_sizes=(16,), embedding_dim=4, max_epochs=2, batch_size=32, random_state=0)


def table(n=120, seed=0):
    """Numbers, a category column with a NaN, a string column with None, a bool column."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "x1": rng.normal(size=n),
        "colour": pd.Categorical(rng.choice(["red", "green", "blue"], n),
                                 categories=["blue", "green", "red", "violet"]),
        "x2": rng.normal(size=n),
        "town": rng.choice(["Oslo", "Rome", "Lima"], n).astype(object),
        "flag": rng.random(n) < 0.5,
    })
    X.loc[3, "colour"] = np.nan
    X.loc[5, "town"] = None
    y = (X["colour"] == "red").to_numpy().astype(int)
    return X, y


def one_hot_reference(X):
    """The network input the encoder should build, from scikit-learn's OneHotEncoder."""
    blocks = []
    for name in X.columns:
        column = X[[name]]
        if name in ("colour", "town"):
            categories = (list(X[name].cat.categories) if name == "colour"
                          else sorted(X[name].dropna().unique()))
            blocks.append(OneHotEncoder(categories=[categories], handle_unknown="ignore",
                                        sparse_output=False)
                          .fit(column.astype(object).where(column.notna(), "missing"))
                          .transform(column.astype(object).where(column.notna(), "missing")))
        else:
            blocks.append(column.to_numpy(dtype=np.float64))
    return np.hstack(blocks)  # float64, as the numeric columns came


def test_from_dtype_finds_category_string_and_object_columns():
    X, _ = table()
    encoder = QMatchEncoder(**TINY).fit(X)
    np.testing.assert_array_equal(encoder.is_categorical_, [False, True, False, True, False])
    np.testing.assert_array_equal(encoder.categories_[0], ["blue", "green", "red", "violet"])
    np.testing.assert_array_equal(encoder.categories_[1], ["Lima", "Oslo", "Rome"])
    assert encoder.n_features_in_ == 5
    np.testing.assert_array_equal(encoder.feature_names_in_, X.columns)


def test_numeric_tables_keep_the_numeric_path():
    X, _ = table()
    numeric = X[["x1", "x2"]]
    encoder = QMatchEncoder(**TINY).fit(numeric)
    assert encoder.is_categorical_ is None and encoder.categories_ is None
    np.testing.assert_array_equal(
        encoder.transform(numeric),
        QMatchEncoder(**TINY, categorical_features=None).fit(numeric).transform(numeric),
    )


def test_passthrough_returns_the_one_hot_input_with_names():
    X, _ = table()
    encoder = QMatchEncoder(**TINY, passthrough=True).fit(X)
    out = encoder.transform(X)
    reference = one_hot_reference(X)
    numeric = [0, 5]  # x1, x2: standardised; the one-hot blocks and the 0/1 flag as they are
    reference[:, numeric] = (reference[:, numeric] - reference[:, numeric].mean(0)) / reference[
        :, numeric].std(0)
    np.testing.assert_allclose(out[:, : reference.shape[1]], reference, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(out[:, 1:5], reference[:, 1:5])
    # the missing category (row 3) and missing town (row 5) are blocks of zeros
    assert out[3, 1:5].sum() == 0 and out[5, 6:9].sum() == 0
    names = encoder.get_feature_names_out()
    assert list(names[:10]) == ["x1", "colour_blue", "colour_green", "colour_red",
                                "colour_violet", "x2", "town_Lima", "town_Oslo", "town_Rome",
                                "flag"]
    assert len(names) == out.shape[1]


def test_native_is_one_hot_with_each_block_corrupted_as_a_group():
    """Exactly the same network as one-hot upstream with the blocks as feature_groups
    (every column in a group, numbered in column order, so the draws match too)."""
    X, _ = table()
    native = QMatchEncoder(**TINY).fit(X)
    blocks = [[0], [1, 2, 3, 4], [5], [6, 7, 8], [9]]
    upstream = QMatchEncoder(**TINY, feature_groups=blocks).fit(one_hot_reference(X))
    np.testing.assert_allclose(native.transform(X), upstream.transform(one_hot_reference(X)),
                               rtol=0, atol=1e-6)


def test_unseen_categories_are_zero_blocks_and_never_nan():
    X, y = table()
    encoder = QMatchEncoder(**TINY, passthrough=True).fit(X)
    new = X.head(4).copy()
    new["town"] = ["Paris", "Oslo", None, "Quito"]
    out = encoder.transform(new)
    np.testing.assert_array_equal(out[:, 6:9], [[0, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0]])
    classifier = QMatchClassifier(encoder=QMatchEncoder(**TINY), max_epochs=2,
                                  random_state=0).fit(X, y)
    assert np.isfinite(classifier.predict_proba(new)).all()


def test_the_users_table_is_not_modified():
    X, y = table()
    before = X.copy()
    QMatchClassifier(encoder=QMatchEncoder(**TINY), max_epochs=2, random_state=0).fit(X, y)
    pd.testing.assert_frame_equal(X, before)


@pytest.mark.parametrize("estimator", [
    QMatchClassifier(encoder=QMatchEncoder(**TINY), max_epochs=2, random_state=0),
    QMatchClassifier(encoder=QMatchEncoder(**TINY, passthrough=True), freeze_encoder=True,
                     max_epochs=2, random_state=0),
    SupervisedMLPClassifier(hidden_sizes=(16,), embedding_dim=4, max_epochs=2, random_state=0),
    QMatchRegressor(encoder=QMatchEncoder(**TINY), max_epochs=2, random_state=0),
    SupervisedMLPRegressor(hidden_sizes=(16,), embedding_dim=4, max_epochs=2, random_state=0),
], ids=["qmatch-clf", "qmatch-clf-passthrough-frozen", "mlp-clf", "qmatch-reg", "mlp-reg"])
def test_supervised_estimators_take_categorical_tables_and_reload(estimator, tmp_path):
    X, y = table()
    X.loc[7, "x1"] = np.nan
    target = y if "Classifier" in type(estimator).__name__ else X["x2"].to_numpy()
    estimator.fit(X, target)
    np.testing.assert_array_equal(estimator.is_categorical_, [False, True, False, True, False])
    predicted = estimator.predict(X)
    buffer = io.BytesIO()
    joblib.dump(estimator, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(joblib.load(buffer).predict(X), predicted)
    qmatch_sklearn.save(estimator, tmp_path / "model.safetensors")
    np.testing.assert_array_equal(
        qmatch_sklearn.load(tmp_path / "model.safetensors").predict(X), predicted)


@pytest.mark.parametrize("estimator", [
    QMatchEncoder(**TINY),
    QMatchClassifier(QMatchEncoder(**TINY, passthrough=True), random_state=0),
    SupervisedMLPClassifier(hidden_sizes=(16,), embedding_dim=4, max_epochs=2, random_state=0),
    QMatchRegressor(QMatchEncoder(**TINY, passthrough=True), random_state=0),
], ids=["encoder", "qmatch-clf-closed-form", "mlp-clf", "qmatch-reg-closed-form"])
def test_a_table_of_categorical_columns_only(estimator, tmp_path):
    # no numeric column at all (mushroom, car evaluation): the input is the one-hot blocks
    X, y = table(n=200)
    target = None if isinstance(estimator, QMatchEncoder) else (
        y if "Classifier" in type(estimator).__name__ else y + X["x2"].to_numpy())
    X = X[["colour", "town"]].assign(level=pd.Series(y + 2 * (X["x1"] > 0), dtype=object))
    estimator.fit(X, target)
    np.testing.assert_array_equal(estimator.is_categorical_, [True, True, True])
    assert estimator._table_input.n_inputs == 4 + 3 + 4
    out = estimator.transform(X) if target is None else estimator.predict(X)
    assert np.isfinite(out).all()
    qmatch_sklearn.save(estimator, tmp_path / "model.safetensors")
    again = qmatch_sklearn.load(tmp_path / "model.safetensors")
    np.testing.assert_array_equal(again.transform(X) if target is None else again.predict(X),
                                  out)


def test_categories_of_one_kind_of_scalar_get_a_plain_dtype(tmp_path):
    # object columns of ints or booleans (with a None): plain arrays, which save stores
    X, _ = table()
    X = X.assign(k=pd.Series(X.index % 3, dtype=object),
                 b=pd.Series((X.index % 2).astype(bool), dtype=object).where(X.index > 0, None))
    encoder = QMatchEncoder(**TINY, passthrough=True).fit(X)
    assert [values.dtype for values in encoder.categories_[2:]] == [np.int64, bool]
    np.testing.assert_array_equal(encoder.categories_[2], [0, 1, 2])
    out = encoder.transform(X)
    names = list(encoder.get_feature_names_out())
    blocks = out[:, [names.index(name) for name in ("k_0", "k_1", "k_2", "b_False", "b_True")]]
    np.testing.assert_array_equal(blocks[:, :3].argmax(axis=1), X.index % 3)
    np.testing.assert_array_equal(blocks[1:, 3:].argmax(axis=1), X.index[1:] % 2)
    assert blocks[0, 3:].sum() == 0  # None: a block of zeros
    qmatch_sklearn.save(encoder, tmp_path / "encoder.safetensors")
    np.testing.assert_array_equal(
        qmatch_sklearn.load(tmp_path / "encoder.safetensors").transform(X), out)


def test_save_names_categories_it_cannot_store(tmp_path):
    X, _ = table()
    X = X.assign(bin=pd.cut(X["x1"], 4))  # categories of pandas intervals
    encoder = QMatchEncoder(**TINY).fit(X)
    with pytest.raises(TypeError, match=r"cannot store '_table_input.categories_.2', an array of "
                                        r"object "
                                        r"\(Interval\).*astype\(str\)"):
        qmatch_sklearn.save(encoder, tmp_path / "encoder.safetensors")
    assert not (tmp_path / "encoder.safetensors").exists()
    buffer = io.BytesIO()
    joblib.dump(encoder, buffer)  # pickling keeps them
    buffer.seek(0)
    np.testing.assert_array_equal(joblib.load(buffer).transform(X), encoder.transform(X))


def test_a_column_whose_values_changed_type_is_named_in_a_warning():
    # ints at fit, their strings after (a CSV read with other dtypes): every block blank
    X, _ = table()
    X = X.assign(k=pd.Series(X.index % 3 + 1, dtype=object))
    encoder = QMatchEncoder(**TINY).fit(X)
    with pytest.warns(UserWarning, match=r"column\(s\) 'k' \(str now, number at fit: "
                                         r"\[1, 2, 3\]\.\.\.\) is a category seen"):
        encoder.transform(X.assign(k=X["k"].astype(str)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder.transform(X.assign(town="Paris").head(1))  # unseen, of the same kind: silent
        encoder.transform(X.assign(k=pd.Series(None, index=X.index, dtype=object)))  # missing


def test_zero_rows_are_refused_with_the_tables_own_shape():
    X, _ = table()
    encoder = QMatchEncoder(**TINY).fit(X)
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 5\)\)"):
        encoder.transform(X.iloc[:0])


def test_a_frozen_fitted_encoder_brings_its_categories():
    X, y = table()
    encoder = QMatchEncoder(**TINY).fit(X)
    fewer = X.copy()
    fewer["town"] = "Oslo"  # the classifier's rows have one town only
    classifier = QMatchClassifier(encoder=FrozenEstimator(encoder), max_epochs=2,
                                  random_state=0).fit(fewer, y)
    assert classifier.categories_[1].tolist() == ["Lima", "Oslo", "Rome"]
    assert classifier.predict(X).shape == (len(X),)


@pytest.mark.parametrize("spec", [[1, 3], ["colour", "town"], [False, True, False, True, False],
                                  np.array([1, 3]), np.array([False, True, False, True, False])],
                         ids=["indices", "names", "mask", "index array", "mask array"])
def test_explicit_categorical_features(spec):
    X, _ = table()
    encoder = QMatchEncoder(**TINY, categorical_features=spec).fit(X)
    np.testing.assert_array_equal(encoder.is_categorical_, [False, True, False, True, False])
    assert encoder.transform(X).shape == (len(X), 4)  # an array spec failed here, after fit


def test_integer_codes_in_an_array_as_categories():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=60), rng.integers(0, 3, 60)]).astype(np.float64)
    encoder = QMatchEncoder(**TINY, categorical_features=[1], passthrough=True).fit(X)
    np.testing.assert_array_equal(encoder.categories_[0], [0.0, 1.0, 2.0])
    out = encoder.transform(X)
    np.testing.assert_array_equal(out[:, 1:4].argmax(axis=1), X[:, 1])
    np.testing.assert_array_equal(out[:, 1:4].sum(axis=1), 1)


def test_feature_groups_by_name_join_whole_blocks():
    X, _ = table()
    encoder = QMatchEncoder(**TINY, feature_groups=[["colour", "town"]])
    encoder.fit(X)  # one group: the colour and town blocks move together
    widths = input_widths(5, encoder.is_categorical_, encoder.categories_)
    groups = expand_groups(np.array([0, 1, 2, 1, 3]), widths)
    assert groups.tolist() == [0, 1, 1, 1, 1, 2, 1, 1, 1, 3]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_fits_a_categorical_table(name):
    X, _ = table(64)
    params = {key: value for key, value in TINY.items() if key != "hidden_sizes"}
    encoder = METHODS[name](**params).fit(X)
    assert np.isfinite(encoder.transform(X)).all()


@settings(max_examples=60, deadline=None)
@given(
    widths=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    p=st.floats(0, 1),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from([vime_corruption, zero_corruption]),
)
def test_a_corrupted_one_hot_block_has_at_most_one_category_on(widths, p, seed, kind):
    import torch

    generator = torch.Generator().manual_seed(seed)
    widths = np.asarray(widths)
    n = 16
    rows = []
    for width in widths:  # each column a block: one-hot, or a number when its width is 1
        if width == 1:
            rows.append(torch.randn(n, 1, generator=generator))
        else:
            codes = torch.randint(0, width + 1, (n,), generator=generator)  # width: missing
            rows.append(torch.nn.functional.one_hot(codes, width + 1)[:, :width].float())
    x = torch.cat(rows, dim=1)
    groups = torch.from_numpy(expand_groups(np.arange(len(widths)), widths))
    corrupted, mask = kind(x, p, generator, groups)
    start = 0
    for width in widths:
        block = corrupted[:, start:start + width]
        if width > 1:
            assert ((block == 0) | (block == 1)).all() and (block.sum(dim=1) <= 1).all()
        # a block is corrupted as a whole or not at all
        assert (mask[:, start:start + width].all(1) | ~mask[:, start:start + width].any(1)).all()
        start += width


def test_transform_refuses_a_column_whose_kind_changed():
    X, _ = table()
    encoder = QMatchEncoder(**TINY).fit(X)
    changed = X.assign(colour=X["colour"].cat.codes.astype(float), x2=X["x2"].astype(str))
    with pytest.raises(ValueError, match=r"'colour' \(categorical at fit, dtype float64 now\), "
                                         r"'x2' \(numeric at fit, dtype (object|str) now\)"):
        encoder.transform(changed)


@pytest.mark.parametrize("change, message", [
    (lambda X: X[X.columns[::-1]], "Feature names must be in the same order"),
    (lambda X: X.assign(extra=1.0), "Feature names unseen at fit time:\n- extra"),
    (lambda X: X.drop(columns="x2"), "Feature names seen at fit time, yet now missing:\n- x2"),
])
def test_a_table_whose_columns_changed_is_refused_by_their_names(change, message):
    """Reordered, added or dropped columns are named as scikit-learn names them,
    before the columns' kinds are compared by position (which gave a numpy
    broadcasting error, or named a reordered column's kind as changed)."""
    X, _ = table()
    encoder = QMatchEncoder(**TINY).fit(X)
    with pytest.raises(ValueError, match=message):
        encoder.transform(change(X))


def test_an_array_for_a_table_fitted_with_integer_column_names_is_refused_by_name():
    X, _ = table()
    X.columns = range(X.shape[1])  # no feature_names_in_: the names are not strings
    encoder = QMatchEncoder(**TINY).fit(X)
    categorical = ", ".join(map(str, np.flatnonzero(encoder.is_categorical_)))
    with pytest.raises(ValueError, match=rf"categorical columns \({categorical}\); pass a "
                                         "DataFrame"):
        encoder.transform(X.to_numpy())
