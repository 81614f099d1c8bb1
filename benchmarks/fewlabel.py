"""Few-label benchmark on real tables: our defaults against the user's usual tools (issue #16).

For each (table, seed) every contender sees exactly the same rows (the split rules are
in ``_fewlabel_tables.py``): a few labeled train rows (1% of train, at least 5 per
class; the paper's labeled rows for its four 1% configurations), every other train
row unlabeled, and held-out test rows. Contenders, each at its defaults:

- ``logreg``: ``LogisticRegressionCV`` on the preprocessed labeled rows; ``C`` among its
  10 default values (1e-4 .. 1e4) by stratified k-fold on the labeled rows,
  k = min(5, rows of the smallest class), scored by log-loss (accuracy on a handful of
  rows ties too often); ``LogisticRegression(C=1)`` when a class has a single labeled
  row. ``max_iter=1000``.
- ``hgb``: ``HistGradientBoostingClassifier`` on the raw labeled rows (native NaN,
  ``categorical_features="from_dtype"``), ``min_samples_leaf = max(1, n_labeled // 20)``
  (its default, 20, would forbid any split on 15 rows), no early stopping.
- ``tabnet``: pytorch-tabnet's ``TabNetPretrainer`` on all preprocessed train rows
  (early stopping at its default patience, 10, on a seeded 10% of them), then
  ``TabNetClassifier(from_unsupervised=...)`` on the labeled rows (its default 100
  epochs; no validation rows to spare). Pretraining gets at most
  ``tabnet_pretrain_epochs(n)`` epochs = min(100, max(10, 2,000,000 // n)): its default
  100 up to 20,000 train rows, fewer above so one CPU core can afford it. Batch sizes
  are its defaults, shrunk to the set's size where smaller (it drops partial batches).
- ``catboost``: ``CatBoostClassifier`` at its defaults (1,000 iterations, depth 6, its own
  learning rate) on the raw labeled rows: numeric NaN natively, the categorical columns as
  ``cat_features`` (a missing category is the string ``"nan"``); one thread, seeded.
- ``lightgbm`` and ``xgboost``: ``LGBMClassifier`` and ``XGBClassifier`` at their defaults
  (100 trees each; ``enable_categorical=True`` for XGBoost) on the raw labeled rows, the
  category columns and NaN read natively; one thread, seeded. LightGBM's
  ``min_child_samples=20`` allows no split under 40 labeled rows: there it predicts the
  labeled rows' most frequent class, which the judge keeps as what the default gives.
- ``selftrain_lr``: scikit-learn's ``SelfTrainingClassifier`` (its defaults: threshold 0.75,
  at most 10 rounds) around the ``logreg`` recipe's model (``C`` chosen by the same CV on the
  labeled rows, then fixed), on all preprocessed train rows, ``y = -1`` on the unlabeled ones.
- ``selftrain_hgb``: the same around the ``hgb`` recipe's model, on all preprocessed train
  rows (``SelfTrainingClassifier`` validates ``X`` to an array, so the raw table's category
  dtypes do not reach the boosting).
- ``qmatch_lr``: ``QMatchEncoder(random_state=seed)`` fitted on all preprocessed train
  rows, then the ``logreg`` recipe on the embeddings of the labeled rows.
- ``qmatch_clf``: ``QMatchClassifier(random_state=seed)`` on all preprocessed train rows,
  ``y = -1`` on the unlabeled ones (it pretrains its own encoder, then fits its head);
  ``details`` records the pretraining epochs' seconds and the head's (:func:`head_seconds`).
- ``qmatch_hgb``: ``QMatchEncoder(passthrough=True, random_state=seed)`` fitted on all
  preprocessed train rows, then the ``hgb`` recipe on the labeled rows' preprocessed
  features beside their embedding: does the embedding help boosting where boosting is
  the best raw contender?
- ``qmatch_lr_raw``, ``qmatch_clf_raw``, ``qmatch_hgb_raw``: the same on the raw table
  (the DataFrame as loaded: numeric columns in their units with their NaN, categorical
  columns as categories), which the library reads natively: the one call of a user who
  hands a DataFrame to the estimator (issue #30).
- ``qmatch_clf_quantile``: ``qmatch_clf`` with the numeric columns mapped to a normal by
  their quantiles (``QuantileTransformer(output_distribution="normal")``, the paper's
  preprocessing) instead of standardised: the library's own numeric map could be either.
- ``qmatch_clf_selftrain`` and ``qmatch_clf_plain``: ``qmatch_clf`` with
  ``self_training=True`` and ``False`` (issue #31): the few-label head also fits logistic
  regressions self-trained on the unlabeled rows and weighs them by cross-validated
  likelihood, or does not. Same seeds, so the same pretrained encoder as ``qmatch_clf``: each
  pair differs in the head alone. Self-training is the default from config ``auto-v11`` on,
  so there ``qmatch_clf_selftrain`` is ``qmatch_clf`` and ``qmatch_clf_plain`` the ablation;
  the ``auto-v10`` rows of ``qmatch_clf_selftrain`` measured self-training alone (before the
  boosted member's new settings).
- ``qmatch_clf_spread``: ``qmatch_clf`` with ``label_spreading=True`` (issue #54): each
  regression of the head also gets a twin trained on labels spread over the unlabeled rows'
  neighbour graph, weighed like the self-trained one. Same seeds, so the same encoder: the
  pair shows where the public parameter wins or loses.

Preprocessing for every contender but ``hgb`` (``make_preprocessor``): numeric columns
median-imputed and standardised, categorical ones most-frequent-imputed and one-hot
encoded (``handle_unknown="ignore"``), fitted on all train rows, labeled and unlabeled
(legitimate in semi-supervised learning). The library refuses NaN, hence the imputer.

Each result is appended to ``benchmarks/results/fewlabel.csv`` as soon as it is measured,
with the library commit and a free-form ``--config`` label: a later session that changes
the library's defaults re-runs the suite under a new label and the report compares the
two. (table, seed, contender, config) already in the CSV are skipped, so an interrupted
run resumes. ``fit_seconds`` is the contender's fit on one thread and its prediction of
the test rows, timed together for every contender (pretraining included; the
preprocessing and the scores excluded). ``python -m benchmarks.fewlabel_report``
writes ``fewlabel.md`` and ``fewlabel.png`` from the CSV.

Seeds: 0-4 on every table; from config ``auto-v14`` on, seeds 5-19 too on the seven tables
with fewer than 50 labeled rows (wine, breast_cancer, penguins, titanic, attrition, chile,
credit), for every contender the report compares (ours, ``logreg``, ``hgb`` and the peers):
on 10-32 labeled rows one seed's accuracy swings by 5-10 points, and the best of six
contenders on five seeds is the luckiest as much as the best (of the other contenders,
the one best on seeds 0-4 of those tables was not the best on seeds 5-19 on 4 of the 7).
The report compares each configuration with the other contenders on that configuration's
seeds alone. On penguins seed 12 the train rows hold no NaN and the test rows do: the raw
call reads them as the columns' fit means (with a warning), as an estimator fitted without
missing values does since commit 4adce42 (it refused them before, and that row was missing).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python -m benchmarks.fewlabel \\
        --data-home ../shared/data
    python -m benchmarks.fewlabel --tables wine penguins --contenders logreg qmatch_clf \\
        --seeds 0 1 --config defaults --max-minutes 30
"""

