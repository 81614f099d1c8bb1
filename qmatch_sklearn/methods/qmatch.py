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
from .._ema import ema_update_, make_teacher
from .._networks import MLP, lecun_normal_
from .._queue import EmbeddingQueue
from ._base import PretextModule, check_shape, soft_cross_entropy


def distribution_matching_loss(student, teacher, queue, student_temperature, teacher_temperature):
    """The Q-Match loss L^QM (the paper's only equation), averaged over the batch.

    L_i = H(p_t, p_s) = -sum_k p_t[i, k] log p_s[i, k], with
    p_t = softmax(t Q^T / tau_t) and p_s = softmax(s Q^T / tau_s), where s is
    the L2-normalised ``student`` embedding, t the ``teacher`` embedding, already
    L2-normalised (the module normalises it once, for this loss and the queue),
    and Q the queue. Gradients flow through ``student`` only.
    """
    s = F.normalize(student, dim=1)
    queue = queue.detach()
    return soft_cross_entropy(teacher.detach() @ queue.T / teacher_temperature,
                              s @ queue.T / student_temperature)


class QMatchOutput(NamedTuple):
    """What :class:`QMatchModule` computes for a batch, named as in the paper.

    ``student`` is the student's projection s (batch, dim), ``teacher`` the
    L2-normalised teacher projection t (batch, dim), computed without
    gradients, and ``queue`` the queue Q of past teacher projections (K, dim).
    """

    student: torch.Tensor
    teacher: torch.Tensor
    queue: torch.Tensor


