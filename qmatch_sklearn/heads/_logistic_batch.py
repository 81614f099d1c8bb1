"""Many L2-penalised logistic regressions on one feature matrix, solved together.

One ``LogisticRegression`` per C, fold and self-training round spends its time in input
validation, so problem p here has its own targets, row weights and C, one matrix product
per iteration for all (NumPy: torch's dispatch costs more on few rows). Each minimises
``LogisticRegression(C, solver="lbfgs")``'s objective divided by the total weight S,
F = (1 / S) sum_i r_i CE(softmax(x_i W + b), y_i) + ||W||^2 / (2 C S), with an Armijo line
search, by Newton's method where each problem's Hessian is small (Nocedal & Wright,
"Numerical Optimization", 2nd ed., section 3.3: a few iterations, each one small linear
solve), else by L-BFGS (Liu & Nocedal, 1989, "On the limited memory BFGS method for large
scale optimization"; Nocedal & Wright, algorithm 7.4).
With fewer rows than features W lies in the rows' span (Scholkopf, Herbrich & Smola, 2001,
"A generalized representer theorem"): :func:`reduce_features`, which lets Newton's method
solve the regressions on a few dozen labeled rows of a few classes.
"""

from dataclasses import dataclass

import numpy as np
from scipy.sparse import issparse
from scipy.special import softmax

#: Correction pairs each problem's L-BFGS keeps (scipy's ``maxcor`` default).
HISTORY = 10
#: Armijo's sufficient-decrease constant and the most step halvings per iteration.
ARMIJO, MAX_HALVINGS = 1e-4, 40
#: The largest problems Newton's method solves under ``method="auto"``: parameters of one
#: problem (the Hessian's side), and products of its Hessian (outputs x rows x parameters).
#: On few rows an iteration of either method costs its NumPy calls, not its arithmetic, and
#: Newton's takes a few iterations where L-BFGS takes ten or more; past these the Hessian's
#: products and solve cost more than the iterations save.
NEWTON_MAX_PARAMETERS, NEWTON_MAX_PRODUCTS = 128, 2**17
#: The smallest gradient Newton's method aims at (``tol ** 2``, but not into rounding).
NEWTON_MIN_TOL = 1e-12
#: A change of F within this share of it is rounding (scikit-learn's Newton solver's 16 eps).
ROUNDING = 16 * np.finfo(np.float64).eps


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
    matrix product with ``X`` and no transposed array is copied."""

    def __init__(self, X, targets, weights, C, n_classes):
        self.X = np.asarray(X, dtype=np.float64)
        n_problems, n_features = weights.shape[0], self.X.shape[1]
        self.outputs = 1 if n_classes == 2 else n_classes
        self.shape = (n_problems, self.outputs, n_features)
        weights = np.asarray(weights, dtype=np.float64)
        total = weights.sum(axis=1)
        self.row_share = weights / total[:, None]
        self.penalty = 1.0 / (np.asarray(C, dtype=np.float64) * total)
        # where each row's class sits in a problem's flat (classes, rows) block
        n_rows = weights.shape[1]
        self.target_at = (np.broadcast_to(np.asarray(targets, dtype=np.int64), weights.shape)
                          * n_rows + np.arange(n_rows))

    def split(self, params):
        _, outputs, n_features = self.shape
        coef = params[:, : outputs * n_features].reshape(len(params), outputs, n_features)
        return coef, params[:, outputs * n_features:]

    def logits(self, coef, intercept):
        """Every class's logits (problems, classes, rows), less each row's largest."""
        logits = (coef.reshape(-1, coef.shape[2]) @ self.X.T).reshape(
            len(coef), self.outputs, -1) + intercept[:, :, None]
        if self.outputs == 1:  # two classes: the first's logit is 0
            logits = np.concatenate([np.zeros_like(logits), logits], axis=1)
        return logits - logits.max(axis=1, keepdims=True)

    def __call__(self, params, problems):
        """F and its gradient at ``params`` of the problems indexed by ``problems``."""
        coef, intercept = self.split(params)
        n_problems, outputs = len(coef), self.outputs
        row_share, penalty = self.row_share[problems], self.penalty[problems]
        target_at = self.target_at[problems]
        logits = self.logits(coef, intercept)
        proba = np.exp(logits)
        normaliser = proba.sum(axis=1, keepdims=True)
        proba /= normaliser
        # the rows' classes in the flat (problems, classes, rows) arrays
        at = target_at + (np.arange(n_problems) * proba.shape[1] * proba.shape[2])[:, None]
        row_log_proba = logits.reshape(-1)[at] - np.log(normaliser[:, 0])
        value = -(row_share * row_log_proba).sum(axis=1)
        value += 0.5 * penalty * np.square(coef).sum(axis=(1, 2))
        proba.reshape(-1)[at] -= 1.0  # softmax - one-hot: the loss's gradient in the logits
        residual = proba[:, -outputs:] * row_share[:, None, :]
        coef_grad = (residual.reshape(-1, residual.shape[2]) @ self.X).reshape(coef.shape)
        coef_grad += penalty[:, None, None] * coef
        grad = np.concatenate([coef_grad.reshape(n_problems, -1), residual.sum(axis=2)],
                              axis=1)
        return value, grad


class _LBFGS:
    """L-BFGS directions: minus the inverse-Hessian estimate of the last ``HISTORY`` pairs
    of steps and gradient changes times the gradient (two-loop recursion), per problem."""

    def __init__(self, shape):
        self.steps = np.zeros((HISTORY, *shape))
        self.changes = np.zeros_like(self.steps)
        self.inverse_curvature = np.zeros((HISTORY, shape[0]))
        self.n_pairs, self.newest = 0, -1

    def direction(self, x, grad, live):
        """The direction of the problems ``live`` at ``x``; pairs of curvature 0 skipped."""
        steps, changes = self.steps[:, live], self.changes[:, live]
        inverse_curvature = self.inverse_curvature[:, live]
        order = [(self.newest - i) % HISTORY for i in range(self.n_pairs)]
        q = grad.copy()
        alphas = []
        for slot in order:
            alpha = inverse_curvature[slot] * (steps[slot] * q).sum(axis=1)
            q -= alpha[:, None] * changes[slot]
            alphas.append(alpha)
        if self.n_pairs:
            y = changes[self.newest]
            curvature = (y * y).sum(axis=1)
            known = inverse_curvature[self.newest] > 0
            q[known] /= (inverse_curvature[self.newest] * curvature)[known, None]
        for slot, alpha in zip(reversed(order), reversed(alphas), strict=True):
            beta = inverse_curvature[slot] * (changes[slot] * q).sum(axis=1)
            q += (alpha - beta)[:, None] * steps[slot]
        return -q

    def enough(self, f, g, trial_value, trial_grad, step, slope):
        """Armijo's sufficient decrease (:func:`_armijo`)."""
        return _armijo(f, trial_value, step, slope)

    def first_step(self, direction):
        """scipy's first step: at most a unit move, before any pair is known."""
        if self.n_pairs:
            return np.ones(len(direction))
        return np.minimum(1.0 / np.maximum(np.abs(direction).sum(axis=1), 1e-300), 1.0)

    def remember(self, live, s, y):
        """Keep the pair ``(s, y)`` of the problems ``live``; the others keep none here."""
        self.newest = (self.newest + 1) % HISTORY
        self.n_pairs = min(self.n_pairs + 1, HISTORY)
        products = (s * y).sum(axis=1)
        curved = products > 1e-10 * np.linalg.norm(s, axis=1) * np.linalg.norm(y, axis=1)
        self.steps[self.newest, live], self.changes[self.newest, live] = s, y
        self.inverse_curvature[self.newest] = 0.0
        self.inverse_curvature[self.newest, live] = np.where(
            curved, 1.0 / np.where(curved, products, 1.0), 0.0)


