"""VICReg: variance-invariance-covariance regularisation of two views.

Bardes, Ponce & LeCun, "VICReg: Variance-Invariance-Covariance Regularization
for Self-Supervised Learning", ICLR 2022, eqs. (1)-(6).
"""

from numbers import Real

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval

from .._base import BasePretextEncoder, shared_docstring
from ._base import Criterion, TwoViewModule


def variance_term(z, eps=1e-4):
    """v(Z) = mean_j max(0, 1 - sqrt(Var(z_j) + eps)) (VICReg eq. 1)."""
    return F.relu(1.0 - torch.sqrt(z.var(dim=0, unbiased=False) + eps)).mean()


def covariance_term(z):
    """c(Z) = sum of squared off-diagonal covariances / d (VICReg eqs. 3-4)."""
    n, d = z.shape
    centred = z - z.mean(dim=0)
    cov = centred.T @ centred / max(n - 1, 1)
    return (cov.pow(2).sum() - cov.diagonal().pow(2).sum()) / d


def vicreg_loss(z_a, z_b, invariance_weight, variance_weight, covariance_weight):
    """lambda s(Z, Z') + mu [v(Z) + v(Z')] + nu [c(Z) + c(Z')] (VICReg eq. 6)."""
    return (
        invariance_weight * F.mse_loss(z_a, z_b)
        + variance_weight * (variance_term(z_a) + variance_term(z_b))
        + covariance_weight * (covariance_term(z_a) + covariance_term(z_b))
    )


@shared_docstring
class VICRegEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with VICReg.

    Two VIME-corrupted views of each row are encoded; the loss makes the two
    embeddings agree (invariance) while keeping every dimension's spread
    above 1 (variance) and the dimensions decorrelated (covariance). As in the
    reference implementation the loss reads the encoder output z directly
    (no expander).

    Parameters
    ----------
    invariance_weight, variance_weight, covariance_weight : float, default=25, 25, 1
        lambda, mu and nu of VICReg's eq. (6).
    corruption : float, default=0.3
        Probability that an entry of either view is replaced.
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

    References
    ----------
    Bardes, A., Ponce, J. and LeCun, Y. "VICReg: Variance-Invariance-Covariance
    Regularization for Self-Supervised Learning." ICLR 2022.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import VICRegEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> VICRegEncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _method_defaults = {
        "invariance_weight": 25.0,
        "variance_weight": 25.0,
        "covariance_weight": 1.0,
        "corruption": 0.3,
    }
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "invariance_weight": [Interval(Real, 0, None, closed="left")],
        "variance_weight": [Interval(Real, 0, None, closed="left")],
        "covariance_weight": [Interval(Real, 0, None, closed="left")],
        "corruption": [Interval(Real, 0, 1, closed="both")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def _build_pretext(self, n_features, generator):
        encoder = self._build_encoder(n_features, generator)
        module = TwoViewModule(encoder, torch.nn.Identity(), self.corruption)
        loss = Criterion(
            vicreg_loss,
            invariance_weight=self.invariance_weight,
            variance_weight=self.variance_weight,
            covariance_weight=self.covariance_weight,
        )
        return module, loss