class QMatchLoss(nn.Module):
    """The Q-Match loss L^QM: cross-entropy from the teacher's to the student's
    distribution over the queue (the paper's method section, Algorithm 1).

    Parameters
    ----------
    student_temperature : float
        tau_s, the temperature of the student's distribution p_s.
    teacher_temperature : float
        tau_t, the (sharper) temperature of the teacher's distribution p_t.

    Reads ``student`` (batch, dim), ``teacher`` (batch, dim) and ``queue``
    (K, dim) from a :class:`QMatchOutput`; see :func:`distribution_matching_loss`.
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
    """Student (encoder + projector), EMA teacher and queue of one Q-Match run.

    Per step: the student sees the batch corrupted (``corruption_type``, VIME's
    by default) with ``student_corruption``, the teacher sees it corrupted with
    ``teacher_corruption`` (0 by default: the clean row). After the optimiser
    step the teacher moves towards the student (EMA) and the batch's teacher
    embeddings enter the queue, as in Algorithm 1.
    """

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
        {512, 2048}; 512 won 5 of its 8 tuned configurations and our default
        study (``benchmarks/results/defaults.md``).
    student_temperature : float, default=0.1
        The temperature tau_s of the student's distribution over the queue.
    teacher_temperature : float, default=0.04
        The (sharper) temperature tau_t of the teacher's distribution.
    student_corruption : float, default=0.3
        Probability that the student view corrupts an entry.
    teacher_corruption : float, default=0.0
        The same for the teacher view; the paper recommends zero or small.
    corruption_type : {"vime", "zero"}, default="vime"
        How a corrupted entry is filled: "vime" takes the same column's value in
        another row of the batch (VIME's corruption), "zero" sets it to 0
        (TabNet's masking).
    feature_groups : list of lists of int or str, default=None
        Columns corrupted as one unit, by index or (for a DataFrame) name: a
        corrupted group takes all its values from one other row ("vime") or is
        zeroed whole ("zero"), and counts as one entry for the corruption rate.
        Other columns, and all with None (as in the paper), are corrupted on
        their own. :func:`qmatch_sklearn.one_hot_groups` reads the groups of
        one-hot columns off a fitted ColumnTransformer.
    ema_decay : float, default=0.9
        Momentum of the teacher, theta_t <- d theta_t + (1 - d) theta_s (the
        paper's tau_EMA; 0 makes the teacher the current student).
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        The categorical columns of ``X``: ``"from_dtype"`` takes a DataFrame's
        columns of dtype ``category``, ``string`` or ``object``; an array-like
        names them (indices, names or a boolean mask; integer codes allowed);
        None makes every column numeric. Each becomes a one-hot block of the
        categories seen at fit (``categories_``, at most 255), all zeros for a
        missing value or an unseen category, and is corrupted as one unit.
    hidden_sizes : tuple of int, default=None
        Hidden layer widths of the encoder. None means (512, 512) for
        ``architecture="mlp"`` and the paper's (2048, 2048, 4096, 4096, 8192)
        for ``"imix"``; it must stay None for a network of your own.
    architecture : {"mlp", "imix"}, callable or torch.nn.Module, default="mlp"
        The encoder network: ``"mlp"`` (fully connected layers with batch
        normalisation and ReLU), ``"imix"`` (the paper's i-Mix maxout network, for
        a GPU), a callable ``architecture(n_features, embedding_dim)`` returning a
        ``torch.nn.Module`` that maps (batch, n_features) to (batch,
        embedding_dim), or such a module (deep-copied at each fit).
        ``qmatch_sklearn.save`` refuses a network of your own; pickle it instead.
    embedding_dim : int, default=128
        Width of the representation z returned by ``transform``.
    passthrough : bool, default=False
        When True, ``transform`` returns each row's input features followed by
        its embedding, ``[X, z]`` (sparse when ``X`` is sparse), as
        ``StackingClassifier(passthrough=True)`` does; the embedding block is
        standardised and scaled to the input block's total variance
        (``embedding_mean_``, ``embedding_scale_``). A ``QMatchClassifier`` on
        such an encoder gives its head both.
    lr : float, default=1e-3
        AdamW learning rate of the pretext task.
    weight_decay : float, default=0.0
        AdamW weight decay on weight matrices (the paper pretrains without).
    batch_size : int, default=512
        Rows per optimisation step.
    max_epochs : int or "auto", default=100
        Upper bound on pretraining epochs. "auto" aims at 300 optimizer
        steps within 10 to 100 epochs over the training rows: 100 on tables of
        under 1,500 rows, 10 from about 15,000 rows on.
    patience : int, default=32
        Stop after this many epochs without a lower validation loss, restoring
        the best epoch's weights. A non-finite loss or weight also stops
        training: the best finite epoch is restored with a ``ConvergenceWarning``
        (``FloatingPointError`` when no epoch was finite).
    validation_fraction : float, "auto" or None, default="auto"
        Share of the rows held out for that validation loss. "auto" holds out
        10% when that is at least 200 rows (from 2,000 rows on), else none;
        without held-out rows (or with None) training runs ``max_epochs`` and
        keeps the last weights.
    device : str, default="auto"
        "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:1", ...
    precision : {"32-true", "bf16-mixed", "16-mixed", "auto"}, default="32-true"
        Precision of training, by Lightning's names: float32, or forward passes
        under bfloat16 or float16 autocast ("16-mixed": CUDA only); outputs stay
        float32. "auto" is "bf16-mixed" on CPUs with bf16 matrix units, else
        "32-true" (user guide: "CPU, GPU, and saving models").
    random_state : int, RandomState instance or None, default=None
        Seeds weight initialisation, shuffling, corruption, any queue and the
        validation split through local generators, never the global ones: the
        same seed gives the same embeddings on the CPU.
    verbose : int, default=0
        0 is silent, 1 shows a progress bar over epochs, 2 a table of every
        epoch's losses; both end with why training stopped and which epoch was kept.

    Attributes
    ----------
    network_ : torch.nn.Module
        The pretrained encoder (at the best validation epoch).
    history_ : skorch.History
        One entry per epoch with ``train_loss``, and ``valid_loss`` when there
        is a validation split.
    n_epochs_ : int
        Epochs run.
    best_epoch_ : int
        Epoch whose weights were kept (1-based).
    device_ : str
        Device the network lives on.
    precision_ : str
        The precision training ran in (``precision`` with "auto" resolved).
    n_features_in_ : int
        Number of input features.
    is_categorical_ : ndarray of bool or None
        Which columns of ``X`` are categorical; None when none is.
    categories_ : list of ndarray or None
        The categories of each categorical column, in the order of its
        one-hot block.
    missing_features_ : ndarray of int
        Input features with missing values (NaN) at fit, which the network fills
        with the column's observed mean. Empty when ``X`` had none (NaN at
        transform is then read as ``center_``, with a warning).
    missing_indicators_ : ndarray of int
        Those of ``missing_features_`` whose missingness was related to the rest
        of the row at fit, each given an indicator channel at the network's input.
    center_ : ndarray of shape (`n_features_in_`,)
        Each numeric column's center at fit, in float64: its mean, or its
        minimum when it holds two values (0 for a categorical column). The
        network reads ``(x - center_) / scale_``.
    scale_ : ndarray of shape (`n_features_in_`,)
        Each numeric column's scale at fit: its standard deviation but at least
        a tenth of its range, or the gap between its two values (1 for a
        categorical column; float64's largest for a constant one, which then
        reads 0). The network reads ``(x - center_) / scale_`` clipped to +-10.
    embedding_mean_ : ndarray of shape (embedding_dim,)
        The mean embedding over the fit rows (a random 8,192 of them when there are
        more), which ``passthrough=True`` centres by. Only when fitted with it.
    embedding_scale_ : ndarray of shape (embedding_dim,)
        The factor ``passthrough=True`` multiplies the centred embedding by.
        Only when fitted with ``passthrough=True``.
    feature_names_in_ : ndarray of str
        Input column names, when ``X`` had string column names.

    See Also
    --------
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

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
