"""Label spreading: pseudo-labels from the unlabeled rows' neighbours, for a logistic twin.

Self-training (:mod:`._self_training`) can only confirm the regression's own boundary.
Label spreading (Zhou et al., 2004, "Learning with local and global consistency",
section 2) labels a row by its neighbours on the k-nearest-neighbour graph,
F <- alpha S F + (1 - alpha) Y, so where classes are clusters a few labels label the whole
cluster. Rows whose spread class probability reaches ``THRESHOLD`` then train a logistic
regression (Iscen et al., 2019, "Label propagation for deep semi-supervised learning").
Where classes are not clusters spread labels are confidently wrong, so the twin is weighed
by its held-out likelihood (:func:`~._self_training.twin_logistic`).
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.semi_supervised import LabelSpreading

from ._self_training import THRESHOLD, fit_logistic, fit_with_pseudo_labels, twin_logistic

#: Neighbours per row and the clamping factor alpha: ``LabelSpreading``'s defaults.
N_NEIGHBORS, ALPHA = 7, 0.2
#: Spreading steps at most (scikit-learn's default, 30, leaves some graphs unsettled).
MAX_SPREAD_ITER = 100


def spread_labels(features, targets, unlabeled, sample_weight=None):
    """The (n_unlabeled, n_classes) class probabilities spread to ``unlabeled`` from the
    labeled ``features`` (rows of weight 0 spread nothing); zeros where no label reaches."""
    labels = np.asarray(targets).copy()
    if sample_weight is not None:
        labels[np.asarray(sample_weight) <= 0] = -1
    rows = np.vstack([features, unlabeled])
    n_classes = int(np.max(targets)) + 1
    model = LabelSpreading(kernel="knn", n_neighbors=min(N_NEIGHBORS, len(rows) - 1),
                           alpha=ALPHA, max_iter=MAX_SPREAD_ITER)
    with warnings.catch_warnings():
        # unsettled labels are used as they are: the held-out likelihood weighs the twin
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(rows, np.r_[labels, np.full(len(unlabeled), -1)])
    proba = np.zeros((len(unlabeled), n_classes))
    proba[:, model.classes_[model.classes_ >= 0]] = model.label_distributions_[len(features):]
    return proba


def spread_and_fit(C, max_iter, features, targets, unlabeled, sample_weight=None):
    """A ``LogisticRegression(C)`` fitted on the labeled rows and the unlabeled rows whose
    spread probability (:func:`spread_labels`) reaches ``THRESHOLD``
    (:func:`~._self_training.fit_with_pseudo_labels`), and the number of such rows."""
    weights = np.ones(len(targets)) if sample_weight is None else np.asarray(sample_weight)
    proba = spread_labels(features, targets, unlabeled, sample_weight)
    confident = np.flatnonzero(proba.max(axis=1) >= THRESHOLD)
    if not len(confident):
        return fit_logistic(C, max_iter, features, targets, weights), 0
    model = fit_with_pseudo_labels(C, max_iter, features, targets, weights,
                                   unlabeled[confident], proba[confident].argmax(axis=1))
    return model, len(confident)


def spread_logistic(C, max_iter, features, targets, unlabeled, folds, sample_weight=None):
    """The label-spreading twin of the plain regression (:func:`spread_and_fit`), as
    :func:`~._self_training.twin_logistic` returns it."""
    return twin_logistic(spread_and_fit, C, max_iter, features, targets, unlabeled, folds,
                         sample_weight)
