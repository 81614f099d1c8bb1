"""Q-Match: match the teacher's distribution over a queue of past embeddings.

Mulc & Dwibedi, "Q-Match: Self-supervised Learning by Matching Distributions
Induced by a Queue" (the method section and Appendix Algorithm 1).
"""

import itertools
from numbers import Integral, Real
from typing import NamedTuple

import torch
from sklearn.utils._param_validation import Interval
from torch import nn
from torch.nn import functional as F

from .._base import BasePretextEncoder
from .._constraints import CORRUPTION_TYPES, FEATURE_GROUPS, LAYER_SIZES
from .._docstrings import fill_doc
from .._ema import ema_update_, make_teacher
from .._networks import MLP, lecun_normal_
from .._queue import EmbeddingQueue
from ._base import PretextModule, check_shape, soft_cross_entropy


def distribution_matching_loss(student, teacher, queue, student_temperature, teacher_temperature):
    """The Q-Match loss L^QM (the paper's only equation), averaged over the batch.

    L_i = H(p_t, p_s) = -sum_k p_t[i, k] log p_s[i, k], p_t = softmax(t Q^T / tau_t),
    p_s = softmax(s Q^T / tau_s): s the L2-normalised ``student`` embedding, t the ``teacher``
    embedding (L2-normalised by the module, for this loss and the queue), Q the queue.
    Gradients flow through ``student`` only.
    """
    s = F.normalize(student, dim=1)
    queue = queue.detach()
    return soft_cross_entropy(teacher.detach() @ queue.T / teacher_temperature,
                              s @ queue.T / student_temperature)


class QMatchOutput(NamedTuple):
    """What :class:`QMatchModule` computes for a batch, named as in the paper: the student's
    projection s (batch, dim), the L2-normalised teacher projection t (batch, dim, without
    gradients) and the queue Q of past teacher projections (K, dim)."""

    student: torch.Tensor
    teacher: torch.Tensor
    queue: torch.Tensor


class QMatchLoss(nn.Module):
    """The Q-Match loss L^QM (the paper's method section, Algorithm 1) on a
    :class:`QMatchOutput`; see :func:`distribution_matching_loss`.

    Parameters
    ----------
    student_temperature : float
        tau_s, the temperature of the student's distribution p_s.
    teacher_temperature : float
        tau_t, the (sharper) temperature of the teacher's distribution p_t.
    """

    def __init__(self, student_temperature, teacher_temperature):
        super().__init__()
        self.student_temperature = student_temperature
        self.teacher_temperature = teacher_temperature

    def forward(self, outputs):
        check_shape("QMatchLoss", "student", outputs.student, (None, None), ("batch", "dim"))
        batch, dim = outputs.student.shape
        check_shape("QMatchLoss", "teacher", outputs.teacher, (batch, dim), ("batch", "dim"))
        check_shape("QMatchLoss", "queue", outputs.queue, (None, dim), ("K", "dim"))
        return distribution_matching_loss(
            outputs.student,
            outputs.teacher,
            outputs.queue,
            self.student_temperature,
            self.teacher_temperature,
        )


class QMatchModule(PretextModule):
    """Student (encoder + projector), EMA teacher and queue of one Q-Match run (Algorithm 1):
    the student sees the batch corrupted with ``student_corruption``, the teacher with
    ``teacher_corruption``; after the optimiser step the teacher moves towards the student
    (EMA) and the batch's teacher embeddings enter the queue."""

    gathered = ("teacher",)

    def __init__(
        self, encoder, projector, queue, student_corruption, teacher_corruption, ema_decay,
        corruption_type="vime",
    ):
        super().__init__(encoder)
        self.projector = projector
        self.teacher = make_teacher(nn.Sequential(encoder, projector))
        self.queue = queue
        self.student_corruption = student_corruption
        self.teacher_corruption = teacher_corruption
        self.ema_decay = ema_decay
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        student_view = self.corrupted_view(x, self.student_corruption, generator)
        teacher_view = self.corrupted_view(x, self.teacher_corruption, generator)
        student = self.projector(self.encoder(student_view))
        with torch.no_grad():  # normalised once, in float32 also under autocast (issue #17)
            teacher = F.normalize(self.teacher(teacher_view).float(), dim=1)
        return QMatchOutput(student, teacher, self.queue.embeddings)

    def after_step(self, outputs):
        student_params = itertools.chain(self.encoder.parameters(), self.projector.parameters())
        ema_update_(self.teacher.parameters(), student_params, self.ema_decay)
        self.queue.push(outputs.teacher)


