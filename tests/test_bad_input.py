"""Bad input, one row each: a clear error that names the problem, before any training."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import (
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
    TabNetEncoder,
    VICRegEncoder,
    _base,
    _head,
)
from qmatch_sklearn._table import holds_non_numbers

from .conftest import tiny_encoder_params, tiny_method_params

X, Y = make_classification(n_samples=120, n_features=6, n_classes=3, n_informative=4,
                           random_state=0)
Y_SEMI = np.where(np.arange(len(Y)) % 4 == 0, Y, -1)
STRINGS = np.array(["a", "b", "c"])[Y]
Y_REAL = X[:, 0] - 2 * X[:, 1]
Y_REAL_SEMI = np.where(np.arange(len(Y)) % 4 == 0, Y_REAL, np.nan)
#: X as a table with a categorical column, and variants of it
TABLE = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(
    kind=pd.Categorical(STRINGS))
TABLE_NO_KIND = TABLE.assign(kind=pd.Categorical([np.nan] * len(Y), categories=[]))
TABLE_MANY_KINDS = pd.DataFrame({"x0": np.arange(300.0), "kind": [f"id{i}" for i in range(300)]})
TABLE_KIND_AS_CODES = TABLE.assign(kind=TABLE["kind"].cat.codes.astype(float))
TABLE_NO_X2 = TABLE.assign(x2=np.nan)
DATES = pd.date_range("2020-01-01", periods=len(Y), freq="D")


def encoder(**params):
    return QMatchEncoder(**tiny_encoder_params(**params))


def classifier(**params):
    return QMatchClassifier(encoder(), **{"device": "cpu", "random_state": 0, **params})


def regressor(**params):
    return QMatchRegressor(encoder(), **{"device": "cpu", "random_state": 0, **params})


def with_minus_one(labels, dtype):
    y = labels.astype(object)
    y[::4] = -1
    return y.astype(dtype)


#: (estimator, fit arguments, exception, message pattern)
CASES = {
    "projection_sizes=(0,)": (encoder(projection_sizes=(0,)), (X,), ValueError,
                              "'projection_sizes' .* non-empty tuple of positive integers"),
    "projection_sizes=()": (encoder(projection_sizes=()), (X,), ValueError,
                            "'projection_sizes' .* non-empty tuple"),
    "hidden_sizes=(16.7,)": (encoder(hidden_sizes=(16.7,)), (X,), ValueError,
                             "'hidden_sizes' .* positive integers. Got \\(16.7,\\)"),
    "mlp hidden_sizes=(0,)": (SupervisedMLPClassifier(hidden_sizes=(0,)), (X, Y), ValueError,
                              "'hidden_sizes'"),
    "device='gpu'": (encoder(device="gpu"), (X,), ValueError,
                     "'device' .* 'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps'. Got 'gpu'"),
    "device='cuda:x'": (encoder(device="cuda:x"), (X,), ValueError, "'device'"),
    "classifier device='tpu'": (classifier(device="tpu"), (X, Y), ValueError, "'device'"),
    "lr=1e38": (encoder(lr=1e38), (X,), ValueError, "'lr' .* range"),
    "encoder=StandardScaler()": (QMatchClassifier(StandardScaler()), (X, Y), ValueError,
                                 "'encoder' .* an encoder of qmatch_sklearn"),
    "encoder=FrozenEstimator(StandardScaler())": (
        QMatchClassifier(FrozenEstimator(StandardScaler().fit(X))), (X, Y), ValueError,
        "'encoder'"),
    "string y with '-1'": (classifier(), (X, with_minus_one(STRINGS, str)), ValueError,
                           "string dtype.*object array"),
    "list of strings and -1": (classifier(), (X, list(with_minus_one(STRINGS, object))),
                               ValueError, "string dtype"),
    "object y with the string '-1'": (
        classifier(), (X, np.where(Y_SEMI == -1, "-1", STRINGS).astype(object)), ValueError,
        "string '-1'.*integer -1"),
    "one class labeled": (classifier(), (X, np.where(Y == 0, 0, -1)), ValueError,
                          "at least 2 classes"),
    "too few labeled rows": (classifier(validation_fraction=0.1),
                             (X, np.r_[0, 1, np.full(len(Y) - 2, -1)]),
                             ValueError, "leaves 1 training row"),
    "X_val without y_val": (classifier(), (X, Y_SEMI), ValueError, "both X_val and y_val",
                            {"X_val": X[:10]}),
    "X_val of another width": (classifier(), (X, Y_SEMI), ValueError, "features",
                               {"X_val": X[:10, :4], "y_val": Y[:10]}),
    "y_val with unseen labels": (classifier(), (X, Y_SEMI), ValueError, "not among",
                                 {"X_val": X[:10], "y_val": np.full(10, 7)}),
    "X_val and y_val of other lengths": (classifier(), (X, Y_SEMI), ValueError,
                                         "same, non-zero number of rows",
                                         {"X_val": X[:10], "y_val": Y[:9]}),
    "X with infinity": (encoder(), (np.where(X > 2, np.inf, X),), ValueError, "infinity"),
    "X with an all-NaN column": (
        encoder(), (np.where(np.arange(X.shape[1]) == 2, np.nan, X),), ValueError,
        r"Column\(s\) \[2\] of X have no observed value",
    ),
    "TabNet masking nothing": (
        TabNetEncoder(**tiny_method_params("tabnet", corruption=0.0)), (X,), ValueError,
        r"'corruption' parameter of TabNetEncoder must be a float in the range \(0.0, 1.0\]"),
    "VICReg with every loss weight 0": (
        VICRegEncoder(**tiny_method_params("vicreg", invariance_weight=0, variance_weight=0,
                                           covariance_weight=0)), (X,), ValueError,
        "are all 0, so the loss is 0 and nothing would train"),
    "X_val with a column fewer": (encoder(), (X,), ValueError, "^X_val: X has 5 features",
                                  {"X_val": X[:10, :5]}),
    "classifier X_val with infinity": (
        classifier(), (X, Y_SEMI), ValueError, "^X_val: Input X contains infinity",
        {"X_val": np.where(X[:10] > 1, np.inf, X[:10]), "y_val": Y[:10]}),
    "X_val with NaN, X without": (encoder(), (X,), ValueError, "^X_val: X has missing values",
                                  {"X_val": np.where(X[:10] > 1, np.nan, X[:10])}),
    "classifier X_val with NaN, X without": (
        classifier(), (X, Y_SEMI), ValueError, "X has missing values",
        {"X_val": np.where(X[:10] > 1, np.nan, X[:10]), "y_val": Y[:10]}),
    "classifier X with an all-NaN column": (
        classifier(), (np.where(np.arange(X.shape[1]) == 0, np.nan, X), Y_SEMI), ValueError,
        r"Column\(s\) \[0\] of X have no observed value"),
    "a table with an all-NaN column, named": (
        encoder(), (TABLE_NO_X2,), ValueError,
        r"Column\(s\) \['x2'\] of X have no observed value"),
    "classifier on a table with an all-NaN column, named": (
        classifier(), (TABLE_NO_X2, Y_SEMI), ValueError,
        r"Column\(s\) \['x2'\] of X have no observed value"),
    "a column of dates": (encoder(), (TABLE.assign(when=DATES),), ValueError,
                          r"Column\(s\) 'when' \(datetime64\[.s\]\) of X are neither numeric "
                          "nor categorical"),
    "a column of dates read as numbers": (
        encoder(categorical_features=None), (TABLE[["x0"]].assign(when=DATES),), ValueError,
        r"'when' \(datetime64\[.s\]\) of X are neither numeric nor categorical"),
    "a column of dates alone": (
        encoder(categorical_features=None), (pd.DataFrame({"when": DATES}),), ValueError,
        "'when' .* neither numeric nor categorical"),
    "columns of durations and periods": (
        classifier(), (TABLE.assign(took=DATES - DATES[0],
                                    month=pd.period_range("2020-01", periods=len(Y), freq="M")),
                       Y_SEMI), ValueError,
        r"'took' \(timedelta64\[.s\]\), 'month' \(period\[M\]\) of X are neither"),
    "a categorical column of lists": (
        encoder(), (TABLE.assign(tags=[["a", "b"], ["c"]] * (len(Y) // 2)),), ValueError,
        r"Categorical column 'tags' of X holds values that cannot be categories \(unhashable"),
    "one class labeled beside unlabeled rows": (
        classifier(), (X, np.where(Y == 0, 0, -1)), ValueError,
        r"got 1 class among \d+ labeled rows \(\d+ rows labeled -1 are unlabeled rows"),
    "an infinite class weight": (classifier(class_weight={0: np.inf}), (X, Y_SEMI), ValueError,
                                 r"class_weight has negative, infinite or NaN weights"),
    "weights whose product overflows": (
        classifier(class_weight={0: 1e300}), (X, Y_SEMI), ValueError,
        "sample_weight times class_weight overflows float64",
        {"sample_weight": np.full(len(Y), 1e300)}),
    "feature_groups with a column out of range": (
        encoder(feature_groups=[[0, 99]]), (X,), ValueError, "index 99"),
    "feature_groups naming columns of an array": (
        encoder(feature_groups=[["a", "b"]]), (X,), ValueError, "X has no column names"),
    "sample_weight of another length": (classifier(), (X, Y_SEMI), ValueError,
                                        "sample_weight.shape", {"sample_weight": np.ones(5)}),
    "negative sample_weight": (classifier(), (X, Y_SEMI), ValueError, "Negative values",
                               {"sample_weight": -np.ones(len(Y))}),
    "classifier y with None for unlabeled rows": (
        classifier(), (X, np.array(["a" if v else None for v in Y == 1], dtype=object)),
        ValueError, "y holds None or NaN; a classifier's unlabeled rows are marked with the "
                    "integer -1"),
    "classifier y mixing strings and numbers": (
        classifier(), (X, np.array(["a" if v == 1 else v for v in Y_SEMI], dtype=object)),
        ValueError, "y mixes strings and numbers among its labels"),
    "labeled rows all of weight 0": (
        classifier(), (X, Y_SEMI), ValueError,
        r"the labeled rows of weight above 0 \(sample_weight, class_weight\) number 0",
        {"sample_weight": np.where(Y_SEMI == -1, 1.0, 0.0)}),
    "regressor with 1 labeled row of weight above 0": (
        regressor(), (X, Y_REAL_SEMI), ValueError,
        r"the labeled rows of weight above 0 \(sample_weight\) number 1; at least 2 are",
        {"sample_weight": np.where(np.arange(len(Y)) == 4, 1.0, 0.0)}),
    "regressor with a second labeled row of weight 0 in float32": (
        regressor(), (X, Y_REAL_SEMI), ValueError,
        r"the labeled rows of weight above 0 \(sample_weight\) number 1",
        {"sample_weight": np.where(np.arange(len(Y)) == 4, 1.0,
                                   np.where(np.arange(len(Y)) == 8, 1e-50, 0.0))}),
    "class_weight naming an unseen class": (classifier(class_weight={0: 1.0, 9: 2.0}),
                                            (X, Y_SEMI), ValueError, r"class_weight has.*\[9\]"),
    "class_weight with a negative weight": (classifier(class_weight={0: 1.0, 1: -1.0}),
                                            (X, Y_SEMI), ValueError,
                                            r"class_weight has negative.*\{1: -1\.0\}"),
    "class_weight not a dict nor 'balanced'": (classifier(class_weight="even"), (X, Y_SEMI),
                                               ValueError, "'class_weight' parameter"),
    "X with strings": (encoder(), (np.full((5, 2), "a"),), ValueError,
                       "needs numeric features"),
    "regressor y with infinity": (regressor(), (X, np.where(Y_REAL > 2, np.inf, Y_REAL_SEMI)),
                                  ValueError, "Input y contains infinity"),
    "regressor y row partly NaN": (
        regressor(), (X, np.c_[Y_REAL, np.where(np.arange(len(Y)) == 5, np.nan, Y_REAL)]),
        ValueError, r"1 row\(s\) with some targets NaN and others not \(the first is row 5\)"),
    "regressor with 1 labeled row": (regressor(), (X, np.r_[1.5, np.full(len(Y) - 1, np.nan)]),
                                     ValueError, "at least 2 labeled rows.*got 1 among 120"),
    "mlp regressor with no labeled row": (SupervisedMLPRegressor(), (X, np.full(len(Y), np.nan)),
                                          ValueError, "at least 2 labeled rows"),
    "regressor y None": (regressor(), (X, None), ValueError, "requires y to be passed"),
    "regressor y of strings": (regressor(), (X, STRINGS), ValueError, "could not convert"),
    "regressor X_val without y_val": (regressor(), (X, Y_REAL_SEMI), ValueError,
                                      "both X_val and y_val", {"X_val": X[:10]}),
    "regressor y_val without X_val": (regressor(), (X, Y_REAL_SEMI), ValueError,
                                      "both X_val and y_val", {"y_val": Y_REAL[:10]}),
    "regressor y_val with NaN": (regressor(), (X, Y_REAL_SEMI), ValueError,
                                 "y_val has NaN: every validation row needs all its targets",
                                 {"X_val": X[:10], "y_val": np.r_[np.nan, Y_REAL[1:10]]}),
    "regressor y_val with other outputs": (
        regressor(), (X, Y_REAL_SEMI), ValueError, "y_val has 2 target.*y has 1",
        {"X_val": X[:10], "y_val": np.c_[Y_REAL[:10], Y_REAL[:10]]}),
    "regressor X_val and y_val of other lengths": (
        regressor(), (X, Y_REAL_SEMI), ValueError, "same, non-zero number of rows",
        {"X_val": X[:10], "y_val": Y_REAL[:9]}),
    "regressor scoring='accuracy'": (regressor(scoring="accuracy"), (X, Y_REAL), ValueError,
                                     "'scoring' .*'loss'"),
    "regressor encoder=StandardScaler()": (QMatchRegressor(StandardScaler()), (X, Y_REAL),
                                           ValueError, "'encoder' .* an encoder of qmatch"),
    "precision='16-mixed' on the CPU": (encoder(precision="16-mixed"), (X,), ValueError,
                                        "'16-mixed' needs a CUDA device"),
    "classifier precision='16-mixed' on the CPU": (classifier(precision="16-mixed"), (X, Y),
                                                   ValueError, "needs a CUDA device"),
    "precision='fp8'": (encoder(precision="fp8"), (X,), ValueError, "'precision' parameter"),
    "categorical column all missing": (encoder(), (TABLE_NO_KIND,), ValueError,
                                       "Categorical column 'kind' of X has no observed value"),
    "categorical column with 300 categories": (encoder(), (TABLE_MANY_KINDS,), ValueError,
                                               "'kind' of X has 300 categories, more than 255"),
    "categorical_features naming an unknown column": (
        encoder(categorical_features=["colour"]), (TABLE,), ValueError,
        "categorical_features names the column 'colour', which is not among X's columns"),
    "categorical_features naming columns of an array": (
        encoder(categorical_features=["kind"]), (X,), ValueError,
        "categorical_features names the column 'kind', but X has no column names"),
    "categorical_features index out of range": (
        encoder(categorical_features=[99]), (X,), ValueError, "column index 99"),
    "categorical_features mask of the wrong length": (
        encoder(categorical_features=[True, False]), (X,), ValueError,
        "boolean mask of 2 entries, but X has 6 columns"),
    "categorical_features='auto'": (encoder(categorical_features="auto"), (X,), ValueError,
                                    "'categorical_features' parameter"),
    "categorical_features on sparse X": (encoder(categorical_features=[0]),
                                         (sp.csr_matrix(X),), ValueError, "needs dense X"),
    "X_val whose categorical column became numeric": (
        encoder(), (TABLE,), ValueError,
        r"'kind' \(categorical at fit, dtype float64 now\)",
        {"X_val": TABLE_KIND_AS_CODES.head(10)}),
    "classifier y_val with two columns": (
        classifier(), (X, Y_SEMI), ValueError, r"^y_val: y should be a 1d array",
        {"X_val": X[:10], "y_val": np.column_stack([Y[:10], Y[:10]])}),
    "regressor y_val in other units": (
        regressor(), (X, Y_REAL_SEMI), ValueError,
        r"y_val lies up to .* standard deviations .* Are y and y_val in the same units",
        {"X_val": X[:10], "y_val": Y_REAL[:10] * 1e30}),
    "classifier y_val with None": (
        classifier(), (X, with_minus_one(STRINGS, object)), ValueError,
        r"y_val has labels not among the labeled rows of y: \[None\]",
        {"X_val": X[:10], "y_val": np.array([None, *STRINGS[1:10]], dtype=object)}),
    "classifier X_val as an array after a categorical table": (
        classifier(), (TABLE, Y_SEMI), ValueError,
        r"fitted on a DataFrame with categorical columns \(kind\); pass a DataFrame",
        {"X_val": X[:10], "y_val": Y[:10]}),
}


@pytest.fixture
def no_training(monkeypatch):
    """Training starting is a test failure: every check must come before it."""

    def train_net(*args, **kwargs):
        raise AssertionError("training started before the bad input was reported")

    # the encoders' fit (_base) and the supervised stage of every classifier and
    # regressor (_head) are the only callers
    monkeypatch.setattr(_base, "train_net", train_net)
    monkeypatch.setattr(_head, "train_net", train_net)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_input_is_reported_before_training(case, no_training):
    estimator, args, error, pattern, *fit_params = CASES[case]
    kept = [a.copy() if isinstance(a, (np.ndarray, pd.DataFrame)) else a for a in args]
    with pytest.raises(error, match=pattern):
        estimator.fit(*args, **(fit_params[0] if fit_params else {}))
    for before, after in zip(kept, args, strict=True):  # nothing the user passed is modified
        if isinstance(before, pd.DataFrame):
            pd.testing.assert_frame_equal(before, after)
        elif not sp.issparse(before):
            np.testing.assert_array_equal(np.asarray(before), np.asarray(after))


def test_integer_minus_one_in_an_object_array_marks_unlabeled_string_rows():
    y = with_minus_one(STRINGS, object)
    clf = QMatchClassifier(encoder(), max_epochs=3, device="cpu", random_state=0).fit(X, y)
    assert list(clf.classes_) == ["a", "b", "c"]


@pytest.mark.parametrize(("X", "expected"), [
    (np.full((2, 2), "a"), True),
    ([["a", 1.0]], True),
    (pd.DataFrame({"a": [1.0, 2.0], "b": pd.Categorical(["x", "y"])}), True),
    (np.array([[1, "2"]], dtype=object), False),  # converts: not a matter of strings
    (np.array([[1.0, np.nan]]), False),
    (pd.DataFrame({"a": pd.array([1, None], dtype="Int64")}), False),
])
def test_non_numbers_are_judged_from_the_input(X, expected):
    assert holds_non_numbers(X) is expected


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


#: a fitted estimator, its fit, a refit that fails, and the output to compare
REFITS = {
    "classifier, y of one class": (
        classifier, (TABLE, Y_SEMI), (TABLE.assign(x0=TABLE["x0"] * 1e3),
                                      np.zeros(len(Y), dtype=int)), {}, "predict_proba"),
    "encoder, a column all NaN": (encoder, (TABLE,), (TABLE_NO_X2,), {}, "transform"),
    "regressor, X_val without y_val": (regressor, (X, Y_REAL_SEMI), (X * 5.0, Y_REAL_SEMI),
                                       {"X_val": X[:10]}, "predict"),
    "supervised MLP, every weight 0": (
        lambda: SupervisedMLPClassifier(hidden_sizes=(8,), max_epochs=2, random_state=0),
        (X, Y), (X * 5.0, Y), {"sample_weight": np.zeros(len(Y))}, "predict_proba"),
    "encoder, interrupted": (encoder, (X,), (X * 5.0,), {"interrupt": True}, "transform"),
    "encoder, a first partial_fit refused": (encoder, (TABLE,), (TABLE_NO_X2,),
                                              {"method": "partial_fit"}, "transform"),
    "classifier, interrupted": (lambda: classifier(freeze_encoder=False), (X, Y),
                                (X * 5.0, Y), {"interrupt": True}, "predict_proba"),
}


@pytest.mark.parametrize("case", REFITS, ids=list(REFITS))
def test_a_refit_that_fails_keeps_the_fitted_estimator_whole(case, monkeypatch):
    make, good, bad, fit_params, output = REFITS[case]
    estimator = make().fit(*good)
    expected = getattr(estimator, output)(good[0])
    names = getattr(estimator, "feature_names_in_", None)
    fit_params = dict(fit_params)
    if fit_params.pop("interrupt", False):
        monkeypatch.setattr(_base, "train_net", _interrupt)
        monkeypatch.setattr(_head, "train_net", _interrupt)
    with pytest.raises((ValueError, KeyboardInterrupt)):
        getattr(estimator, fit_params.pop("method", "fit"))(*bad, **fit_params)
    np.testing.assert_array_equal(getattr(estimator, output)(good[0]), expected)
    if names is not None:
        np.testing.assert_array_equal(estimator.feature_names_in_, names)


def test_a_column_y_val_is_read_as_a_column_y_is():
    """y_val of shape (n, 1) (a one-column DataFrame) is read as y of that shape is."""
    def fit(y_val):
        return classifier(max_epochs=2).fit(X, Y, X_val=X[:20], y_val=y_val).predict_proba(X)

    with pytest.warns(UserWarning, match="column-vector y"):
        from_column = fit(pd.DataFrame({"target": Y[:20]}))
    np.testing.assert_array_equal(from_column, fit(Y[:20]))
