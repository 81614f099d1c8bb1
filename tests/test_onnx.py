"""ONNX export (issue #33): ONNX Runtime's outputs equal the estimators' on real tables,
for every estimator kind, alone and inside a Pipeline; the file runs without our code."""

import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, QuantileTransformer, StandardScaler

from qmatch_sklearn import (
    METHODS,
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
    register_onnx_converters,
    to_onnx,
)

from .conftest import tiny_encoder_params, tiny_method_params

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("skl2onnx")

#: float32 parity of ONNX Runtime with the estimator: 1e-5, absolute or relative (float32
#: matrix products summed in another order differ by a few units in the last place).
ATOL = 1e-5


def _run(model, X):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    if isinstance(X, pd.DataFrame):
        feeds = {i.name: X[[i.name]].to_numpy() for i in session.get_inputs()}
    else:
        feeds = {session.get_inputs()[0].name: X}
    return session.run(None, feeds)


def _fit(estimator, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(*args)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def wine_with_nan():
    """Wine with missing entries in two columns, half of its labels hidden."""
    X, y = load_wine(return_X_y=True)
    X = X.copy()
    X[::7, 2] = np.nan
    X[3::11, 9] = np.nan
    return X, np.where(np.arange(len(y)) % 2 == 0, y, -1), y


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_encoder_transforms_alike_in_onnx_runtime(name, digits):
    X, _ = digits
    encoder = _fit(METHODS[name](**tiny_method_params(name)), X)
    (Z,) = _run(to_onnx(encoder, X), X)
    np.testing.assert_allclose(Z, encoder.transform(X), rtol=ATOL, atol=ATOL)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_classifier_with_nan_passthrough_and_trees_predicts_alike(dtype, wine_with_nan):
    X, y_semi, _ = wine_with_nan
    X = X.astype(dtype)
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0, device="cpu"), X, y_semi)
    assert clf.boosted_trees_ is not None and len(clf.encoder_.missing_features_)
    labels, proba = _run(to_onnx(clf, X), X)
    np.testing.assert_allclose(proba, clf.predict_proba(X), rtol=ATOL, atol=ATOL)
    np.testing.assert_array_equal(labels, clf.predict(X))
    encoder = clf.encoder_
    (Z,) = _run(to_onnx(encoder, X), X)
    np.testing.assert_allclose(Z, encoder.transform(X), rtol=ATOL, atol=ATOL)


def test_nan_unseen_at_fit_is_read_as_predict_reads_it(wine_with_nan):
    """Fitted on rows without NaN (no missing-values layer), the classifier with its
    trees, the encoder and the regressor read a NaN as ``predict`` does, not as NaN."""
    X, y_semi, y = wine_with_nan
    complete = ~np.isnan(X).any(axis=1)
    rows = X.astype(np.float32)  # NaN in columns 2 and 9
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0, device="cpu"), X[complete], y_semi[complete])
    assert clf.boosted_trees_ is not None and not len(clf.encoder_.missing_features_)
    labels, proba = _run(to_onnx(clf, rows), rows)
    with pytest.warns(UserWarning, match=r"column\(s\) \[2, 9\]"):
        expected = clf.predict_proba(rows)
    np.testing.assert_allclose(proba, expected, rtol=ATOL, atol=ATOL)
    with pytest.warns(UserWarning, match="missing values"):
        np.testing.assert_array_equal(labels, clf.predict(rows))
    (Z,) = _run(to_onnx(clf.encoder_, rows), rows)
    with pytest.warns(UserWarning, match="missing values"):
        np.testing.assert_allclose(Z, clf.encoder_.transform(rows), rtol=ATOL, atol=ATOL)
    regressor = _fit(SupervisedMLPRegressor(hidden_sizes=(16,), embedding_dim=8, max_epochs=3,
                                            random_state=0, device="cpu"),
                     X[complete], y[complete] * 10.0)
    (predicted,) = _run(to_onnx(regressor, rows), rows)
    with pytest.warns(UserWarning, match="missing values"):
        np.testing.assert_allclose(predicted[:, 0], regressor.predict(rows), rtol=ATOL,
                                   atol=ATOL)


