"""VICReg: variance-invariance-covariance regularisation of two views.

Bardes, Ponce & LeCun, "VICReg: Variance-Invariance-Covariance Regularization
for Self-Supervised Learning", ICLR 2022, eqs. (1)-(6).
"""

from numbers import Real

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_CONSTRAINTS
from .._docstrings import fill_doc
from ._base import TwoViewModule, check_shape


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


class VICRegLoss(nn.Module):
    """VICReg's loss (VICReg eq. 6, with the terms of eqs. 1-5) on a
    :class:`~qmatch_sklearn.methods._base.TwoViewOutput`; see :func:`vicreg_loss`.

    Parameters
    ----------
    invariance_weight : float
        lambda, the weight of the invariance (mean squared error) term.
    variance_weight : float
        mu, the weight of the variance hinge terms.
    covariance_weight : float
        nu, the weight of the covariance terms.
    """

    def __init__(self, invariance_weight, variance_weight, covariance_weight):
        super().__init__()
        self.invariance_weight = invariance_weight
        self.variance_weight = variance_weight
        self.covariance_weight = covariance_weight

    def forward(self, outputs):
        check_shape("VICRegLoss", "z_a", outputs.z_a, (None, None), ("batch", "dim"))
        check_shape("VICRegLoss", "z_b", outputs.z_b, tuple(outputs.z_a.shape), ("batch", "dim"))
        return vicreg_loss(
            outputs.z_a,
            outputs.z_b,
            self.invariance_weight,
            self.variance_weight,
            self.covariance_weight,
        )


@fill_doc
class VICRegEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with VICReg.

    Two corrupted views of each row are encoded; the loss makes the two embeddings agree
    (invariance) while keeping every dimension's spread above 1 (variance) and the dimensions
    decorrelated (covariance). As in the reference, it reads z directly (no expander).

    Parameters
    ----------
    invariance_weight : float, default=25.0
        The weight lambda of the invariance term in VICReg's eq. (6).
    variance_weight : float, default=25.0
        The weight mu of the variance term.
    covariance_weight : float, default=1.0
        The weight nu of the covariance term.
    %(corruption)s
    %(corruption_layout)s
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    SimSiamEncoder : Two views without negatives, with a predictor.
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

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

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        **CORRUPTION_CONSTRAINTS,
        "invariance_weight": [Interval(Real, 0, None, closed="left")],
        "variance_weight": [Interval(Real, 0, None, closed="left")],
        "covariance_weight": [Interval(Real, 0, None, closed="left")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        invariance_weight=25.0,
        variance_weight=25.0,
        covariance_weight=1.0,
        corruption=0.3,
        corruption_type="vime",
        feature_groups=None,
        categorical_features="from_dtype",
        hidden_sizes=None,
        architecture="mlp",
        embedding_dim=128,
        passthrough=False,
        lr=1e-3,
        weight_decay=0.0,
        batch_size=512,
        max_epochs=100,
        patience=32,
        tol=None,
        validation_fraction="auto",
        device="auto",
        precision="32-true",
        random_state=None,
        verbose=0,
    ):
        self.invariance_weight = invariance_weight
        self.variance_weight = variance_weight
        self.covariance_weight = covariance_weight
        self.corruption = corruption
        self.corruption_type = corruption_type
        self.feature_groups = feature_groups
        self.categorical_features = categorical_features
        self.hidden_sizes = hidden_sizes
        self.architecture = architecture
        self.embedding_dim = embedding_dim
        self.passthrough = passthrough
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.tol = tol
        self.validation_fraction = validation_fraction
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.verbose = verbose

    def _build_pretext(self, n_features, generator, missing):
        if not (self.invariance_weight or self.variance_weight or self.covariance_weight):
            raise ValueError(
                "VICRegEncoder: invariance_weight, variance_weight and covariance_weight "
                "are all 0, so the loss is 0 and nothing would train; set one above 0."
            )
        encoder = self._build_encoder(n_features, generator, missing)
        module = TwoViewModule(encoder, torch.nn.Identity(), self.corruption, self.corruption_type)
        loss = VICRegLoss(self.invariance_weight, self.variance_weight, self.covariance_weight)
        return module, loss
