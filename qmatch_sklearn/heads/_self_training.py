"""Self-training: a logistic regression refitted on the unlabeled rows it labels confidently.

The few-label head of ``QMatchClassifier`` sees a few labeled rows and many
unlabeled ones. Self-training (Yarowsky, 1995, "Unsupervised word sense
disambiguation rivaling supervised methods"; for neural networks, pseudo-labels:
Lee, 2013, "Pseudo-Label: the simple and efficient semi-supervised learning method
for deep neural networks", which labels every row by its argmax, without a
threshold) lets the unlabeled rows shape the decision boundary:
fit on the labeled rows, give every unlabeled row whose predicted class
probability reaches ``THRESHOLD`` that class as its label, refit on both, and
repeat until the pseudo-labels no longer change (at most ``MAX_ROUNDS`` refits),
as scikit-learn's ``SelfTrainingClassifier`` does, except that the pseudo-labeled
rows together weigh as much as the labeled rows (:func:`pseudo_label_weight`; Lee's
loss likewise weighs its pseudo-label term against the labeled one by a
coefficient). Where the classes are clusters
that the embedding separates, the boundary moves into the gaps between them;
where they are not, confident mistakes reinforce themselves. So the
self-trained regression is never taken on faith: :func:`self_trained_logistic`
repeats the whole procedure inside every cross-validation fold (the held-out
labeled rows never label an unlabeled row) and returns its held-out
log-likelihood, by which the head weighs it against the plain regressions
(pseudo-Bayesian model averaging, :func:`~._averaging.pseudo_bma_weights`).
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
#: Unlabeled rows the head reads at most (a seeded sample of them): the refits'
#: cost grows with them, and a few thousand rows already outnumber a few hundred
#: labels many times.
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
        # at most max_iter iterations: a regression stopped short is scored as it is,
        # and weighs little where that costs it likelihood
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(features, targets, sample_weight=sample_weight)


def _rows(sample_weight, rows):
    return None if sample_weight is None else sample_weight[rows]


def pseudo_label_weight(labeled_weight, n_pseudo):
    """Each pseudo-labeled row's weight: ``n_pseudo`` of them together weigh as much
    as the labeled rows (``labeled_weight``, their total). C was chosen by
    cross-validation for the labeled rows' loss; thousands of pseudo-labeled rows
    each weighing as much as a labeled one would make the same C a far weaker
    penalty (an overconfident regression, which the held-out likelihood then
    rejects) and drown the labels they came from. On digits with 3% of the rows
    labeled, the self-trained twin's weight in the head went from 0 to 0.94-0.97
    on 2 of 3 draws with this, its accuracy up by 3-5 points there."""
    return labeled_weight / n_pseudo


def fit_with_pseudo_labels(C, max_iter, features, targets, weights, pseudo_rows, pseudo):
    """A ``LogisticRegression(C)`` fitted on the labeled rows (``features``,
    ``targets``, ``weights``) and the rows ``pseudo_rows`` labeled ``pseudo``, each
    weighing :func:`pseudo_label_weight`."""
    return fit_logistic(
        C, max_iter, np.vstack([features, pseudo_rows]), np.r_[targets, pseudo],
        np.r_[weights, np.full(len(pseudo), pseudo_label_weight(np.sum(weights), len(pseudo)))],
    )


def self_trained_logistic(C, max_iter, features, targets, unlabeled, folds, sample_weight=None):
    """The self-trained twin of the plain regression at ``C``, as
    :func:`twin_logistic` returns it: (model, mean held-out log-likelihood per
    row) or None when no unlabeled row was pseudo-labeled.

    Self-training (see the module) runs on every labeled row and, held-out rows
    left out, inside every fold of ``folds``, all as one batch of regressions
    (:func:`~._logistic_batch.fit_logistic_batch`) that refits, round by round,
    only the problems whose pseudo-labels changed, each from its last solution.
    The pseudo-labeled rows of a problem weigh as much in total as its labeled
    rows (:func:`pseudo_label_weight`)."""
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
    """A twin of the plain regression that also learns from pseudo-labeled
    ``unlabeled`` rows: ``train_twin(C, max_iter, features, targets, unlabeled,
    sample_weight) -> (model, n_pseudo)`` (:func:`~._label_spreading.spread_and_fit`)
    on every labeled row, and its mean
    cross-validated log-likelihood per row on ``folds``, or None when no
    unlabeled row was pseudo-labeled (it would be the plain regression, and
    would count twice in the head's average): ``train_twin`` repeated
    inside each fold (the held-out rows neither train nor pseudo-label), scored
    as ``LogisticRegressionCV`` scores the plain regression, the mean over folds
    of minus the (weighted) log-loss of the held-out rows. ``C`` is the plain
    regression's, chosen on the same folds: the plain score is the best over the
    Cs and so a little optimistic, the twin's is not, and a twin wins
    only where it predicts the held-out rows better all the same."""
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
