"""i-Mix (N-pair): contrast mixed rows against the clean batch with mixed virtual labels.

Lee et al., "i-Mix: A Domain-Agnostic Strategy for Contrastive Representation
Learning", ICLR 2021, eq. (4) (the N-pair version).
"""

from numbers import Real
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import beta
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import LAYER_SIZES
from .._docstrings import fill_doc
from .._networks import MLP, lecun_normal_
from ._base import PretextModule, check_shape


def imix_npair_loss(mixed, clean, lam, partner, temperature):
    """mean_i [lam_i CE(l_i, i) + (1 - lam_i) CE(l_i, r(i))], l_i = <m_i, c_j> / T over j
    (i-Mix eq. 4): ``mixed`` row i embeds lam_i x_i + (1 - lam_i) x_r(i), ``clean`` row j
    embeds x_j (both L2-normalised here)."""
    logits = F.normalize(mixed, dim=1) @ F.normalize(clean, dim=1).T / temperature
    own = F.cross_entropy(logits, torch.arange(len(logits), device=logits.device), reduction="none")
    other = F.cross_entropy(logits, partner, reduction="none")
    return (lam * own + (1 - lam) * other).mean()


class IMixOutput(NamedTuple):
    """What :class:`IMixModule` computes for a batch (i-Mix eq. 4, N-pair): the embeddings of
    the mixed and of the clean rows, (batch, dim) each, the mixing coefficients ``lam`` and the
    partner indices r(i), (batch,) each."""

    mixed: torch.Tensor
    clean: torch.Tensor
    lam: torch.Tensor
    partner: torch.Tensor


class IMixNPairLoss(nn.Module):
    """i-Mix's N-pair loss on mixed virtual labels (i-Mix eq. 4) on an :class:`IMixOutput`;
    see :func:`imix_npair_loss`.

    Parameters
    ----------
    temperature : float
        The temperature T of the softmax over cosine similarities.
    """

    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, outputs):
        check_shape("IMixNPairLoss", "mixed", outputs.mixed, (None, None), ("batch", "dim"))
        batch, dim = outputs.mixed.shape
        check_shape("IMixNPairLoss", "clean", outputs.clean, (batch, dim), ("batch", "dim"))
        check_shape("IMixNPairLoss", "lam", outputs.lam, (batch,), ("batch",))
        check_shape("IMixNPairLoss", "partner", outputs.partner, (batch,), ("batch",))
        return imix_npair_loss(
            outputs.mixed, outputs.clean, outputs.lam, outputs.partner, self.temperature
        )


def beta_draws(alpha, n, generator, device):
    """n draws of Beta(alpha, alpha) by inverse CDF of uniforms from ``generator``: for
    alpha = 1 the uniforms themselves, on the device; other alphas go through SciPy."""
    uniforms = torch.rand(n, generator=generator, device=device)
    if alpha == 1:
        return uniforms
    lam = beta.ppf(uniforms.cpu().numpy(), alpha, alpha).astype(np.float32)
    return torch.as_tensor(lam, device=device)


class IMixModule(PretextModule):
    """Encoder plus projection MLP; mixes each row with a random partner row."""

    def __init__(self, encoder, projector, alpha):
        super().__init__(encoder)
        self.projector = projector
        self.alpha = alpha

    @property
    def recordable(self):
        """Beta draws other than the uniform's go through the host (:func:`beta_draws`)."""
        return self.alpha == 1

    def forward(self, x, generator):
        lam = beta_draws(self.alpha, len(x), generator, x.device)
        partner = torch.randperm(len(x), generator=generator, device=x.device)
        mixed = lam[:, None] * x + (1 - lam[:, None]) * x[partner]
        embed = lambda rows: self.projector(self.encoder(rows))  # noqa: E731
        return IMixOutput(embed(mixed), embed(x), lam, partner)


@fill_doc
class IMixEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with i-Mix (N-pair).

    Each row is mixed (mixup) with a random partner; the mixed row's embedding must identify
    its two sources among the batch's clean rows, in proportion to the mixing coefficient.
    No corruption is used.

    Parameters
    ----------
    alpha : float, default=1.0
        Mixing coefficients are drawn from Beta(alpha, alpha).
    temperature : float, default=0.1
        Temperature of the N-pair softmax.
    %(projection_sizes)s
    %(categorical_features_uncorrupted)s
    %(encoder_network)s
    %(encoder_training)s
    random_state : int, RandomState instance or None, default=None
        Seeds weight initialisation, shuffling, the mixing draws and the validation split
        through local generators, never the global ones: the same seed gives the same
        embeddings on the CPU.
    %(verbose)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    SimCLREncoder : Contrastive learning on two corrupted views.
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Lee, K. et al. "i-Mix: A Domain-Agnostic Strategy for Contrastive
    Representation Learning." ICLR 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import IMixEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> IMixEncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "projection_sizes": [LAYER_SIZES],
    }
    _paper_search_space = {"temperature": [0.04, 0.1, 0.15, 0.2, 0.3]}

    def __init__(
        self,
        *,
        alpha=1.0,
        temperature=0.1,
        projection_sizes=(512, 128),
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
        self.temperature = temperature
        self.projection_sizes = projection_sizes
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
        projector = lecun_normal_(MLP(self.embedding_dim, tuple(self.projection_sizes)), generator)
        module = IMixModule(encoder, projector, self.alpha)
        return module, IMixNPairLoss(self.temperature)
