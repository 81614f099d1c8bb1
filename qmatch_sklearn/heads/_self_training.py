"""Self-training: a logistic regression refitted on the unlabeled rows it labels confidently.

Self-training (Yarowsky, 1995, "Unsupervised word sense disambiguation rivaling supervised
methods"; Lee, 2013, "Pseudo-Label: the simple and efficient semi-supervised learning
method for deep neural networks"): fit on the labeled rows, label each unlabeled row whose
class probability reaches ``THRESHOLD``, refit on both, until the pseudo-labels settle
(at most ``MAX_ROUNDS`` refits), as ``SelfTrainingClassifier`` does but with the
pseudo-labels weighing as much as the labels (:func:`pseudo_label_weight`). Confident
mistakes can reinforce themselves, so :func:`self_trained_logistic` repeats it in every
fold and the head weighs it by its held-out log-likelihood
(:func:`~._averaging.pseudo_bma_weights`).
"""

import warnings

import numpy as np
from scipy.special import softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from ._logistic_batch import (
    LinearModel,
    LogisticBatch,
    _dense,
    class_logits,
    expand,
    fit_logistic_batch,
    log_likelihood,
    reduce_features,
)

#: A predicted class probability from which an unlabeled row takes that class
#: (scikit-learn's ``SelfTrainingClassifier`` default).
THRESHOLD = 0.75
#: Refits at most, after the fit on the labeled rows alone.
MAX_ROUNDS = 5
#: Unlabeled rows the head reads at most (a seeded sample): the refits' cost grows with them.
MAX_UNLABELED_ROWS = 4096


def unlabeled_sample(n_unlabeled, seed):
    """Indices of at most ``MAX_UNLABELED_ROWS`` of ``n_unlabeled`` rows, seeded, sorted."""
    if n_unlabeled <= MAX_UNLABELED_ROWS:
        return np.arange(n_unlabeled)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_unlabeled, MAX_UNLABELED_ROWS, replace=False))


def fit_logistic(C, max_iter, features, targets, sample_weight):
    model = LogisticRegression(C=C, max_iter=max_iter)
    with warnings.catch_warnings():
        # a regression stopped short is scored as it is: its likelihood weighs it
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(features, targets, sample_weight=sample_weight)


def _rows(sample_weight, rows):
    return None if sample_weight is None else sample_weight[rows]


def pseudo_label_weight(labeled_weight, n_pseudo):
    """Each pseudo-labeled row's weight, so that ``n_pseudo`` of them weigh
    ``labeled_weight`` in total: C was chosen for the labeled rows' loss, and thousands of
    full-weight pseudo-labels would weaken its penalty and drown the labels."""
    return labeled_weight / n_pseudo


def fit_with_pseudo_labels(C, max_iter, features, targets, weights, pseudo_rows, pseudo):
    """A ``LogisticRegression(C)`` fitted on the labeled rows and ``pseudo_rows`` labeled
    ``pseudo``, each weighing :func:`pseudo_label_weight`."""
    return fit_logistic(
        C, max_iter, np.vstack([features, pseudo_rows]), np.r_[targets, pseudo],
        np.r_[weights, np.full(len(pseudo), pseudo_label_weight(np.sum(weights), len(pseudo)))],
    )