class _Newton:
    """Newton directions, minus the inverse of F's Hessian times the gradient, per problem.

    The Hessian of the softmax cross-entropy (Bishop, "Pattern Recognition and Machine
    Learning", 2006, eq. 4.110) is the sum over rows of r_i / S (diag(p_i) - p_i p_i^T)
    kron x_i x_i^T over the fitted classes' logits, x_i with a 1 for the intercept, plus
    the penalty's on the weights; it is built and solved in that (class, features then 1)
    order. The intercepts get ``1e-8`` more curvature, so that the system has one solution
    where theirs vanishes: where every class has a logit, their sum does not change F, and
    rows predicted with certainty add none."""

    def __init__(self, objective):
        self.objective = objective
        _, outputs, n_features = objective.shape
        self.rows = np.concatenate([objective.X, np.ones((len(objective.X), 1))], axis=1)
        # where each parameter (weights, then intercepts) sits in (class, feature-or-1)
        order = np.arange(outputs * (n_features + 1)).reshape(outputs, n_features + 1)
        self.order = np.concatenate([order[:, :-1].ravel(), order[:, -1]])
        self.is_intercept = (order % (n_features + 1) == n_features).ravel()

    def direction(self, x, grad, live):
        """The direction of the problems ``live`` at ``x``, of gradient ``grad``."""
        objective = self.objective
        coef, intercept = objective.split(x)
        n_problems, outputs, _ = coef.shape
        logits = objective.logits(coef, intercept)
        proba = np.exp(logits)
        proba = (proba / proba.sum(axis=1, keepdims=True))[:, -outputs:]
        curvature = objective.row_share[live][:, None, None, :] * (
            np.eye(outputs)[None, :, :, None] * proba[:, :, None, :]
            - proba[:, :, None, :] * proba[:, None, :, :])
        blocks = self.rows.T @ (curvature[..., None] * self.rows)  # (p, o, o, f+1, f+1)
        size = len(self.order)
        hessian = blocks.transpose(0, 1, 3, 2, 4).reshape(n_problems, size, size)
        hessian[:, np.arange(size), np.arange(size)] += np.where(
            self.is_intercept, 1e-8, objective.penalty[live][:, None])
        augmented = np.empty_like(grad)
        augmented[:, self.order] = grad
        return -np.linalg.solve(hessian, augmented[:, :, None])[:, self.order, 0]

    def enough(self, f, g, trial_value, trial_grad, step, slope):
        """Armijo's sufficient decrease, or where the decrease is too small to show in F
        (within ``ROUNDING`` of it, as near the optimum at ``tol ** 2``), a smaller
        gradient, as scikit-learn's Newton solver for its linear models checks."""
        hidden = np.abs(trial_value - f) <= ROUNDING * np.abs(f)
        smaller = np.abs(trial_grad).max(axis=1) < np.abs(g).max(axis=1)
        return _armijo(f, trial_value, step, slope) | (hidden & smaller)

    def first_step(self, direction):
        """A unit step: Newton's, which near the optimum needs no shortening."""
        return np.ones(len(direction))

    def remember(self, live, s, y):
        """Nothing: each direction reads the Hessian where it starts."""


