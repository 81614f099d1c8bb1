"""TabNet's self-supervised task: reconstruct masked features, scaled by their spread.

Arik & Pfister, "TabNet: Attentive Interpretable Tabular Learning", AAAI 2021,
section "Self-supervised learning" (the normalised reconstruction loss).
"""

from numbers import Real

from sklearn.utils._param_validation import Interval, StrOptions

from .._base import BasePretextEncoder, shared_docstring
from .._corruption import CORRUPTIONS
from .._networks import MLP, lecun_normal_
from ._base import Criterion, PretextModule
from .vime import HEAD_WIDTH


def tabnet_loss(reconstruction, x, mask):
    """sum_ij m_ij ((x_hat_ij - x_ij) / s_j)^2 / (sum_ij m_ij + 1e-3).

    s_j is the batch standard deviation of feature j (its batch mean where the
    deviation is zero, as in TabNet's code), floored at 1e-3; the loss is
    normalised by the number of masked entries, as in the reference.
    """
    mask = mask.to(x.dtype)
    std = x.std(dim=0, unbiased=False)
    scale = std.where(std > 0, x.mean(dim=0)).clamp_min(1e-3)
    squared = ((reconstruction - x) / scale) ** 2 * mask
    return squared.sum() / (mask.sum() + 1e-3)


class TabNetModule(PretextModule):
    """Encoder plus a decoder that reconstructs the row from z."""

    def __init__(self, encoder, decoder, corruption, corruption_type):
        super().__init__(encoder)
        self.decoder = decoder
        self.corruption = corruption
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        corrupted, mask = CORRUPTIONS[self.corruption_type](x, self.corruption, generator)
        return self.decoder(self.encoder(corrupted)), x, mask


@shared_docstring
class TabNetEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with TabNet's masked reconstruction.

    The encoder is the library's MLP (not TabNet's attentive transformer): this
    is the paper's "TabNet" baseline, i.e. TabNet's pretext task.

    Parameters
    ----------
    corruption : float, default=0.5
        Probability that an entry is masked.
    corruption_type : {{"vime", "zero"}}, default="vime"
        How masked entries are filled: "vime" takes the value of the same
        column in another row of the batch (what the Q-Match paper ran),
        "zero" sets them to 0 (TabNet's own masking).
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

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

    _method_defaults = {"corruption": 0.5, "corruption_type": "vime"}
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "corruption": [Interval(Real, 0, 1, closed="both")],
        "corruption_type": [StrOptions(set(CORRUPTIONS))],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def _build_pretext(self, n_features, generator):
        encoder = self._build_encoder(n_features, generator)
        decoder = lecun_normal_(MLP(self.embedding_dim, (HEAD_WIDTH, n_features)), generator)
        module = TabNetModule(encoder, decoder, self.corruption, self.corruption_type)
        return module, Criterion(tabnet_loss)
