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


def test_booleans_with_nulls_dates_and_decimals_read_as_pandas_reads_its_own():
    """A boolean column with nulls is numeric in every library (pandas' nullable
    booleans; not an object column of categories), a date column is refused by
    name, and a decimal column is numeric."""
    import datetime
    import decimal

    import pandas as pd

    flags = [True, None, False, True] * 10
    frame = pd.DataFrame({"x": np.linspace(0.0, 1.0, 40),
                          "flag": pd.array(flags, dtype="boolean")})
    tables = {"pandas": frame, "polars": pl.DataFrame({"x": frame["x"].tolist(), "flag": flags}),
              "pyarrow": pa.table({"x": frame["x"].tolist(), "flag": pa.array(flags)})}
    params = tiny_encoder_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = QMatchEncoder(**params).fit(frame).transform(frame)
        for name, table in tables.items():
            encoder = QMatchEncoder(**params).fit(table)
            assert encoder.is_categorical_ is None, name
            np.testing.assert_array_equal(encoder.transform(table), expected, err_msg=name)
        days = [datetime.date(2020, 1, 1 + i % 28) for i in range(40)]
        for table in (pl.DataFrame({"x": frame["x"].tolist(), "day": days}),
                      pa.table({"x": frame["x"].tolist(), "day": pa.array(days, pa.date32())})):
            with pytest.raises(ValueError, match=r"'day'.*neither numeric nor categorical"):
                QMatchEncoder(**params).fit(table)
        prices = [decimal.Decimal(f"{1 + i / 7:.2f}") for i in range(40)]
        decimals = pa.table({"x": frame["x"].tolist(), "price": pa.array(prices)})
        assert QMatchEncoder(**params).fit(decimals).is_categorical_ is None
        # pandas' own decimals (read_sql of a NUMERIC column): objects, read as numbers
        as_objects = pd.DataFrame({"x": frame["x"], "price": pd.Series(
            [None if i % 9 == 0 else price for i, price in enumerate(prices)], dtype=object)})
        as_floats = as_objects.astype({"price": np.float64})
        encoder = QMatchEncoder(**params).fit(as_objects)
        assert encoder.is_categorical_ is None
        np.testing.assert_array_equal(encoder.transform(as_objects),
                                      QMatchEncoder(**params).fit(as_floats).transform(as_floats))
        assert as_objects["price"].dtype == object  # the caller's frame as it was
        assert isinstance(as_objects["price"].iat[1], decimal.Decimal)
        # later batches of that column hold no decimal (a NULL) or floats beside them, with
        # a categorical column beside it or without: read as numbers as at fit
        for other in ({}, {"kind": ["a", "b"] * 20}):
            fitted = QMatchEncoder(**params).fit(as_objects.assign(**other))
            twin = QMatchEncoder(**params).fit(as_floats.assign(**other))
            for batch in ([None, None], [decimal.Decimal("NaN"), None], [1.5, None],
                          [decimal.Decimal("1"), 2.0]):
                rows = as_objects.iloc[:2].assign(
                    price=pd.Series(batch, dtype=object, index=[0, 1]),
                    **{name: values[:2] for name, values in other.items()})
                np.testing.assert_array_equal(
                    fitted.transform(rows),
                    twin.transform(rows.astype({"price": np.float64})), err_msg=str(batch))
        # a column of decimals and strings stays one of categories
        mixed = as_objects.assign(price=as_objects["price"].where(as_objects.index != 1, "n/a"))
        assert QMatchEncoder(**params).fit(mixed).is_categorical_.tolist() == [False, True]


def test_a_model_fitted_on_polars_exports_from_a_polars_sample(readme_table):
    pytest.importorskip("onnxruntime")
    from qmatch_sklearn import to_onnx

    df, _ = readme_table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = QMatchEncoder(**tiny_encoder_params()).fit(pl.from_pandas(df))
        graph = to_onnx(encoder, pl.from_pandas(df.iloc[:20]))  # its parity check runs
        from_pandas = to_onnx(encoder, df.iloc[:20])
    assert [i.name for i in graph.graph.input] == [i.name for i in from_pandas.graph.input]
    assert len(graph.graph.input) == df.shape[1]  # one input a column, as from pandas


def test_a_polars_sample_with_a_boolean_column_exports_as_its_pandas_twin():
    """A boolean column without nulls stays NumPy's bool (a graph input skl2onnx can
    type), as pandas holds it; only one with nulls becomes pandas' nullable boolean."""
    pytest.importorskip("onnxruntime")
    import pandas as pd

    from qmatch_sklearn import to_onnx

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=60), "flag": rng.random(60) < 0.5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = QMatchEncoder(**tiny_encoder_params()).fit(pl.from_pandas(frame))
        graphs = [to_onnx(encoder, sample) for sample in (
            frame.iloc[:20], pl.from_pandas(frame.iloc[:20]), pa.Table.from_pandas(frame[:20]))]
    inputs = [[(i.name, i.type.tensor_type.elem_type) for i in g.graph.input] for g in graphs]
    assert inputs[1] == inputs[2] == inputs[0]


