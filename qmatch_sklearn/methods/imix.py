"""i-Mix (N-pair): contrast mixed rows against the clean batch with mixed virtual labels.

Lee et al., "i-Mix: A Domain-Agnostic Strategy for Contrastive Representation
Learning", ICLR 2021, eq. (4) (the N-pair version).
"""

from numbers import Real
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import beta
from sklearn.utils._param_validation import Interval
from torch import nn

from .._base import BasePretextEncoder
from .._constraints import LAYER_SIZES
from .._networks import MLP, lecun_normal_
from ._base import PretextModule, check_shape


def imix_npair_loss(mixed, clean, lam, partner, temperature):
    """mean_i [lam_i CE(l_i, i) + (1 - lam_i) CE(l_i, r(i))], l_i = <m_i, c_j> / T over j.

    ``mixed`` row i embeds lam_i x_i + (1 - lam_i) x_r(i), ``clean`` row j
    embeds x_j (both L2-normalised here); its virtual label is i with weight
    lam_i and r(i) with weight 1 - lam_i (i-Mix eq. 4).
    """
    logits = F.normalize(mixed, dim=1) @ F.normalize(clean, dim=1).T / temperature
    own = F.cross_entropy(logits, torch.arange(len(logits), device=logits.device), reduction="none")
    other = F.cross_entropy(logits, partner, reduction="none")
    return (lam * own + (1 - lam) * other).mean()


class IMixOutput(NamedTuple):
    """What :class:`IMixModule` computes for a batch (i-Mix eq. 4, N-pair).

    ``mixed`` embeds the mixed rows lam_i x_i + (1 - lam_i) x_r(i) and
    ``clean`` the clean rows, both (batch, dim); ``lam`` holds the mixing
    coefficients (batch,) and ``partner`` the partner indices r(i) (batch,).
    """

    mixed: torch.Tensor
    clean: torch.Tensor
    lam: torch.Tensor
    partner: torch.Tensor


class IMixNPairLoss(nn.Module):
    """i-Mix's N-pair loss on mixed virtual labels (i-Mix eq. 4).

    Parameters
    ----------
    temperature : float
        The temperature T of the softmax over cosine similarities.

    Reads the fields of an :class:`IMixOutput`; see :func:`imix_npair_loss`.
    """

    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, outputs):
        check_shape("IMixNPairLoss", "mixed", outputs.mixed, (None, None), ("batch", "dim"))
        batch, dim = outputs.mixed.shape
        check_shape("IMixNPairLoss", "clean", outputs.clean, (batch, dim), ("batch", "dim"))
        check_shape("IMixNPairLoss", "lam", outputs.lam, (batch,), ("batch",))
        check_shape("IMixNPairLoss", "partner", outputs.partner, (batch,), ("batch",))
        return imix_npair_loss(
            outputs.mixed, outputs.clean, outputs.lam, outputs.partner, self.temperature
        )


def beta_draws(alpha, n, generator, device):
    """n draws of Beta(alpha, alpha) by inverse CDF of uniforms from ``generator``.
    Beta(1, 1) is the uniform distribution: its draws are the uniforms themselves
    and stay on the device; other alphas go through the host (SciPy's inverse)."""
    uniforms = torch.rand(n, generator=generator, device=device)
    if alpha == 1:
        return uniforms
    lam = beta.ppf(uniforms.cpu().numpy(), alpha, alpha).astype(np.float32)
    return torch.as_tensor(lam, device=device)


class IMixModule(PretextModule):
    """Encoder plus projection MLP; mixes each row with a random partner row."""

    def __init__(self, encoder, projector, alpha):
        super().__init__(encoder)
        self.projector = projector
        self.alpha = alpha

    @property
    def recordable(self):
        """Beta draws other than the uniform's go through the host (:func:`beta_draws`)."""
        return self.alpha == 1

    def forward(self, x, generator):
        lam = beta_draws(self.alpha, len(x), generator, x.device)
        partner = torch.randperm(len(x), generator=generator, device=x.device)
        mixed = lam[:, None] * x + (1 - lam[:, None]) * x[partner]
        embed = lambda rows: self.projector(self.encoder(rows))  # noqa: E731
        return IMixOutput(embed(mixed), embed(x), lam, partner)


class IMixEncoder(BasePretextEncoder):
    """Self-supervised tabular encoder trained with i-Mix (N-pair).

    Each row is mixed (mixup) with a random partner; the mixed row's
    embedding must identify its two sources among the clean rows of the
    batch, in proportion to the mixing coefficient. No corruption is used.

    Parameters
    ----------
    alpha : float, default=1.0
        Mixing coefficients are drawn from Beta(alpha, alpha).
    temperature : float, default=0.1
        Temperature of the N-pair softmax.
    projection_sizes : tuple of int, default=(512, 128)
        The projection MLP on top of z whose output enters the loss.
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        The categorical columns of ``X``: ``"from_dtype"`` takes a DataFrame's
        columns of dtype ``category``, ``string`` or ``object``; an array-like
        names them (indices, names or a boolean mask; integer codes allowed);
        None makes every column numeric. Each becomes a one-hot block of the
        categories seen at fit (``categories_``, at most 255), all zeros for a
        missing value or an unseen category.
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
        Seeds weight initialisation, shuffling, the mixing draws and the
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
    SimCLREncoder : Contrastive learning on two corrupted views.
    QMatchEncoder : Matches a momentum teacher's distribution over a queue.
    QMatchClassifier : Fine-tunes or linearly probes a pretrained encoder.

    References
    ----------
    Lee, K. et al. "i-Mix: A Domain-Agnostic Strategy for Contrastive
    Representation Learning." ICLR 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import IMixEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> IMixEncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "temperature": [Interval(Real, 0, None, closed="neither")],
        "projection_sizes": [LAYER_SIZES],
    }
    _paper_search_space = {"temperature": [0.04, 0.1, 0.15, 0.2, 0.3]}

    def __init__(
        self,
        *,
        alpha=1.0,
        temperature=0.1,
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
        validation_fraction="auto",
        device="auto",
        precision="32-true",
        random_state=None,
        verbose=0,
    ):
        self.alpha = alpha
        self.temperature = temperature
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
        self.validation_fraction = validation_fraction
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.verbose = verbose

    def _build_pretext(self, n_features, generator, missing):
        encoder = self._build_encoder(n_features, generator, missing)
        projector = lecun_normal_(MLP(self.embedding_dim, tuple(self.projection_sizes)), generator)
        module = IMixModule(encoder, projector, self.alpha)
        return module, IMixNPairLoss(self.temperature)
