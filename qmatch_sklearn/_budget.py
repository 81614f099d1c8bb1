"""Pretraining budgets: the few-label estimators' default encoder's (:func:`default_pretraining`)
and ``max_epochs="auto"``, which counts optimizer steps, as a fixed number of epochs grows with
the table. Tuned on the few-label benchmark (benchmarks/results/fewlabel.md)."""

import math

#: Optimizer steps "auto" aims at: 100 epochs of digits (1,257 rows, batches of 512), the
#: smallest table on which fewer epochs lost accuracy.
PRETRAINING_STEPS = 300
#: The fewest and most epochs "auto" trains for.
MIN_EPOCHS, MAX_EPOCHS = 10, 100


def resolve_max_epochs(max_epochs, n_rows, batch_size):
    """``max_epochs``, or for "auto" the epochs over ``n_rows`` rows (a data-parallel process's
    share) in batches of ``batch_size`` that reach ``PRETRAINING_STEPS``, within the bounds."""
    if max_epochs != "auto":
        return max_epochs
    steps_per_epoch = math.ceil(n_rows / batch_size)
    return min(max(math.ceil(PRETRAINING_STEPS / steps_per_epoch), MIN_EPOCHS), MAX_EPOCHS)


#: Pretraining epochs of the few-label estimators' default encoder (``encoder=None``): a
#: tenth of the paper's budget, at a fraction of its fit time for nearly its accuracy.
DEFAULT_EPOCHS = 10
#: The default encoder's batch: the paper's, or ``SMALL_BATCH`` (four times the steps) where
#: ``DEFAULT_EPOCHS`` would make fewer than ``MIN_DEFAULT_STEPS`` optimizer steps.
DEFAULT_BATCH, SMALL_BATCH, MIN_DEFAULT_STEPS = 512, 128, 100


def default_pretraining(n_rows):
    """``max_epochs`` and ``batch_size`` of the default encoder of a classifier or regressor
    fitted on ``n_rows`` rows (see ``DEFAULT_EPOCHS`` and ``DEFAULT_BATCH``)."""
    steps = DEFAULT_EPOCHS * math.ceil(n_rows / DEFAULT_BATCH)
    return {"max_epochs": DEFAULT_EPOCHS,
            "batch_size": DEFAULT_BATCH if steps >= MIN_DEFAULT_STEPS else SMALL_BATCH}
