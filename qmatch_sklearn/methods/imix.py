"""i-Mix (N-pair): contrast mixed rows against the clean batch with mixed virtual labels.

Lee et al., "i-Mix: A Domain-Agnostic Strategy for Contrastive Representation
Learning", ICLR 2021, eq. (4) (the N-pair version).
"""

from numbers import Real

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import beta
from sklearn.utils._param_validation import Interval

from .._base import BasePretextEncoder, shared_docstring
from .._constraints import LAYER_SIZES
from .._networks import MLP, lecun_normal_
from ._base import Criterion, PretextModule


def imix_npair_loss(mixed, clean, lam, partner, temperature):
    """mean_i [lam_i CE(l_i, i) + (1 - lam_i) CE(l_i, r(i))], l_i = <m_i, c_j> / T over j.

    ``mixed`` row i embeds lam_i x_i + (1 - lam_i) x_r(i), ``clean`` row j
    embeds x_j (both L2-normalised here); its virtual label is i with weight
    lam_i and r(i) with weight 1 - lam_i (i-Mix eq. 4).
    """
    logits = F.normalize(mixed, dim=1) @ F.normalize(clean, dim=1).T / temperature
    own = F.cross_entropy(logits, torch.arange(len(logits), device=logits.device), reduction="none")
    other = F.cross_entropy(logits, partner, reduction="none")
    return (lam * own + (1 - lam) * other).mean()


def beta_draws(alpha, n, generator, device):
    """n draws of Beta(alpha, alpha) by inverse CDF of uniforms from ``generator``."""
    uniforms = torch.rand(n, generator=generator, device=device).cpu().numpy()
    return torch.as_tensor(beta.ppf(uniforms, alpha, alpha).astype(np.float32), device=device)


class IMixModule(PretextModule):
    """Encoder plus projection MLP; mixes each row with a random partner row."""

    def __init__(self, encoder, projector, alpha):
        super().__init__(encoder)
        self.projector = projector
        self.alpha = alpha

    def forward(self, x, generator):
        lam = beta_draws(self.alpha, len(x), generator, x.device)
        partner = torch.randperm(len(x), generator=generator, device=x.device)
        mixed = lam[:, None] * x + (1 - lam[:, None]) * x[partner]
        embed = lambda rows: self.projector(self.encoder(rows))  # noqa: E731
        return embed(mixed), embed(x), lam, partner


@shared_docstring
class IMixEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with i-Mix (N-pair).

    Each row is mixed (mixup) with a random partner; the mixed row's
    embedding must identify its two sources among the clean rows of the
    batch, in proportion to the mixing coefficient. No corruption is used.

    Parameters
    ----------
    alpha : float, default=1.0
        Mixing coefficients are drawn from Beta(alpha, alpha).
    temperature : float, default=0.1
        Temperature of the N-pair softmax.
    projection_sizes : tuple of int, default=(512, 128)
        The projection MLP on top of z whose output enters the loss.
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

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

    _method_defaults = {"alpha": 1.0, "temperature": 0.1, "projection_sizes": (512, 128)}
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "projection_sizes": [LAYER_SIZES],
    }
    _paper_search_space = {"temperature": [0.04, 0.1, 0.15, 0.2, 0.3]}

    def _build_pretext(self, n_features, generator):
        encoder = self._build_encoder(n_features, generator)
        projector = lecun_normal_(MLP(self.embedding_dim, tuple(self.projection_sizes)), generator)
        module = IMixModule(encoder, projector, self.alpha)
        return module, Criterion(imix_npair_loss, temperature=self.temperature)
