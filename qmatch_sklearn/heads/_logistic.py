"""The classifier's closed-form head: logistic regressions, their twins, a boosted member.

``QMatchClassifier`` with few labels and no validation set (``freeze_encoder="auto"``)
fits no layer with AdamW: its head is logistic regressions on the frozen embedding
beside the input features (one per weight of the embedding block,
:mod:`._averaging`), each C chosen by cross-validation on the labeled rows, all
folds and Cs solved as one batch (:mod:`._logistic_batch`); twins of each
regression that learn from the unlabeled rows (:mod:`._self_training`,
:mod:`._label_spreading`); and gradient-boosted trees on the input
(:mod:`._boosting`) stacked on the regressions' out-of-fold predictions. One
set of folds serves the choice of C, the twins and the stacking. What it fits
is a linear layer plus, optionally, the member's trees and weight; its
prediction is :class:`~._prediction.ClassifierHead`.
"""

from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse import issparse
from scipy.special import log_softmax
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from skorch.history import History

from .._engine import TrainingResult
from .._warnings import warn
from ._averaging import block_weights, pseudo_bma_weights, unscaled_coef, weigh_embedding_block
from ._boosting import (
    MIN_BOOSTING_WEIGHT,
    fit_boosted_member,
    stacking_weight,
    tries_boosted_member,
)
from ._label_spreading import spread_logistic
from ._logistic_batch import (
    LinearModel,
    log_likelihood,
    logistic_path,
    regularisation_path,
    stack_path,
)
from ._self_training import self_trained_logistic

#: The head a classifier fits in closed form (``freeze_encoder="auto"``
#: without validation): a logistic regression on the frozen encoder, its C
#: chosen by cross-validation on the labeled rows. The other heads
#: (``LINEAR``, ``FINE_TUNED`` of ``.._head``) train with AdamW.
LOGISTIC = "logistic"
#: Iterations of the logistic head's solver (L-BFGS) for each C.
LOGISTIC_MAX_ITER = 1000
#: The logistic head's grid of C, increasing: ``LogisticRegressionCV``'s ten defaults.
CS = np.logspace(-4, 4, 10)
#: Cs in a row whose mean held-out score fell, after which a regression's path
#: stops (:func:`past_the_peak`).
PATH_PATIENCE = 2
#: The twins a plain regression of the logistic head may get from the unlabeled rows,
#: by the fitted attribute that says how much they counted: self-trained
#: (``self_training=True``) and trained on spread labels (``label_spreading=True``).
TWINS = {"self_training_weight_": self_trained_logistic,
         "label_spreading_weight_": spread_logistic}


@dataclass(frozen=True)
class LogisticAverage:
    """The closed-form head's regressions averaged into one linear head
    (:func:`average_logistic`).

    ``coef`` (n_classes, n_features) and ``intercept`` give one logit per class
    (for two classes the regression's one score is the second logit and the
    first is 0, so the softmax equals its sigmoid); ``embedding_weight`` is sum_k
    p_k w_k over the regressions, ``twin_weights`` each kind of twin's share of
    the regressions' weight, ``unconverged`` the C of each regression that did
    not converge, ``folds`` the cross-validation folds (:func:`head_folds`;
    None when a class has one row of positive weight), ``paths`` the plain
    regressions' cross-validation as ``(block weight, coefficient paths of
    shape (folds, Cs, outputs, features + 1), held-out scores of shape (folds,
    Cs))``, Cs being those its path reached (empty without folds).
    """

    coef: np.ndarray
    intercept: np.ndarray
    embedding_weight: float
    twin_weights: dict
    unconverged: list
    folds: list
    paths: list

    def logits(self, rows):
        return rows @ self.coef.T + self.intercept


