"""The classifier's closed-form head: logistic regressions, their twins, a boosted member.

One set of folds serves the regressions (:mod:`._averaging`, :mod:`._logistic_batch`),
their twins (:mod:`._self_training`, :mod:`._label_spreading`) and the stacking of the
boosted member (:mod:`._boosting`). Its prediction is :class:`~._prediction.ClassifierHead`.
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
from ._averaging import average_blocks, block_weights, pseudo_bma_weights, scale_block
from ._boosting import (
    MIN_BOOSTING_WEIGHT,
    fit_member_trees,
    member_out_of_fold,
    stacking_weight,
    tries_boosted_member,
)
from ._label_spreading import spread_logistic
from ._logistic_batch import (
    LinearModel,
    LogisticBatch,
    column_scales,
    expand,
    fit_logistic_batch,
    log_likelihood,
    logistic_path,
    reduce_blocks,
    stack_path,
)
from ._self_training import self_trained_logistics

#: The head a classifier fits in closed form (``freeze_encoder="auto"`` without validation).
LOGISTIC = "logistic"
#: Iterations of the logistic head's solver (L-BFGS) for each C.
LOGISTIC_MAX_ITER = 1000
#: The logistic head's grid of C, increasing: ``LogisticRegressionCV``'s ten defaults.
CS = np.logspace(-4, 4, 10)
#: Most folds of the head's cross-validation (``LogisticRegressionCV``'s default).
HEAD_FOLDS = 5
#: Falls in a row of the mean held-out score that stop a path (:func:`past_the_peak`).
PATH_PATIENCE = 2


def _each_block_weight(twin):
    """A twin of one regression (``twin(C, max_iter, features, targets, unlabeled, folds,
    sample_weight)``) as one of every block weight's, as :data:`TWINS` are called."""
    def twins(Cs, max_iter, features, targets, unlabeled, folds, sample_weight, n_embedding):
        return [twin(C, max_iter, scale_block(features, n_embedding, weight), targets,
                     scale_block(unlabeled, n_embedding, weight), folds, sample_weight)
                for C, weight in zip(Cs, block_weights(n_embedding), strict=True)]
    return twins


#: A plain regression's possible twins (``self_training=True``, ``label_spreading=True``),
#: by the fitted attribute that holds their weight: ``twins(Cs, max_iter, features,
#: targets, unlabeled, folds, sample_weight, n_embedding)`` gives each block weight's
#: (``Cs`` theirs), of its block-weighted columns, as :func:`~._self_training.twin_logistic`
#: returns one.
TWINS = {"self_training_weight_": self_trained_logistics,
         "label_spreading_weight_": _each_block_weight(spread_logistic)}


@dataclass(frozen=True)
class LogisticAverage:
    """The closed-form head's regressions averaged into one linear head.

    ``coef`` gives one logit per class (0 first for two classes), ``paths`` the plain
    regressions' cross-validation as ``(block weight, coefficients (folds, Cs, outputs,
    features + 1), held-out scores (folds, Cs))``.
    """

    coef: np.ndarray
    intercept: np.ndarray
    embedding_weight: float
    twin_weights: dict
    unconverged: list
    folds: list
    paths: list


def past_the_peak(scores):
    """Whether a path with mean held-out ``scores`` so far can stop: the last
    ``PATH_PATIENCE`` Cs each scored below the one before. Past its best C the held-out
    likelihood falls, and the largest Cs are the slowest to solve."""
    return len(scores) > PATH_PATIENCE and bool(np.all(np.diff(scores[-PATH_PATIENCE - 1:]) < 0))


def head_folds(targets, seed, sample_weight=None):
    """The closed-form head's folds as ``(train, test)`` row indices, or None when a class
    has one row of positive weight (the head then fits C=1).

    ``StratifiedKFold`` splits the rows of positive weight into at most ``HEAD_FOLDS`` folds;
    rows of a class with only weights of 0 train in every fold, so that every fit has
    every class.
    """
    positive = (np.ones(len(targets), dtype=bool) if sample_weight is None
                else np.asarray(sample_weight) > 0)
    counts = np.bincount(targets[positive], minlength=int(targets.max()) + 1)
    smallest = counts[counts > 0].min()
    if smallest < 2:
        return None
    n_folds = min(HEAD_FOLDS, smallest)
    counted = np.flatnonzero(positive)
    splitter = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    tests = [counted[test] for _, test in splitter.split(counted, targets[counted])]
    ignored = np.flatnonzero(~positive & (counts[targets] > 0))
    ignored = np.random.default_rng(seed).permutation(ignored)
    ignored = ignored[np.argsort(targets[ignored], kind="stable")]
    tests = [np.sort(np.r_[test, ignored[k::n_folds]]) for k, test in enumerate(tests)]
    rows = np.arange(len(targets))
    return [(np.setdiff1d(rows, test), test) for test in tests]


