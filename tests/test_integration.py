"""The workflows of the brief: Pipeline + ColumnTransformer on Adult, GridSearchCV, clone."""

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, QuantileTransformer

from qmatch_sklearn import QMatchEncoder

from .conftest import tiny_encoder_params

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]
NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]


def test_clone_gives_an_unfitted_twin_with_the_same_params():
    enc = QMatchEncoder(**tiny_encoder_params(queue_size=32))
    twin = clone(enc)
    assert twin.get_params() == enc.get_params() and not hasattr(twin, "network_")


def test_grid_search_over_nested_parameters_in_parallel():
    X, y = make_classification(n_samples=240, n_features=8, random_state=0)
    pipe = Pipeline([
        ("enc", QMatchEncoder(**tiny_encoder_params())),
        ("clf", LogisticRegression()),
    ])
    search = GridSearchCV(pipe, {"enc__queue_size": [16, 64]}, cv=2, n_jobs=2).fit(X, y)
    assert search.best_params_["enc__queue_size"] in (16, 64)
    assert search.best_estimator_.named_steps["enc"].network_ is not None
    assert search.score(X, y) > 0.5


def test_pipeline_on_adult(shared_data):
    path = shared_data / "adult"
    frame = pd.read_csv(
        path / "adult.data.gz", header=None, names=ADULT_COLUMNS, skipinitialspace=True,
        na_values="?",
    )
    test = pd.read_csv(
        path / "adult.test.gz", header=None, names=ADULT_COLUMNS, skipinitialspace=True,
        na_values="?", skiprows=1,
    )
    X, y = frame.drop(columns="income"), frame["income"]
    X_test, y_test = test.drop(columns="income"), test["income"].str.rstrip(".")
    categorical = [c for c in X.columns if c not in NUMERIC]
    prep = ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
        ("num", QuantileTransformer(n_quantiles=128, random_state=0), NUMERIC),
    ])
    pipe = Pipeline([
        ("prep", prep),
        ("enc", QMatchEncoder(hidden_sizes=(128,), embedding_dim=32, max_epochs=10,
                              random_state=0, device="cpu")),
        ("clf", LogisticRegression(max_iter=500)),
    ])
    labeled = np.random.default_rng(0).choice(len(X), 2000, replace=False)
    pipe.fit(X.iloc[labeled], y.iloc[labeled])
    accuracy = pipe.score(X_test, y_test)
    majority = (y_test == "<=50K").mean()
    assert accuracy > majority + 0.03, f"{accuracy:.3f} vs majority {majority:.3f}"
    assert pipe.predict(X_test.iloc[:3]).tolist()[0] in {"<=50K", ">50K"}


def test_sparse_one_hot_output_is_accepted():
    import scipy.sparse as sp

    X, _ = make_classification(n_samples=120, n_features=6, random_state=0)
    dense = QMatchEncoder(**tiny_encoder_params()).fit(X)
    sparse = QMatchEncoder(**tiny_encoder_params()).fit(sp.csr_matrix(X))
    # sparse columns are scaled but not centred: the input batch norm centres both alike,
    # up to float32 rounding, which three epochs amplify a little
    Z = dense.transform(X)
    assert np.abs(sparse.transform(sp.csr_matrix(X)) - Z).mean() < 0.01 * np.abs(Z).mean()
    frame = pd.DataFrame({"colour": ["red", "blue", "green"] * 40, "size": np.arange(120.0)})
    pipe = Pipeline([
        ("prep", ColumnTransformer([("cat", OneHotEncoder(), ["colour"])], remainder="passthrough",
                                   sparse_threshold=1.0)),  # sparse output
        ("enc", QMatchEncoder(**tiny_encoder_params())),
    ])
    assert pipe.fit_transform(frame).shape == (120, 8)