def past_the_peak(scores):
    """Whether a regularisation path whose mean held-out scores so far, C by C,
    are ``scores`` can stop: the last ``PATH_PATIENCE`` Cs each scored below the
    C before. Beyond its best C a logistic regression's held-out log-likelihood
    falls as C grows (the fit grows confident on its own rows), and the largest
    Cs are the slowest to solve; where the scores rise again after two falls the
    later Cs are not tried, a choice ``LogisticRegressionCV``, which solves every
    C, would make differently."""
    return len(scores) > PATH_PATIENCE and bool(np.all(np.diff(scores[-PATH_PATIENCE - 1:]) < 0))


def head_folds(targets, seed, sample_weight=None):
    """The closed-form head's cross-validation folds, a list of ``(train,
    test)`` row indices, or None when a class has one row of positive weight
    (the head then fits C=1 without cross-validation).

    The rows of positive weight are split by scikit-learn's ``StratifiedKFold``
    (shuffled by ``seed``) into as many folds (at most 5) as allows the
    smallest count of them in a class that has any, so that every fold scores
    and trains on rows that count. Rows of weight 0 count in neither a fit nor
    a score; they are dealt over the test folds in turn, class by class in an
    order shuffled by ``seed``, except those of a class with only such rows,
    which train in every fold, so that every fold's fit has every class (held
    out in one fold, a lone such row left its class out of the others' fits).
    Without weights of 0 these are ``StratifiedKFold``'s folds of all the rows.
    """
    positive = (np.ones(len(targets), dtype=bool) if sample_weight is None
                else np.asarray(sample_weight) > 0)
    counts = np.bincount(targets[positive], minlength=int(targets.max()) + 1)
    smallest = counts[counts > 0].min()
    if smallest < 2:
        return None
    n_folds = min(5, smallest)
    counted = np.flatnonzero(positive)
    splitter = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    tests = [counted[test] for _, test in splitter.split(counted, targets[counted])]
    ignored = np.flatnonzero(~positive & (counts[targets] > 0))
    ignored = np.random.default_rng(seed).permutation(ignored)
    ignored = ignored[np.argsort(targets[ignored], kind="stable")]
    tests = [np.sort(np.r_[test, ignored[k::n_folds]]) for k, test in enumerate(tests)]
    rows = np.arange(len(targets))
    return [(np.setdiff1d(rows, test), test) for test in tests]


