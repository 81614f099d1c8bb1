"""Label spreading: pseudo-labels from the unlabeled rows' neighbours, for a logistic twin.

Self-training (``_self_training.py``) labels an unlabeled row by what the
regression itself predicts there, so it can only confirm the regression's
boundary. Label spreading (Zhou et al., 2004, "Learning with local and global
consistency", algorithm of section 2) labels it by its neighbours instead: on the
k-nearest-neighbour graph of the labeled and unlabeled rows together, the labels
spread along the graph, F <- alpha S F + (1 - alpha) Y with S the symmetrically
normalised graph, until they settle. Where the classes are clusters of the
feature space (the embedding of an image-like table), a few labels per cluster
label the whole cluster, and a boundary the regression drew through a cluster
moves out of it. The spread labels then train a logistic regression, as
propagated labels train the classifier in Iscen et al., 2019, "Label propagation
for deep semi-supervised learning": an unlabeled row whose spread class
probability reaches ``THRESHOLD`` joins the labeled rows with that class.

Where the classes are not clusters, spread labels are confidently wrong, so the
twin is weighed against the plain regressions by its likelihood on held-out
labeled rows like the self-trained twin (the spreading repeated in each fold,
:func:`~._self_training.twin_logistic`).
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.semi_supervised import LabelSpreading

from ._self_training import THRESHOLD, fit_logistic, fit_with_pseudo_labels, twin_logistic

#: Neighbours of each row in the graph and the clamping factor alpha (the share of a
#: row's label that comes from its neighbours each step): scikit-learn's
#: ``LabelSpreading`` defaults.
N_NEIGHBORS, ALPHA = 7, 0.2
#: Spreading steps at most (scikit-learn's default, 30, leaves some graphs unsettled).
MAX_SPREAD_ITER = 100


def spread_labels(features, targets, unlabeled, sample_weight=None):
    """The class probabilities label spreading gives the ``unlabeled`` rows from the
    labeled rows ``features`` (class indices ``targets``; rows of weight 0 spread
    nothing): an array (n_unlabeled, n_classes), a row of zeros where no label
    reaches (a part of the graph without labeled rows)."""
    labels = np.asarray(targets).copy()
    if sample_weight is not None:
        labels[np.asarray(sample_weight) <= 0] = -1
    rows = np.vstack([features, unlabeled])
    n_classes = int(np.max(targets)) + 1
    model = LabelSpreading(kernel="knn", n_neighbors=min(N_NEIGHBORS, len(rows) - 1),
                           alpha=ALPHA, max_iter=MAX_SPREAD_ITER)
    with warnings.catch_warnings():
        # unsettled after MAX_SPREAD_ITER steps: the labels as they are, weighed by
        # the twin's held-out likelihood all the same
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(rows, np.r_[labels, np.full(len(unlabeled), -1)])
    proba = np.zeros((len(unlabeled), n_classes))
    proba[:, model.classes_[model.classes_ >= 0]] = model.label_distributions_[len(features):]
    return proba


def spread_and_fit(C, max_iter, features, targets, unlabeled, sample_weight=None):
    """A ``LogisticRegression(C)`` fitted on the labeled rows and on the unlabeled rows
    whose spread class probability (:func:`spread_labels`) reaches ``THRESHOLD``,
    labeled with that class, and the number of such rows (0: it is the plain
    regression). The pseudo-labeled rows weigh as much in total as the labeled
    rows (:func:`~._self_training.fit_with_pseudo_labels`)."""
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