import functools
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, QuantileTransformer, StandardScaler
from sklearn.semi_supervised import SelfTrainingClassifier
from sklearn.utils import Bunch

from qmatch_sklearn import QMatchClassifier, QMatchEncoder

from ._fewlabel_tables import TABLES, split_table
from ._harness import Store, class_scores, run_grid, split_sizes, study_parser, timed

RESULTS = Path(__file__).parent / "results" / "fewlabel.csv"
FIELDS = [
    "table", "seed", "contender", "config", "commit", "accuracy", "balanced_accuracy",
    "n_labeled", "n_unlabeled", "n_test", "n_classes", "fit_seconds", "encoder_best_epoch",
    "encoder_n_epochs", "head_best_epoch", "head_n_epochs", "details", "machine", "finished",
]
KEY = ("table", "seed", "contender", "config")
RAW = ("logreg", "hgb")  # the user's usual tools: "best raw contender" is the better one
#: What a data scientist would also pick (issue #31): boosting with native categories, and
#: scikit-learn's own semi-supervised wrapper around the usual tools.
PEERS = ("catboost", "lightgbm", "xgboost", "selftrain_lr", "selftrain_hgb")
PREPROCESSED = ("qmatch_lr", "qmatch_clf", "qmatch_hgb")
#: each of ours also on the raw table (``<name>_raw``), the one call a user makes on a DataFrame
OURS = (*PREPROCESSED, *(f"{name}_raw" for name in PREPROCESSED), "qmatch_clf_quantile",
        "qmatch_clf_selftrain", "qmatch_clf_plain", "qmatch_clf_spread")