def average_logistic(embeddings, targets, seed, sample_weight=None, n_embedding=None,
                     unlabeled=None, twins=()):
    """The logistic regressions of the closed-form head on ``embeddings``,
    averaged: a :class:`LogisticAverage`.

    The regularisation C is chosen among :data:`CS` by stratified
    cross-validation (log-loss) on the labeled rows (:func:`head_folds`: as many
    folds, at most 5, as the smallest class's rows of positive weight allow), as
    ``LogisticRegressionCV`` chooses it, every fold's and the final regression
    solved as one batch along the grid
    (:func:`~._logistic_batch.regularisation_path`), which stops past the best
    C (:func:`past_the_peak`); C=1 when a class has one. When
    ``embeddings`` end with ``n_embedding`` embedding columns beside the input
    features, one regression is fitted for each weight of
    that block (C chosen for each, on the same folds) and their scores are
    averaged with weights from their cross-validated log-losses
    (:func:`~._averaging.weigh_embedding_block`).

    With ``unlabeled`` (the features of unlabeled rows, scaled alike) and
    cross-validation folds, each regression has a twin at its C for each of
    ``twins`` (keys of :data:`TWINS`): self-trained
    (:func:`~._self_training.self_trained_logistic`) or trained on labels spread
    over the neighbour graph (:func:`~._label_spreading.spread_logistic`), the
    pseudo-labelling repeated in every fold; none where no unlabeled row is
    confident. The twins are weighed against the others by the same averaging.
    """
    folds = head_folds(targets, seed, sample_weight)
    if unlabeled is None or folds is None:
        twins = ()
    n_classes = int(targets.max()) + 1
    weights = (np.ones(len(targets)) if sample_weight is None
               else np.asarray(sample_weight, dtype=float))
    unconverged, paths = [], []
    kinds = []  # each head's twin attribute (None: a plain regression), in the heads' order
    block_of_fit = iter(block_weights(n_embedding))  # the block weight of each fit call

    def fit(features, unlabeled):
        if folds is None:
            C, score = 1.0, 0.0
            solution = logistic_path(features, targets, weights[None], [C], n_classes,
                                     LOGISTIC_MAX_ITER)
            chosen = 0
        else:
            # every fold's training rows, then all rows: each solved along the C grid
            problems = np.zeros((len(folds) + 1, len(targets)))
            for k, (train, _) in enumerate(folds):
                problems[k, train] = weights[train]
            problems[-1] = weights
            solutions, scores = [], []
            for at_C in regularisation_path(features, targets, problems, CS, n_classes,
                                            LOGISTIC_MAX_ITER):
                solutions.append(at_C)
                scores.append([log_likelihood(features[test], at_C.coef[k],
                                              at_C.intercept[k], targets[test], weights[test])
                               for k, (_, test) in enumerate(folds)])
                if past_the_peak(np.mean(scores, axis=1)):
                    break
            solution, scores = stack_path(solutions), np.array(scores).T  # (folds, Cs)
            chosen = int(scores.mean(axis=0).argmax())
            C, score = float(CS[chosen]), float(scores.mean(axis=0)[chosen])
            paths.append((next(block_of_fit),
                          np.concatenate([solution.coef[:-1],
                                          solution.intercept[:-1, :, :, None]], axis=3),
                          scores))
        if solution.n_iter[:, chosen].max() >= LOGISTIC_MAX_ITER:
            unconverged.append(C)
        heads = [(LinearModel(solution.coef[-1, chosen], solution.intercept[-1, chosen]), score)]
        kinds.append(None)
        for name in twins:
            twin = TWINS[name](C, LOGISTIC_MAX_ITER, features, targets, unlabeled, folds,
                               sample_weight)
            if twin is not None:
                heads.append(twin)
                kinds.append(name)
        return heads

    coef, intercept, weight, _, p = weigh_embedding_block(
        fit, embeddings, n_embedding if folds is not None else None, unlabeled
    )
    if coef.shape[0] == 1:
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.r_[0.0, intercept]
    kinds = np.array(kinds, dtype=object)
    return LogisticAverage(
        coef, intercept, weight, {name: float(p[kinds == name].sum()) for name in twins},
        unconverged, folds, paths,
    )


def honest_out_of_fold(average, embeddings, n_embedding=None):
    """Out-of-fold logits of the plain closed-form head (``average``, a
    :class:`LogisticAverage` with folds, without its twins), from the
    regressions its cross-validation already fitted: on each fold k, each
    regression's C and the regressions' weights in the average are chosen on
    the held-out scores of the other folds alone, and the held-out rows of fold
    k are predicted by the regressions fitted without them (fold k's point of
    each regularisation path, at that C).

    What stacking weighs a model by must be predictions of rows that chose
    nothing about the model (Wolpert, 1992, "Stacked generalization", section 2;
    Breiman, 1996, "Stacked regressions"). A regression refitted out of fold at
    the C chosen on every row is not such a prediction: the held-out rows' own
    scores chose its C and its weight in the average, and its out-of-fold
    likelihood is optimistic, which tilts the stacking away from the boosted
    member. Here no row's score chooses anything about the regression that
    predicts it; its label still trains the other folds' regressions, whose
    scores choose (the price of reusing the head's folds instead of refitting the
    whole head, cross-validation inside, in every fold: 5 to 6 times the head's
    regressions). The twins, which learn from the unlabeled rows, are left out:
    where a member is tried (50 labeled rows or more) they hold little of the
    weight. A regression stopped short of convergence is used as it is. (Where
    a path stopped past its best C, the mean score of all folds chose where.)
    """
    n_outputs = average.paths[0][1].shape[2]  # 1 for two classes: the second's logit
    logits = np.zeros((len(embeddings), max(n_outputs, 2)))
    for k, (train, test) in enumerate(average.folds):
        others = np.arange(len(average.folds)) != k
        scores = [fold_scores[others].mean(axis=0) for _, _, fold_scores in average.paths]
        chosen = [s.argmax() for s in scores]  # each regression's C, chosen without fold k
        p = pseudo_bma_weights([s.max() for s in scores], len(train))
        for p_m, (weight, path, _), c in zip(p, average.paths, chosen, strict=True):
            coef = unscaled_coef(path[k, c, :, :-1], n_embedding, weight)
            intercept = path[k, c, :, -1]
            logits[test, -n_outputs:] += p_m * (embeddings[test] @ coef.T + intercept)
    return logits