@fill_doc
class QMatchEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with Q-Match.

    ``fit`` pretrains an MLP encoder on unlabeled rows; ``transform`` returns its
    ``embedding_dim``-dimensional representation, e.g. for a linear model on few labels.

    Parameters
    ----------
    projection_sizes : tuple of int, default=(512, 128)
        The projection MLP on top of z whose output enters the loss and queue.
    queue_size : int, default=512
        Number K of past teacher embeddings in the queue; the paper searches {512, 2048}
        (user guide: "Choosing the queue size, temperatures and corruption").
    student_temperature : float, default=0.1
        The temperature tau_s of the student's distribution over the queue.
    %(teacher_temperature)s
    student_corruption : float, default=0.3
        Probability that the student view corrupts an entry.
    teacher_corruption : float, default=0.0
        The same for the teacher view; the paper recommends zero or small.
    %(corruption_layout)s
    ema_decay : float, default=0.9
        Momentum of the teacher, theta_t <- d theta_t + (1 - d) theta_s (the paper's tau_EMA;
        0 makes the teacher the current student).
    %(encoder_parameters)s

    Attributes
    ----------
    %(encoder_attributes)s

    See Also
    --------
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    %(qmatch_reference)s

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import QMatchEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> encoder = QMatchEncoder(max_epochs=2, random_state=0).fit(X)
    >>> encoder.transform(X[:5]).shape
    (5, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "projection_sizes": [LAYER_SIZES],
        "queue_size": [Interval(Integral, 1, None, closed="left")],
        "student_temperature": [Interval(Real, 0, None, closed="neither")],
        "teacher_temperature": [Interval(Real, 0, None, closed="neither")],
        "student_corruption": [Interval(Real, 0, 1, closed="both")],
        "teacher_corruption": [Interval(Real, 0, 1, closed="both")],
        "corruption_type": [CORRUPTION_TYPES],
        "feature_groups": [None, FEATURE_GROUPS],
        "ema_decay": [Interval(Real, 0, 1, closed="both")],
    }
    _paper_search_space = {
        "student_corruption": [0.3, 0.4, 0.5],
        "student_temperature": [0.05, 0.1, 0.2],
        "queue_size": [512, 2048],
    }

    def __init__(
        self,
        *,
        projection_sizes=(512, 128),
        queue_size=512,
        student_temperature=0.1,
        teacher_temperature=0.04,
        student_corruption=0.3,
        teacher_corruption=0.0,
        corruption_type="vime",
        feature_groups=None,
        ema_decay=0.9,
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
        self.projection_sizes = projection_sizes
        self.queue_size = queue_size
        self.student_temperature = student_temperature
        self.teacher_temperature = teacher_temperature
        self.student_corruption = student_corruption
        self.teacher_corruption = teacher_corruption
        self.corruption_type = corruption_type
        self.feature_groups = feature_groups
        self.ema_decay = ema_decay
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
        projection_sizes = tuple(self.projection_sizes)
        projector = lecun_normal_(MLP(self.embedding_dim, projection_sizes), generator)
        module = QMatchModule(
            encoder,
            projector,
            EmbeddingQueue(self.queue_size, projection_sizes[-1], generator),
            self.student_corruption,
            self.teacher_corruption,
            self.ema_decay,
            self.corruption_type,
        )
        return module, QMatchLoss(self.student_temperature, self.teacher_temperature)
