"""Warnings that point at the caller's line, however deep in the library they are raised."""

import os
import sys
import warnings
from pathlib import Path

from sklearn.utils import _set_output

_PACKAGE = str(Path(__file__).resolve().parent) + os.sep
#: scikit-learn's ``set_output`` wrapper of ``transform``: a frame of ours, not the caller's
_WRAPPER = str(Path(_set_output.__file__).resolve())


def warn(message, category):
    """:func:`warnings.warn` of ``message`` as ``category``, attributed to the first frame
    outside this package (the user's call), whichever public method led there: a fixed
    stacklevel is right for one call path only."""
    frame, level = sys._getframe(0), 1  # stacklevel 1: this function's own frame
    while frame.f_back is not None and _in_package(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def _in_package(frame):
    path = str(Path(frame.f_code.co_filename).resolve())
    return path.startswith(_PACKAGE) or path == _WRAPPER
