"""``max_time``: a deadline that a fit's training stages read without being handed it.

A context variable set during ``fit`` (:func:`time_limit`); off by default, so that results
do not depend on the machine's speed.
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
    """Within the block, training stops after the epoch that ends past ``seconds`` from now;
    yields the :class:`Limit` (None: an enclosing limit stays in force)."""
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
    """Record ``stage`` as the one during which the deadline passed, unless one was."""
    limit = _LIMIT.get()
    if limit is not None and limit.reached is None and expired():
        limit.reached = stage