def self_trained_logistic(C, max_iter, features, targets, unlabeled, folds, sample_weight=None):
    """The self-trained twin of the plain regression at ``C``, as :func:`twin_logistic`
    returns it, or None when no unlabeled row was pseudo-labeled.

    All rows and every fold are one batch (:func:`~._logistic_batch.fit_logistic_batch`),
    each round refitting only the problems whose pseudo-labels changed."""
    weights = np.ones(len(targets)) if sample_weight is None else np.asarray(sample_weight)
    n_labeled, n_classes = len(targets), int(targets.max()) + 1
    rows, basis = reduce_features(np.vstack([_dense(features), _dense(unlabeled)]))
    trains = [train for train, _ in folds] + [np.arange(n_labeled)]  # all rows last
    row_weights = np.zeros((len(trains), len(rows)))
    row_targets = np.zeros((len(trains), len(rows)), dtype=np.int64)
    row_targets[:, :n_labeled] = targets
    for p, train in enumerate(trains):
        row_weights[p, train] = weights[train]
    labeled_total = row_weights.sum(axis=1)

    def solve(problems, init=None):
        return fit_logistic_batch(rows, row_targets[problems], row_weights[problems],
                                  np.full(len(problems), C), n_classes, init=init,
                                  max_iter=max_iter)

    everything = solve(np.array([len(trains) - 1]))
    proba = softmax(class_logits(rows[n_labeled:], everything.coef, everything.intercept),
                    axis=2)
    if proba.max() < THRESHOLD:  # no row to pseudo-label: no twin, and no fold to run
        return None
    solution = solve(np.arange(len(trains) - 1))
    coef = np.concatenate([solution.coef, everything.coef])
    intercept = np.concatenate([solution.intercept, everything.intercept])
    n_pseudo = np.zeros(len(trains), dtype=int)
    moving = np.ones(len(trains), dtype=bool)
    for _ in range(MAX_ROUNDS):
        proba = softmax(class_logits(rows[n_labeled:], coef, intercept), axis=2)
        confident, pseudo = proba.max(axis=2) >= THRESHOLD, proba.argmax(axis=2)
        for p in np.flatnonzero(moving):
            same = (n_pseudo[p] > 0
                    and np.array_equal(confident[p], row_weights[p, n_labeled:] > 0)
                    and np.array_equal(pseudo[p][confident[p]],
                                       row_targets[p, n_labeled:][confident[p]]))
            if not confident[p].any() or same:
                moving[p] = False
                continue
            n_pseudo[p] = confident[p].sum()
            row_weights[p, n_labeled:] = np.where(
                confident[p], pseudo_label_weight(labeled_total[p], n_pseudo[p]), 0)
            row_targets[p, n_labeled:] = pseudo[p]
        problems = np.flatnonzero(moving)
        if not len(problems):
            break
        refit = solve(problems, LogisticBatch(coef[problems], intercept[problems], None))
        coef[problems], intercept[problems] = refit.coef, refit.intercept
    if not n_pseudo[-1]:
        return None
    held_out = [log_likelihood(rows[test], coef[k], intercept[k], targets[test], weights[test])
                for k, (_, test) in enumerate(folds)]
    return LinearModel(expand(coef[-1], basis), intercept[-1]), float(np.mean(held_out))


def twin_logistic(train_twin, C, max_iter, features, targets, unlabeled, folds,
                  sample_weight=None):
    """``(model, log_likelihood)``: ``train_twin(C, max_iter, features, targets, unlabeled,
    sample_weight) -> (model, n_pseudo)`` (:func:`~._label_spreading.spread_and_fit`) on
    every labeled row, and its mean held-out log-likelihood on ``folds`` (repeated in each
    fold, scored as ``LogisticRegressionCV`` does); None when nothing was pseudo-labeled,
    as it would count twice in the average. ``C`` is the plain regression's, whose score
    is thus a little optimistic: a twin wins only where it predicts better all the same."""
    model, n_pseudo = train_twin(C, max_iter, features, targets, unlabeled, sample_weight)
    if not n_pseudo:
        return None
    labels = np.arange(targets.max() + 1)

    def held_out_log_likelihood(train, test):
        fold_model = train_twin(C, max_iter, features[train], targets[train], unlabeled,
                                _rows(sample_weight, train))[0]
        return -log_loss(targets[test], fold_model.predict_proba(features[test]),
                         labels=labels, sample_weight=_rows(sample_weight, test))

    log_likelihood = np.mean([held_out_log_likelihood(train, test)
                              for train, test in folds])
    return model, float(log_likelihood)