CONTENDERS = (*RAW, "tabnet", *PEERS, *OURS)
#: ``--smoke``: tiny networks and 2-3 epochs, to test the harness end to end in seconds.
SMOKE_ENCODER = {"hidden_sizes": (16,), "embedding_dim": 8, "projection_sizes": (16, 8),
                 "queue_size": 64, "batch_size": 64, "max_epochs": 2}
SMOKE_HEAD = {"max_epochs": 3}
SMOKE_TABNET_EPOCHS = 2


#: The dtypes of categorical columns.
CATEGORICAL_DTYPES = ["category", "object", "string"]


def make_preprocessor(numeric_steps=None, one_hot=True):
    """Numbers for the contenders that need them: the numeric columns through
    ``numeric_steps`` (default: median imputation, then standardisation), the
    categorical ones most-frequent imputed and one-hot encoded; with
    ``one_hot=False`` they pass through as they are, in a DataFrame (for an
    estimator that reads categories natively)."""
    if numeric_steps is None:
        numeric_steps = [SimpleImputer(strategy="median"), StandardScaler()]
    categorical = "passthrough" if not one_hot else make_pipeline(
        SimpleImputer(strategy="most_frequent"),
        OneHotEncoder(handle_unknown="ignore", sparse_output=False))
    transformer = ColumnTransformer([
        ("numeric", make_pipeline(*numeric_steps),
         make_column_selector(dtype_exclude=CATEGORICAL_DTYPES)),
        ("categorical", categorical, make_column_selector(dtype_include=CATEGORICAL_DTYPES)),
    ], verbose_feature_names_out=one_hot)
    return transformer if one_hot else transformer.set_output(transform="pandas")


def _as_object(X):
    """Categorical columns as object with NaN: SimpleImputer does not take the category dtype."""
    X = X.copy()
    for column in X.columns:
        if isinstance(X[column].dtype, pd.CategoricalDtype):
            X[column] = X[column].astype(object).where(X[column].notna(), np.nan)
    return X


def prepare(table, seed, data_home, tables=TABLES):
    """The split of (``tables[table]``, seed) and its preprocessed float32 rows."""
    data = split_table(tables[table], seed, data_home)
    preprocessor = make_preprocessor().fit(_as_object(data.X_train))
    data.Xp_train = preprocessor.transform(_as_object(data.X_train)).astype(np.float32)
    data.Xp_test = preprocessor.transform(_as_object(data.X_test)).astype(np.float32)
    return data


def logistic(y, seed):
    """The ``logreg`` recipe: C by stratified CV on the labeled rows where every class allows
    two folds, C=1 otherwise."""
    smallest = np.unique(y, return_counts=True)[1].min()
    if smallest < 2:
        return LogisticRegression(C=1.0, max_iter=1000), {"C": 1.0, "cv_folds": 0}
    folds = StratifiedKFold(min(5, smallest), shuffle=True, random_state=seed)
    model = LogisticRegressionCV(cv=folds, scoring="neg_log_loss", l1_ratios=(0.0,),
                                 use_legacy_attributes=False, max_iter=1000)
    return model, {"cv_folds": int(folds.n_splits)}