def test_string_labels_and_the_supervised_baselines(digits):
    X, y = digits
    names = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                      "nine"], dtype=object)[y]
    mlp = _fit(SupervisedMLPClassifier(hidden_sizes=(32,), embedding_dim=8, max_epochs=3,
                                       random_state=0, device="cpu"), X, names)
    labels, proba = _run(to_onnx(mlp, X), X)
    np.testing.assert_allclose(proba, mlp.predict_proba(X), rtol=ATOL, atol=ATOL)
    np.testing.assert_array_equal(labels, mlp.predict(X))
    regressor = _fit(SupervisedMLPRegressor(hidden_sizes=(32,), embedding_dim=8, max_epochs=3,
                                            random_state=0, device="cpu"), X, y * 100.0)
    (predicted,) = _run(to_onnx(regressor, X), X)
    np.testing.assert_allclose(predicted[:, 0], regressor.predict(X), rtol=ATOL, atol=ATOL)


def test_the_regressor_predicts_alike_in_its_units(wine_with_nan):
    X, y_semi, _ = wine_with_nan
    targets = np.c_[X[:, 0] * 1000, X[:, 12]]  # alcohol per mille, proline: two outputs
    targets[y_semi < 0] = np.nan
    regressor = _fit(QMatchRegressor(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                     random_state=0, device="cpu"), X, targets)
    rows = X.astype(np.float32)
    (predicted,) = _run(to_onnx(regressor, rows), rows)
    expected = regressor.predict(rows)
    np.testing.assert_allclose(predicted, expected, rtol=ATOL, atol=ATOL)
    # the clip binds on some rows (clip_predictions), and the graph drops it where told to
    assert ((expected == regressor.target_min_) | (expected == regressor.target_max_)).any()
    regressor.set_params(clip_predictions=False)
    (unclipped,) = _run(to_onnx(regressor, rows), rows)
    np.testing.assert_allclose(unclipped, regressor.predict(rows), rtol=ATOL, atol=ATOL)
    assert not np.allclose(unclipped, predicted, rtol=ATOL, atol=ATOL)


def test_a_pipeline_with_one_hot_categories_converts_whole(wine_with_nan):
    X, _, y = wine_with_nan
    frame = pd.DataFrame(np.nan_to_num(X[:, :4], nan=0.0).astype(np.float32),
                         columns=["alcohol", "malic_acid", "ash", "alcalinity"])
    frame["colour"] = np.where(X[:, 9] > 5, "deep", "pale").astype(object)
    pipeline = make_pipeline(
        ColumnTransformer([("categories", OneHotEncoder(handle_unknown="ignore"), ["colour"]),
                           ("numbers", StandardScaler(), list(frame.columns[:4]))]),
        QMatchEncoder(**tiny_encoder_params()), LogisticRegression(max_iter=1000))
    _fit(pipeline, frame, y)
    labels, proba = _run(to_onnx(pipeline, frame), frame)
    np.testing.assert_allclose(proba, pipeline.predict_proba(frame), rtol=ATOL, atol=ATOL)
    np.testing.assert_array_equal(labels, pipeline.predict(frame))


def test_a_frame_of_integer_and_float_columns_and_float_labels(wine_with_nan):
    X, _, y = wine_with_nan
    frame = pd.DataFrame({"magnesium": X[:, 4].astype(np.int64),
                          "alcohol": X[:, 0].astype(np.float32),
                          "hue": X[:, 10].astype(np.float32)})
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0, device="cpu"), frame, y.astype(float))
    labels, proba = _run(to_onnx(clf, frame), frame)
    np.testing.assert_allclose(proba, clf.predict_proba(frame), rtol=ATOL, atol=ATOL)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, clf.predict(frame))


