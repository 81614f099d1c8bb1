"""The validation split: how many rows ``fit`` holds out for early stopping, and which."""

import numpy as np
from sklearn.model_selection import train_test_split

#: ``validation_fraction="auto"`` holds out this share, but only when that gives at least
#: ``AUTO_MIN_VALIDATION_ROWS`` rows: on fewer the validation loss is noise.
AUTO_VALIDATION_FRACTION = 0.1
AUTO_MIN_VALIDATION_ROWS = 200


def resolve_validation_fraction(validation_fraction, n_samples):
    """The share of ``n_samples`` rows to hold out, or None for no validation."""
    if validation_fraction != "auto":
        return validation_fraction
    enough = n_samples * AUTO_VALIDATION_FRACTION >= AUTO_MIN_VALIDATION_ROWS
    return AUTO_VALIDATION_FRACTION if enough else None


def split_rows(n_samples, validation_fraction, seed, stratify=None):
    """Sorted row indices (train, validation); validation is None when ``validation_fraction``
    (resolved by :func:`resolve_validation_fraction`) is None."""
    if validation_fraction is None:
        return np.arange(n_samples), None
    indices = np.arange(n_samples)
    train, valid = train_test_split(
        indices, test_size=validation_fraction, random_state=seed, stratify=stratify
    )
    if len(train) < 2:
        raise ValueError(
            f"validation_fraction={validation_fraction} leaves {len(train)} training "
            f"row(s) of {n_samples}; at least 2 are needed. Pass more rows or "
            "validation_fraction=None."
        )
    return np.sort(train), np.sort(valid)
