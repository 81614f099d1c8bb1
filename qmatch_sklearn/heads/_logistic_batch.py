"""Many L2-penalised logistic regressions on one feature matrix, solved together.

One ``LogisticRegression`` per C, fold and self-training round spends its time in input
validation, so problem p here has its own targets, row weights and C, one matrix product
per iteration for all (NumPy: torch's dispatch costs more on few rows). Each minimises
``LogisticRegression(C, solver="lbfgs")``'s objective divided by the total weight S,
F = (1 / S) sum_i r_i CE(softmax(x_i W + b), y_i) + ||W||^2 / (2 C S), by L-BFGS (Liu &
Nocedal, 1989, "On the limited memory BFGS method for large scale optimization"; Nocedal
& Wright, "Numerical Optimization", 2nd ed., algorithm 7.4) with an Armijo line search.
With fewer rows than features W lies in the rows' span (Scholkopf, Herbrich & Smola, 2001,
"A generalized representer theorem"): :func:`reduce_features`. A problem may also see the
columns of X scaled (``column_scale``, the embedding block's weight of
:mod:`._averaging`), so that problems on differently weighted blocks share one X.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import block_diag
from scipy.sparse import issparse
from scipy.special import softmax

#: Correction pairs each problem's L-BFGS keeps (scipy's ``maxcor`` default).
HISTORY = 10
#: Armijo's sufficient-decrease constant and the most step halvings per iteration.
ARMIJO, MAX_HALVINGS = 1e-4, 40
#: ``ndarray.sum``, ``max``, ``all`` and ``any`` without their Python wrappers (the same
#: reductions): the solver's arrays are small, so its time is in calls.
_sum, _max = np.add.reduce, np.maximum.reduce
_all, _any = np.logical_and.reduce, np.logical_or.reduce


@dataclass(frozen=True)
class LogisticBatch:
    """A batch's ``coef`` (problems, outputs, features), ``intercept`` and ``n_iter``;
    outputs is 1 for two classes."""

    coef: np.ndarray
    intercept: np.ndarray
    n_iter: np.ndarray


@dataclass(frozen=True)
class LinearModel:
    """One solved regression with ``LogisticRegression``'s ``coef_`` and ``intercept_``."""

    coef_: np.ndarray
    intercept_: np.ndarray

    def predict_proba(self, X):
        logits = class_logits(_dense(X), self.coef_[None], self.intercept_[None])[0]
        return softmax(logits, axis=1)


def _dense(X):
    return np.asarray(X.toarray() if issparse(X) else X, dtype=np.float64)


