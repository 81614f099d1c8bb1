"""The regressor's closed-form head: ridge regressions averaged over the embedding block's weight.

``QMatchRegressor`` with few labels and no validation set (``freeze_encoder="auto"``)
fits a ridge regression of the standardised targets on the frozen embedding beside
the input features, its penalty chosen by exact leave-one-out error, one
regression per weight of the embedding block averaged by their leave-one-out
likelihoods (:mod:`._averaging`). Its prediction is
:class:`~._prediction.RegressorHead`.
"""

import numpy as np
import torch
from sklearn.linear_model import RidgeCV
from skorch.history import History

from .._engine import TrainingResult
from ._averaging import weigh_embedding_block

#: The head a regressor fits in closed form (``freeze_encoder="auto"``
#: without validation): a ridge regression on the frozen encoder, its alpha
#: chosen among ``RIDGE_ALPHAS`` by leave-one-out cross-validation on the
#: labeled rows. The other heads (``LINEAR``, ``FINE_TUNED`` of ``.._head``)
#: train with AdamW.
RIDGE = "ridge"
#: The ridge penalties searched, on the standardised targets: from almost none
#: to a head that predicts little more than the mean, half a decade apart.
RIDGE_ALPHAS = np.logspace(-4, 4, 17)


def fit_ridge_head_(head, embeddings, targets, sample_weight=None, n_embedding=None):
    """Set ``head`` to a ridge regression of ``targets`` on ``embeddings``; a
    :class:`TrainingResult` and the fitted attributes (``embedding_weight_``,
    the weight of the embedding block).

    ``targets`` (n_samples, n_outputs) are standardised; alpha, one for all
    outputs, is chosen among ``RIDGE_ALPHAS`` by ``RidgeCV``'s efficient
    leave-one-out cross-validation on the labeled rows. When ``embeddings``
    end with ``n_embedding`` embedding columns beside the input features, one
    regression is fitted for each weight of that block (alpha chosen for
    each) and they are averaged with weights from their leave-one-out errors
    (:func:`~._averaging.weigh_embedding_block`).
    """
    def fit(features, unlabeled):
        model = RidgeCV(alphas=RIDGE_ALPHAS).fit(
            features.astype(np.float64), targets.astype(np.float64), sample_weight=sample_weight
        )
        # the Gaussian log-likelihood per row of the leave-one-out residuals, up to a
        # constant: -log(mean squared error) / 2 (best_score_ is minus that error)
        mse = max(-model.best_score_, np.finfo(np.float64).tiny)
        return [(model, -0.5 * np.log(mse))]

    coef, intercept, weight, _, _ = weigh_embedding_block(fit, embeddings, n_embedding)
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(coef, dtype=torch.float32))
        head.bias.copy_(torch.as_tensor(intercept, dtype=torch.float32))
    return TrainingResult(History(), 0, 0, None), {"embedding_weight_": weight}
