"""The batched logistic solver of the few-label head (issue #54): each problem of a
batch is scikit-learn's ``LogisticRegression`` objective, solved at least as well
as scikit-learn's L-BFGS solves it, whatever else is in the batch."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.metrics import log_loss
from sklearn.model_selection import StratifiedKFold

from qmatch_sklearn.heads._averaging import EMBEDDING_WEIGHTS, scale_block
from qmatch_sklearn.heads._logistic_batch import (
    LinearModel,
    _Objective,
    expand,
    fit_logistic_batch,
    log_likelihood,
    logistic_path,
    reduce_blocks,
    reduce_features,
)


def _problems(seed, n_rows, n_features, n_classes, n_problems):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    y = rng.integers(0, n_classes, n_rows)
    y[:n_classes] = np.arange(n_classes)
    X[:, 0] += y  # some signal
    weights = rng.uniform(0.2, 3.0, size=(n_problems, n_rows))
    weights[:, n_classes:][rng.random((n_problems, n_rows - n_classes)) < 0.3] = 0.0
    C = 10.0 ** rng.uniform(-3, 3, n_problems)
    return X, y, weights, C


def _objective(X, y, weights, C, n_classes, coef, intercept):
    params = np.concatenate([np.reshape(coef, (len(C), -1)), intercept], axis=1)
    return _Objective(X, y, weights, C, n_classes)(params, np.arange(len(C)))[0]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), n_classes=st.integers(2, 4),
       n_rows=st.integers(12, 60), n_features=st.integers(1, 8))
def test_every_problem_reaches_scikit_learn_s_optimum(seed, n_classes, n_rows, n_features):
    X, y, weights, C = _problems(seed, n_rows, n_features, n_classes, 4)
    # as many iterations as the reference: on ill-conditioned draws L-BFGS needs over 1,000
    batch = fit_logistic_batch(X, y, weights, C, n_classes, tol=1e-8, max_iter=10_000)
    coefs, intercepts = [], []
    for w, c in zip(weights, C, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(C=c, tol=1e-8, max_iter=10_000).fit(X, y, sample_weight=w)
        coefs.append(model.coef_)
        intercepts.append(model.intercept_)
    ours = _objective(X, y, weights, C, n_classes, batch.coef, batch.intercept)
    theirs = _objective(X, y, weights, C, n_classes, np.array(coefs), np.array(intercepts))
    assert np.all(ours <= theirs + 1e-9)
    for model_coef, coef in zip(coefs, batch.coef, strict=True):
        np.testing.assert_allclose(coef, model_coef, atol=1e-4 * (1 + np.abs(model_coef).max()))


@pytest.mark.parametrize("per_problem_targets", [False, True])
def test_a_row_of_weight_0_is_a_row_left_out(per_problem_targets):
    X, y, weights, C = _problems(0, 40, 5, 3, 2)
    weights[:, :10] = 0.0
    weights[:, :3] = 1.0  # every class keeps a row
    weights[0, 3:6] = 1.0  # rows 6-9 weigh 0 in every problem, rows 3-5 in the second only
    targets = np.stack([y, np.roll(y, 1)]) if per_problem_targets else np.stack([y, y])
    batch = fit_logistic_batch(X, targets if per_problem_targets else y, weights, C, 3,
                               tol=1e-10)
    for p, kept in enumerate(weights > 0):
        alone = fit_logistic_batch(X[kept], targets[p, kept], weights[p:p + 1, kept],
                                   C[p:p + 1], 3, tol=1e-10)
        np.testing.assert_allclose(batch.coef[p], alone.coef[0], atol=1e-6)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_fewer_rows_than_features_are_solved_exactly_on_the_reduced_rows(n_classes):
    X, y, weights, C = _problems(1, 15, 60, n_classes, 3)
    full = fit_logistic_batch(X, y, weights, C, n_classes, tol=1e-10, max_iter=5000)
    features, basis = reduce_features(X)
    assert features.shape == (15, 15)
    reduced = fit_logistic_batch(features, y, weights, C, n_classes, tol=1e-10, max_iter=5000)
    np.testing.assert_allclose(expand(reduced.coef, basis), full.coef, atol=1e-5)
    np.testing.assert_allclose(reduced.intercept, full.intercept, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16), n_classes=st.integers(2, 4))
def test_a_problem_s_column_scale_is_a_fit_on_its_scaled_columns(seed, n_classes):
    X, y, weights, C = _problems(seed, 40, 5, n_classes, 3)
    scale = np.random.default_rng(seed).uniform(0.0, 2.0, size=(3, 5))
    scale[0, -2:] = 0.0  # a block left out
    batch = fit_logistic_batch(X, y, weights, C, n_classes, tol=1e-8, max_iter=10_000,
                               column_scale=scale)
    assert np.all(batch.coef[0, :, -2:] == 0.0)
    for p in range(3):
        alone = fit_logistic_batch(X * scale[p], y, weights[p:p + 1], C[p:p + 1], n_classes,
                                   tol=1e-8, max_iter=10_000)
        problem = (X * scale[p], y, weights[p:p + 1], C[p:p + 1], n_classes)
        ours = _objective(*problem, batch.coef[p:p + 1], batch.intercept[p:p + 1])
        theirs = _objective(*problem, alone.coef, alone.intercept)
        assert ours == pytest.approx(theirs, abs=1e-9)
        bound = 1e-4 * (1 + np.abs(alone.coef).max())
        np.testing.assert_allclose(batch.coef[p], alone.coef[0], atol=bound)
        np.testing.assert_allclose(batch.intercept[p], alone.intercept[0], atol=bound)


@pytest.mark.parametrize("n_input, n_last", [(40, 30), (5, 30), (40, 8), (5, 8)])
def test_one_block_wise_reduction_serves_every_weight_of_the_last_block(n_input, n_last):
    """Reduced block by block (wide blocks only), the rows give each block weight's
    regression of the weighted columns, whichever blocks are wider than the 15 rows."""
    X, y, weights, C = _problems(3, 15, n_input + n_last, 3, 1)
    rows, basis, n_reduced = reduce_blocks(X, n_last)
    assert n_reduced == min(n_last, 15)
    assert rows.shape[1] == min(n_input, 15) + n_reduced
    for weight in EMBEDDING_WEIGHTS:
        scale = np.ones((1, rows.shape[1]))
        scale[:, rows.shape[1] - n_reduced:] = weight
        reduced = fit_logistic_batch(rows, y, weights, C, 3, tol=1e-10, max_iter=5000,
                                     column_scale=scale)
        full = fit_logistic_batch(scale_block(X, n_last, weight), y, weights, C, 3,
                                  tol=1e-10, max_iter=5000)
        np.testing.assert_allclose(expand(reduced.coef, basis), full.coef, atol=1e-5)
        np.testing.assert_allclose(reduced.intercept, full.intercept, atol=1e-5)


def test_without_a_last_block_the_reduction_is_reduce_features():
    X = np.random.default_rng(0).normal(size=(10, 25))
    rows, basis, n_reduced = reduce_blocks(X, 0)
    expected_rows, expected_basis = reduce_features(X)
    assert n_reduced == 0
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(basis, expected_basis)


def test_a_warm_start_at_the_optimum_stays_there():
    X, y, weights, C = _problems(2, 50, 4, 3, 3)
    solved = fit_logistic_batch(X, y, weights, C, 3)
    again = fit_logistic_batch(X, y, weights, C, 3, init=solved)
    assert np.all(again.n_iter == 0)
    np.testing.assert_array_equal(again.coef, solved.coef)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), n_classes=st.integers(2, 4), weighted=st.booleans())
def test_the_held_out_score_is_minus_scikit_learn_s_log_loss(seed, n_classes, weighted):
    X, y, weights, C = _problems(seed, 30, 4, n_classes, 1)
    batch = fit_logistic_batch(X, y, weights, C, n_classes)
    model = LinearModel(batch.coef[0], batch.intercept[0])
    w = weights[0] + 0.1 if weighted else np.ones(len(y))
    expected = -log_loss(y, model.predict_proba(X), labels=np.arange(n_classes), sample_weight=w)
    assert log_likelihood(X, batch.coef, batch.intercept, y, w)[0] == pytest.approx(expected,
                                                                                    rel=1e-9)


@pytest.mark.parametrize("n_classes, random_state", [(2, 0), (2, 5), (3, 0), (3, 27)])
def test_the_path_chooses_logistic_regression_cv_s_C(n_classes, random_state):
    """Every fold's held-out score at every C, and so the chosen C, as
    ``LogisticRegressionCV(scoring="neg_log_loss")`` finds them."""
    X, y = make_classification(n_samples=60, n_features=6, n_informative=4,
                               n_classes=n_classes, random_state=random_state)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Cs = np.logspace(-4, 4, 10)
    reference = LogisticRegressionCV(cv=folds, Cs=Cs, scoring="neg_log_loss", l1_ratios=(0.0,),
                                     use_legacy_attributes=False, max_iter=1000).fit(X, y)
    problems = np.zeros((len(folds), len(y)))
    for k, (train, _) in enumerate(folds):
        problems[k, train] = 1.0
    path = logistic_path(X, y, problems, Cs, n_classes)
    scores = np.stack([log_likelihood(X[test], path.coef[k], path.intercept[k], y[test],
                                      np.ones(len(test)))
                       for k, (_, test) in enumerate(folds)])
    np.testing.assert_allclose(scores, reference.scores_[:, 0], atol=2e-3)
    assert Cs[scores.mean(axis=0).argmax()] == reference.C_


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_head_s_path_stops_past_its_best_C_and_chooses_as_the_whole_path(n_classes,
                                                                            monkeypatch):
    """The closed-form head solves its Cs in increasing order and stops two falls of
    the mean held-out score past the best one: on a table whose scores rise to a peak
    and fall, it averages the same regressions as the whole grid, having solved
    fewer Cs."""
    from qmatch_sklearn.heads import _logistic

    X, y = make_classification(n_samples=80, n_features=30, n_informative=3,
                               n_classes=n_classes, random_state=0)
    stopped = _logistic.average_logistic(X, y, seed=0, n_embedding=10)
    patience = _logistic.PATH_PATIENCE
    monkeypatch.setattr(_logistic, "PATH_PATIENCE", len(_logistic.CS))
    whole = _logistic.average_logistic(X, y, seed=0, n_embedding=10)
    for (_, path, scores), (_, whole_path, whole_scores) in zip(
            stopped.paths, whole.paths, strict=True):
        reached = scores.shape[1]
        assert reached < whole_scores.shape[1] == len(_logistic.CS)
        assert whole_scores.mean(axis=0).argmax() < reached - patience
        np.testing.assert_array_equal(scores, whole_scores[:, :reached])
        np.testing.assert_array_equal(path, whole_path[:, :reached])
    np.testing.assert_array_equal(stopped.coef, whole.coef)
    np.testing.assert_array_equal(stopped.intercept, whole.intercept)


def _block_paths(n_classes, random_state):
    """A head's cross-validated paths on 30 rows whose input (40 columns) and embedding
    (50) blocks are both wider than the rows, so that both are reduced."""
    from qmatch_sklearn.heads import _logistic

    X, y = make_classification(n_samples=30, n_features=90, n_informative=5,
                               n_classes=n_classes, random_state=random_state)
    folds = _logistic.head_folds(y, seed=0)
    return X, y, folds, _logistic.cross_validated_paths(X, y, np.ones(len(y)), folds,
                                                        n_classes, 50)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_block_weights_paths_solved_as_one_batch_are_each_block_weight_s_own(n_classes):
    """The head's cross-validation solves every block weight's problems at a C in one
    batch; each path matches that block weight's columns solved alone (reduced as a whole),
    to the solver's tolerance, and chooses the same C."""
    from qmatch_sklearn.heads import _logistic

    X, y, folds, together = _block_paths(n_classes, random_state=1)
    problems = np.zeros((len(folds) + 1, len(y)))
    for k, (train, _) in enumerate(folds):
        problems[k, train] = 1.0
    problems[-1] = 1.0
    for expected, (weight, path, scores) in zip(EMBEDDING_WEIGHTS, together, strict=True):
        assert weight == expected
        features = scale_block(X, 50, weight)
        alone = logistic_path(features, y, problems, _logistic.CS[:scores.shape[1]], n_classes)
        alone_scores = np.stack([log_likelihood(features[test], alone.coef[k],
                                                alone.intercept[k], y[test], np.ones(len(test)))
                                 for k, (_, test) in enumerate(folds)])
        np.testing.assert_allclose(scores, alone_scores, rtol=2e-3, atol=1e-3)
        chosen = scores.mean(axis=0).argmax()
        assert chosen == alone_scores.mean(axis=0).argmax()
        np.testing.assert_allclose(path.coef[-1, chosen], alone.coef[-1, chosen],
                                   atol=1e-2 * (1 + np.abs(alone.coef[-1, chosen]).max()))


