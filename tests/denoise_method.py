"""A worked example of a pretext method (``docs/adding_a_method.md``): denoising.

The encoder sees a corrupted row and predicts the embedding that it gives the clean
row, held fixed (stop-gradient). The file is written as a method of the library would
be, in ``qmatch_sklearn/methods/`` (there with relative imports), and the tests hold it
to the same contract as the methods of ``qmatch_sklearn.METHODS``
(``tests/test_api_contract.py``, ``tests/test_sklearn_checks.py``,
``tests/test_methods.py``), so the page's example cannot drift from the library.
"""

from numbers import Real
from typing import NamedTuple

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval
from torch import nn

from qmatch_sklearn._base import BasePretextEncoder
from qmatch_sklearn._constraints import CORRUPTION_TYPES, FEATURE_GROUPS
from qmatch_sklearn.methods._base import PretextModule, check_shape


def embedding_mse(student, target):
    """mean ||s - sg(t)||^2 over the batch."""
    return F.mse_loss(student, target.detach())


class DenoiseOutput(NamedTuple):
    """The embedding s of the corrupted rows and t of the clean rows, (batch, dim) each."""

    student: torch.Tensor
    target: torch.Tensor


class DenoiseLoss(nn.Module):
    """mean ||s - sg(t)||^2: the corrupted row's embedding moves to the clean one's."""

    def forward(self, outputs):
        symbols = ("batch", "dim")
        check_shape("DenoiseLoss", "student", outputs.student, (None, None), symbols)
        shape = tuple(outputs.student.shape)
        check_shape("DenoiseLoss", "target", outputs.target, shape, symbols)
        return embedding_mse(outputs.student, outputs.target)


class DenoiseModule(PretextModule):
    """The encoder read twice: on a corrupted row (trained) and on the clean row (fixed)."""

    def __init__(self, encoder, corruption, corruption_type="vime"):
        super().__init__(encoder)
        self.corruption = corruption
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        corrupted, _ = self.corrupt(x, self.corruption, generator)
        with torch.no_grad():
            target = self.encoder(x)
        return DenoiseOutput(self.encoder(corrupted), target)


