"""SimCLR: contrast two corrupted views of each row against the rest of the batch.

Chen et al., "A Simple Framework for Contrastive Learning of Visual
Representations", ICML 2020, eq. (1) (NT-Xent).
"""

from numbers import Real

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval

from .._base import BasePretextEncoder, shared_docstring
from .._constraints import LAYER_SIZES
from .._networks import MLP, lecun_normal_
from ._base import Criterion, TwoViewModule


def nt_xent_loss(z_a, z_b, temperature):
    """NT-Xent (SimCLR eq. 1) over the 2B embeddings of a batch.

    Each embedding's positive is the other view of its row; its negatives are
    the other 2B - 2 embeddings (both views). Mean over the 2B anchors.
    """
    z = F.normalize(torch.cat([z_a, z_b]), dim=1)
    n = len(z_a)
    logits = (z @ z.T / temperature).fill_diagonal_(float("-inf"))
    positives = torch.cat([torch.arange(n, 2 * n), torch.arange(n)]).to(z.device)
    return F.cross_entropy(logits, positives)


@shared_docstring
class SimCLREncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with SimCLR's contrastive loss.

    Two VIME-corrupted views of each row pass through the encoder and a
    projection MLP; NT-Xent pulls the two views together and pushes the other
    rows of the batch away. The paper's "large batch" variant is
    ``batch_size=4096``.

    Parameters
    ----------
    temperature : float, default=0.1
        Temperature of the NT-Xent softmax.
    corruption : float, default=0.3
        Probability that an entry of either view is replaced.
    projection_sizes : tuple of int, default=(512, 128)
        The projection MLP on top of z whose output enters the loss.
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

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

    _method_defaults = {"temperature": 0.1, "corruption": 0.3, "projection_sizes": (512, 128)}
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "corruption": [Interval(Real, 0, 1, closed="both")],
        "projection_sizes": [LAYER_SIZES],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def _build_pretext(self, n_features, generator):
        encoder = self._build_encoder(n_features, generator)
        head = lecun_normal_(MLP(self.embedding_dim, tuple(self.projection_sizes)), generator)
        module = TwoViewModule(encoder, head, self.corruption)
        return module, Criterion(nt_xent_loss, temperature=self.temperature)
