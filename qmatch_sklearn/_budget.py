"""Pretraining budgets: the few-label estimators' default encoder's (:func:`default_pretraining`),
``max_epochs="auto"``, which counts optimizer steps, as a fixed number of epochs grows with
the table, and ``tol``'s share of an epoch. Tuned on the few-label benchmark
(benchmarks/results/fewlabel.md)."""

import math

#: Optimizer steps "auto" aims at: 100 epochs of digits (1,257 rows, batches of 512), the
#: smallest table on which fewer epochs lost accuracy.
PRETRAINING_STEPS = 300
#: The fewest and most epochs "auto" trains for.
MIN_EPOCHS, MAX_EPOCHS = 10, 100


def steps_per_epoch(n_rows, batch_size):
    """Optimizer steps an epoch over ``n_rows`` rows (a data-parallel process's share) makes
    in batches of ``batch_size``."""
    return math.ceil(n_rows / batch_size)


def epochs_to_steps(n_rows, batch_size):
    """The epochs that reach ``PRETRAINING_STEPS`` optimizer steps."""
    return math.ceil(PRETRAINING_STEPS / steps_per_epoch(n_rows, batch_size))


def resolve_max_epochs(max_epochs, n_rows, batch_size):
    """``max_epochs``, or for "auto" :func:`epochs_to_steps` within the bounds."""
    if max_epochs != "auto":
        return max_epochs
    return min(max(epochs_to_steps(n_rows, batch_size), MIN_EPOCHS), MAX_EPOCHS)


def epoch_tol(tol, n_rows, batch_size):
    """``tol`` (the share of the training loss each optimizer step should remove) as the
    share an epoch's steps remove together, ``1 - (1 - tol) ** steps`` (below 1 however many
    steps), and the first epoch it is judged on: the second, or later where the first
    ``PRETRAINING_STEPS`` steps (the warm-up "auto" aims at) take longer. None stays None."""
    if tol is None:
        return None, 2
    return (-math.expm1(steps_per_epoch(n_rows, batch_size) * math.log1p(-tol)),
            max(2, epochs_to_steps(n_rows, batch_size)))


#: Pretraining epochs of the few-label estimators' default encoder (``encoder=None``): a
#: tenth of the paper's budget, at a fraction of its fit time for nearly its accuracy.
DEFAULT_EPOCHS = 10
#: The default encoder's ``tol``: pretraining ends at the first epoch (judged from the one
#: :func:`epoch_tol` names) that lowers the training loss by less than 0.01% of it a step
#: (1% an epoch of 100 steps): more steps would buy little for their time.
DEFAULT_TOL = 1e-4
#: The default encoder's batch: the paper's, or ``SMALL_BATCH`` (four times the steps) where
#: ``DEFAULT_EPOCHS`` would make fewer than ``MIN_DEFAULT_STEPS`` optimizer steps.
DEFAULT_BATCH, SMALL_BATCH, MIN_DEFAULT_STEPS = 512, 128, 100


def default_pretraining(n_rows):
    """``max_epochs``, ``batch_size`` and ``tol`` of the default encoder of a classifier or
    regressor fitted on ``n_rows`` rows (see ``DEFAULT_EPOCHS``, ``DEFAULT_BATCH`` and
    ``DEFAULT_TOL``)."""
    steps = DEFAULT_EPOCHS * math.ceil(n_rows / DEFAULT_BATCH)
    return {"max_epochs": DEFAULT_EPOCHS,
            "batch_size": DEFAULT_BATCH if steps >= MIN_DEFAULT_STEPS else SMALL_BATCH,
            "tol": DEFAULT_TOL}
