"""Warnings that point at the caller's line, however deep in the library they are raised."""

import os
import sys
import warnings
from pathlib import Path

from sklearn.utils import _set_output

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep
#: scikit-learn's wrapper of ``transform`` and ``fit_transform`` (``set_output``): a
#: frame between the user and our method, not the caller
_WRAPPER = str(Path(_set_output.__file__).resolve())


def warn(message, category):
    """:func:`warnings.warn` of ``message`` as ``category``, attributed to the first
    frame outside this package: the user's call (``predict``, ``fit``, a Pipeline's
    step) rather than the library line that warns, whichever public method led there
    (scikit-learn's ``set_output`` wrapper of ``transform`` counts as the library's). A
    fixed stacklevel is right for one call path only (``predict_proba`` reaches a check
    one frame deeper than ``transform``, say)."""
    frame, level = sys._getframe(0), 1  # stacklevel 1: this function's own frame
    while frame.f_back is not None and _in_package(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _in_package(frame):
    path = str(Path(frame.f_code.co_filename).resolve())
    return path.startswith(_PACKAGE) or path == _WRAPPER