def test_large_integer_columns_are_read_in_float64_as_predict_reads_them(wine_with_nan):
    # a timestamp beyond float32's 2^24: a float32 graph lost its last digits
    X, _, _ = wine_with_nan
    rng = np.random.RandomState(0)
    frame = pd.DataFrame({"timestamp": 1_700_000_000 + rng.randint(0, 86_400, len(X)),
                          "alcohol": X[:, 0].astype(np.float32)})
    target = (frame["timestamp"] - 1_700_000_000) / 864 + frame["alcohol"]
    reg = _fit(QMatchRegressor(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                               random_state=0, device="cpu"), frame, target)
    (predicted,) = _run(to_onnx(reg, frame), frame)
    np.testing.assert_allclose(predicted[:, 0], reg.predict(frame), rtol=1e-6, atol=1e-4)


def test_a_sample_whose_columns_are_not_the_fitted_ones_in_order_is_refused(wine_with_nan):
    X, _, _ = wine_with_nan
    frame = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    encoder = _fit(QMatchEncoder(**tiny_encoder_params()), frame)
    with pytest.raises(ValueError, match=r"sample's columns \['b', 'a', 'c', 'd'\] are not"):
        to_onnx(encoder, frame[["b", "a", "c", "d"]])
    # columns named by integers (pandas' default) name no graph input: one tensor X
    numbered = pd.DataFrame(X[:, :4])
    encoder = _fit(QMatchEncoder(**tiny_encoder_params()), numbered)
    (out,) = _run(to_onnx(encoder, numbered), numbered.to_numpy())
    np.testing.assert_allclose(out, encoder.transform(numbered), rtol=ATOL, atol=ATOL)


def test_zipmap_gives_the_probabilities_as_skl2onnx_s_dicts(digits):
    import skl2onnx

    X, y = digits[0][:200], np.where(np.arange(200) % 5 == 0, digits[1][:200], -1)
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), random_state=0,
                                device="cpu"), X, y)
    _, dicts = _run(to_onnx(clf, X, options={id(clf): {"zipmap": True}}), X[:5])
    expected = clf.predict_proba(X[:5])
    for row, probabilities in zip(dicts, expected, strict=True):
        np.testing.assert_allclose([row[c] for c in clf.classes_], probabilities, atol=ATOL)
    register_onnx_converters()  # skl2onnx's own call, whose default is zipmap=True
    _, dicts = _run(skl2onnx.to_onnx(make_pipeline(StandardScaler(), clf).fit(X, y), X[:1]),
                    X[:2])
    assert len(dicts) == 2 and set(dicts[0]) == set(clf.classes_)


def test_the_one_call_on_a_raw_table_exports_and_runs_without_our_code(tmp_path):
    """The README's first example (issue #57): breast cancer with a string column,
    and here NaN in a numeric one, ``QMatchClassifier().fit(df, y_semi)``; the graph
    takes one input per column (strings for the string column), runs in a process
    where torch and qmatch_sklearn cannot be imported and matches within 1e-5, an
    unseen category and a missing one ("") read as ``predict`` reads them."""
    df, y = load_breast_cancer(return_X_y=True, as_frame=True)
    df["size"] = np.where(df["mean area"] > 700, "large", "small")
    df.loc[::13, "mean texture"] = np.nan
    y_semi = np.where(np.arange(len(y)) % 10 == 0, y, -1)
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0, device="cpu"), df, y_semi)
    model = to_onnx(clf, df)
    served = df.copy()
    served.loc[::4, "size"] = "medium"  # unseen at fit
    served.loc[1::4, "size"] = ""  # missing
    expected = clf.predict_proba(served.replace({"size": {"": np.nan}}))
    path, rows = tmp_path / "model.onnx", tmp_path / "rows.pkl"
    path.write_bytes(model.SerializeToString())
    served.to_pickle(rows)
    script = textwrap.dedent(f"""
        import sys
        sys.modules["qmatch_sklearn"] = sys.modules["torch"] = None  # importing either fails
        import numpy as np, onnxruntime as ort, pandas as pd
        session = ort.InferenceSession({str(path)!r}, providers=["CPUExecutionProvider"])
        rows = pd.read_pickle({str(rows)!r})
        feeds = {{i.name: rows[[c]].to_numpy() for i, c in zip(session.get_inputs(), rows)}}
        np.save(sys.argv[1], session.run(None, feeds)[1])
    """)
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "proba.npy")], check=True)
    proba = np.load(tmp_path / "proba.npy")
    np.testing.assert_allclose(proba, expected, rtol=ATOL, atol=ATOL)


