"""The few-label heads: fitted in closed form on a frozen encoder, predicted by torch modules.

With few labeled rows and no validation set (``freeze_encoder="auto"``),
``QMatchClassifier`` and ``QMatchRegressor`` train no layer with AdamW: they fit
their head in closed form on the frozen embedding beside the input features. This
package is that head, whole: its fit (:mod:`._logistic` for classes, with its
twins and boosted member; :mod:`._ridge` for targets; the averaging over the
embedding block's weight, :mod:`._averaging`), what it keeps (a linear layer's
weights, and a classifier's member as plain arrays) and its prediction
(:mod:`._prediction`), the one torch module that ``predict_proba``, ``predict`` and
the ONNX export all run.
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