def test_a_block_weight_s_path_warm_starts_from_its_own_solutions(monkeypatch):
    """Where block weights stop at different Cs, each remaining one still warm-starts
    from its own previous solutions: its path is the one it takes alone in the batch."""
    from qmatch_sklearn.heads import _logistic

    X, y, folds, together = _block_paths(3, random_state=4)
    assert len({scores.shape[1] for _, _, scores in together}) > 1  # stopped apart
    for weight, path, scores in together:
        monkeypatch.setattr(_logistic, "block_weights", lambda n_embedding, w=weight: (w,))
        [(_, alone, alone_scores)] = _logistic.cross_validated_paths(
            X, y, np.ones(len(y)), folds, 3, 50)
        np.testing.assert_allclose(alone_scores, scores, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(alone.coef, path.coef, rtol=1e-9, atol=1e-12)


@given(scores=st.lists(st.floats(-10, 0), min_size=1, max_size=10))
def test_a_path_stops_only_after_falling_at_each_of_its_last_Cs(scores):
    from qmatch_sklearn.heads._logistic import PATH_PATIENCE, past_the_peak

    falls = np.diff(scores)[-PATH_PATIENCE:]
    assert past_the_peak(np.array(scores)) == (len(falls) == PATH_PATIENCE
                                               and bool(np.all(falls < 0)))
