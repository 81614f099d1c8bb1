"""VIME self-supervision: mask estimation and feature reconstruction.

Yoon et al., "VIME: Extending the Success of Self- and Semi-supervised
Learning to Tabular Domain", NeurIPS 2020, eq. (4) (the self-supervised loss).
"""

from numbers import Real
from typing import NamedTuple

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_CONSTRAINTS
from .._docstrings import fill_doc
from .._networks import MLP, lecun_normal_
from ._base import PretextModule, check_shape

#: Hidden width of the reconstruction and mask heads (the reference's MLP([512, D])).
HEAD_WIDTH = 512


def observed_mean_squares(prediction, target):
    """Mean of (prediction - target)^2 over the entries where ``target`` is observed (not NaN):
    a reconstruction loss that never scores a missing entry."""
    observed = ~torch.isnan(target)
    squares = torch.where(observed, prediction - target, 0.0) ** 2
    return squares.sum() / observed.sum().clamp_min(1)


def vime_loss(reconstruction, mask_logits, x, mask, alpha):
    """L = l_m + alpha * l_r (VIME eq. 4), averaged over the batch: l_m = sum_j BCE(m_hat_j,
    m_j) over features, l_r the mean of (x_hat - x)^2 over the clean row's observed entries."""
    mask_loss = F.binary_cross_entropy_with_logits(
        mask_logits, mask.to(mask_logits.dtype), reduction="sum"
    )
    return mask_loss / len(x) + alpha * observed_mean_squares(reconstruction, x)


class VIMEOutput(NamedTuple):
    """What :class:`VIMEModule` computes for a batch (VIME section 4.1), (batch, n_features)
    each: the decoder's x_hat and the mask estimator's logits of m_hat, both read from
    z = f(x_tilde), the clean batch ``x`` and the corruption mask m (bool)."""

    reconstruction: torch.Tensor
    mask_logits: torch.Tensor
    x: torch.Tensor
    mask: torch.Tensor


class VIMELoss(nn.Module):
    """VIME's self-supervised loss (VIME eq. 4), mask estimation plus feature reconstruction,
    on a :class:`VIMEOutput`; see :func:`vime_loss`.

    Parameters
    ----------
    alpha : float
        Weight of the reconstruction loss l_r against the mask loss l_m.
    """

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, outputs):
        symbols = ("batch", "n_features")
        check_shape("VIMELoss", "x", outputs.x, (None, None), symbols)
        shape = tuple(outputs.x.shape)
        for name in ("reconstruction", "mask_logits", "mask"):
            check_shape("VIMELoss", name, getattr(outputs, name), shape, symbols)
        return vime_loss(
            outputs.reconstruction, outputs.mask_logits, outputs.x, outputs.mask, self.alpha
        )


class VIMEModule(PretextModule):
    """Encoder plus a decoder (reconstruction) and a mask estimator, both reading z."""

    def __init__(self, encoder, decoder, mask_estimator, corruption, corruption_type="vime"):
        super().__init__(encoder)
        self.decoder = decoder
        self.mask_estimator = mask_estimator
        self.corruption = corruption
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        corrupted, mask = self.corrupt(x, self.corruption, generator)
        z = self.encoder(corrupted)
        return VIMEOutput(self.decoder(z), self.mask_estimator(z), x, mask)


@fill_doc
class VIMEEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with VIME's pretext tasks.

    The encoder sees a corrupted row; one head reconstructs the clean row,
    another predicts which entries were corrupted.

    Parameters
    ----------
    alpha : float, default=1.0
        Weight of the reconstruction loss against the mask loss.
    corruption : float, default=0.3
        Probability that an entry is corrupted.
    %(corruption_layout)s
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    TabNetEncoder : Masked reconstruction alone, scaled by each feature's spread.
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Yoon, J., Zhang, Y., Jordon, J. and van der Schaar, M. "VIME: Extending the
    Success of Self- and Semi-supervised Learning to Tabular Domain." NeurIPS 2020.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import VIMEEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> VIMEEncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        **CORRUPTION_CONSTRAINTS,
        "alpha": [Interval(Real, 0, None, closed="left")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        alpha=1.0,
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
        self.alpha = alpha
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
        def head():
            return lecun_normal_(MLP(self.embedding_dim, (HEAD_WIDTH, n_features)), generator)

        encoder = self._build_encoder(n_features, generator, missing)
        module = VIMEModule(encoder, head(), head(), self.corruption, self.corruption_type)
        return module, VIMELoss(self.alpha)