def cross_validated_paths(features, targets, weights, folds, n_classes, n_embedding):
    """Each block weight's (:func:`~._averaging.block_weights`) regularisation path along
    :data:`CS`, every block weight's problems at a C solved as one batch:
    ``[(block weight, path, scores)]``, ``path`` a :class:`~._logistic_batch.LogisticBatch`
    (each fold's training rows, then all rows; the Cs reached; coefficients of the
    block-weighted ``features``) and ``scores`` the held-out log-likelihoods (folds, Cs
    reached).

    Every problem sees the same rows, reduced once block by block
    (:func:`~._logistic_batch.reduce_blocks`), and its block weight as a scale of the
    embedding's columns; each C warm-starts from the one before, and a block weight's path
    stops on its own (:func:`past_the_peak`)."""
    blocks = block_weights(n_embedding)
    rows, basis, n_last = reduce_blocks(features, 0 if n_embedding is None else n_embedding)
    scale = column_scales(rows.shape[1], n_last, blocks)
    scaled = n_embedding is not None  # else one block, of scale 1
    n_problems = len(folds) + 1
    problems = np.zeros((n_problems, len(targets)))
    for k, (train, _) in enumerate(folds):
        problems[k, train] = weights[train]
    problems[-1] = weights  # all rows
    solutions, scores = [[] for _ in blocks], [[] for _ in blocks]
    running, previous = np.arange(len(blocks)), None
    for C in CS:
        at_C = fit_logistic_batch(
            rows, targets, np.tile(problems, (len(running), 1)),
            np.full(len(running) * n_problems, C), n_classes, init=previous,
            max_iter=LOGISTIC_MAX_ITER,
            column_scale=np.repeat(scale[running], n_problems, axis=0) if scaled else None)
        going = np.ones(len(running), dtype=bool)
        for i, block in enumerate(running):
            part = slice(i * n_problems, (i + 1) * n_problems)
            coef, intercept = at_C.coef[part], at_C.intercept[part]
            seen = coef * scale[block]  # the coefficients of the unweighted rows
            scores[block].append([log_likelihood(rows[test], seen[k], intercept[k],
                                                 targets[test], weights[test])
                                  for k, (_, test) in enumerate(folds)])
            solutions[block].append(LogisticBatch(expand(coef, basis), intercept,
                                                  at_C.n_iter[part]))
            going[i] = not past_the_peak(np.mean(scores[block], axis=1))
        kept = np.repeat(going, n_problems)
        running, previous = running[going], LogisticBatch(at_C.coef[kept],
                                                          at_C.intercept[kept], None)
        if not len(running):
            break
    return [(block, stack_path(solution), np.array(score).T)
            for block, solution, score in zip(blocks, solutions, scores, strict=True)]


