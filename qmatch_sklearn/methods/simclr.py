"""SimCLR: contrast two corrupted views of each row against the rest of the batch.

Chen et al., "A Simple Framework for Contrastive Learning of Visual
Representations", ICML 2020, eq. (1) (NT-Xent).
"""

from numbers import Real

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_CONSTRAINTS, LAYER_SIZES
from .._docstrings import fill_doc
from .._networks import MLP, lecun_normal_
from ._base import TwoViewModule, check_shape


def nt_xent_loss(z_a, z_b, temperature):
    """NT-Xent (SimCLR eq. 1) over the 2B embeddings of a batch, averaged over them: each one's
    positive is the other view of its row, its negatives the other 2B - 2 embeddings."""
    z = F.normalize(torch.cat([z_a, z_b]), dim=1)
    n = len(z_a)
    logits = (z @ z.T / temperature).fill_diagonal_(float("-inf"))
    positives = torch.arange(2 * n, device=z.device).roll(n)  # each view's other view
    return F.cross_entropy(logits, positives)


class NTXentLoss(nn.Module):
    """SimCLR's NT-Xent loss (SimCLR eq. 1) on a
    :class:`~qmatch_sklearn.methods._base.TwoViewOutput`; see :func:`nt_xent_loss`.

    Parameters
    ----------
    temperature : float
        The temperature tau of the softmax over cosine similarities.
    """

    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, outputs):
        check_shape("NTXentLoss", "z_a", outputs.z_a, (None, None), ("batch", "dim"))
        check_shape("NTXentLoss", "z_b", outputs.z_b, tuple(outputs.z_a.shape), ("batch", "dim"))
        return nt_xent_loss(outputs.z_a, outputs.z_b, self.temperature)


@fill_doc
class SimCLREncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with SimCLR's contrastive loss.

    Two corrupted views of each row pass through the encoder and a projection MLP; NT-Xent
    pulls the two views together and pushes the batch's other rows away. The paper's "large
    batch" variant is ``batch_size=4096``.

    Parameters
    ----------
    temperature : float, default=0.1
        Temperature of the NT-Xent softmax.
    %(corruption)s
    %(corruption_layout)s
    %(projection_sizes)s
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    IMixEncoder : Contrastive learning on mixed rows instead of corrupted ones.
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Chen, T., Kornblith, S., Norouzi, M. and Hinton, G. "A Simple Framework for
    Contrastive Learning of Visual Representations." ICML 2020.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import SimCLREncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> SimCLREncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        **CORRUPTION_CONSTRAINTS,
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "projection_sizes": [LAYER_SIZES],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        temperature=0.1,
        corruption=0.3,
        corruption_type="vime",
        feature_groups=None,
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
        self.temperature = temperature
        self.corruption = corruption
        self.corruption_type = corruption_type
        self.feature_groups = feature_groups
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
        head = lecun_normal_(MLP(self.embedding_dim, tuple(self.projection_sizes)), generator)
        module = TwoViewModule(encoder, head, self.corruption, self.corruption_type)
        return module, NTXentLoss(self.temperature)
