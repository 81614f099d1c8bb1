"""
Real tables: missing values, categories and a numeric target (penguins)
=======================================================================

The Palmer penguins table (344 rows, from the ``palmerpenguins`` package) is
small but real: two categorical columns, one of them with missing values, and
numeric columns with missing values too. Nothing here imputes: the encoders
take NaN natively (an input layer fills each missing entry and flags it), and
``feature_groups`` makes the corruption replace a categorical feature's
one-hot columns as one unit. With a few labeled rows, we compare

* a species classifier: :class:`~qmatch_sklearn.QMatchClassifier` against
  logistic regression on imputed, one-hot encoded columns;
* a body-mass regressor: :class:`~qmatch_sklearn.QMatchRegressor` against
  ridge regression on the same columns.

Unlabeled rows are marked ``-1`` in a class label and ``NaN`` in a numeric
target; the estimators pretrain on every row and fit their head on the
labeled ones. The user guide's "Real tables" page explains each piece.
"""

# %%
# The table, as it comes
# ----------------------

import os

import matplotlib.pyplot as plt
import numpy as np
from palmerpenguins import load_penguins
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegressionCV, RidgeCV
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor, one_hot_groups

FAST = os.environ.get("QMATCH_DOCS_FAST", "0") not in ("", "0")
DRAWS = 2 if FAST else 5
EPOCHS = 30 if FAST else 100

penguins = load_penguins()
print(penguins.isna().sum().to_string())

# %%
# Preprocessing that keeps NaN
# ----------------------------
# The numeric columns are standardised (the scaler ignores NaN and keeps it);
# the categorical ones are one-hot encoded, a missing sex being a category of
# its own. ``one_hot_groups`` reads the one-hot groups off the fitted
# ColumnTransformer. The preprocessing sees no label, so it is fitted on all
# rows.


def preprocessor():
    return ColumnTransformer([
        ("categorical", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
         make_column_selector(dtype_exclude="number")),
        ("numeric", StandardScaler(), make_column_selector(dtype_include="number")),
    ])


features = penguins.drop(columns=["species"])
prep = preprocessor().fit(features)
X = prep.transform(features).astype(np.float32)
groups = one_hot_groups(prep)
print(f"{X.shape[1]} columns, {np.isnan(X).sum()} missing entries, one-hot groups {groups}")


def encoder(seed):
    return QMatchEncoder(feature_groups=groups, max_epochs=EPOCHS, random_state=seed)


def imputed_linear(model):
    """The usual tool: impute, then a linear model."""
    return make_pipeline(SimpleImputer(strategy="median"), model)


# %%
# Species from 3 labeled rows per class
# -------------------------------------

y = penguins["species"].to_numpy(dtype=object)
train, test = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=0)
accuracy = {"logistic regression (imputed)": [], "QMatchClassifier (native NaN)": []}
for draw in range(DRAWS):
    rng = np.random.RandomState(draw)
    labeled = np.concatenate([rng.choice(train[y[train] == c], 3, replace=False)
                              for c in np.unique(y)])
    y_partial = np.full(len(y), -1, dtype=object)
    y_partial[labeled] = y[labeled]
    baseline = imputed_linear(LogisticRegressionCV(
        cv=3, scoring="neg_log_loss", l1_ratios=(0.0,), use_legacy_attributes=False,
        max_iter=1000))
    baseline.fit(X[labeled], y[labeled])
    accuracy["logistic regression (imputed)"].append(
        accuracy_score(y[test], baseline.predict(X[test])))
    classifier = QMatchClassifier(encoder(draw), random_state=draw)
    classifier.fit(X[train], y_partial[train])  # test rows stay out of pretraining
    accuracy["QMatchClassifier (native NaN)"].append(
        accuracy_score(y[test], classifier.predict(X[test])))
for name, values in accuracy.items():
    print(f"{name}: accuracy {np.mean(values):.3f} ± {np.std(values):.3f}")

# %%
# Body mass from 15 labeled rows
# ------------------------------
# The target is a column of the table: it leaves the features, and ``NaN``
# marks the rows whose mass we pretend not to know (the two penguins with no
# measurement at all are dropped).

known = penguins["body_mass_g"].notna().to_numpy()
features = penguins.drop(columns=["species", "body_mass_g"])[known]
prep = preprocessor().fit(features)
X = prep.transform(features).astype(np.float32)
groups = one_hot_groups(prep)
mass = penguins["body_mass_g"].to_numpy()[known]
train, test = train_test_split(np.arange(len(mass)), test_size=0.3, random_state=0)
r2 = {"ridge regression (imputed)": [], "QMatchRegressor (native NaN)": []}
for draw in range(DRAWS):
    labeled = np.random.RandomState(draw).choice(train, 15, replace=False)
    mass_partial = np.full(len(mass), np.nan)
    mass_partial[labeled] = mass[labeled]
    baseline = imputed_linear(RidgeCV(alphas=np.logspace(-3, 3, 13)))
    baseline.fit(X[labeled], mass[labeled])
    r2["ridge regression (imputed)"].append(r2_score(mass[test], baseline.predict(X[test])))
    regressor = QMatchRegressor(encoder(draw), random_state=draw)
    regressor.fit(X[train], mass_partial[train])
    r2["QMatchRegressor (native NaN)"].append(r2_score(mass[test], regressor.predict(X[test])))
for name, values in r2.items():
    print(f"{name}: R² {np.mean(values):.3f} ± {np.std(values):.3f}")

# %%
# Results
# -------
# Mean and standard deviation over draws of the labeled rows. On a table this
# small the pretraining has little to learn from (about 240 rows): read the
# bars as "it runs on a real table as it is", and the few-label benchmark
# (``benchmarks/results/fewlabel.md``) for how it compares across tables.

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
for ax, scores, label in ((axes[0], accuracy, "test accuracy"), (axes[1], r2, "test R²")):
    names = list(scores)
    ax.barh(names, [np.mean(scores[n]) for n in names],
            xerr=[np.std(scores[n]) for n in names], capsize=3, color=["grey", "tab:blue"])
    ax.set_xlabel(label)
axes[0].set_title("species, 3 labels per class")
axes[1].set_title("body mass, 15 labels")
fig.tight_layout()
plt.show()
