"""The few-label heads: fitted in closed form on a frozen encoder, predicted by torch modules.

With few labeled rows and no validation set (``freeze_encoder="auto"``) the estimators
fit their head in closed form on the frozen embedding: :mod:`._logistic` for classes,
:mod:`._ridge` for targets, both averaged over the embedding block's weight
(:mod:`._averaging`). :mod:`._prediction` is what ``predict`` and the ONNX export run.
"""

from ._averaging import EMBEDDING_WEIGHTS, weigh_embedding_block
from ._logistic import LOGISTIC, fit_logistic_head_
from ._prediction import ClassifierHead, RegressorHead, run_head
from ._ridge import RIDGE, RIDGE_ALPHAS, fit_ridge_head_

__all__ = [
    "EMBEDDING_WEIGHTS",
    "LOGISTIC",
    "RIDGE",
    "RIDGE_ALPHAS",
    "ClassifierHead",
    "RegressorHead",
    "fit_logistic_head_",
    "fit_ridge_head_",
    "run_head",
    "weigh_embedding_block",
]