def fit_logistic(X, y, seed):
    model, details = logistic(y, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings at the extreme Cs
        model.fit(X, y)
    if hasattr(model, "C_"):
        details["C"] = float(model.C_)
    return model, details


def tabnet_pretrain_epochs(n_rows):
    """TabNet's default 100 pretraining epochs up to 20,000 rows; ~2M row-passes above."""
    return min(100, max(10, 2_000_000 // n_rows))


def _tabnet_batches(*sets):
    """TabNet's default batch sizes, shrunk to the smallest set (it drops partial batches)."""
    batch_size = min(1024, *(len(rows) for rows in sets))
    return {"batch_size": batch_size, "virtual_batch_size": min(128, batch_size)}


def run_logreg(data, seed, smoke):
    model, details = fit_logistic(data.Xp_train[data.labeled], data.y_train[data.labeled], seed)
    return model.predict(data.Xp_test), details


def boosting(data, seed):
    """``HistGradientBoostingClassifier`` for the labeled rows of ``data``."""
    n_labeled = int(data.labeled.sum())
    return HistGradientBoostingClassifier(
        categorical_features="from_dtype", min_samples_leaf=max(1, n_labeled // 20),
        early_stopping=False, random_state=seed)


def run_hgb(data, seed, smoke):
    model = boosting(data, seed).fit(data.X_train[data.labeled], data.y_train[data.labeled])
    return model.predict(data.X_test), {"min_samples_leaf": model.min_samples_leaf}


def catboost_frames(data):
    """The raw train and test tables as CatBoost reads them, and their categorical
    columns: categories as strings, a missing one as ``"nan"``."""
    categorical = [c for c in data.X_train.columns
                   if isinstance(data.X_train[c].dtype, pd.CategoricalDtype)]
    X_train, X_test = (X.assign(**{c: X[c].astype(object).where(X[c].notna(), "nan")
                                   .astype(str) for c in categorical})
                       for X in (data.X_train, data.X_test))
    return X_train, X_test, categorical


def catboost_params(seed, categorical, smoke):
    """CatBoost at its defaults: one thread, seeded, silent, writing no files."""
    return {"random_seed": seed, "thread_count": 1, "verbose": 0, "cat_features": categorical,
            "allow_writing_files": False, **({"iterations": 20} if smoke else {})}


def run_catboost(data, seed, smoke):
    from catboost import CatBoostClassifier

    X_train, X_test, categorical = catboost_frames(data)
    model = CatBoostClassifier(**catboost_params(seed, categorical, smoke))
    model.fit(X_train[data.labeled], data.y_train[data.labeled])
    return model.predict(X_test).ravel().astype(data.y_train.dtype), {
        "iterations": int(model.tree_count_)}


def _labeled_codes(data):
    """The labeled rows' classes as 0..k-1 codes (what XGBoost asks), and their labels."""
    labels, codes = np.unique(data.y_train[data.labeled], return_inverse=True)
    return codes, labels


def lightgbm_params(seed, smoke):
    """LightGBM at its defaults: one thread, seeded, silent; the category dtype is read as
    categorical and NaN natively."""
    return {"random_state": seed, "n_jobs": 1, "verbose": -1,
            **({"n_estimators": 5} if smoke else {})}


def xgboost_params(seed, smoke):
    """XGBoost at its defaults: one thread, seeded, the category dtype read as categorical."""
    return {"enable_categorical": True, "random_state": seed, "n_jobs": 1,
            **({"n_estimators": 5} if smoke else {})}


def run_lightgbm(data, seed, smoke):
    from lightgbm import LGBMClassifier

    codes, labels = _labeled_codes(data)
    model = LGBMClassifier(**lightgbm_params(seed, smoke))
    model.fit(data.X_train[data.labeled], codes)
    return labels[model.predict(data.X_test)], {"trees": int(model.booster_.num_trees())}


def run_xgboost(data, seed, smoke):
    from xgboost import XGBClassifier

    codes, labels = _labeled_codes(data)
    model = XGBClassifier(**xgboost_params(seed, smoke))
    model.fit(data.X_train[data.labeled], codes)
    rounds = model.get_booster().num_boosted_rounds()
    return labels[model.predict(data.X_test)], {"rounds": int(rounds)}


def _self_training(model, data, details):
    semi = SelfTrainingClassifier(model).fit(data.Xp_train,
                                             np.where(data.labeled, data.y_train, -1))
    details.update(pseudo_labeled=int((semi.labeled_iter_ > 0).sum()),
                   rounds=int(semi.n_iter_))
    return semi.predict(data.Xp_test), details


def run_selftrain_lr(data, seed, smoke):
    model, details = fit_logistic(data.Xp_train[data.labeled], data.y_train[data.labeled], seed)
    if hasattr(model, "C_"):  # the C chosen on the labeled rows, then fixed
        model = LogisticRegression(C=float(model.C_), max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings, as for logreg
        return _self_training(model, data, details)


def run_selftrain_hgb(data, seed, smoke):
    model = boosting(data, seed).set_params(categorical_features=None)
    return _self_training(model, data, {"min_samples_leaf": model.min_samples_leaf})


def run_tabnet(data, seed, smoke):
    from pytorch_tabnet.pretraining import TabNetPretrainer
    from pytorch_tabnet.tab_model import TabNetClassifier

    X = data.Xp_train
    holdout = np.random.RandomState(seed).permutation(len(X))
    n_val = max(1, len(X) // 10)
    X_fit, X_val = X[holdout[n_val:]], X[holdout[:n_val]]
    epochs = SMOKE_TABNET_EPOCHS if smoke else tabnet_pretrain_epochs(len(X))
    X_labeled, y_labeled = X[data.labeled], data.y_train[data.labeled]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no early stopping", device notes
        pretrainer = TabNetPretrainer(seed=seed, device_name="cpu", verbose=0)
        pretrainer.fit(X_fit, eval_set=[X_val], max_epochs=epochs,
                       **_tabnet_batches(X_fit, X_val))
        classifier = TabNetClassifier(seed=seed, device_name="cpu", verbose=0)
        classifier.fit(X_labeled, y_labeled, from_unsupervised=pretrainer,
                       **({"max_epochs": SMOKE_TABNET_EPOCHS} if smoke else {}),
                       **_tabnet_batches(X_labeled))
    epochs_run = {
        "encoder_n_epochs": len(pretrainer.history["loss"]),
        "encoder_best_epoch": getattr(pretrainer, "best_epoch", -1) + 1 or "",
        "head_n_epochs": len(classifier.history["loss"]),
    }
    return classifier.predict(data.Xp_test), {"pretrain_max_epochs": epochs, **epochs_run}


#: ``--encoder-params`` / ``--classifier-params``: non-default settings under study (JSON),
#: recorded in each row's ``details``; empty for the library's defaults.
ENCODER_PARAMS = {}
CLASSIFIER_PARAMS = {}


def make_encoder(seed, smoke):
    encoder = QMatchEncoder(random_state=seed, **ENCODER_PARAMS)
    return encoder.set_params(**SMOKE_ENCODER) if smoke else encoder


def run_qmatch_lr(data, seed, smoke):
    encoder = make_encoder(seed, smoke).fit(data.Xp_train)
    model, details = fit_logistic(encoder.transform(data.Xp_train[data.labeled]),
                                  data.y_train[data.labeled], seed)
    details.update(encoder_best_epoch=encoder.best_epoch_, encoder_n_epochs=encoder.n_epochs_)
    return model.predict(encoder.transform(data.Xp_test)), details


def run_qmatch_hgb(data, seed, smoke):
    encoder = make_encoder(seed, smoke).set_params(passthrough=True).fit(data.Xp_train)
    model = boosting(data, seed).fit(encoder.transform(data.Xp_train[data.labeled]),
                                     data.y_train[data.labeled])
    details = {"min_samples_leaf": model.min_samples_leaf,
               "encoder_best_epoch": encoder.best_epoch_, "encoder_n_epochs": encoder.n_epochs_}
    return model.predict(encoder.transform(data.Xp_test)), details


def head_seconds(estimator, data, y, predicted):
    """Seconds of a fitted classifier's or regressor's fit on ``data``'s rows and ``y``
    again with its fitted encoder frozen (``FrozenEstimator``): the same seeds, so the
    same head (checked: the same ``predicted`` test rows), without the pretraining. The
    fit of the head alone (reading and embedding the rows included), which issue #54 wants
    under the pretraining's."""
    again = clone(estimator).set_params(encoder=FrozenEstimator(estimator.encoder_))
    _, seconds = timed(again.fit, data.Xp_train, y, digits=3)
    if not np.array_equal(again.predict(data.Xp_test), predicted):
        raise RuntimeError("the head fitted again on the frozen encoder predicts otherwise: "
                           "its seconds would not be the timed fit's head's")
    return seconds


def fit_timings(estimator, data, y, predicted, seconds):
    """What a runner of ours records about its timed fit (``seconds``, with its prediction
    ``predicted`` of the test rows): those seconds, the pretraining epochs' (skorch's
    "dur": the fit's rest is set-up and the head) and :func:`head_seconds`."""
    return {"pretraining_seconds": round(float(sum(estimator.encoder_.history_[:, "dur"])), 3),
            "fit_seconds": seconds,
            "head_seconds": head_seconds(estimator, data, y, predicted)}


def run_qmatch_clf(data, seed, smoke, **params):
    """The one call, timed here with its prediction (``fit_seconds``), then
    :func:`head_seconds`."""
    classifier = QMatchClassifier(random_state=seed, **{**CLASSIFIER_PARAMS, **params})
    if ENCODER_PARAMS:
        classifier.set_params(encoder=make_encoder(seed, smoke=False))
    if smoke:
        classifier.set_params(encoder=make_encoder(seed, smoke), **SMOKE_HEAD)
    y = np.where(data.labeled, data.y_train, -1)
    predicted, seconds = timed(lambda: classifier.fit(data.Xp_train, y).predict(data.Xp_test))
    encoder = classifier.encoder_
    details = {"encoder_best_epoch": encoder.best_epoch_, "encoder_n_epochs": encoder.n_epochs_,
               "head_best_epoch": classifier.best_epoch_, "head_n_epochs": classifier.n_epochs_,
               "embedding_weight": classifier.embedding_weight_,
               "boosting_weight": classifier.boosting_weight_,
               "self_training_weight": classifier.self_training_weight_,
               "label_spreading_weight": classifier.label_spreading_weight_,
               **fit_timings(classifier, data, y, predicted, seconds)}
    return predicted, details


def on_raw_table(run):
    """``run`` given the table as it comes (no ColumnTransformer: NaN, categories and
    units as loaded) in place of the preprocessed rows."""
    def run_raw(data, seed, smoke):
        return run(Bunch(**{**data, "Xp_train": data.X_train, "Xp_test": data.X_test}),
                   seed, smoke)
    return run_raw


def on_quantile_normal(run):
    """``run`` given the numeric columns median-imputed and mapped to a normal by their
    quantiles (the paper's preprocessing) instead of standardised: the other numeric map
    the library could apply itself (issue #30)."""
    def run_quantile(data, seed, smoke):
        quantiles = QuantileTransformer(output_distribution="normal", random_state=seed,
                                        n_quantiles=min(1000, len(data.X_train)))
        preprocessor = make_preprocessor([SimpleImputer(strategy="median"), quantiles])
        preprocessor.fit(_as_object(data.X_train))
        rows = {name: preprocessor.transform(_as_object(X)).astype(np.float32)
                for name, X in (("Xp_train", data.X_train), ("Xp_test", data.X_test))}
        return run(Bunch(**{**data, **rows}), seed, smoke)
    return run_quantile


RUNNERS = {"logreg": run_logreg, "hgb": run_hgb, "tabnet": run_tabnet,
           "catboost": run_catboost, "lightgbm": run_lightgbm, "xgboost": run_xgboost,
           "selftrain_lr": run_selftrain_lr, "selftrain_hgb": run_selftrain_hgb,
           "qmatch_lr": run_qmatch_lr, "qmatch_clf": run_qmatch_clf,
           "qmatch_hgb": run_qmatch_hgb}
RUNNERS.update({f"{name}_raw": on_raw_table(RUNNERS[name]) for name in PREPROCESSED})
RUNNERS["qmatch_clf_quantile"] = on_quantile_normal(run_qmatch_clf)
RUNNERS["qmatch_clf_selftrain"] = functools.partial(run_qmatch_clf, self_training=True)
RUNNERS["qmatch_clf_plain"] = functools.partial(run_qmatch_clf, self_training=False)
#: the default head plus label-spreading twins (``label_spreading=True``, off by default)
RUNNERS["qmatch_clf_spread"] = functools.partial(run_qmatch_clf, label_spreading=True)
_EPOCH_FIELDS = ("encoder_best_epoch", "encoder_n_epochs", "head_best_epoch", "head_n_epochs")


def evaluate(contender, data, seed, smoke):
    """Fit ``contender`` on the (table, seed) rows; its CSV measurements."""
    (predicted, details), seconds = timed(RUNNERS[contender], data, seed, smoke)
    # a runner that measures more after its fit times the fit itself
    seconds = details.pop("fit_seconds", seconds)
    epochs = {name: details.pop(name, "") for name in _EPOCH_FIELDS}
    if contender in OURS and (ENCODER_PARAMS or CLASSIFIER_PARAMS):
        details.update(encoder_params=ENCODER_PARAMS, classifier_params=CLASSIFIER_PARAMS)
    return {**class_scores(data.y_test, predicted), **split_sizes(data),
            "n_classes": len(data.classes), "fit_seconds": seconds, **epochs,
            "details": json.dumps(details, sort_keys=True)}


def parse_args(argv=None):
    parser = study_parser(__doc__, TABLES, CONTENDERS, RESULTS)
    parser.add_argument("--config", default=None,
                        help='label of the library configuration ("defaults"; "smoke" '
                             "with --smoke)")
    parser.add_argument("--encoder-params", type=json.loads, default={},
                        help="JSON dict of QMatchEncoder parameters under study")
    parser.add_argument("--classifier-params", type=json.loads, default={},
                        help="JSON dict of QMatchClassifier parameters under study")
    args = parser.parse_args(argv)
    if args.config is None:
        args.config = "smoke" if args.smoke else "defaults"
    if (args.encoder_params or args.classifier_params) and args.config == "defaults":
        parser.error("--encoder-params/--classifier-params need their own --config label")
    return args


def main(argv=None):
    args = parse_args(argv)
    ENCODER_PARAMS.update(args.encoder_params)
    CLASSIFIER_PARAMS.update(args.classifier_params)
    run_cells(args, TABLES, args.config)


def run_cells(args, tables, config):
    """Every contender of ``args`` on every (table, seed) of ``args`` among ``tables``, in the
    registry's order (cheap tables first), as rows of ``config`` appended to ``args.out``."""
    cells = [{"table": table, "seed": seed, "config": config}
             for table in tables if table in args.tables for seed in args.seeds]
    run_grid(args, Store(args.out, FIELDS, KEY), cells,
             lambda cell: prepare(cell["table"], cell["seed"], args.data_home, tables),
             lambda contender, data, cell: evaluate(contender, data, cell["seed"], args.smoke),
             lambda row: f"{row['table']} seed {row['seed']} {row['contender']}: "
                         f"{row['accuracy']:.2f}% (balanced {row['balanced_accuracy']:.2f}%, "
                         f"{row['fit_seconds']} s, {row['n_labeled']} labeled)")


if __name__ == "__main__":
    main()
