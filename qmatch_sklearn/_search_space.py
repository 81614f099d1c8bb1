"""The paper's hyper-parameter search spaces (Appendix, "Hyper Parameters" table) as data."""

from .methods import METHODS

#: "Pre-text learning rate": the encoder's ``lr``.
PRETEXT_LEARNING_RATES = [1e-5, 1e-4, 1e-3]
#: "Learning rate" of the downstream (supervised) stage: the classifier's ``lr``.
DOWNSTREAM_LEARNING_RATES = [1e-5, 1e-4, 1e-3, 1e-2]


def paper_param_grid(method, prefix="", downstream_prefix=None):
    """The paper's search space for ``method`` as a ``GridSearchCV`` ``param_grid``.

    Parameters
    ----------
    method : str
        A key of :data:`qmatch_sklearn.methods.METHODS` ("qmatch", "vime", "tabnet", "simclr",
        "simsiam", "dino", "vicreg", "imix") or "supervised"
        (:class:`SupervisedMLPClassifier`, whose ``lr`` is the downstream learning rate).
    prefix : str, default=""
        Prepended to the encoder's parameter names, e.g. ``"enc__"`` for a Pipeline step or
        ``"encoder__"`` inside a :class:`QMatchClassifier`.
    downstream_prefix : str or None, default=None
        When given, also search the downstream learning rate under ``downstream_prefix + "lr"``
        (e.g. "" for the ``QMatchClassifier`` itself).

    Returns
    -------
    param_grid : dict of str to list

    Examples
    --------
    >>> from qmatch_sklearn import paper_param_grid
    >>> paper_param_grid("qmatch", prefix="enc__")  # doctest: +NORMALIZE_WHITESPACE
    {'enc__lr': [1e-05, 0.0001, 0.001], 'enc__student_corruption': [0.3, 0.4, 0.5],
     'enc__student_temperature': [0.05, 0.1, 0.2], 'enc__queue_size': [512, 2048]}
    """
    if method == "supervised":
        return {prefix + "lr": list(DOWNSTREAM_LEARNING_RATES)}
    if method not in METHODS:
        raise ValueError(
            f"Unknown method {method!r}; expected one of {sorted([*METHODS, 'supervised'])}."
        )
    grid = {"lr": PRETEXT_LEARNING_RATES, **METHODS[method]._paper_search_space}
    grid = {prefix + name: list(values) for name, values in grid.items()}
    if downstream_prefix is not None:
        grid[downstream_prefix + "lr"] = list(DOWNSTREAM_LEARNING_RATES)
    return grid