def fit_logistic_head_(
    head, embeddings, targets, seed, sample_weight=None, n_embedding=None, inputs=None,
    unlabeled=None, twins=("self_training_weight_",),
):
    """Set ``head`` to the averaged logistic regressions on ``embeddings``
    (:func:`average_logistic`); a :class:`TrainingResult` and the head's fitted
    attributes.

    With dense ``inputs`` (the labeled rows as the network reads them), at
    least ``MIN_BOOSTING_ROWS`` of them, ``MIN_BOOSTING_ROWS_PER_CLASS`` per
    class on average (:func:`~._boosting.tries_boosted_member`) and two in
    every class, gradient-boosted
    trees on ``inputs`` (:func:`~._boosting.fit_boosted_member`, on the same
    folds) join the head: the predicted probabilities are
    (1 - pi) softmax(head) + pi p_trees, pi stacked
    (:func:`~._boosting.stacking_weight`): the pi whose mixture of the
    out-of-fold probabilities (the plain head's, from its own folds' regressions
    at Cs and weights the other folds choose, :func:`honest_out_of_fold`, and the
    tempered trees') is likeliest.

    The attributes: ``embedding_weight_`` (sum_k p_k w_k over the
    regressions), each of ``twins`` (that kind of twin's share of the
    regressions' weight), ``boosting_weight_`` (pi),
    ``boosted_trees_`` (the member's trees as arrays, None when pi is 0 or
    under ``MIN_BOOSTING_WEIGHT``) and ``boosting_temperature_``; without a
    member, only the first two (the others keep their
    ``BaseHeadClassifier._head_attributes`` defaults).
    """
    average = average_logistic(embeddings, targets, seed, sample_weight, n_embedding,
                               unlabeled, twins)
    if average.unconverged:
        warn(
            f"The logistic head (C={average.unconverged[0]:g}) did not converge in "
            f"{LOGISTIC_MAX_ITER} iterations, so its weights are not the regression's "
            "optimum. Pass freeze_encoder=True with X_val and y_val to train the head "
            "with AdamW and early stopping instead.",
            ConvergenceWarning,
        )
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(average.coef, dtype=torch.float32))
        head.bias.copy_(torch.as_tensor(average.intercept, dtype=torch.float32))
    attributes = {"embedding_weight_": average.embedding_weight, **average.twin_weights}
    member = None
    if (inputs is not None and not issparse(inputs) and average.folds is not None
            and tries_boosted_member(targets)):
        member = fit_boosted_member(inputs, targets, average.folds, seed, sample_weight)
    if member is not None:
        trees, temperature, member_log_proba = member
        head_logits = honest_out_of_fold(average, embeddings, n_embedding)
        boosting_weight = stacking_weight(
            log_softmax(head_logits, axis=1), member_log_proba, targets, sample_weight
        )
        if boosting_weight >= MIN_BOOSTING_WEIGHT:
            attributes.update(
                boosting_weight_=float(boosting_weight), boosted_trees_=trees,
                boosting_temperature_=temperature,
            )
    return TrainingResult(History(), 0, 0, None), attributes
