"""
Few-shot learning curve: embedding against raw features
=======================================================

How many labels does the embedding save? This example pretrains one
:class:`~qmatch_sklearn.QMatchEncoder` on the unlabeled training rows of
digits, then draws a learning curve: test accuracy of a logistic regression
against the number of labeled rows per class, on the embedding and on the
raw features, with a gradient-boosted tree on the raw features as a second
reference. This is the paper's few-shot linear evaluation, in miniature.
"""

# %%
# One pretraining, many probes
# ----------------------------
# Pretraining is done once; each point of the curve only fits a probe.

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import QMatchEncoder

FAST = os.environ.get("QMATCH_DOCS_FAST", "0") not in ("", "0")
LABELS_PER_CLASS = (1, 2, 5, 10, 20) if FAST else (1, 2, 5, 10, 20, 50)
DRAWS = 2 if FAST else 5

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0
)
encoder = QMatchEncoder(max_epochs=20 if FAST else 100, random_state=0).fit(X_train)
Z_train, Z_test = encoder.transform(X_train), encoder.transform(X_test)

# %%
# The curve
# ---------
# For every draw, the same labeled rows serve all three models. The tree's
# ``min_samples_leaf=1`` lets it split at all on one or two rows per class
# (the default, 20, would not).

models = {
    "Q-Match embedding + logistic regression": (
        Z_train, Z_test, lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    ),
    "raw features + logistic regression": (
        X_train, X_test, lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    ),
    "raw features + gradient-boosted trees": (
        X_train,
        X_test,
        lambda: HistGradientBoostingClassifier(max_iter=50, min_samples_leaf=1, random_state=0),
    ),
}
SHORT = dict(zip(models, ["embedding+LR", "raw+LR", "raw+GBT"], strict=True))
accuracy = {name: np.zeros((len(LABELS_PER_CLASS), DRAWS)) for name in models}
for i, per_class in enumerate(LABELS_PER_CLASS):
    for draw in range(DRAWS):
        rng = np.random.RandomState(draw)
        rows = np.concatenate([
            rng.choice(np.flatnonzero(y_train == c), per_class, replace=False) for c in range(10)
        ])
        for name, (train, test, make_model) in models.items():
            model = make_model().fit(train[rows], y_train[rows])
            accuracy[name][i, draw] = model.score(test, y_test)
    print(f"{per_class:>3} labels/class: " + ", ".join(
        f"{SHORT[name]} {accuracy[name][i].mean():.3f}" for name in models
    ))

# %%
# Plot
# ----
# Mean and standard deviation over draws of the labeled rows. The horizontal
# distance between two curves at the same accuracy is the number of labels
# the better representation saves.

fig, ax = plt.subplots(figsize=(6.5, 4))
for name, values in accuracy.items():
    ax.errorbar(LABELS_PER_CLASS, values.mean(axis=1), yerr=values.std(axis=1),
                marker="o", capsize=3, label=name)
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(LABELS_PER_CLASS, [str(k) for k in LABELS_PER_CLASS])
ax.set_xlabel("labeled rows per class")
ax.set_ylabel("test accuracy")
ax.set_title("Few-shot learning curve on digits")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