def class_logits(X, coef, intercept):
    """Each problem's logits (problems, rows, classes) of ``X``, 0 first for two classes."""
    X = np.asarray(X, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    n_problems, outputs, n_features = coef.shape
    logits = (X @ coef.reshape(-1, n_features).T).reshape(len(X), n_problems, outputs)
    logits = logits.transpose(1, 0, 2) + np.asarray(intercept)[:, None, :]
    if logits.shape[2] == 1:
        logits = np.concatenate([np.zeros_like(logits), logits], axis=2)
    return logits


class _Objective:
    """F and its gradient for every problem, parameters flattened to (problems, m).

    It works in a (problems, classes, rows) layout, where the gradient of the weights is one
    matrix product with ``X`` and no transposed array is copied. With ``column_scale``
    (problems, features), problem p sees ``X * column_scale[p]``: its logits are
    ``X (column_scale[p] * W)^T``, its penalty stays ``||W||^2``."""

    def __init__(self, X, targets, weights, C, n_classes, column_scale=None):
        self.X = np.asarray(X, dtype=np.float64)
        n_problems, n_features = weights.shape[0], self.X.shape[1]
        self.outputs = 1 if n_classes == 2 else n_classes
        self.shape = (n_problems, self.outputs, n_features)
        self.column_scale = (None if column_scale is None
                             else np.asarray(column_scale, dtype=np.float64)[:, None, :])
        weights = np.asarray(weights, dtype=np.float64)
        total = weights.sum(axis=1)
        self.row_share = weights / total[:, None]
        self.penalty = 1.0 / (np.asarray(C, dtype=np.float64) * total)
        # where each row's class sits in a problem's flat (classes, rows) block, and where
        # that block starts in the flat (problems, classes, rows) arrays
        n_rows = weights.shape[1]
        self.target_at = (np.broadcast_to(np.asarray(targets, dtype=np.int64), weights.shape)
                          * n_rows + np.arange(n_rows))
        self.block_at = (np.arange(n_problems) * max(self.outputs, 2) * n_rows)[:, None]
        self.all_at = self.target_at + self.block_at  # all problems: the common case

    def split(self, params):
        _, outputs, n_features = self.shape
        coef = params[:, : outputs * n_features].reshape(len(params), outputs, n_features)
        return coef, params[:, outputs * n_features:]

    def __call__(self, params, problems):
        """F and its gradient at ``params`` of the problems indexed by ``problems`` (an
        index array, or ``slice(None)`` for all of them)."""
        coef, intercept = self.split(params)
        n_problems, outputs = len(coef), self.outputs
        row_share, penalty = self.row_share[problems], self.penalty[problems]
        scale = None if self.column_scale is None else self.column_scale[problems]
        seen = coef if scale is None else coef * scale  # the weights of the unscaled X
        logits = (seen.reshape(-1, coef.shape[2]) @ self.X.T).reshape(
            n_problems, outputs, -1) + intercept[:, :, None]
        if outputs == 1:  # two classes: the first's logit is 0
            logits = np.concatenate([np.zeros_like(logits), logits], axis=1)
        logits -= _max(logits, axis=1, keepdims=True)
        proba = np.exp(logits)
        normaliser = _sum(proba, axis=1, keepdims=True)
        proba /= normaliser
        # the rows' classes in the flat (problems, classes, rows) arrays
        at = (self.all_at if isinstance(problems, slice)
              else self.target_at[problems] + self.block_at[:n_problems])
        row_log_proba = logits.reshape(-1)[at] - np.log(normaliser[:, 0])
        value = -_sum(row_share * row_log_proba, axis=1)
        value += 0.5 * penalty * _sum(np.square(coef), axis=(1, 2))
        proba.reshape(-1)[at] -= 1.0  # softmax - one-hot: the loss's gradient in the logits
        residual = proba[:, -outputs:] * row_share[:, None, :]
        coef_grad = (residual.reshape(-1, residual.shape[2]) @ self.X).reshape(coef.shape)
        if scale is not None:
            coef_grad *= scale
        coef_grad += penalty[:, None, None] * coef
        grad = np.concatenate([coef_grad.reshape(n_problems, -1), _sum(residual, axis=2)],
                              axis=1)
        return value, grad


def _direction(grad, steps, changes, inverse_curvature, n_pairs, newest):
    """Minus the L-BFGS inverse-Hessian estimate times ``grad`` (two-loop recursion), per
    problem, from ``n_pairs`` pairs ending at slot ``newest``; pairs of curvature 0 skipped.
    ``inverse_curvature`` is (slots, problems, 1), broadcasting over each problem's row."""
    order = [(newest - i) % HISTORY for i in range(n_pairs)]
    q = grad.copy()
    product = np.empty_like(q)
    alphas = []
    for slot in order:
        alpha = inverse_curvature[slot] * _sum(np.multiply(steps[slot], q, out=product),
                                               axis=1, keepdims=True)
        q -= np.multiply(alpha, changes[slot], out=product)
        alphas.append(alpha)
    if n_pairs:
        y = changes[newest]
        scale = inverse_curvature[newest] * _sum(np.multiply(y, y, out=product), axis=1,
                                                 keepdims=True)
        known = inverse_curvature[newest, :, 0] > 0
        if _all(known):
            q /= scale
        else:
            q[known] /= scale[known]
    for slot, alpha in zip(reversed(order), reversed(alphas), strict=True):
        beta = inverse_curvature[slot] * _sum(np.multiply(changes[slot], q, out=product),
                                              axis=1, keepdims=True)
        q += np.multiply(alpha - beta, steps[slot], out=product)
    return np.negative(q, out=q)


def _norm(vectors):
    """Each row's Euclidean norm, as ``np.linalg.norm(vectors, axis=1)`` computes it."""
    return np.sqrt(_sum(vectors * vectors, axis=1))


def _rows_in_use(X, targets, weights):
    """The arguments without the rows of weight 0 in every problem (self-training's first
    solves read thousands of unlabeled rows no problem has labeled yet)."""
    used = (weights > 0).any(axis=0)
    if _all(used):
        return X, targets, weights
    targets = np.asarray(targets)
    return X[used], targets[..., used], weights[:, used]


def fit_logistic_batch(X, targets, weights, C, n_classes, init=None, max_iter=1000, tol=1e-4,
                       column_scale=None):
    """Solve the batch of logistic regressions described in the module.

    Parameters
    ----------
    X : array of shape (n_rows, n_features)
    targets : int array of shape (n_rows,) or (n_problems, n_rows)
        Class indices, shared or per problem.
    weights : array of shape (n_problems, n_rows)
        Row weights per problem (0: not in it); each problem needs a positive one.
    C : array of shape (n_problems,)
    n_classes : int
    init : LogisticBatch, default=None
        Solutions to warm-start from; zeros otherwise.
    max_iter : int, default=1000
    tol : float, default=1e-4
        A problem stops when no entry of its gradient exceeds ``tol`` in absolute value.
    column_scale : array of shape (n_problems, n_features), default=None
        Each problem's scale of the columns of ``X`` (:class:`_Objective`); the returned
        ``coef`` are those of the scaled columns.

    Returns
    -------
    LogisticBatch
    """
    X, targets, weights = _rows_in_use(X, targets, np.asarray(weights))
    objective = _Objective(X, targets, weights, np.asarray(C, dtype=float), n_classes,
                           column_scale)
    n_problems, outputs, n_features = objective.shape
    if init is None:
        params = np.zeros((n_problems, outputs * n_features + outputs))
    else:
        params = np.concatenate([np.reshape(init.coef, (n_problems, -1)),
                                 np.asarray(init.intercept, dtype=np.float64)], axis=1)
    value, grad = objective(params, np.arange(n_problems))
    steps = np.zeros((HISTORY, *params.shape))
    changes = np.zeros_like(steps)
    inverse_curvature = np.zeros((HISTORY, n_problems, 1))
    n_iter = np.zeros(n_problems, dtype=np.int64)
    active = np.abs(grad).max(axis=1) > tol
    n_pairs, newest = 0, -1
    for iteration in range(max_iter):
        if not _any(active):
            break
        # all problems live (the common case): a slice, whose views copy nothing
        live = slice(None) if _all(active) else np.flatnonzero(active)
        x, f, g = params[live], value[live], grad[live]
        direction = _direction(g, steps[:, live], changes[:, live],
                               inverse_curvature[:, live], n_pairs, newest)
        slope = _sum(g * direction, axis=1)
        uphill = slope >= 0  # a stale pair can point uphill: fall back to the gradient
        if _any(uphill):
            direction[uphill] = -g[uphill]
            slope = np.where(uphill, -_sum(g * g, axis=1), slope)
        step = np.ones(len(f))
        if iteration == 0:  # scipy's first step: at most a unit move
            step = np.minimum(1.0 / np.maximum(_sum(np.abs(direction), axis=1), 1e-300), 1.0)
        for _ in range(MAX_HALVINGS):
            trial = x + step[:, None] * direction
            trial_value, trial_grad = objective(trial, live)
            enough = trial_value <= f + ARMIJO * step * slope
            if _all(enough):
                break
            step = np.where(enough, step, step / 2)
        stalled = ~enough  # no decrease found: stop where it was, as scipy does
        if _any(stalled):
            trial = np.where(stalled[:, None], x, trial)
            trial_value = np.where(stalled, f, trial_value)
            trial_grad = np.where(stalled[:, None], g, trial_grad)
        newest = (newest + 1) % HISTORY
        n_pairs = min(n_pairs + 1, HISTORY)
        s, y = trial - x, trial_grad - g
        products = _sum(s * y, axis=1)
        curved = products > 1e-10 * _norm(s) * _norm(y)
        steps[newest, live], changes[newest, live] = s, y
        inverse_curvature[newest] = 0.0  # the problems at rest keep no pair here
        inverse_curvature[newest, live, 0] = (1.0 / products if _all(curved) else np.where(
            curved, 1.0 / np.where(curved, products, 1.0), 0.0))
        params[live], value[live], grad[live] = trial, trial_value, trial_grad
        n_iter[live] += 1
        active[live] = (_max(np.abs(trial_grad), axis=1) > tol) & ~stalled
    coef, intercept = objective.split(params)
    return LogisticBatch(coef, intercept, n_iter)


def reduce_features(X):
    """``(U Sigma, V^T)`` of ``X``'s thin SVD if it is wide, else ``(X, None)``."""
    X = _dense(X)
    if X.shape[0] >= X.shape[1]:
        return X, None
    u, sigma, vt = np.linalg.svd(X, full_matrices=False)
    return u * sigma, vt


def reduce_blocks(X, n_last):
    """``(features, basis, n_last_features)``: :func:`reduce_features` of ``X``'s first
    columns and of its last ``n_last`` apart, side by side, with the block-diagonal basis
    (None when neither block is wide) and the reduced last block's width. Scaling a block's
    columns then scales its reduced columns alike, so that one reduction serves every
    weight of a block (``column_scale``): the rows of ``[X_1, w X_2]`` lie in the span of the
    two blocks' row spans side by side whatever w, so that W does too (the representer
    theorem, as for :func:`reduce_features`), and the basis's rows are orthonormal, so that
    the penalty is the same in both coordinates."""
    X = _dense(X)
    blocks = [reduce_features(X[:, : X.shape[1] - n_last]),
              reduce_features(X[:, X.shape[1] - n_last:])]
    n_last_features = blocks[1][0].shape[1]
    if all(basis is None for _, basis in blocks):
        return X, None, n_last_features
    return (np.hstack([features for features, _ in blocks]),
            block_diag(*(np.eye(features.shape[1]) if basis is None else basis
                         for features, basis in blocks)),
            n_last_features)


def column_scales(n_features, n_last, block_weights):
    """Each block weight's ``column_scale`` of :func:`reduce_blocks`' ``n_features``
    features (block weights, features): 1 on the first block's columns, the weight on the
    last ``n_last``."""
    scale = np.ones((len(block_weights), n_features))
    scale[:, n_features - n_last:] = np.asarray(block_weights, dtype=float)[:, None]
    return scale


def expand(coef, basis):
    """Coefficients fitted on :func:`reduce_features`' (or :func:`reduce_blocks`')
    features, of the original columns."""
    return coef if basis is None else coef @ basis


def stack_path(solutions):
    """A path's solutions as one :class:`LogisticBatch` with a second axis for the Cs."""
    return LogisticBatch(*(np.stack([getattr(s, name) for s in solutions], axis=1)
                           for name in ("coef", "intercept", "n_iter")))


def logistic_path(X, targets, weights, Cs, n_classes, max_iter=1000, tol=1e-4):
    """The batch's solutions along the increasing ``Cs``, each warm-started from the one
    before (on :func:`reduce_features`), stacked (:func:`stack_path`)."""
    features, basis = reduce_features(X)
    solutions, previous = [], None
    for C in Cs:
        previous = fit_logistic_batch(features, targets, weights, np.full(len(weights), C),
                                      n_classes, init=previous, max_iter=max_iter, tol=tol)
        solutions.append(LogisticBatch(expand(previous.coef, basis), previous.intercept,
                                       previous.n_iter))
    return stack_path(solutions)


def log_likelihood(X, coef, intercept, targets, weights):
    """Weighted mean log-likelihood of ``targets`` per regression, as ``log_loss`` clips."""
    lead = coef.shape[:-2]
    logits = class_logits(X, coef.reshape(-1, *coef.shape[-2:]),
                          intercept.reshape(-1, intercept.shape[-1]))
    proba = np.exp(logits - _max(logits, axis=2, keepdims=True))  # scipy's softmax
    proba /= _sum(proba, axis=2, keepdims=True)
    eps = np.finfo(proba.dtype).eps
    row_proba = np.clip(proba[:, np.arange(len(targets)), targets], eps, 1 - eps)
    scores = np.log(row_proba) @ (np.asarray(weights, dtype=float) / np.sum(weights))
    return scores.reshape(lead)
