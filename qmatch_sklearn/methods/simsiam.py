"""SimSiam: predict one view's projection from the other's, with a stop-gradient.

Chen & He, "Exploring Simple Siamese Representation Learning", CVPR 2021,
eqs. (1)-(4) (symmetrised negative cosine similarity).
"""

from numbers import Integral
from typing import NamedTuple

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_CONSTRAINTS, LAYER_SIZES
from .._docstrings import fill_doc
from .._networks import MLP, hidden_block, lecun_normal_
from ._base import TwoViewModule, check_shape


def simsiam_loss(p_a, p_b, z_a, z_b):
    """L = D(p_a, sg(z_b)) / 2 + D(p_b, sg(z_a)) / 2, D = negative cosine (SimSiam eq. 4)."""
    agreement_a = F.cosine_similarity(p_a, z_b.detach()).mean()
    agreement_b = F.cosine_similarity(p_b, z_a.detach()).mean()
    return -(agreement_a + agreement_b) / 2


class SimSiamOutput(NamedTuple):
    """What :class:`SimSiamModule` computes for a batch (SimSiam Algorithm 1): the predictions
    ``p_a``, ``p_b`` and the projections ``z_a``, ``z_b`` of the two views, (batch, dim) each."""

    p_a: torch.Tensor
    p_b: torch.Tensor
    z_a: torch.Tensor
    z_b: torch.Tensor


class SimSiamLoss(nn.Module):
    """SimSiam's symmetrised negative cosine similarity with a stop-gradient on the projections
    (SimSiam eqs. 1-4) on a :class:`SimSiamOutput`; see :func:`simsiam_loss`."""

    def forward(self, outputs):
        check_shape("SimSiamLoss", "p_a", outputs.p_a, (None, None), ("batch", "dim"))
        shape = tuple(outputs.p_a.shape)
        for name in ("p_b", "z_a", "z_b"):
            check_shape("SimSiamLoss", name, getattr(outputs, name), shape, ("batch", "dim"))
        return simsiam_loss(outputs.p_a, outputs.p_b, outputs.z_a, outputs.z_b)


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

    def __init__(self, encoder, projector, predictor, corruption, corruption_type="vime"):
        super().__init__(encoder, projector, corruption, corruption_type)
        self.predictor = predictor

    def forward(self, x, generator):
        z_a, z_b = super().forward(x, generator)
        return SimSiamOutput(self.predictor(z_a), self.predictor(z_b), z_a, z_b)


@fill_doc
class SimSiamEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with SimSiam.

    Two corrupted views pass through the encoder and a projector; a predictor maps each
    projection to the other view's, held fixed (stop-gradient). No negatives, no momentum
    encoder.

    Parameters
    ----------
    %(corruption)s
    %(corruption_layout)s
    projection_sizes : tuple of int, default=(2048, 2048, 2048)
        Projector widths (the last is the projection's dimension).
    predictor_width : int, default=512
        Hidden width of the predictor (its bottleneck).
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    SimCLREncoder : Two views with negatives (NT-Xent).
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

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

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        **CORRUPTION_CONSTRAINTS,
        "projection_sizes": [LAYER_SIZES],
        "predictor_width": [Interval(Integral, 1, None, closed="left")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        corruption=0.3,
        corruption_type="vime",
        feature_groups=None,
        projection_sizes=(2048, 2048, 2048),
        predictor_width=512,
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
        self.projection_sizes = projection_sizes
        self.predictor_width = predictor_width
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
        sizes = tuple(self.projection_sizes)
        encoder = self._build_encoder(n_features, generator, missing)
        projector = lecun_normal_(simsiam_projector(self.embedding_dim, sizes), generator)
        predictor = lecun_normal_(MLP(sizes[-1], (int(self.predictor_width), sizes[-1])), generator)
        module = SimSiamModule(
            encoder, projector, predictor, self.corruption, self.corruption_type
        )
        return module, SimSiamLoss()
