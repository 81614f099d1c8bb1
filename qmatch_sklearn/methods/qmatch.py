"""Q-Match: match the teacher's distribution over a queue of past embeddings.

Mulc & Dwibedi, "Q-Match: Self-supervised Learning by Matching Distributions
Induced by a Queue" (the method section and Appendix Algorithm 1).
"""

import itertools
from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval
from torch import nn
from torch.nn import functional as F

from .._base import BasePretextEncoder, shared_docstring
from .._constraints import LAYER_SIZES
from .._corruption import vime_corruption
from .._ema import ema_update_, make_teacher
from .._networks import MLP, lecun_normal_
from .._queue import EmbeddingQueue
from ._base import Criterion, PretextModule, soft_cross_entropy


def distribution_matching_loss(student, teacher, queue, student_temperature, teacher_temperature):
    """The Q-Match loss L^QM (the paper's only equation), averaged over the batch.

    L_i = H(p_t, p_s) = -sum_k p_t[i, k] log p_s[i, k], with
    p_t = softmax(t Q^T / tau_t) and p_s = softmax(s Q^T / tau_s), where s and
    t are the L2-normalised student and teacher embeddings and Q the queue.
    Gradients flow through ``student`` only.
    """
    s = F.normalize(student, dim=1)
    t = F.normalize(teacher, dim=1)
    queue = queue.detach()
    return soft_cross_entropy(t @ queue.T / teacher_temperature, s @ queue.T / student_temperature)


class QMatchModule(PretextModule):
    """Student (encoder + projector), EMA teacher and queue of one Q-Match run.

    Per step: the student sees the batch VIME-corrupted with
    ``student_corruption``, the teacher sees it corrupted with
    ``teacher_corruption`` (0 by default: the clean row). After the optimiser
    step the teacher moves towards the student (EMA) and the batch's teacher
    embeddings enter the queue, as in Algorithm 1.
    """

    def __init__(
        self, encoder, projector, queue, student_corruption, teacher_corruption, ema_decay
    ):
        super().__init__(encoder)
        self.projector = projector
        self.teacher = make_teacher(nn.Sequential(encoder, projector))
        self.queue = queue
        self.student_corruption = student_corruption
        self.teacher_corruption = teacher_corruption
        self.ema_decay = ema_decay

    def forward(self, x, generator):
        student_view, _ = vime_corruption(x, self.student_corruption, generator)
        teacher_view, _ = vime_corruption(x, self.teacher_corruption, generator)
        student = self.projector(self.encoder(student_view))
        with torch.no_grad():
            teacher = F.normalize(self.teacher(teacher_view), dim=1)
        return student, teacher, self.queue.embeddings

    def after_step(self, outputs):
        student_params = itertools.chain(self.encoder.parameters(), self.projector.parameters())
        ema_update_(self.teacher.parameters(), student_params, self.ema_decay)
        self.queue.push(outputs[1])


@shared_docstring
class QMatchEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with Q-Match.

    ``fit`` pretrains an MLP encoder on unlabeled rows; ``transform`` returns
    its ``embedding_dim``-dimensional representation, e.g. for a linear model
    trained on few labels.

    Parameters
    ----------
    projection_sizes : tuple of int, default=(512, 128)
        The projection MLP on top of z whose output enters the loss and queue.
    queue_size : int, default=512
        Number K of past teacher embeddings in the queue. The paper searches
        {{512, 2048}}; 512 won 5 of its 8 tuned configurations and our default
        study (``benchmarks/results/defaults.md``).
    student_temperature : float, default=0.1
        tau_s, the temperature of the student's distribution over the queue.
    teacher_temperature : float, default=0.04
        tau_t, the (sharper) temperature of the teacher's distribution.
    student_corruption : float, default=0.3
        Probability that the student view replaces an entry (VIME corruption).
    teacher_corruption : float, default=0.0
        The same for the teacher view; the paper recommends zero or small.
    ema_decay : float, default=0.9
        Momentum of the teacher, theta_t <- d theta_t + (1 - d) theta_s (the
        paper's tau_EMA; 0 makes the teacher the current student).
{shared_parameters}

    Attributes
    ----------
{shared_attributes}

    See Also
    --------
    QMatchClassifier : fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Mulc, T. and Dwibedi, D. "Q-Match: Self-supervised Learning by Matching
    Distributions Induced by a Queue."

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import QMatchEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> encoder = QMatchEncoder(max_epochs=2, random_state=0).fit(X)
    >>> encoder.transform(X[:5]).shape
    (5, 128)
    """

    _method_defaults = {
        "projection_sizes": (512, 128),
        "queue_size": 512,
        "student_temperature": 0.1,
        "teacher_temperature": 0.04,
        "student_corruption": 0.3,
        "teacher_corruption": 0.0,
        "ema_decay": 0.9,
    }
    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "projection_sizes": [LAYER_SIZES],
        "queue_size": [Interval(Integral, 1, None, closed="left")],
        "student_temperature": [Interval(Real, 0, None, closed="neither")],
        "teacher_temperature": [Interval(Real, 0, None, closed="neither")],
        "student_corruption": [Interval(Real, 0, 1, closed="both")],
        "teacher_corruption": [Interval(Real, 0, 1, closed="both")],
        "ema_decay": [Interval(Real, 0, 1, closed="both")],
    }
    _paper_search_space = {
        "student_corruption": [0.3, 0.4, 0.5],
        "student_temperature": [0.05, 0.1, 0.2],
        "queue_size": [512, 2048],
    }

    def _build_pretext(self, n_features, generator):
        encoder = self._build_encoder(n_features, generator)
        projection_sizes = tuple(self.projection_sizes)
        projector = lecun_normal_(MLP(self.embedding_dim, projection_sizes), generator)
        module = QMatchModule(
            encoder,
            projector,
            EmbeddingQueue(self.queue_size, projection_sizes[-1], generator),
            self.student_corruption,
            self.teacher_corruption,
            self.ema_decay,
        )
        loss = Criterion(
            distribution_matching_loss,
            student_temperature=self.student_temperature,
            teacher_temperature=self.teacher_temperature,
        )
        return module, loss
