"""Pretraining budgets: the few-label estimators' default encoder's
(:func:`default_pretraining`), and ``max_epochs="auto"``: optimizer steps, not passes
over the rows.

A fixed number of epochs is a budget that grows with the table: 100 epochs are 100
optimizer steps on a 200-row table and 22,000 on 113,000 rows. On the few-label
judge, pretraining beyond 10 epochs bought little on the tables of several thousand
rows and more (MNIST aside), which 10 epochs already give hundreds to thousands of
steps, while the tables of one to two thousand rows, which 10 epochs give a few dozen
steps, lost accuracy (the development log has the numbers). "auto" therefore trains
for the epochs over the training rows that make ``PRETRAINING_STEPS`` optimizer
steps, kept within ``[MIN_EPOCHS, MAX_EPOCHS]``: 100 epochs (fewer steps) on tables
of under 1,500 rows, where they cost seconds, 10 (more steps) from about 15,000.
Under data-parallel training a process steps over its share of the rows. An
explicit ``max_epochs`` (the paper's budget is 100) is used as given.
"""

import math
import os

#: Optimizer steps "auto" aims at: what 100 epochs give the judge's
#: digits table (1,257 rows of 64 pixels, batches of 512), the smallest table on
#: which fewer epochs lost accuracy.
PRETRAINING_STEPS = 300
#: The fewest and most epochs "auto" trains for.
MIN_EPOCHS, MAX_EPOCHS = 10, 100


def resolve_max_epochs(max_epochs, n_rows, batch_size):
    """``max_epochs``, or for "auto" the epochs over ``n_rows`` training rows (a
    process's share) in batches of ``batch_size`` that reach ``PRETRAINING_STEPS``
    steps, clipped to ``[MIN_EPOCHS, MAX_EPOCHS]``."""
    if max_epochs != "auto":
        return max_epochs
    steps_per_epoch = math.ceil(n_rows / batch_size)
    return min(max(math.ceil(PRETRAINING_STEPS / steps_per_epoch), MIN_EPOCHS), MAX_EPOCHS)


#: Pretraining epochs of the few-label estimators' default encoder (``encoder=None``).
#: On the few-label judge, 100 epochs (the paper's budget, ``QMatchEncoder``'s
#: default) took 5-7 times as long for a tenth of a point on the mean of its tables.
DEFAULT_EPOCHS = 10
#: The default encoder's batch: the paper's, unless its ``DEFAULT_EPOCHS`` would then
#: make fewer than ``MIN_DEFAULT_STEPS`` optimizer steps (tables of up to 4,608 rows),
#: where ``SMALL_BATCH`` rows give four times the steps for the same rows seen.
DEFAULT_BATCH, SMALL_BATCH, MIN_DEFAULT_STEPS = 512, 128, 100


def default_pretraining(n_rows):
    """``max_epochs`` and ``batch_size`` of the default encoder of a classifier or
    regressor fitted on ``n_rows`` rows: ``DEFAULT_EPOCHS`` epochs in batches of
    ``DEFAULT_BATCH`` rows, or of ``SMALL_BATCH`` where those would make fewer than
    ``MIN_DEFAULT_STEPS`` steps."""
    steps = DEFAULT_EPOCHS * math.ceil(n_rows / DEFAULT_BATCH)
    epochs = DEFAULT_EPOCHS
    if os.environ.get("QMATCH_SCREEN_CAP"):
        cap = int(os.environ["QMATCH_SCREEN_CAP"])
        epochs = min(DEFAULT_EPOCHS, math.ceil(cap / math.ceil(n_rows / DEFAULT_BATCH)))
    return {"max_epochs": epochs,
            "batch_size": DEFAULT_BATCH if steps >= MIN_DEFAULT_STEPS else SMALL_BATCH}
