"""The few-shot label draw the digits benchmarks share."""

import numpy as np


def labeled_rows(y, per_class, draw):
    """Indices of ``per_class`` rows of each class of ``y``, drawn with ``RandomState(draw)``."""
    rng = np.random.RandomState(draw)
    return np.concatenate(
        [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in np.unique(y)]
    )
