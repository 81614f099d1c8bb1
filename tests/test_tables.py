"""pandas, polars and pyarrow tables read alike (``_table.as_pandas``)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from qmatch_sklearn import QMatchClassifier, QMatchEncoder

from .conftest import tiny_encoder_params

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def readme_table():
    """The README's first example: breast cancer with a string column, 10% labeled."""
    df, y = load_breast_cancer(return_X_y=True, as_frame=True)
    df["size"] = np.where(df["mean area"] > 700, "large", "small")
    df.loc[::17, "size"] = None  # and missing categories
    df.loc[::13, "mean radius"] = np.nan  # and missing numbers
    return df, np.where(np.arange(len(y)) % 10 == 0, y, -1)


def _libraries(df):
    return {"pandas": df, "polars": pl.from_pandas(df), "pyarrow": pa.Table.from_pandas(df)}


def test_the_readme_example_predicts_alike_from_every_table_library(readme_table):
    df, y_semi = readme_table
    fitted = {}
    for name, table in _libraries(df).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                   random_state=0).fit(table, y_semi)
        assert list(clf.feature_names_in_) == list(df.columns)
        assert clf.is_categorical_.tolist() == [False] * 30 + [True]
        fitted[name] = clf
    expected = fitted["pandas"].predict_proba(df)
    for name, table in _libraries(df).items():
        # each model on each library's table: the same probabilities
        for clf in fitted.values():
            np.testing.assert_array_equal(clf.predict_proba(table), expected, err_msg=name)


def test_an_encoder_transforms_a_polars_table_to_polars(readme_table):
    df, _ = readme_table
    table = pl.from_pandas(df)
    encoder = QMatchEncoder(**tiny_encoder_params()).set_output(transform="polars")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Z = encoder.fit(table).transform(table)
    assert isinstance(Z, pl.DataFrame) and Z.shape == (len(df), encoder.embedding_dim)
    np.testing.assert_array_equal(Z.to_numpy(), encoder.set_output(transform="default")
                                  .transform(df))
