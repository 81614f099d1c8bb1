"""Parameter constraints that scikit-learn's vocabulary lacks, in its format: :class:`Satisfies`
tests a predicate, so its errors read as scikit-learn's ("The 'x' parameter of Y must be
<description>. Got ... instead.")."""

import re
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, Options, StrOptions

from ._corruption import CORRUPTIONS
from ._networks import ARCHITECTURES
from ._precision import PRECISIONS


class Satisfies(Options):
    """A constraint given by a predicate and the description its errors show."""

    def __init__(self, predicate, description):
        super().__init__(object, set())
        self.predicate = predicate
        self.description = description

    def is_satisfied_by(self, val):
        return bool(self.predicate(val))

    def __str__(self):
        return self.description


def _is_layer_sizes(value):
    return (
        isinstance(value, (tuple, list))
        and len(value) > 0
        and all(isinstance(w, Integral) and not isinstance(w, bool) and w >= 1 for w in value)
    )


#: Widths of a stack of layers (``hidden_sizes``, ``projection_sizes``).
LAYER_SIZES = Satisfies(_is_layer_sizes, "a non-empty tuple of positive integers")

_DEVICE_PATTERN = re.compile(r"auto|cpu|mps|cuda(:\d+)?")

#: The ``device`` values; whether the device exists is checked at fit time.
DEVICE_NAMES = Satisfies(
    lambda value: isinstance(value, str) and _DEVICE_PATTERN.fullmatch(value) is not None,
    "'auto', 'cpu', 'cuda', 'cuda:<index>' or 'mps'",
)

USER_NETWORK = Satisfies(
    callable,
    "a torch.nn.Module or a callable architecture(n_features, embedding_dim) returning one",
)

#: ``lr`` above this overflows float32 inside AdamW; no useful learning rate comes near it.
MAX_LR = 1e30

CORRUPTION_TYPES = StrOptions(set(CORRUPTIONS))


def _is_feature_groups(value):
    return (
        isinstance(value, (list, tuple))
        and all(isinstance(group, (list, tuple)) and len(group) > 0 for group in value)
        and all(
            isinstance(column, (Integral, str)) and not isinstance(column, bool)
            for group in value
            for column in group
        )
    )


#: ``feature_groups``: which column indices or names exist is checked at fit time.
FEATURE_GROUPS = Satisfies(
    _is_feature_groups, "a list of non-empty lists of column indices or column names"
)

#: Parameters of the corruption of the encoders that corrupt with one probability.
CORRUPTION_CONSTRAINTS = {
    "corruption": [Interval(Real, 0, 1, closed="both")],
    "corruption_type": [CORRUPTION_TYPES],
    "feature_groups": [None, FEATURE_GROUPS],
}


def _is_column_list(value):
    return (
        isinstance(value, (list, tuple, np.ndarray))
        and len(value) > 0
        and all(isinstance(column, (Integral, str, np.bool_)) for column in value)
    )


#: ``categorical_features``: which columns exist is checked at fit time.
CATEGORICAL_FEATURES = Satisfies(
    _is_column_list, "a non-empty list of column indices or names, or a boolean mask"
)

#: Parameters of the encoder network.
NETWORK_CONSTRAINTS = {
    "categorical_features": [None, StrOptions({"from_dtype"}), CATEGORICAL_FEATURES],
    "hidden_sizes": [None, LAYER_SIZES],
    "architecture": [StrOptions(set(ARCHITECTURES)), USER_NETWORK],
    "embedding_dim": [Interval(Integral, 1, None, closed="left")],
}

#: Parameters of the training loop, shared by every estimator that trains a network.
TRAINING_CONSTRAINTS = {
    "lr": [Interval(Real, 0, MAX_LR, closed="right")],
    "weight_decay": [Interval(Real, 0, None, closed="left")],
    "batch_size": [Interval(Integral, 2, None, closed="left")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "patience": [Interval(Integral, 1, None, closed="left")],
    "validation_fraction": [None, StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
    "device": [DEVICE_NAMES],
    "precision": [StrOptions(set(PRECISIONS))],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}