def _armijo(f, trial_value, step, slope):
    """Whether F fell from ``f`` to ``trial_value`` by at least ``ARMIJO`` of what its
    ``slope`` along the direction promised over ``step``."""
    return trial_value <= f + ARMIJO * step * slope


def _minimise(objective, params, directions, max_iter, tol):
    """``params`` moved along ``directions``' steps, each shortened until it decreases F
    enough (``directions.enough``), until no entry of a problem's gradient exceeds ``tol``;
    with each problem's iterations."""
    n_problems = len(params)
    value, grad = objective(params, np.arange(n_problems))
    n_iter = np.zeros(n_problems, dtype=np.int64)
    active = np.abs(grad).max(axis=1) > tol
    for _ in range(max_iter):
        if not active.any():
            break
        # all problems live (the common case): a slice, whose views copy nothing
        live = slice(None) if active.all() else np.flatnonzero(active)
        x, f, g = params[live], value[live], grad[live]
        direction = directions.direction(x, g, live)
        slope = (g * direction).sum(axis=1)
        uphill = ~(slope < 0)  # a stale pair can point uphill: fall back to the gradient
        direction[uphill] = -g[uphill]
        slope = np.where(uphill, -(g * g).sum(axis=1), slope)
        step = directions.first_step(direction)
        for _ in range(MAX_HALVINGS):
            trial = x + step[:, None] * direction
            trial_value, trial_grad = objective(trial, live)
            enough = directions.enough(f, g, trial_value, trial_grad, step, slope)
            if enough.all():
                break
            step = np.where(enough, step, step / 2)
        stalled = ~enough  # no decrease found: stop where it was, as scipy does
        trial = np.where(stalled[:, None], x, trial)
        trial_value = np.where(stalled, f, trial_value)
        trial_grad = np.where(stalled[:, None], g, trial_grad)
        directions.remember(live, trial - x, trial_grad - g)
        params[live], value[live], grad[live] = trial, trial_value, trial_grad
        n_iter[live] += 1
        active[live] = (np.abs(trial_grad).max(axis=1) > tol) & ~stalled
    return params, n_iter


def _newton_pays(shape, n_classes):
    """Whether a problem of ``shape`` (rows, features) is within both of Newton's bounds,
    on :func:`reduce_features`' rows where they are fewer than the features."""
    n_rows, n_features = shape
    outputs = 1 if n_classes == 2 else n_classes
    parameters = outputs * (min(n_rows, n_features) + 1)
    return (parameters <= NEWTON_MAX_PARAMETERS
            and outputs * n_rows * parameters <= NEWTON_MAX_PRODUCTS)


def _rows_in_use(X, targets, weights):
    """The arguments without the rows of weight 0 in every problem (self-training's first
    solves read thousands of unlabeled rows no problem has labeled yet)."""
    used = (weights > 0).any(axis=0)
    if used.all():
        return X, targets, weights
    targets = np.asarray(targets)
    return X[used], targets[..., used], weights[:, used]


