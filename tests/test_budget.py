"""The pretraining budgets (issue #54): max_epochs="auto" (optimizer steps, within
bounds) and the few-label estimators' default encoder."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor
from qmatch_sklearn._budget import (
    DEFAULT_BATCH,
    DEFAULT_EPOCHS,
    DEFAULT_TOL,
    MAX_EPOCHS,
    MIN_DEFAULT_STEPS,
    MIN_EPOCHS,
    PRETRAINING_STEPS,
    SMALL_BATCH,
    default_pretraining,
    epoch_tol,
    resolve_max_epochs,
)

from .conftest import tiny_encoder_params, tol_stopping_epoch


@given(n_rows=st.integers(1, 10**7), batch_size=st.integers(1, 4096))
def test_auto_reaches_the_steps_within_the_epoch_bounds(n_rows, batch_size):
    epochs = resolve_max_epochs("auto", n_rows, batch_size)
    assert MIN_EPOCHS <= epochs <= MAX_EPOCHS
    steps_per_epoch = math.ceil(n_rows / batch_size)
    if epochs < MAX_EPOCHS:
        assert epochs * steps_per_epoch >= PRETRAINING_STEPS
    if epochs > MIN_EPOCHS:  # no more epochs than the steps need
        assert (epochs - 1) * steps_per_epoch < PRETRAINING_STEPS
    # more rows never buy more epochs
    assert resolve_max_epochs("auto", n_rows + batch_size, batch_size) <= epochs


@given(max_epochs=st.integers(1, 1000), n_rows=st.integers(1, 10**6))
def test_an_explicit_budget_is_used_as_given(max_epochs, n_rows):
    assert resolve_max_epochs(max_epochs, n_rows, 512) == max_epochs


@pytest.mark.parametrize("n_rows, expected", [(150, MAX_EPOCHS), (6000, MIN_EPOCHS)])
def test_the_encoder_trains_for_the_resolved_budget(n_rows, expected):
    params = {**tiny_encoder_params(), "batch_size": 64, "validation_fraction": None}
    X = np.random.default_rng(0).normal(size=(n_rows, 4))
    encoder = QMatchEncoder(**{**params, "max_epochs": "auto"}).fit(X)
    assert encoder.n_epochs_ == expected == resolve_max_epochs("auto", n_rows, 64)
    assert encoder.get_params()["max_epochs"] == "auto"  # the parameter is left as passed


def test_a_budget_that_is_neither_a_count_nor_auto_is_refused():
    with pytest.raises(ValueError, match="max_epochs"):
        QMatchEncoder(max_epochs="long").fit(np.ones((10, 2)))


@given(n_rows=st.integers(2, 10**7))
def test_the_default_encoder_takes_the_small_batch_only_where_steps_are_few(n_rows):
    budget = default_pretraining(n_rows)
    assert budget["max_epochs"] == DEFAULT_EPOCHS
    paper_steps = DEFAULT_EPOCHS * math.ceil(n_rows / DEFAULT_BATCH)
    assert budget["batch_size"] == (SMALL_BATCH if paper_steps < MIN_DEFAULT_STEPS
                                    else DEFAULT_BATCH)
    # more rows never make the batch smaller
    assert default_pretraining(n_rows + 1)["batch_size"] >= budget["batch_size"]


@pytest.mark.parametrize("estimator, y", [
    (QMatchClassifier, np.tile([0, 1], 100)),
    (QMatchRegressor, np.linspace(0.0, 1.0, 200)),
])
def test_the_default_encoder_pretrains_on_the_default_budget(estimator, y):
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = y.astype(float) if estimator is QMatchRegressor else y.copy()
    y[20:] = np.nan if estimator is QMatchRegressor else -1
    fitted = estimator(random_state=0).fit(X, y)
    assert fitted.encoder_.get_params()["max_epochs"] == DEFAULT_EPOCHS
    assert fitted.encoder_.tol == DEFAULT_TOL
    assert fitted.encoder_.batch_size == SMALL_BATCH == default_pretraining(200)["batch_size"]
    assert fitted.encoder_.n_epochs_ == DEFAULT_EPOCHS


@given(tol=st.floats(1e-8, 0.5), n_rows=st.integers(1, 10**7), batch_size=st.integers(1, 4096))
def test_tol_is_judged_per_step_once_the_warm_up_steps_have_run(tol, n_rows, batch_size):
    share, first = epoch_tol(tol, n_rows, batch_size)
    steps_per_epoch = math.ceil(n_rows / batch_size)
    # the epoch's steps, each removing tol of what is left, remove less than all of it
    # (the reference in 50 digits: in floats, 1 - tol drops most of a tiny tol's digits)
    with localcontext() as context:
        context.prec = 50
        exact = float(1 - (1 - Decimal(tol)) ** steps_per_epoch)
    assert share == pytest.approx(exact, rel=1e-9, abs=1e-12)
    assert share >= tol * (1 - 1e-12) and (share < 1 or share == pytest.approx(1))
    assert first >= 2 and first * steps_per_epoch >= PRETRAINING_STEPS
    if first > 2:  # not judged later than the warm-up needs
        assert (first - 1) * steps_per_epoch < PRETRAINING_STEPS
    assert epoch_tol(None, n_rows, batch_size) == (None, 2)


@pytest.mark.parametrize("validation_fraction", [None, 0.1])
def test_tol_ends_pretraining_at_the_first_epoch_that_gains_too_little(validation_fraction):
    X = np.random.default_rng(0).normal(size=(1500, 5))
    params = tiny_encoder_params(max_epochs=40, batch_size=32,
                                 validation_fraction=validation_fraction)
    full = QMatchEncoder(**params).fit(X)
    losses = list(full.history_[:, "train_loss"])
    n_rows = 1500 if validation_fraction is None else 1350
    steps = math.ceil(n_rows / 32)
    _, first = epoch_tol(1e-4, n_rows, 32)
    falls = [(losses[e - 2] - losses[e - 1]) / losses[e - 2] for e in range(first, 41)]
    # an epoch's share of half the first judged epoch's gain lets that epoch pass and stops
    # a later one
    assert falls[0] > 0
    tol = 1 - (1 - falls[0] / 2) ** (1 / steps)
    share, _ = epoch_tol(tol, n_rows, 32)
    expected = tol_stopping_epoch(losses, share, first, max_epochs=40)
    assert first < expected < 40
    stopped = QMatchEncoder(**params, tol=tol).fit(X)
    assert stopped.n_epochs_ == expected
    np.testing.assert_array_equal(stopped.history_[:, "train_loss"], losses[:expected])
    if validation_fraction is None:  # the last weights, as without tol
        assert stopped.best_epoch_ == expected
    else:  # the best validation epoch so far, restored
        valid = stopped.history_[:, "valid_loss"]
        assert stopped.best_epoch_ == 1 + int(np.argmin(valid))
        kept = QMatchEncoder(**{**params, "max_epochs": stopped.best_epoch_}).fit(X)
        np.testing.assert_array_equal(stopped.transform(X), kept.transform(X))
    assert stopped.get_params()["tol"] == tol  # the parameter is left as passed


def test_tol_names_why_pretraining_stopped(capsys):
    X = np.random.default_rng(0).normal(size=(600, 4))
    QMatchEncoder(**tiny_encoder_params(max_epochs=30, batch_size=8, validation_fraction=None),
                  tol=0.5, verbose=2).fit(X)
    assert "of itself in an epoch (tol)" in capsys.readouterr().out
    # judged first on the last epoch, it ends nothing early and says nothing of it
    last = QMatchEncoder(**tiny_encoder_params(max_epochs=4, batch_size=8,
                                               validation_fraction=None),
                         tol=0.5, verbose=2).fit(X)
    assert last.n_epochs_ == 4 == epoch_tol(0.5, 600, 8)[1]
    assert "(tol)" not in capsys.readouterr().out


@pytest.mark.parametrize("tol", [0, 1, -1e-4, "auto"])
def test_a_tol_outside_its_range_is_refused(tol):
    with pytest.raises(ValueError, match="tol"):
        QMatchEncoder(tol=tol).fit(np.ones((10, 2)))
