"""``max_time``: a deadline that a fit's training stages read without being handed it.

The one-call estimators pretrain an encoder (its own ``fit``), then fit a head. A
time limit set on the estimator has to reach the encoder's epoch loop, whoever built
the encoder, without a parameter on every encoder: the limit lives in a context
variable for the duration of the estimator's ``fit`` (:func:`time_limit`), the
engine reads it (:func:`deadline`) and each stage notes whether it ran out
(:func:`note_if_expired`). Off by default, so that results do not depend on the
speed of the machine.
"""

import contextvars
import time
from contextlib import contextmanager
from dataclasses import dataclass

_LIMIT = contextvars.ContextVar("qmatch_sklearn_time_limit", default=None)


@dataclass
class Limit:
    """A deadline (``time.monotonic()``) and the first stage noted past it."""

    deadline: float
    reached: str | None = None


@contextmanager
def time_limit(seconds):
    """Within the block, training stages stop after the epoch that ends past
    ``seconds`` from now; yields the :class:`Limit` (None: no limit of its own,
    an enclosing limit stays in force)."""
    if seconds is None:
        yield None
        return
    limit = Limit(time.monotonic() + seconds)
    token = _LIMIT.set(limit)
    try:
        yield limit
    finally:
        _LIMIT.reset(token)


def deadline():
    """The ``time.monotonic()`` value by which training must stop, or None."""
    limit = _LIMIT.get()
    return None if limit is None else limit.deadline


def expired():
    """Whether the deadline in force has passed (False without one)."""
    limit = _LIMIT.get()
    return limit is not None and time.monotonic() >= limit.deadline


def note_if_expired(stage):
    """Record ``stage`` as the one during which the deadline passed, unless an
    earlier stage was."""
    limit = _LIMIT.get()
    if limit is not None and limit.reached is None and expired():
        limit.reached = stage