def average_logistic(embeddings, targets, seed, sample_weight=None, n_embedding=None,
                     unlabeled=None, twins=()):
    """The closed-form head's logistic regressions on ``embeddings``, averaged: a
    :class:`LogisticAverage`.

    C is chosen among :data:`CS` by cross-validated log-loss, as ``LogisticRegressionCV``
    does, along :func:`cross_validated_paths`, for each block weight, and the regressions
    averaged by :func:`~._averaging.average_blocks`; with ``unlabeled`` rows each regression
    also gets its ``twins`` (keys of :data:`TWINS`).
    """
    folds = head_folds(targets, seed, sample_weight)
    if unlabeled is None or folds is None:
        twins = ()
    n_classes = int(targets.max()) + 1
    weights = (np.ones(len(targets)) if sample_weight is None
               else np.asarray(sample_weight, dtype=float))
    unconverged, paths, block_heads = [], [], []
    kinds = []  # each head's twin attribute (None: a plain regression), in the heads' order
    if folds is None:  # one block (average_blocks is told of none), at C=1
        n_embedding = None
        solution = logistic_path(embeddings, targets, weights[None], [1.0], n_classes,
                                 LOGISTIC_MAX_ITER)
        fits = [(1.0, 0.0, solution, 0)]
    else:
        fits = []
        for block, solution, scores in cross_validated_paths(embeddings, targets, weights,
                                                             folds, n_classes, n_embedding):
            chosen = int(scores.mean(axis=0).argmax())
            paths.append((block, np.concatenate([solution.coef[:-1],
                                                 solution.intercept[:-1, :, :, None]], axis=3),
                          scores))
            fits.append((float(CS[chosen]), float(scores.mean(axis=0)[chosen]), solution,
                         chosen))
    twin_heads = {name: TWINS[name]([C for C, *_ in fits], LOGISTIC_MAX_ITER, embeddings,
                                    targets, unlabeled, folds, sample_weight, n_embedding)
                  for name in twins}
    for b, (C, score, solution, chosen) in enumerate(fits):
        if solution.n_iter[:, chosen].max() >= LOGISTIC_MAX_ITER:
            unconverged.append(C)
        block_heads.append([(LinearModel(solution.coef[-1, chosen],
                                         solution.intercept[-1, chosen]), score)])
        kinds.append(None)
        for name in twins:
            if twin_heads[name][b] is not None:
                block_heads[-1].append(twin_heads[name][b])
                kinds.append(name)
    coef, intercept, weight, _, p = average_blocks(block_heads, n_embedding, len(embeddings))
    if coef.shape[0] == 1:
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.r_[0.0, intercept]
    kinds = np.array(kinds, dtype=object)
    return LogisticAverage(
        coef, intercept, weight, {name: float(p[kinds == name].sum()) for name in twins},
        unconverged, folds, paths,
    )


def honest_out_of_fold(average, embeddings, n_embedding=None):
    """Out-of-fold logits of the plain head (no twins) from its cross-validation's fits:
    fold k's rows predicted with Cs and weights chosen on the other folds, as stacking
    needs predictions of rows that chose nothing about the model (Wolpert, 1992, "Stacked
    generalization", section 2; Breiman, 1996, "Stacked regressions")."""
    n_outputs = average.paths[0][1].shape[2]  # 1 for two classes: the second's logit
    logits = np.zeros((len(embeddings), max(n_outputs, 2)))
    for k, (train, test) in enumerate(average.folds):
        others = np.arange(len(average.folds)) != k
        scores = [fold_scores[others].mean(axis=0) for _, _, fold_scores in average.paths]
        chosen = [s.argmax() for s in scores]  # each regression's C, chosen without fold k
        p = pseudo_bma_weights([s.max() for s in scores], len(train))
        for p_m, (weight, path, _), c in zip(p, average.paths, chosen, strict=True):
            coef = scale_block(path[k, c, :, :-1], n_embedding, weight)
            intercept = path[k, c, :, -1]
            logits[test, -n_outputs:] += p_m * (embeddings[test] @ coef.T + intercept)
    return logits


def fit_logistic_head_(
    head, embeddings, targets, seed, sample_weight=None, n_embedding=None, inputs=None,
    unlabeled=None, twins=("self_training_weight_",),
):
    """Set ``head`` to :func:`average_logistic`; a :class:`TrainingResult` and the fitted
    attributes (``embedding_weight_`` and each of ``twins``).

    With dense ``inputs`` passing :func:`~._boosting.tries_boosted_member`, boosted trees
    join as (1 - pi) softmax(head) + pi p_trees, pi stacked (:func:`~._boosting.stacking_weight`)
    on :func:`honest_out_of_fold`, adding ``boosting_weight_``, ``boosted_trees_`` and
    ``boosting_temperature_`` (else ``BaseHeadClassifier._head_attributes`` defaults).
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
        member = member_out_of_fold(inputs, targets, average.folds, seed, sample_weight)
    if member is not None:
        temperature, member_log_proba = member
        head_logits = honest_out_of_fold(average, embeddings, n_embedding)
        boosting_weight = stacking_weight(
            log_softmax(head_logits, axis=1), member_log_proba, targets, sample_weight
        )
        if boosting_weight >= MIN_BOOSTING_WEIGHT:  # only then its trees on all rows
            attributes.update(
                boosting_weight_=float(boosting_weight),
                boosted_trees_=fit_member_trees(inputs, targets, seed, sample_weight),
                boosting_temperature_=temperature,
            )
    return TrainingResult(History(), 0, 0, None), attributes
