"""The regressor's closed-form head: ridge regressions averaged over the embedding block's weight.

Penalties are chosen by exact leave-one-out error, and the regressions of the embedding
block's weights averaged by their leave-one-out likelihoods (:mod:`._averaging`). Its
prediction is :class:`~._prediction.RegressorHead`.
"""

import numpy as np
import torch
from sklearn.linear_model import RidgeCV
from skorch.history import History

from .._engine import TrainingResult
from ._averaging import weigh_embedding_block

#: The head a regressor fits in closed form (``freeze_encoder="auto"`` without validation);
#: the other heads (``LINEAR``, ``FINE_TUNED`` of ``.._head``) train with AdamW.
RIDGE = "ridge"
#: Penalties on the standardised targets, from almost none to about the mean alone.
RIDGE_ALPHAS = np.logspace(-4, 4, 17)


def fit_ridge_head_(head, embeddings, targets, sample_weight=None, n_embedding=None):
    """Set ``head`` to a ridge regression of the standardised ``targets`` (n_samples,
    n_outputs) on ``embeddings``; a :class:`TrainingResult` and the ``embedding_weight_``.

    Alpha, one for all outputs, is chosen among ``RIDGE_ALPHAS`` by ``RidgeCV``'s
    leave-one-out cross-validation, for each weight of the embedding block
    (:func:`~._averaging.weigh_embedding_block`).
    """
    def fit(features):
        model = RidgeCV(alphas=RIDGE_ALPHAS).fit(
            features.astype(np.float64), targets.astype(np.float64), sample_weight=sample_weight
        )
        # Gaussian log-likelihood per row of the leave-one-out residuals, up to a constant
        mse = max(-model.best_score_, np.finfo(np.float64).tiny)
        return [(model, -0.5 * np.log(mse))]

    coef, intercept, weight, _, _ = weigh_embedding_block(fit, embeddings, n_embedding)
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(coef, dtype=torch.float32))
        head.bias.copy_(torch.as_tensor(intercept, dtype=torch.float32))
    return TrainingResult(History(), 0, 0, None), {"embedding_weight_": weight}
