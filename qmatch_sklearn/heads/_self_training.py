"""Self-training: a logistic regression refitted on the unlabeled rows it labels confidently.

Self-training (Yarowsky, 1995, "Unsupervised word sense disambiguation rivaling supervised
methods"; Lee, 2013, "Pseudo-Label: the simple and efficient semi-supervised learning
method for deep neural networks"): fit on the labeled rows, label each unlabeled row whose
class probability reaches ``THRESHOLD``, refit on both, until the pseudo-labels settle
(at most ``MAX_ROUNDS`` refits), as ``SelfTrainingClassifier`` does but with the
pseudo-labels weighing as much as the labels (:func:`pseudo_label_weight`). Confident
mistakes can reinforce themselves, so :func:`self_trained_logistics` repeats it in every
fold (for every weight of the embedding block at once) and the head weighs it by its
held-out log-likelihood
(:func:`~._averaging.pseudo_bma_weights`).
"""

import warnings

import numpy as np
from scipy.special import softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from ._averaging import block_weights
from ._logistic_batch import (
    LinearModel,
    LogisticBatch,
    _any,
    _dense,
    class_logits,
    column_scales,
    expand,
    fit_logistic_batch,
    log_likelihood,
    reduce_blocks,
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
    returns it, or None when no unlabeled row was pseudo-labeled: one block weight of
    :func:`self_trained_logistics`."""
    return self_trained_logistics([C], max_iter, features, targets, unlabeled, folds,
                                  sample_weight)[0]


def self_trained_logistics(Cs, max_iter, features, targets, unlabeled, folds,
                           sample_weight=None, n_embedding=None):
    """The self-trained twin of each block weight's plain regression (the weights of
    :func:`~._averaging.block_weights`, ``Cs`` theirs), each as :func:`twin_logistic`
    returns it, with coefficients of the block-weighted columns, or None where no
    unlabeled row was pseudo-labeled.

    Every block weight's regressions on all rows and in every fold are one batch
    (:func:`~._logistic_batch.fit_logistic_batch`, the block weight a scale of the
    embedding's columns in one block-wise reduction,
    :func:`~._logistic_batch.reduce_blocks`), each round refitting only the problems whose
    pseudo-labels changed."""
    weights = np.ones(len(targets)) if sample_weight is None else np.asarray(sample_weight)
    n_labeled, n_classes = len(targets), int(targets.max()) + 1
    blocks = block_weights(n_embedding)
    rows, basis, n_last = reduce_blocks(np.vstack([_dense(features), _dense(unlabeled)]),
                                        0 if n_embedding is None else n_embedding)
    trains = [train for train, _ in folds] + [np.arange(n_labeled)]  # all rows last
    n_trains = len(trains)
    block_of = np.repeat(np.arange(len(blocks)), n_trains)  # each problem's block weight
    everything_of = np.arange(1, len(blocks) + 1) * n_trains - 1  # their all-rows problems
    scale = (None if n_embedding is None  # else each problem's, by its block weight
             else column_scales(rows.shape[1], n_last, blocks)[block_of])
    C = np.asarray(Cs, dtype=float)[block_of]
    row_weights = np.zeros((len(block_of), len(rows)))
    row_targets = np.zeros((len(block_of), len(rows)), dtype=np.int64)
    row_targets[:, :n_labeled] = targets
    for p in range(len(block_of)):
        train = trains[p % n_trains]
        row_weights[p, train] = weights[train]
    labeled_total = row_weights.sum(axis=1)

    def solve(problems, init=None):
        return fit_logistic_batch(rows, row_targets[problems], row_weights[problems],
                                  C[problems], n_classes, init=init, max_iter=max_iter,
                                  column_scale=None if scale is None else scale[problems])

    def unlabeled_proba(problems, coef, intercept):
        seen = coef if scale is None else coef * scale[problems, None, :]
        return softmax(class_logits(rows[n_labeled:], seen, intercept), axis=2)

    everything = solve(everything_of)
    proba = unlabeled_proba(everything_of, everything.coef, everything.intercept)
    # no row to pseudo-label: no twin for that block weight, and no fold to run
    in_play = np.max(proba, axis=(1, 2)) >= THRESHOLD
    if not _any(in_play):
        return [None] * len(blocks)
    coef = np.zeros((len(block_of), *everything.coef.shape[1:]))
    intercept = np.zeros((len(block_of), everything.intercept.shape[1]))
    coef[everything_of], intercept[everything_of] = everything.coef, everything.intercept
    moving = in_play[block_of]
    fold_problems = np.flatnonzero(moving & (np.arange(len(block_of)) % n_trains < n_trains - 1))
    solution = solve(fold_problems)
    coef[fold_problems], intercept[fold_problems] = solution.coef, solution.intercept
    n_pseudo = np.zeros(len(block_of), dtype=int)
    for _ in range(MAX_ROUNDS):
        proba = unlabeled_proba(slice(None), coef, intercept)
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
    twins = []
    seen = coef if scale is None else coef * scale[:, None, :]
    for b, last in enumerate(everything_of):
        if not (in_play[b] and n_pseudo[last]):
            twins.append(None)
            continue
        held_out = [log_likelihood(rows[test], seen[last - n_trains + 1 + k],
                                   intercept[last - n_trains + 1 + k], targets[test],
                                   weights[test])
                    for k, (_, test) in enumerate(folds)]
        twins.append((LinearModel(expand(coef[last], basis), intercept[last]),
                      float(np.mean(held_out))))
    return twins


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