def fit_logistic_batch(X, targets, weights, C, n_classes, init=None, max_iter=1000, tol=1e-4,
                       method="auto"):
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
        A problem stops when no entry of its gradient exceeds ``tol`` in absolute value;
        under Newton's method, whose iterations near the optimum square the gradient, at
        ``tol ** 2`` (but at least ``NEWTON_MIN_TOL``), for little more time.
    method : {"auto", "newton", "lbfgs"}, default="auto"
        "auto": Newton's method where a problem has at most ``NEWTON_MAX_PARAMETERS``
        parameters and ``NEWTON_MAX_PRODUCTS`` Hessian products, else L-BFGS. Newton's
        method solves fewer rows of positive weight than features on
        :func:`reduce_features`' rows, so that a problem has a parameter a class for each
        row.

    Returns
    -------
    LogisticBatch
    """
    if method not in ("auto", "newton", "lbfgs"):
        raise ValueError(f'method must be "auto", "newton" or "lbfgs", got {method!r}')
    X, targets, weights = _rows_in_use(X, targets, np.asarray(weights))
    if method == "auto":
        method = "newton" if _newton_pays(X.shape, n_classes) else "lbfgs"
    X, basis = reduce_features(X) if method == "newton" else (X, None)
    objective = _Objective(X, targets, weights, np.asarray(C, dtype=float), n_classes)
    n_problems, outputs, n_features = objective.shape
    if init is None:
        params = np.zeros((n_problems, outputs * n_features + outputs))
    else:
        coef = init.coef if basis is None else init.coef @ basis.T
        params = np.concatenate([np.reshape(coef, (n_problems, -1)),
                                 np.asarray(init.intercept, dtype=np.float64)], axis=1)
    if method == "newton":
        directions, tol = _Newton(objective), min(tol, max(tol ** 2, NEWTON_MIN_TOL))
    else:
        directions = _LBFGS(params.shape)
    params, n_iter = _minimise(objective, params, directions, max_iter, tol)
    coef, intercept = objective.split(params)
    return LogisticBatch(expand(coef, basis), intercept, n_iter)


def reduce_features(X):
    """``(U Sigma, V^T)`` of ``X``'s thin SVD if it is wide, else ``(X, None)``."""
    X = _dense(X)
    if X.shape[0] >= X.shape[1]:
        return X, None
    u, sigma, vt = np.linalg.svd(X, full_matrices=False)
    return u * sigma, vt


def expand(coef, basis):
    """Coefficients fitted on :func:`reduce_features`' features, of the original columns."""
    return coef if basis is None else coef @ basis


def regularisation_path(X, targets, weights, Cs, n_classes, max_iter=1000, tol=1e-4):
    """Yield one :class:`LogisticBatch` per C of the increasing ``Cs``, each warm-started
    from the previous (on :func:`reduce_features`), so that a caller can stop early."""
    features, basis = reduce_features(X)
    previous = None
    for C in Cs:
        previous = fit_logistic_batch(features, targets, weights, np.full(len(weights), C),
                                      n_classes, init=previous, max_iter=max_iter, tol=tol)
        yield LogisticBatch(expand(previous.coef, basis), previous.intercept, previous.n_iter)


def stack_path(solutions):
    """A path's solutions as one :class:`LogisticBatch` with a second axis for the Cs."""
    return LogisticBatch(*(np.stack([getattr(s, name) for s in solutions], axis=1)
                           for name in ("coef", "intercept", "n_iter")))


def logistic_path(X, targets, weights, Cs, n_classes, max_iter=1000, tol=1e-4):
    """The whole :func:`regularisation_path` along ``Cs``, stacked (:func:`stack_path`)."""
    return stack_path(list(regularisation_path(X, targets, weights, Cs, n_classes,
                                               max_iter, tol)))


def log_likelihood(X, coef, intercept, targets, weights):
    """Weighted mean log-likelihood of ``targets`` per regression, as ``log_loss`` clips."""
    lead = coef.shape[:-2]
    logits = class_logits(X, coef.reshape(-1, *coef.shape[-2:]),
                          intercept.reshape(-1, intercept.shape[-1]))
    proba = softmax(logits, axis=2)
    eps = np.finfo(proba.dtype).eps
    row_proba = np.clip(proba[:, np.arange(len(targets)), targets], eps, 1 - eps)
    scores = np.log(row_proba) @ (np.asarray(weights, dtype=float) / np.sum(weights))
    return scores.reshape(lead)