def test_a_missing_category_is_not_the_empty_string_category(wine_with_nan):
    """A column whose categories include "" and whose sample has NaN: the check
    feeds the graph a missing category as no category, as predict reads NaN."""
    X = wine_with_nan[0]
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["kind"] = np.where(X[:, 9] > 5, "", "pale").astype(object)
    frame.loc[::9, "kind"] = np.nan
    encoder = _fit(QMatchEncoder(**tiny_encoder_params(), categorical_features=["kind"]), frame)
    assert "" in list(encoder.categories_[0])
    to_onnx(encoder, frame, parity_tolerance=ATOL)  # refused if NaN were read as ""


@pytest.mark.parametrize("kind", ["category", "integer codes"])
def test_categorical_columns_of_every_kind_are_one_hot_encoded_in_the_graph(kind, wine_with_nan):
    """A pandas category column (fed as strings), and integer codes in an array
    declared categorical by position (``categorical_features=[3]``), the encoder's
    transform as the graph's output."""
    X = wine_with_nan[0]
    codes = (X[:, 9] > 5).astype(int) + (X[:, 9] > 8)
    if kind == "category":
        rows = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
        rows["kind"] = pd.Categorical(np.array(["pale", "deep", "dark"])[codes])
        encoder = QMatchEncoder(**tiny_encoder_params(passthrough=True))
    else:
        rows = np.c_[X[:, :3], codes]
        encoder = QMatchEncoder(**tiny_encoder_params(passthrough=True),
                                categorical_features=[3])
    _fit(encoder, rows)
    graph_rows = rows.astype({"kind": str}) if kind == "category" else rows
    session = ort.InferenceSession(to_onnx(encoder, rows).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    if kind == "category":
        feeds = {i.name: graph_rows[[c]].to_numpy()
                 for i, c in zip(session.get_inputs(), graph_rows, strict=True)}
    else:
        feeds = {session.get_inputs()[0].name: rows}
    (embedded,) = session.run(None, feeds)
    np.testing.assert_allclose(embedded, encoder.transform(rows), rtol=ATOL, atol=ATOL)


def test_frozen_estimators_export_as_the_estimators_they_wrap(digits):
    """A FrozenEstimator step (the encoder fitted once, reused in a pipeline), a
    classifier on a frozen encoder, and a frozen classifier alone (issue #57)."""
    from sklearn.frozen import FrozenEstimator

    X, y = digits[0][:400], digits[1][:400]
    encoder = _fit(QMatchEncoder(**tiny_encoder_params()), X)
    pipeline = _fit(make_pipeline(FrozenEstimator(encoder), LogisticRegression(max_iter=1000)),
                    X, y)
    classifier = _fit(QMatchClassifier(FrozenEstimator(encoder), random_state=0, device="cpu"),
                      X, np.where(np.arange(len(y)) % 5 == 0, y, -1))
    for model in (pipeline, classifier, FrozenEstimator(classifier)):
        labels, proba = _run(to_onnx(model, X), X)
        np.testing.assert_allclose(proba, model.predict_proba(X), rtol=ATOL, atol=ATOL)
        np.testing.assert_array_equal(labels, model.predict(X))


def test_what_the_export_cannot_take_is_refused_before_it_starts(digits):
    """A sample of another width (the graph was built for it, and failed in ONNX
    Runtime), a sparse sample (an IndexError) and an unfitted classifier (an
    AttributeError on classes_) are named."""
    import scipy.sparse as sp
    from sklearn.exceptions import NotFittedError

    X, y = digits[0][:200], np.where(np.arange(200) % 5 == 0, digits[1][:200], -1)
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), random_state=0,
                                device="cpu"), X, y)
    with pytest.raises(ValueError, match=r"shape \(2, 63\), but the model was fitted on 64"):
        to_onnx(clf, X[:2, :63])
    with pytest.raises(ValueError, match="needs dense sample rows"):
        to_onnx(clf, sp.csr_matrix(X[:2]))
    with pytest.raises(NotFittedError):
        to_onnx(QMatchClassifier(), X[:2])