class DenoiseEncoder(BasePretextEncoder):
    """Encoder trained to map corrupted rows onto their clean embedding.

    The encoder sees a corrupted row and predicts the embedding that it
    gives the clean row, held fixed (stop-gradient).

    Parameters
    ----------
    corruption : float, default=0.3
        Probability that an entry is corrupted.
    corruption_type : {"vime", "zero"}, default="vime"
        How a corrupted entry is filled: "vime" takes the value of the same
        column in another row of the batch (VIME's corruption, which the
        Q-Match paper uses for every method), "zero" sets it to 0 (TabNet's
        masking).
    feature_groups : list of lists of int or str, default=None
        Columns corrupted as one unit, by index or (for a DataFrame) name:
        a corrupted group takes all its values from the same other row
        ("vime") or is zeroed as a whole ("zero"), with probability the
        corruption rate per group, e.g. the one-hot columns of one
        categorical feature, so that a corrupted row keeps exactly one
        category on. :func:`qmatch_sklearn.one_hot_groups` reads them off a
        fitted ColumnTransformer. Columns in no group are corrupted on their
        own. None: every column on its own, as in the paper.
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        The categorical columns of ``X``. ``"from_dtype"``: a DataFrame's
        columns of dtype ``category``, ``string`` or ``object``; or the
        columns named (indices, names, or a boolean mask), whose values then
        may be numbers too (integer codes); None: every column is numeric.
        The network reads each categorical column as a one-hot block of the
        categories seen at fit (``categories_``; at most 255 per column); a
        missing value or a category unseen at fit is a block of zeros.
        Corruption replaces a block as one unit, so a corrupted row still
        has at most one category on.
    hidden_sizes : tuple of int, default=None
        Hidden layer widths of the encoder. None means (512, 512) for
        ``architecture="mlp"`` and the paper's (2048, 2048, 4096, 4096, 8192)
        for ``"imix"``; it must stay None for a network of your own.
    architecture : {"mlp", "imix"}, callable or torch.nn.Module, default="mlp"
        The encoder network. ``"mlp"``: fully connected layers with batch
        normalisation and ReLU. ``"imix"``: the last hidden layer is followed
        by a 4-way maxout, as in the paper's i-Mix network (63M parameters at
        the default widths: a GPU network). A network of your own is a
        callable ``architecture(n_features, embedding_dim)`` returning a
        ``torch.nn.Module`` that maps (batch, n_features) to (batch,
        embedding_dim), called at each fit with torch's RNG seeded from
        ``random_state``, or such a module, deep-copied at each fit. Such an
        estimator pickles (when the callable or module does) but
        ``qmatch_sklearn.save`` refuses it.
    embedding_dim : int, default=128
        Width of the representation z returned by ``transform``.
    passthrough : bool, default=False
        When True, ``transform`` returns each row's input features followed by
        its embedding, ``[X, z]`` (sparse when ``X`` is sparse), as
        ``passthrough`` does in scikit-learn's ``StackingClassifier``: a
        linear model downstream then sees the raw features as well, and can
        lean on either. The embedding block is standardised and scaled to
        the input block's total variance over the fit rows
        (``embedding_mean_``, ``embedding_scale_``), so that neither drowns
        the other in an L2-penalised model. A ``QMatchClassifier`` built on
        such an encoder gives its head the same.
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
        Stop after this many epochs without a lower pretext-validation loss;
        the weights of the best epoch are restored. Training also stops when
        a loss or weight becomes non-finite (e.g. ``lr`` too high): the best
        finite epoch is restored with a ``ConvergenceWarning``, and
        ``FloatingPointError`` is raised when no epoch was finite.
    validation_fraction : float, "auto" or None, default="auto"
        Share of the rows held out for that validation loss. "auto" holds out
        10% when that is at least 200 rows (from 2,000 rows on) and otherwise
        trains for ``max_epochs`` without validation: on a handful of rows the
        validation loss is noise, and early stopping kept the first epoch.
        None trains for ``max_epochs`` and keeps the last weights.
    device : str, default="auto"
        "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:1", ...
    precision : {"32-true", "bf16-mixed", "16-mixed", "auto"}, default="32-true"
        Floating-point precision of training, with Lightning's names: float32,
        or the forward passes under bfloat16 or float16 autocast (float16 with
        a gradient scaler, CUDA only). Weights, losses and the network's
        outputs stay float32. "auto" picks "bf16-mixed" on CPUs with bf16
        matrix units, where it trains faster (user guide: "CPU, GPU, and saving models").
    random_state : int, RandomState instance or None, default=None
        Seeds weight initialisation, shuffling, corruption and the validation
        split (and the queue, where there is one) through local generators;
        global random states are never touched. Same seed, same embeddings on
        the CPU.
    verbose : int, default=0
        1 shows a progress bar over epochs, 2 a table of every epoch's losses
        instead; both end with a line that says why training stopped and which
        epoch's weights were kept.

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
        Input features that had missing values (NaN) at fit: the network fills
        them (with the column's observed mean); empty when ``X`` had none (NaN
        at transform is then read as the column's fit mean, with a
        warning).
    missing_indicators_ : ndarray of int
        Those of ``missing_features_`` whose missingness was related to the
        rest of the row at fit (a Bonferroni-corrected correlation test): each
        gets an indicator channel at the network's input. Values missing
        completely at random get none.
    center_ : ndarray of shape (`n_features_in_`,)
        Each numeric column's center over every row of ``X`` at fit, in
        float64: its mean, or its minimum when it holds two values (0 for a
        categorical column). The network reads ``(x - center_) / scale_``, so
        results do not depend on the units of a numeric column.
    scale_ : ndarray of shape (`n_features_in_`,)
        Each numeric column's scale at fit: its standard deviation but at
        least a tenth of its range, or the gap between its two values (1 for
        a categorical column, float64's largest for a constant one, which
        then reads 0). The network reads ``(x - center_) / scale_`` clipped to
        +-10, so that no value, a rare one or one beyond the fit rows', becomes
        an outlier.
    embedding_mean_ : ndarray of shape (embedding_dim,)
        Mean embedding over the fit rows, or a random 8,192 of them when there
        are more (``passthrough=True`` centres by it). Only when fitted with
        ``passthrough=True``.
    embedding_scale_ : ndarray of shape (embedding_dim,)
        The factor ``passthrough=True`` multiplies the centred embedding by.
        Only when fitted with ``passthrough=True``.
    feature_names_in_ : ndarray of str
        Input column names, when ``X`` had string column names.

    See Also
    --------
    VIMEEncoder : Reconstruction plus mask estimation from a corrupted row.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from tests.denoise_method import DenoiseEncoder
    >>> X, _ = load_digits(return_X_y=True)
    >>> DenoiseEncoder(max_epochs=1, random_state=0).fit_transform(X).shape
    (1797, 128)
    """

    _parameter_constraints = {
        **BasePretextEncoder._parameter_constraints,
        "corruption": [Interval(Real, 0, 1, closed="both")],
        "corruption_type": [CORRUPTION_TYPES],
        "feature_groups": [None, FEATURE_GROUPS],
    }
    _paper_search_space = {"corruption": [0.3, 0.4, 0.5]}

    def __init__(
        self,
        *,
        corruption=0.3,
        corruption_type="vime",
        feature_groups=None,
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
        self.corruption = corruption
        self.corruption_type = corruption_type
        self.feature_groups = feature_groups
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
        return DenoiseModule(encoder, self.corruption, self.corruption_type), DenoiseLoss()
