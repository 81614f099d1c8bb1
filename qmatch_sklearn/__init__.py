"""Self-supervised representation learning for tabular data, in scikit-learn."""

from ._base import InconsistentVersionWarning
from ._classifier import QMatchClassifier
from ._version import __version__
from .methods import QMatchEncoder

__all__ = ["InconsistentVersionWarning", "QMatchClassifier", "QMatchEncoder", "__version__"]