def test_an_exported_file_runs_without_our_code(digits, tmp_path):
    X, y = digits[0][::6], digits[1][::6]  # 300 rows: a boosted member, fitted in seconds
    clf = _fit(QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0, device="cpu"), X, y)
    model = to_onnx(clf, X)
    assert clf.boosted_trees_ is not None
    assert {node.domain for node in model.graph.node} <= {"", "ai.onnx.ml"}
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    np.save(tmp_path / "X.npy", X[:5])
    script = textwrap.dedent(f"""
        import sys
        sys.modules["qmatch_sklearn"] = sys.modules["torch"] = None  # importing either fails
        import numpy as np, onnxruntime as ort
        session = ort.InferenceSession({str(path)!r}, providers=["CPUExecutionProvider"])
        labels, proba = session.run(None, {{"X": np.load({str(tmp_path / 'X.npy')!r})}})
        print(" ".join(map(str, labels)))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(label) for label in clf.predict(X[:5])]


def test_the_serving_benchmark_measures_every_loop(shared_data, tmp_path):
    from benchmarks import serving

    serving.main(["--data-home", str(shared_data), "--calls", "5", "--rows", "500",
                  "--repeats", "1", "--threads", "1", "--out", str(tmp_path)])
    report = (tmp_path / "serving.md").read_text()
    for loop in ("scikit-learn pipeline", "ONNX Runtime, the", "ONNX Runtime, 1,024",
                 "bare torch forward of", "bare torch forward, 1,024",
                 "raw table: `QMatchClassifier", "raw table: ONNX Runtime"):
        assert f"| {loop}" in report
    difference = float(report.split("probability over the 500 rows: ")[1].split(".\n")[0])
    assert difference < ATOL
    raw = float(report.split("largest probability difference ")[1].split(".\n")[0])
    assert raw < ATOL


class Doubler(TransformerMixin, BaseEstimator):
    """Doubles its input: a step whose ONNX converter (registered below) triples it."""

    def fit(self, X, y=None):
        self.n_features_in_ = np.shape(X)[1]
        return self

    def transform(self, X):
        return np.asarray(X) * 2.0


def _wrong_shape(operator):
    operator.outputs[0].type = operator.inputs[0].type.__class__(
        [None, operator.inputs[0].type.shape[1]])


def _wrong_converter(scope, operator, container):
    from skl2onnx.algebra.onnx_ops import OnnxMul
    from skl2onnx.common.data_types import guess_numpy_type

    rows = operator.inputs[0]
    tripled = OnnxMul(rows, np.array([3.0], dtype=guess_numpy_type(rows.type)),
                      op_version=container.target_opset, output_names=operator.outputs[:1])
    tripled.add_to(scope, container)


def test_a_step_whose_converter_is_wrong_is_refused_by_name(digits):
    from skl2onnx import update_registered_converter

    update_registered_converter(Doubler, "TestDoubler", _wrong_shape, _wrong_converter)
    X, y = digits
    pipeline = _fit(make_pipeline(Doubler(), QMatchEncoder(**tiny_encoder_params()),
                                  LogisticRegression(max_iter=1000)), X, y)
    with pytest.raises(ValueError, match=r"first at the step 'doubler' \(Doubler\)"):
        to_onnx(pipeline, X)
    # without the check, the wrong graph is what the user gets
    _, proba = _run(to_onnx(pipeline, X, parity_tolerance=None), X)
    assert not np.allclose(proba, pipeline.predict_proba(X), atol=1e-3)


@pytest.mark.parametrize("distribution", ["uniform", "normal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_quantile_transformer_maps_as_scikit_learn_maps(distribution, dtype, digits):
    """Tied values (most pixels are 0), columns constant at fit, NaN and values beyond
    the fitted range: skl2onnx's own converter put digits' constant pixels at 1 where
    scikit-learn gives 0, and had no normal output (issue #57)."""
    X = digits[0].astype(dtype)
    X[::9, 20] = np.nan  # NaN is ignored at fit and kept by transform
    quantiles = _fit(QuantileTransformer(n_quantiles=100, output_distribution=distribution), X)
    rng = np.random.default_rng(0)
    rows = np.r_[X, X + rng.normal(size=X.shape), 3 * X - 20, X[:1] * np.nan].astype(dtype)
    (mapped,) = _run(to_onnx(quantiles, X), rows)
    expected = quantiles.transform(rows)
    assert mapped.dtype == dtype
    np.testing.assert_array_equal(np.isnan(mapped), np.isnan(expected))
    np.testing.assert_allclose(mapped, expected, rtol=ATOL, atol=ATOL)


def test_the_quantile_transformer_of_integers_or_of_a_frame_declares_its_output():
    """Integer rows map to float64 (the graph computes in float64), a frame's one
    input per column to one output of all its columns."""
    X = np.random.default_rng(0).integers(0, 255, (300, 3))
    quantiles = _fit(QuantileTransformer(n_quantiles=20), X)
    (mapped,) = _run(to_onnx(quantiles, X[:50]), X)
    assert mapped.dtype == np.float64
    np.testing.assert_allclose(mapped, quantiles.transform(X), rtol=ATOL, atol=ATOL)
    frame = pd.DataFrame(X.astype(np.float32), columns=["a", "b", "c"])
    quantiles = _fit(QuantileTransformer(n_quantiles=20), frame)
    session = ort.InferenceSession(to_onnx(quantiles, frame).SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    assert session.get_outputs()[0].shape[1] == 3


@pytest.mark.parametrize("distribution", ["uniform", "normal"])
def test_the_pipeline_of_the_design_card_exports_whole(distribution, digits):
    """ColumnTransformer(OneHotEncoder, QuantileTransformer), then the encoder and a
    logistic regression, on a table of tied numeric values."""
    X, y = digits
    frame = pd.DataFrame(X[:, 16:32], columns=[f"pixel_{i}" for i in range(16)])
    frame["shade"] = np.where(X[:, 36] > 8, "dark", "light").astype(object)
    pipeline = make_pipeline(
        ColumnTransformer([
            ("categories", OneHotEncoder(handle_unknown="ignore"), ["shade"]),
            ("numbers", QuantileTransformer(n_quantiles=100, output_distribution=distribution),
             list(frame.columns[:16])),
        ]),
        QMatchEncoder(**tiny_encoder_params()), LogisticRegression(max_iter=1000))
    _fit(pipeline, frame, y)
    labels, proba = _run(to_onnx(pipeline, frame), frame)
    np.testing.assert_allclose(proba, pipeline.predict_proba(frame), rtol=ATOL, atol=ATOL)
    np.testing.assert_array_equal(labels, pipeline.predict(frame))


@pytest.mark.parametrize(("graph", "agrees"), [
    ([[0.5, np.nan]], True),  # NaN where the model gives NaN too (a passed-through input)
    ([[0.5, 0.25]], False),  # a number where the model gives NaN
    ([[np.nan, np.nan]], False),  # NaN where the model gives a number
])
def test_the_parity_check_counts_nan_on_one_side_as_disagreement(graph, agrees, monkeypatch):
    from qmatch_sklearn import _onnx

    monkeypatch.setattr(_onnx, "_fitted_outputs", lambda model, rows: np.array([[0.5, np.nan]]))
    monkeypatch.setattr(_onnx, "_graph_outputs", lambda session, rows: [np.array(graph)])
    assert (_onnx._disagreement(object(), None, None) == 0.0) is agrees
