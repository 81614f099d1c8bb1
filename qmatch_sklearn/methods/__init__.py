"""Self-supervised methods: one module each (its views, its loss, its estimator)."""

from ._base import PretextModule
from .qmatch import QMatchEncoder

__all__ = ["PretextModule", "QMatchEncoder"]
