"""SimSiam: predict one view's projection from the other's, with a stop-gradient.

Chen & He, "Exploring Simple Siamese Representation Learning", CVPR 2021,
eqs. (1)-(4) (symmetrised negative cosine similarity).
"""

from numbers import Integral, Real

import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder, shared_docstring
from .._constraints import LAYER_SIZES
from .._networks import MLP, hidden_block, lecun_normal_
from ._base import Criterion, TwoViewModule


def simsiam_loss(p_a, p_b, z_a, z_b):
    """L = D(p_a, sg(z_b)) / 2 + D(p_b, sg(z_a)) / 2, D = negative cosine (SimSiam eq. 4)."""
    agreement_a = F.cosine_similarity(p_a, z_b.detach()).mean()
    agreement_b = F.cosine_similarity(p_b, z_a.detach()).mean()
    return -(agreement_a + agreement_b) / 2


def simsiam_projector(n_in, sizes):
    """SimSiam's projector: BN-ReLU hidden blocks, then a linear layer and a BN without affine."""
    layers = []
    for width in sizes[:-1]:
        layers += hidden_block(n_in, width)
        n_in = width
    layers += [nn.Linear(n_in, sizes[-1], bias=False), nn.BatchNorm1d(sizes[-1], affine=False)]
    return nn.Sequential(*layers)


class SimSiamModule(TwoViewModule):
    """Encoder, projector (the two-view head) and predictor."""

    def __init__(self, encoder, projector, predictor, corruption):
        super().__init__(encoder, projector, corruption)
        self.predictor = predictor

    def forward(self, x, generator):
        z_a, z_b = super().forward(x, generator)
        return self.predictor(z_a), self.predictor(z_b), z_a, z_b


@shared_docstring
class SimSiamEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with SimSiam.

    Two VIME-corrupted views pass through the encoder and a projector; a
    predictor maps each projection to the other view's, which is held fixed
    (stop-gradient). No negatives and no momentum encoder.

    Parameters
    ----------
    corruption : float, default=0.3
        Probability that an entry of either view is replaced.
    projection_sizes : tuple of int, default=(2048, 2048, 2048)
        Projector widths (the last is the projection's dimension).
    predictor_width : int, default=512
        Hidden width of the predictor (its bottleneck).
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

    References
    ----------
    Chen, X. and He, K. "Exploring Simple Siamese Representation Learning."
    CVPR 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import SimSiamEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> SimSiamEncoder(projection_sizes=(64, 64), predictor_width=16,
    ...                max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _method_defaults = {
        "corruption": 0.3,
        "projection_sizes": (2048, 2048, 2048),
        "predictor_width": 512,
    }
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "corruption": [Interval(Real, 0, 1, closed="both")],
        "projection_sizes": [LAYER_SIZES],
        "predictor_width": [Interval(Integral, 1, None, closed="left")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def _build_pretext(self, n_features, generator):
        sizes = tuple(self.projection_sizes)
        encoder = self._build_encoder(n_features, generator)
        projector = lecun_normal_(simsiam_projector(self.embedding_dim, sizes), generator)
        predictor = lecun_normal_(MLP(sizes[-1], (int(self.predictor_width), sizes[-1])), generator)
        module = SimSiamModule(encoder, projector, predictor, self.corruption)
        return module, Criterion(simsiam_loss)
