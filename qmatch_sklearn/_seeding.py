"""Seeds for a fit's independent random streams, drawn from its ``random_state``."""

import numpy as np
from sklearn.utils import check_random_state


def draw_seeds(random_state, n):
    """``n`` independent integer seeds from ``random_state`` (None: fresh OS entropy, so
    fitting never advances the global NumPy state)."""
    if random_state is None:
        sequence = np.random.SeedSequence()
    else:
        sequence = np.random.SeedSequence(check_random_state(random_state).randint(2**31 - 1))
    return [int(seed) for seed in sequence.generate_state(n)]
