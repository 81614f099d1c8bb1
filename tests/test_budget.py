"""The pretraining budget max_epochs="auto" (issue #54): optimizer steps, within bounds."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qmatch_sklearn import QMatchEncoder
from qmatch_sklearn._budget import (
    MAX_EPOCHS,
    MIN_EPOCHS,
    PRETRAINING_STEPS,
    resolve_max_epochs,
)

from .conftest import tiny_encoder_params


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
