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
    categorical_features : "from_dtype", array-like or None, default="from_dtype"
        The categorical columns of ``X``: ``"from_dtype"`` takes a DataFrame's
        columns of dtype ``category``, ``string`` or ``object`` (but objects that
        are all decimals, read as numbers); an array-like names them (indices,
        names or a boolean mask; integer codes allowed); None makes every column
        numeric. Each becomes a one-hot block of the
        categories seen at fit (``categories_``, at most 255), all zeros for a
        missing value or an unseen category. Each block is corrupted as one unit.
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
    tol : float in (0, 1) or None, default=None
        The least share of the training loss an optimizer step should remove:
        pretraining ends at the first epoch whose mean training loss fell by
        less than its steps would remove at that rate,
        ``1 - (1 - tol) ** steps`` of the epoch before's (relative, so that the
        loss's scale does not matter; per step, so that what is judged is the gain for the time
        spent, whatever the table's size). Judged once 300 steps have run, from
        the second epoch on, so it never shortens the 300 steps
        ``max_epochs="auto"`` aims at. None trains ``max_epochs`` epochs (fewer
        on early stopping).
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
        with the column's observed mean. Empty when ``X`` had none (NaN in rows
        passed later is then read as ``center_``, with a warning).
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
        return DenoiseModule(encoder, self.corruption, self.corruption_type), DenoiseLoss()
