"""VIME self-supervision: mask estimation and feature reconstruction.

Yoon et al., "VIME: Extending the Success of Self- and Semi-supervised
Learning to Tabular Domain", NeurIPS 2020, eq. (4) (the self-supervised loss).
"""

from numbers import Real

import torch.nn.functional as F
from sklearn.utils._param_validation import Interval

from .._base import BasePretextEncoder, shared_docstring
from .._corruption import vime_corruption
from .._networks import MLP, lecun_normal_
from ._base import Criterion, PretextModule

#: Hidden width of the reconstruction and mask heads (the reference's MLP([512, D])).
HEAD_WIDTH = 512


def vime_loss(reconstruction, mask_logits, x, mask, alpha):
    """L = l_m + alpha * l_r (VIME eq. 4), averaged over the batch.

    l_m = sum_j BCE(m_hat_j, m_j) is summed over features; l_r = mean of
    (x_hat - x)^2 over all entries, with the clean row as the target.
    """
    mask_loss = F.binary_cross_entropy_with_logits(
        mask_logits, mask.to(mask_logits.dtype), reduction="sum"
    )
    return mask_loss / len(x) + alpha * F.mse_loss(reconstruction, x)


class VIMEModule(PretextModule):
    """Encoder plus a decoder (reconstruction) and a mask estimator, both reading z."""

    def __init__(self, encoder, decoder, mask_estimator, corruption):
        super().__init__(encoder)
        self.decoder = decoder
        self.mask_estimator = mask_estimator
        self.corruption = corruption

    def forward(self, x, generator):
        corrupted, mask = vime_corruption(x, self.corruption, generator)
        z = self.encoder(corrupted)
        return self.decoder(z), self.mask_estimator(z), x, mask


@shared_docstring
class VIMEEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with VIME's pretext tasks.

    The encoder sees a VIME-corrupted row; one head reconstructs the clean row,
    another predicts which entries were corrupted.

    Parameters
    ----------
    alpha : float, default=1.0
        Weight of the reconstruction loss against the mask loss.
    corruption : float, default=0.3
        Probability that an entry is replaced (VIME corruption).
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

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

    _method_defaults = {"alpha": 1.0, "corruption": 0.3}
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="left")],
        "corruption": [Interval(Real, 0, 1, closed="both")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def _build_pretext(self, n_features, generator):
        def head():
            return lecun_normal_(MLP(self.embedding_dim, (HEAD_WIDTH, n_features)), generator)

        encoder = self._build_encoder(n_features, generator)
        module = VIMEModule(encoder, head(), head(), self.corruption)
        return module, Criterion(vime_loss, alpha=self.alpha)
