"""DINO: self-distillation onto learned prototypes with a centred, sharpened EMA teacher.

Caron et al., "Emerging Properties in Self-Supervised Vision Transformers",
ICCV 2021, eq. (3) and Algorithm 1.
"""

import itertools
from numbers import Integral, Real
from typing import NamedTuple

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_CONSTRAINTS, LAYER_SIZES
from .._docstrings import fill_doc
from .._ema import ema_update_, make_teacher
from .._networks import lecun_normal_
from ._base import PretextModule, check_shape, soft_cross_entropy, two_views


class DINOHead(nn.Module):
    """MLP (GELU) -> L2 normalisation -> weight-normalised linear layer onto the prototypes,
    its weight rows L2-normalised at every call, gain fixed at 1 (``norm_last_layer=True``)."""

    def __init__(self, n_in, sizes, n_prototypes):
        super().__init__()
        layers = []
        for i, width in enumerate(sizes):
            layers.append(nn.Linear(n_in, width))
            if i < len(sizes) - 1:
                layers.append(nn.GELU(approximate="tanh"))
            n_in = width
        self.mlp = nn.Sequential(*layers)
        self.prototypes = nn.Linear(n_in, n_prototypes, bias=False)

    def forward(self, x):
        h = F.normalize(self.mlp(x), dim=1)
        return F.linear(h, F.normalize(self.prototypes.weight, dim=1))


def dino_loss(s_a, s_b, t_a, t_b, center, student_temperature, teacher_temperature):
    """[H(t_a, s_b) + H(t_b, s_a)] / 2 with teacher logits centred and sharpened (DINO eq. 3)."""

    def cross(t, s):
        return soft_cross_entropy((t - center) / teacher_temperature, s / student_temperature)

    return (cross(t_a, s_b) + cross(t_b, s_a)) / 2


class DINOOutput(NamedTuple):
    """What :class:`DINOModule` computes for a batch, named as in DINO's Algorithm 1: the
    student's logits over the prototypes for the two views ``s_a``, ``s_b`` and the teacher's
    ``t_a``, ``t_b`` (no gradients), each (batch, n_prototypes), and the centre C
    (n_prototypes,)."""

    s_a: torch.Tensor
    s_b: torch.Tensor
    t_a: torch.Tensor
    t_b: torch.Tensor
    center: torch.Tensor


class DINOLoss(nn.Module):
    """DINO's loss (DINO eq. 3 and Algorithm 1) on a :class:`DINOOutput`, the teacher's logits
    centred and sharpened; see :func:`dino_loss`.

    Parameters
    ----------
    student_temperature : float
        tau_s, the temperature of the student's softmax.
    teacher_temperature : float
        tau_t, the (sharper) temperature of the teacher's softmax.
    """

    def __init__(self, student_temperature, teacher_temperature):
        super().__init__()
        self.student_temperature = student_temperature
        self.teacher_temperature = teacher_temperature

    def forward(self, outputs):
        symbols = ("batch", "n_prototypes")
        check_shape("DINOLoss", "s_a", outputs.s_a, (None, None), symbols)
        shape = tuple(outputs.s_a.shape)
        for name in ("s_b", "t_a", "t_b"):
            check_shape("DINOLoss", name, getattr(outputs, name), shape, symbols)
        check_shape("DINOLoss", "center", outputs.center, shape[1:], symbols[1:])
        return dino_loss(
            outputs.s_a,
            outputs.s_b,
            outputs.t_a,
            outputs.t_b,
            outputs.center,
            self.student_temperature,
            self.teacher_temperature,
        )


class DINOModule(PretextModule):
    """Student (encoder + head), EMA teacher of the same shape, and the centre."""

    gathered = ("t_a", "t_b")

    def __init__(
        self, encoder, head, corruption, ema_decay, center_momentum, corruption_type="vime"
    ):
        super().__init__(encoder)
        self.head = head
        self.teacher = make_teacher(nn.Sequential(encoder, head))
        self.register_buffer("center", torch.zeros(head.prototypes.out_features))
        self.corruption = corruption
        self.ema_decay = ema_decay
        self.center_momentum = center_momentum
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        view_a, view_b = two_views(self, x, self.corruption, generator)
        s_a, s_b = self.head(self.encoder(view_a)), self.head(self.encoder(view_b))
        with torch.no_grad():
            t_a, t_b = self.teacher(view_a), self.teacher(view_b)
        return DINOOutput(s_a, s_b, t_a, t_b, self.center)

    def after_step(self, outputs):
        student = itertools.chain(self.encoder.parameters(), self.head.parameters())
        ema_update_(self.teacher.parameters(), student, self.ema_decay)
        batch_center = torch.cat([outputs.t_a, outputs.t_b]).mean(dim=0)
        self.center.mul_(self.center_momentum).add_(batch_center, alpha=1 - self.center_momentum)


@fill_doc
class DINOEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with DINO.

    Student and EMA teacher each see two corrupted views; the student's
    distribution over learned prototypes for one view matches the teacher's
    centred, sharpened distribution for the other.

    Parameters
    ----------
    student_temperature : float, default=0.15
        The temperature tau_s of the student's distribution over the prototypes (the reference
        implementation's value).
    %(teacher_temperature)s
    ema_decay : float, default=0.9
        Momentum of the teacher's weights (the reference's tuned value).
    center_momentum : float, default=0.9
        Momentum of the centre subtracted from the teacher's logits.
    %(corruption)s
    %(corruption_layout)s
    projection_sizes : tuple of int, default=(2048, 2048, 256)
        Widths of the head's MLP (the last is its bottleneck).
    n_prototypes : int, default=4096
        Number of prototypes (the output dimension of the head).
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    QMatchEncoder : A teacher's distribution over a queue of embeddings instead of
        learned prototypes.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Caron, M. et al. "Emerging Properties in Self-Supervised Vision
    Transformers." ICCV 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import DINOEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> DINOEncoder(projection_sizes=(64, 32), n_prototypes=64,
    ...             max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        **CORRUPTION_CONSTRAINTS,
        "student_temperature": [Interval(Real, 0, None, closed="neither")],
        "teacher_temperature": [Interval(Real, 0, None, closed="neither")],
        "ema_decay": [Interval(Real, 0, 1, closed="both")],
        "center_momentum": [Interval(Real, 0, 1, closed="both")],
        "projection_sizes": [LAYER_SIZES],
        "n_prototypes": [Interval(Integral, 1, None, closed="left")],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        student_temperature=0.15,
        teacher_temperature=0.04,
        ema_decay=0.9,
        center_momentum=0.9,
        corruption=0.3,
        corruption_type="vime",
        feature_groups=None,
        projection_sizes=(2048, 2048, 256),
        n_prototypes=4096,
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
        self.student_temperature = student_temperature
        self.teacher_temperature = teacher_temperature
        self.ema_decay = ema_decay
        self.center_momentum = center_momentum
        self.corruption = corruption
        self.corruption_type = corruption_type
        self.feature_groups = feature_groups
        self.projection_sizes = projection_sizes
        self.n_prototypes = n_prototypes
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
        head = DINOHead(self.embedding_dim, tuple(self.projection_sizes), self.n_prototypes)
        module = DINOModule(
            encoder, lecun_normal_(head, generator), self.corruption, self.ema_decay,
            self.center_momentum, self.corruption_type,
        )
        return module, DINOLoss(self.student_temperature, self.teacher_temperature)
