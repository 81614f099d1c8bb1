"""
Mixed-type data: a ColumnTransformer in front of the encoder (Adult)
====================================================================

Adult (census income) has 6 numeric and 8 categorical columns, some with
missing values. :class:`~qmatch_sklearn.QMatchEncoder` needs numeric input, so
a :class:`~sklearn.compose.ColumnTransformer` one-hot encodes the categories
and quantile-transforms the numbers (the paper found the quantile transform
helpful on Adult). The preprocessing and the encoder are fitted together, in
one Pipeline, on unlabeled rows; the fitted pipeline is then frozen with
:class:`~sklearn.frozen.FrozenEstimator` and reused as the first step of
linear probes trained on a few hundred labeled rows.

The data are read with :func:`qmatch_sklearn.datasets.load_adult` from the
folder named by the environment variable ``QMATCH_DATA``, else from
``../shared/data`` next to the repository. Nothing is downloaded: when the
files are absent, the example says so and stops.
"""

# %%
# Loading Adult without downloading
# ---------------------------------

import os
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, QuantileTransformer

from qmatch_sklearn import QMatchEncoder
from qmatch_sklearn.datasets import load_adult

FAST = os.environ.get("QMATCH_DOCS_FAST", "0") not in ("", "0")


def repository_root():
    """The repository root: this file's folder's parent (sphinx-gallery sets ``sys.argv[0]``
    to the example's path as well)."""
    return Path(sys.argv[0]).resolve().parent.parent


data_home = os.environ.get("QMATCH_DATA") or repository_root() / ".." / "shared" / "data"
try:
    adult = load_adult(data_home=data_home, download_if_missing=False)
except (FileNotFoundError, OSError) as error:
    print(f"Adult is not available under {data_home} ({error}); skipping this example.")
    print("Set QMATCH_DATA to the folder that holds adult/adult.data.gz and adult/adult.test.gz.")
    sys.exit(0)  # (the documentation build shows this file without running it then)

X, y = adult.data, (adult.target == ">50K").astype(int)
print(adult.DESCR)
print(X.dtypes.astype(str).value_counts().to_string())
print(f"missing values per column:\n{X.isna().sum()[X.isna().any()].to_string()}")

# %%
# Unlabeled, labeled and test rows
# --------------------------------
# The test rows are adult.test. From adult.data, a random subset serves as
# unlabeled pretraining rows; the labeled rows are drawn from the others.

rng = np.random.RandomState(0)
train_rows = rng.permutation(np.flatnonzero(~adult.is_test))
n_pretrain = 4_000 if FAST else 16_000
pretrain_rows = train_rows[:n_pretrain]
labeled_pool = train_rows[n_pretrain:]
test_rows = np.flatnonzero(adult.is_test)
if FAST:
    test_rows = rng.choice(test_rows, 4_000, replace=False)
X_test, y_test = X.iloc[test_rows], y[test_rows]
print(f"{len(pretrain_rows)} unlabeled rows for pretraining, {len(test_rows)} test rows")

# %%
# Preprocessing and pretraining in one Pipeline
# ---------------------------------------------
# Column dtypes select the columns: ``load_adult`` gives the categorical
# columns the ``category`` dtype. ``sparse_output=False`` matters: the one-hot
# block is sparse by default, and the encoder needs a dense array. A missing
# category (NaN) becomes its own one-hot column.

preprocessor = ColumnTransformer([
    ("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
     make_column_selector(dtype_include="category")),
    ("numeric", QuantileTransformer(n_quantiles=128), make_column_selector(dtype_include="number")),
])
embedder = make_pipeline(
    preprocessor,
    QMatchEncoder(max_epochs=10 if FAST else 100, random_state=0),
)
embedder.fit(X.iloc[pretrain_rows])
encoder = embedder[-1]
print(f"{encoder.n_features_in_} preprocessed columns -> {encoder.embedding_dim}-dimensional "
      f"embedding; {encoder.n_epochs_} epochs (best {encoder.best_epoch_})")

# %%
# Linear probes on few labels
# ---------------------------
# ``FrozenEstimator`` keeps the fitted preprocessing + encoder as they are:
# fitting the probe pipeline fits only the logistic regression. The baselines
# are the same logistic regression on the preprocessed columns (the
# preprocessing fitted on the unlabeled rows, frozen the same way), and a
# gradient-boosted tree on the raw columns (it handles the categories and the
# missing values natively). Adult's classes are imbalanced (about 24% earn
# >50K), so the score is the balanced accuracy.

n_labeled_options = (100, 400) if FAST else (100, 400, 1600)
draws = 2 if FAST else 5
models = {
    "Q-Match embedding + logistic regression": lambda: make_pipeline(
        FrozenEstimator(embedder), LogisticRegression(max_iter=2000)
    ),
    "preprocessed columns + logistic regression": lambda: make_pipeline(
        FrozenEstimator(embedder[0]), LogisticRegression(max_iter=2000)
    ),
    "raw columns + gradient-boosted trees": lambda: HistGradientBoostingClassifier(
        categorical_features="from_dtype", random_state=0
    ),
}
SHORT = dict(zip(models, ["embedding+LR", "preprocessed+LR", "raw+GBT"], strict=True))
scores = {name: np.zeros((len(n_labeled_options), draws)) for name in models}
for i, n_labeled in enumerate(n_labeled_options):
    for draw in range(draws):
        rows = np.random.RandomState(draw).choice(labeled_pool, n_labeled, replace=False)
        for name, make_model in models.items():
            model = make_model().fit(X.iloc[rows], y[rows])
            scores[name][i, draw] = balanced_accuracy_score(y_test, model.predict(X_test))
    print(f"{n_labeled:>5} labeled rows: " + ", ".join(
        f"{SHORT[name]} {scores[name][i].mean():.3f}" for name in models
    ))

# %%
# Balanced accuracy against the number of labeled rows
# ----------------------------------------------------
# Mean and standard deviation over draws of the labeled rows. Read the
# curves from left to right: self-supervised pretraining is meant for the
# left end, where labels are scarce and unlabeled rows plentiful; as labels
# grow, the gradient-boosted tree on the raw columns is the model to beat (see
# the user guide's "When to use Q-Match"). The documentation build pretrains
# on 4,000 rows for 10 epochs only; run the script for the full setting.

fig, ax = plt.subplots(figsize=(6.5, 4))
for name, values in scores.items():
    ax.errorbar(n_labeled_options, values.mean(axis=1), yerr=values.std(axis=1),
                marker="o", capsize=3, label=name)
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(n_labeled_options, [str(n) for n in n_labeled_options])
ax.set_xlabel("labeled rows")
ax.set_ylabel("balanced accuracy on adult.test rows")
ax.set_title("Adult: few-shot probes")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
