"""``feature_groups``: columns corrupted as one unit, and ``one_hot_groups`` that finds them."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import ColumnTransformer, make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from qmatch_sklearn import METHODS, QMatchEncoder, one_hot_groups
from qmatch_sklearn._corruption import CORRUPTIONS, corrupt
from qmatch_sklearn._table import column_groups

from .conftest import tiny_encoder_params, tiny_method_params


@settings(max_examples=50, deadline=None)
@given(
    st.integers(2, 9).flatmap(lambda d: st.tuples(
        st.just(d), st.lists(st.integers(0, d - 1), min_size=d, max_size=d))),
    st.integers(2, 16),
    st.sampled_from(sorted(CORRUPTIONS)),
    st.integers(0, 2**31 - 1),
)
def test_a_group_is_corrupted_as_one_unit(layout, n, kind, seed):
    d, labels = layout
    groups = torch.from_numpy(np.unique(labels, return_inverse=True)[1])
    # each entry names its row, so the source row of a replaced value can be read off
    x = torch.arange(n, dtype=torch.float64)[:, None] + 1 + torch.zeros(n, d, dtype=torch.float64)
    x_tilde, mask = corrupt(kind, x, 0.5, torch.Generator().manual_seed(seed), groups)
    for g in groups.unique():
        columns = groups == g
        assert (mask[:, columns] == mask[:, columns][:, :1]).all()
        # every column of a group holds the same row's value: one source row (or zero)
        assert (x_tilde[:, columns] == x_tilde[:, columns][:, :1]).all()
    torch.testing.assert_close(x_tilde[~mask], x[~mask])


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_columns_on_their_own_draw_exactly_as_without_groups(kind):
    x = torch.randn(32, 6, generator=torch.Generator().manual_seed(0))
    plain = corrupt(kind, x, 0.3, torch.Generator().manual_seed(1))
    alone = corrupt(kind, x, 0.3, torch.Generator().manual_seed(1), torch.arange(6))
    torch.testing.assert_close(plain, alone)


class _Named:
    feature_names_in_ = np.array(["a", "b", "c", "d"], dtype=object)


@pytest.mark.parametrize(("groups", "expected"), [
    (None, None),
    ([[0, 1]], [0, 0, 1, 2]),
    ([["c", "d"], ["a"]], [1, 2, 0, 0]),
    ([[-1, 1]], [1, 0, 2, 0]),
])
def test_groups_become_one_id_per_column(groups, expected):
    got = column_groups(_Named(), groups, 4)
    assert (got is None) if expected is None else got.tolist() == expected


@pytest.mark.parametrize(("estimator", "groups", "pattern"), [
    (_Named(), [["a", "zz"]], "'zz', which is not among X's columns"),
    (object(), [["a"]], "X has no column names"),
    (_Named(), [[0, 4]], "index 4, but X has 4 columns"),
    (_Named(), [[0, 1], [1, 2]], "Column 1 is in two groups"),
    (_Named(), [["a"], [0]], "Column 0 is in two groups"),
])
def test_bad_groups_are_named(estimator, groups, pattern):
    with pytest.raises(ValueError, match=pattern):
        column_groups(estimator, groups, 4)


@pytest.mark.parametrize("groups", [[[]], [[0.5]], [0, 1], "a", [[True]]])
def test_malformed_groups_fail_parameter_validation(groups):
    with pytest.raises(ValueError, match="feature_groups"):
        QMatchEncoder(feature_groups=groups).fit(np.zeros((4, 2), dtype=np.float32))


TABLE = pd.DataFrame({
    "age": [30.0, 40.0, np.nan, 50.0, 60.0, 35.0, 45.0, 55.0],
    "city": ["a", "b", "c", "a", "b", "c", "a", "d"],
    "smoker": ["y", "n", "y", "n", "y", "n", "y", "n"],
    "pet": ["cat", "dog", "cat", None, "fish", "cat", "dog", "cat"],
})


@pytest.mark.parametrize("one_hot", [
    OneHotEncoder(),
    OneHotEncoder(sparse_output=False, drop="if_binary"),
    OneHotEncoder(drop="first", handle_unknown="ignore"),
    OneHotEncoder(min_frequency=2, handle_unknown="infrequent_if_exist"),
], ids=["plain", "if_binary", "first", "infrequent"])
def test_one_hot_groups_cover_each_encoded_feature(one_hot):
    prep = make_column_transformer(
        (StandardScaler(), ["age"]),
        (make_pipeline(SimpleImputer(strategy="most_frequent"), one_hot),
         ["city", "smoker", "pet"]),
        remainder="drop",
    ).fit(TABLE)
    output = prep.transform(TABLE)
    output = output.toarray() if sp.issparse(output) else output
    groups = one_hot_groups(prep)
    encoder = prep.named_transformers_["pipeline"][-1]
    names = prep.get_feature_names_out()
    for group, feature in zip(groups, [f for f in ["city", "smoker", "pet"]
                                       if sum(f"__{f}_" in n for n in names) > 1], strict=True):
        assert all(f"__{feature}_" in names[j] for j in group)
        # at most one column of a feature is on in a row
        assert (output[:, group].sum(axis=1) <= 1).all()
    assert all(len(group) > 1 for group in groups)
    assert encoder is not None


def test_one_hot_groups_of_a_bare_encoder_and_wrong_input():
    one_hot = OneHotEncoder().fit(TABLE[["city", "smoker"]])
    assert one_hot_groups(one_hot) == [[0, 1, 2, 3], [4, 5]]
    with pytest.raises(TypeError, match="ColumnTransformer or OneHotEncoder"):
        one_hot_groups(StandardScaler())


@pytest.mark.parametrize("name", sorted(set(METHODS) - {"imix"}))
def test_every_corrupting_method_trains_with_groups(name):
    X = np.random.RandomState(0).rand(64, 6).astype(np.float32)
    encoder = METHODS[name](feature_groups=[[0, 1, 2], [4, 5]],
                            **tiny_method_params(name, max_epochs=2)).fit(X)
    assert np.isfinite(encoder.transform(X)).all()


def test_groups_by_name_on_a_dataframe_and_their_errors_come_before_training():
    X = pd.DataFrame(np.random.RandomState(0).rand(64, 3).astype(np.float32),
                     columns=["x", "y", "z"])
    QMatchEncoder(feature_groups=[["x", "z"]], **tiny_encoder_params(max_epochs=1)).fit(X)
    with pytest.raises(ValueError, match="'w', which is not among"):
        QMatchEncoder(feature_groups=[["x", "w"]], **tiny_encoder_params()).fit(X)


def test_a_one_hot_encoder_that_selected_no_column_gives_no_group():
    # make_column_selector(dtype_exclude="number") on a table without text columns
    from sklearn.compose import make_column_selector

    X = pd.DataFrame({"a": np.arange(10.0), "b": np.arange(10.0) ** 2})
    prep = ColumnTransformer([
        ("categorical", OneHotEncoder(handle_unknown="ignore"),
         make_column_selector(dtype_exclude="number")),
        ("numeric", StandardScaler(), make_column_selector(dtype_include="number")),
    ]).fit(X)
    assert one_hot_groups(prep) == []
