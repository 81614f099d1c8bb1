"""TabNet's self-supervised task: reconstruct masked features, scaled by their spread.

Arik & Pfister, "TabNet: Attentive Interpretable Tabular Learning", AAAI 2021,
section "Self-supervised learning" (the normalised reconstruction loss).
"""

from numbers import Real
from typing import NamedTuple

import torch
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_CONSTRAINTS
from .._docstrings import fill_doc
from .._networks import MLP, lecun_normal_
from ._base import PretextModule, check_shape
from .vime import HEAD_WIDTH


def tabnet_loss(reconstruction, x, mask):
    """sum_ij m_ij ((x_hat_ij - x_ij) / s_j)^2 / (sum_ij m_ij + 1e-3), as in TabNet's code: s_j
    is feature j's batch standard deviation (its batch mean where that is zero), floored at
    1e-3. Missing entries (NaN in ``x``) count neither in s_j nor in the sums."""
    observed = ~torch.isnan(x)
    counts = observed.sum(dim=0).clamp_min(1)
    x = torch.where(observed, x, 0.0)
    mean = x.sum(dim=0) / counts
    std = ((torch.where(observed, x - mean, 0.0) ** 2).sum(dim=0) / counts).sqrt()
    scale = std.where(std > 0, mean).clamp_min(1e-3)
    mask = (mask & observed).to(x.dtype)
    squared = ((reconstruction - x) / scale) ** 2 * mask
    return squared.sum() / (mask.sum() + 1e-3)


class TabNetOutput(NamedTuple):
    """What :class:`TabNetModule` computes for a batch: the decoder's ``reconstruction``, the
    clean batch ``x`` and the binary ``mask`` S of the masked entries, (batch, n_features) each."""

    reconstruction: torch.Tensor
    x: torch.Tensor
    mask: torch.Tensor


class TabNetLoss(nn.Module):
    """TabNet's normalised reconstruction loss over the masked entries (TabNet section
    "Self-supervised learning") on a :class:`TabNetOutput`; see :func:`tabnet_loss`."""

    def forward(self, outputs):
        symbols = ("batch", "n_features")
        check_shape("TabNetLoss", "x", outputs.x, (None, None), symbols)
        shape = tuple(outputs.x.shape)
        for name in ("reconstruction", "mask"):
            check_shape("TabNetLoss", name, getattr(outputs, name), shape, symbols)
        return tabnet_loss(outputs.reconstruction, outputs.x, outputs.mask)


class TabNetModule(PretextModule):
    """Encoder plus a decoder that reconstructs the row from z."""

    def __init__(self, encoder, decoder, corruption, corruption_type):
        super().__init__(encoder)
        self.decoder = decoder
        self.corruption = corruption
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        corrupted, mask = self.corrupt(x, self.corruption, generator)
        return TabNetOutput(self.decoder(self.encoder(corrupted)), x, mask)


@fill_doc
class TabNetEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with TabNet's masked reconstruction.

    The encoder is the library's MLP, not TabNet's attentive transformer: the paper's "TabNet"
    baseline is TabNet's pretext task.

    Parameters
    ----------
    corruption : float in (0, 1], default=0.5
        Probability that an entry is masked.
    %(corruption_layout)s
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    VIMEEncoder : Reconstruction plus mask estimation.
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Arik, S. O. and Pfister, T. "TabNet: Attentive Interpretable Tabular
    Learning." AAAI 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import TabNetEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> TabNetEncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        **CORRUPTION_CONSTRAINTS,
        # 0 masks nothing: nothing to reconstruct, a loss of exactly 0
        "corruption": [Interval(Real, 0, 1, closed="right")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        corruption=0.5,
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
        encoder = self._build_encoder(n_features, generator, missing)
        decoder = lecun_normal_(MLP(self.embedding_dim, (HEAD_WIDTH, n_features)), generator)
        module = TabNetModule(encoder, decoder, self.corruption, self.corruption_type)
        return module, TabNetLoss()
