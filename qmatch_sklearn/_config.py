"""Library-wide settings, in the manner of :func:`sklearn.set_config`."""

from contextlib import contextmanager

_CONFIG = {"cuda_graph": False}


def get_config():
    """The current settings, as a new dict (see :func:`set_config`)."""
    return dict(_CONFIG)


def set_config(cuda_graph=None):
    """Set library-wide settings; None leaves a setting as it is.

    Parameters
    ----------
    cuda_graph : bool, default=None
        Whether pretext training on CUDA records one full training step as a
        CUDA graph after a few eager steps and replays it for every full batch
        (one launch a step). False runs every step eagerly, as do
        ``precision="16-mixed"``, data-parallel training and i-Mix with an
        ``alpha`` other than 1; a step that cannot be captured warns.

    Notes
    -----
    The settings hold for the whole process (every thread), and only for it:
    set them in each worker that joblib or Dask starts.
    """
    if cuda_graph is not None:
        _CONFIG["cuda_graph"] = bool(cuda_graph)


@contextmanager
def config_context(**settings):
    """:func:`set_config` for the ``with`` block only."""
    before = get_config()
    set_config(**settings)
    try:
        yield
    finally:
        _CONFIG.update(before)
