"""Quick start: Q-Match embeddings against raw features when labels are scarce.

Pretrains a :class:`~qmatch_sklearn.QMatchEncoder` on the unlabeled training
rows of scikit-learn's bundled digits dataset (8x8 images as 64 tabular
features), then fits a logistic regression on a few labeled rows per class,
once on the raw features and once on the embeddings, and reports test
accuracy over several draws of the labeled rows.
"""

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import QMatchEncoder

LABELS_PER_CLASS = (2, 5, 10)
DRAWS = 5


def few_shot_accuracy(Z_train, y_train, Z_test, y_test, per_class, seed):
    """Test accuracy of a linear probe fitted on ``per_class`` labeled rows per class."""
    rng = np.random.RandomState(seed)
    rows = np.concatenate(
        [rng.choice(np.flatnonzero(y_train == c), per_class, replace=False) for c in np.unique(y_train)]
    )
    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    return probe.fit(Z_train[rows], y_train[rows]).score(Z_test, y_test)


def main():
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    print(f"digits: {len(X_train)} unlabeled rows for pretraining, {len(X_test)} test rows, "
          f"{X.shape[1]} features")

    start = time.perf_counter()
    encoder = QMatchEncoder(random_state=0, verbose=1).fit(X_train)
    print(f"pretrained in {time.perf_counter() - start:.1f} s ({encoder.n_epochs_} epochs, "
          f"best epoch {encoder.best_epoch_}, device {encoder.device_})")
    Z_train, Z_test = encoder.transform(X_train), encoder.transform(X_test)

    print(f"\nlinear-probe test accuracy, mean +- std over {DRAWS} draws of the labeled rows")
    print(f"{'labels/class':>12} | {'raw features':>14} | {'Q-Match embedding':>17}")
    for per_class in LABELS_PER_CLASS:
        raw = [few_shot_accuracy(X_train, y_train, X_test, y_test, per_class, s) for s in range(DRAWS)]
        emb = [few_shot_accuracy(Z_train, y_train, Z_test, y_test, per_class, s) for s in range(DRAWS)]
        print(f"{per_class:>12} | {np.mean(raw):>8.3f} +- {np.std(raw):.3f} | "
              f"{np.mean(emb):>11.3f} +- {np.std(emb):.3f}")


if __name__ == "__main__":
    main()
