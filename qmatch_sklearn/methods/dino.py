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
from .._constraints import CORRUPTION_TYPES, FEATURE_GROUPS, LAYER_SIZES
from .._ema import ema_update_, make_teacher
from .._networks import lecun_normal_
from ._base import PretextModule, check_shape, soft_cross_entropy, two_views


class DINOHead(nn.Module):
    """MLP (GELU) -> L2 normalisation -> weight-normalised linear layer onto the prototypes.

    The last layer's weight rows are L2-normalised at every call with the gain
    fixed at 1 (DINO's ``norm_last_layer=True``).
    """

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
    """What :class:`DINOModule` computes for a batch, named as in DINO's Algorithm 1.

    ``s_a``, ``s_b`` are the student's logits over the prototypes for the two
    views and ``t_a``, ``t_b`` the teacher's (no gradients), each of shape
    (batch, n_prototypes); ``center`` is C (n_prototypes,).
    """

    s_a: torch.Tensor
    s_b: torch.Tensor
    t_a: torch.Tensor
    t_b: torch.Tensor
    center: torch.Tensor


class DINOLoss(nn.Module):
    """DINO's loss, [H(P_t(a), P_s(b)) + H(P_t(b), P_s(a))] / 2 (DINO eq. 3 and
    Algorithm 1): the teacher's logits are centred and sharpened.

    Parameters
    ----------
    student_temperature : float
        tau_s, the temperature of the student's softmax.
    teacher_temperature : float
        tau_t, the (sharper) temperature of the teacher's softmax.

    Reads the fields of a :class:`DINOOutput`; see :func:`dino_loss`.
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


class DINOEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with DINO.

    Student and EMA teacher each see two corrupted views; the student's
    distribution over learned prototypes for one view matches the teacher's
    centred, sharpened distribution for the other.

    Parameters
    ----------
    student_temperature : float, default=0.15
        The temperature tau_s of the student's distribution over the
        prototypes (the reference implementation's value).
    teacher_temperature : float, default=0.04
        The (sharper) temperature tau_t of the teacher's distribution.
    ema_decay : float, default=0.9
        Momentum of the teacher's weights (the reference's tuned value).
    center_momentum : float, default=0.9
        Momentum of the centre subtracted from the teacher's logits.
    corruption : float, default=0.3
        Probability that an entry of either view is replaced.
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
    projection_sizes : tuple of int, default=(2048, 2048, 256)
        Widths of the head's MLP (the last is its bottleneck).
    n_prototypes : int, default=4096
        Number of prototypes (the output dimension of the head).
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
        "student_temperature": [Interval(Real, 0, None, closed="neither")],
        "teacher_temperature": [Interval(Real, 0, None, closed="neither")],
        "ema_decay": [Interval(Real, 0, 1, closed="both")],
        "center_momentum": [Interval(Real, 0, 1, closed="both")],
        "corruption": [Interval(Real, 0, 1, closed="both")],
        "corruption_type": [CORRUPTION_TYPES],
        "feature_groups": [None, FEATURE_GROUPS],
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