def test_a_polars_categorical_reads_as_the_pandas_categorical_it_infers():
    """A polars Categorical lists its categories as its rows first show them; read
    sorted, as pandas infers them, the same table gives the pandas table's model, and
    the same values in another row order the same categories. An Enum keeps the
    order it declares."""
    import pandas as pd

    rng = np.random.default_rng(0)
    sizes = rng.choice(["small", "large", "medium"], size=60)
    x = rng.normal(size=60)
    frame = pd.DataFrame({"x": x, "size": pd.Series(sizes).astype("category")})
    params = tiny_encoder_params()

    def polars_table(dtype, order=slice(None)):
        return pl.DataFrame({"x": x[order], "size": sizes[order]}).with_columns(
            pl.col("size").cast(dtype))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = QMatchEncoder(**params).fit(frame).transform(frame)
        encoder = QMatchEncoder(**params).fit(polars_table(pl.Categorical))
        np.testing.assert_array_equal(encoder.transform(frame), expected)
        shuffled = QMatchEncoder(**params).fit(
            polars_table(pl.Categorical, np.argsort(sizes != "small", kind="stable")))
        enum = QMatchEncoder(**params).fit(polars_table(pl.Enum(["small", "medium", "large"])))
    assert sizes[0] != "large"  # the first row shows another category first
    for fitted in (encoder, shuffled):
        assert fitted.categories_[0].tolist() == ["large", "medium", "small"]
    assert enum.categories_[0].tolist() == ["small", "medium", "large"]


def test_nullable_and_arrow_backed_numbers_export_to_onnx():
    """Numbers of an extension dtype (a boolean column with nulls from any library, pandas'
    Int64 and Float64, Arrow-backed ones) reach the graph as float64 with NaN for a missing
    value, as the estimators read them."""
    pytest.importorskip("onnxruntime")
    import onnx
    import pandas as pd

    from qmatch_sklearn import to_onnx

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=60),
                          "flag": pd.array([True, None, False, True] * 15, dtype="boolean"),
                          "count": pd.array([None, 1, 2, 3] * 15, dtype="Int64"),
                          "price": pd.array(rng.normal(size=60), dtype="Float64")})
    samples = {"pandas": frame, "polars": pl.from_pandas(frame),
               "arrow-backed pandas": frame.convert_dtypes(dtype_backend="pyarrow")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, table in samples.items():
            encoder = QMatchEncoder(**tiny_encoder_params()).fit(table)
            graph = to_onnx(encoder, table[:20])  # its parity check runs
            types = {i.name: i.type.tensor_type.elem_type for i in graph.graph.input}
            assert types["flag"] == types["count"] == onnx.TensorProto.DOUBLE, name


def test_object_columns_of_dates_or_times_are_refused_by_name():
    """Dates held as Python objects (pandas' ``.dt.date``, pyarrow's default ``to_pandas``,
    polars' Time) are refused as their typed columns are, not read as categories that
    every later date misses."""
    import datetime

    import pandas as pd

    x = np.linspace(0.0, 1.0, 40)
    days = [datetime.date(2020, 1, 1 + i % 28) for i in range(40)]
    first_missing = pd.Series(pd.to_datetime(days)).dt.date
    first_missing[0] = None
    tables = {"pandas": pd.DataFrame({"x": x, "day": first_missing}),
              "pyarrow": pa.table({"x": x, "day": pa.array(days, pa.date32())}).to_pandas(),
              "polars": pl.DataFrame({"x": x, "day": [datetime.time(i % 24) for i in range(40)]})}
    for name, table in tables.items():
        with pytest.raises(ValueError, match=r"'day' \(object, of (date|time)\)"):
            QMatchEncoder(**tiny_encoder_params()).fit(table)
        assert name != "pandas" or table["day"].iloc[0] is None  # the user's frame as it was
    # named as categorical, they are categories; a fitted model reads any later batch
    named = tables["pandas"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = QMatchEncoder(categorical_features=["day"], **tiny_encoder_params()).fit(named)
        strings = pd.DataFrame({"x": x, "day": [str(day) for day in days]})
        fitted_on_strings = QMatchEncoder(**tiny_encoder_params()).fit(strings)
    assert encoder.is_categorical_.tolist() == [False, True]
    assert np.isfinite(fitted_on_strings.transform(named)).all()  # dates unseen: zeros


def test_an_arrow_backed_dictionary_reads_as_the_pyarrow_tables_categories():
    """A pandas column of Arrow dictionary dtype (polars' and pyarrow's ``to_pandas`` with
    Arrow-backed dtypes) is categorical, with the dictionary's categories, as in the pyarrow
    table it came from; the user's frame keeps its dtype."""
    import pandas as pd

    rng = np.random.default_rng(0)
    table = pa.table({"x": rng.normal(size=60),
                      "s": pa.array(rng.choice(["b", "a", "c"], 60)).dictionary_encode()})
    frame = table.to_pandas(types_mapper=pd.ArrowDtype)
    before = frame.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = QMatchEncoder(**tiny_encoder_params()).fit(table)
        encoder = QMatchEncoder(**tiny_encoder_params()).fit(frame)
        assert encoder.is_categorical_.tolist() == [False, True]
        np.testing.assert_array_equal(encoder.categories_[0], expected.categories_[0])
        np.testing.assert_array_equal(encoder.transform(frame), expected.transform(table))
    pd.testing.assert_frame_equal(frame, before)


def test_a_polars_lazyframe_is_refused_with_the_way_out():
    lazy = pl.DataFrame({"x": np.linspace(0.0, 1.0, 40)}).lazy()
    with pytest.raises(TypeError, match=r"polars LazyFrame.*X\.collect\(\)"):
        QMatchEncoder(**tiny_encoder_params()).fit(lazy)
