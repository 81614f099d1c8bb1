"""
Quick start: Q-Match embeddings against raw features when labels are scarce
===========================================================================

Pretrains a :class:`~qmatch_sklearn.QMatchEncoder` on the unlabeled training
rows of scikit-learn's bundled digits dataset (8x8 images as 64 tabular
features), then fits a logistic regression on a few labeled rows per class,
once on the raw features and once on the embeddings, and reports test
accuracy over several draws of the labeled rows.

Run it with ``python examples/quickstart.py``; the README shows its output.
The documentation build sets ``QMATCH_DOCS_FAST=1``, which pretrains for 20
epochs instead of the default 100, so the numbers on this page are lower than
the README's.
"""

# %%
# The data: 1,257 rows to pretrain on, 540 to test on
# ----------------------------------------------------
# Pretraining never sees a label. The labels of the training rows are used
# only later, a few per class, to fit the linear probe.

import os
import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import QMatchEncoder

FAST = os.environ.get("QMATCH_DOCS_FAST", "0") not in ("", "0")
LABELS_PER_CLASS = (2, 5, 10)
DRAWS = 5

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0
)
print(f"digits: {len(X_train)} unlabeled rows for pretraining, {len(X_test)} test rows, "
      f"{X.shape[1]} features")

# %%
# Pretraining
# -----------
# ``fit`` trains the encoder with the Q-Match pretext task; from 2,000 rows on
# it early-stops on a held-out 10% of them, and on these 1,257 it trains all
# ``max_epochs``. ``verbose=1`` shows a progress bar.

start = time.perf_counter()
encoder = QMatchEncoder(max_epochs=20 if FAST else 100, random_state=0, verbose=1)
encoder.fit(X_train)
print(f"pretrained in {time.perf_counter() - start:.1f} s ({encoder.n_epochs_} epochs, "
      f"best epoch {encoder.best_epoch_}, device {encoder.device_})")
Z_train, Z_test = encoder.transform(X_train), encoder.transform(X_test)

# %%
# The linear probe on a few labels per class
# ------------------------------------------
# The same probe (standardisation + logistic regression) is fitted on the same
# labeled rows, once on the raw features and once on the embeddings.


def few_shot_accuracy(Z_train, y_train, Z_test, y_test, per_class, seed):
    """Test accuracy of a linear probe fitted on ``per_class`` labeled rows per class."""
    rng = np.random.RandomState(seed)
    rows = np.concatenate(
        [
            rng.choice(np.flatnonzero(y_train == c), per_class, replace=False)
            for c in np.unique(y_train)
        ]
    )
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    return probe.fit(Z_train[rows], y_train[rows]).score(Z_test, y_test)


results = {"raw features": [], "Q-Match embedding": []}
print(f"\nlinear-probe test accuracy, mean +- std over {DRAWS} draws of the labeled rows")
print(f"{'labels/class':>12} | {'raw features':>14} | {'Q-Match embedding':>17}")
for per_class in LABELS_PER_CLASS:
    raw = [few_shot_accuracy(X_train, y_train, X_test, y_test, per_class, s) for s in range(DRAWS)]
    emb = [few_shot_accuracy(Z_train, y_train, Z_test, y_test, per_class, s) for s in range(DRAWS)]
    results["raw features"].append(raw)
    results["Q-Match embedding"].append(emb)
    print(f"{per_class:>12} | {np.mean(raw):>8.3f} +- {np.std(raw):.3f} | "
          f"{np.mean(emb):>11.3f} +- {np.std(emb):.3f}")

# %%
# The same table as a figure
# --------------------------
# Error bars are one standard deviation over the draws of the labeled rows.

fig, ax = plt.subplots(figsize=(6, 4))
for offset, (name, accuracies) in zip((-0.04, 0.04), results.items(), strict=True):
    accuracies = np.asarray(accuracies)
    ax.errorbar(
        np.asarray(LABELS_PER_CLASS) * (1 + offset), accuracies.mean(axis=1),
        yerr=accuracies.std(axis=1), marker="o", capsize=3, label=name,
    )
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(LABELS_PER_CLASS, [str(k) for k in LABELS_PER_CLASS])
ax.set_xlabel("labeled rows per class")
ax.set_ylabel("test accuracy")
ax.set_title("Linear probe on digits")
ax.legend()
fig.tight_layout()
plt.show()
