"""Classifiers: an encoder network plus a linear head, trained on the labeled rows.

``QMatchClassifier`` starts from a self-supervised encoder (pretrained on all
rows); ``SupervisedMLPClassifier`` starts from random weights (the paper's
supervised baseline). Both share the supervised stage in ``BaseHeadClassifier``.
"""

import copy
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from skorch.history import History

from ._base import BasePretextEncoder
from ._constraints import NETWORK_CONSTRAINTS, TRAINING_CONSTRAINTS, Satisfies
from ._device import resolve_device
from ._engine import (
    FineTuneNet,
    TrainingResult,
    TrainingSettings,
    all_rows,
    batched_forward,
    keep_trained,
    split_datasets,
    train_net,
)
from ._missing import (
    check_missing_columns,
    has_missing,
    indicated_features,
    missing_values_layer,
)
from ._networks import EncoderNetworkMixin, isolated_global_rng, lecun_normal_
from ._passthrough import WithInput
from ._persistence import PersistenceMixin
from ._seeding import draw_seeds
from ._split import resolve_validation_fraction, split_rows
from ._validation import check_features, check_two_samples
from .methods import QMatchEncoder

UNLABELED = -1
#: The heads a classifier can train: a linear layer on the frozen encoder
#: (AdamW, the paper's linear evaluation), the same fitted as a logistic
#: regression whose C is chosen by cross-validation on the labeled rows, and
#: encoder plus linear layer fine-tuned together.
LINEAR, LOGISTIC, FINE_TUNED = "linear", "logistic", "fine-tuned"


def fit_logistic_head_(head, embeddings, targets, seed):
    """Set ``head`` to a logistic regression on ``embeddings``; a :class:`TrainingResult`.

    The regularisation C is chosen among scikit-learn's ten defaults by
    stratified cross-validation (log-loss) on the labeled rows, with as many
    folds (at most 5) as the smallest class allows; C=1 when a class has one
    row. For two classes the regression's one score becomes the second
    logit and the first is 0, so the softmax equals its sigmoid.
    """
    smallest = np.bincount(targets).min()
    if smallest < 2:
        model = LogisticRegression(C=1.0, max_iter=1000)
    else:
        folds = StratifiedKFold(min(5, smallest), shuffle=True, random_state=seed)
        model = LogisticRegressionCV(
            cv=folds, scoring="neg_log_loss", l1_ratios=(0.0,), use_legacy_attributes=False,
            max_iter=1000,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # at the extreme Cs
        model.fit(embeddings, targets)
    coef, intercept = model.coef_, model.intercept_
    if coef.shape[0] == 1:
        coef = np.vstack([np.zeros_like(coef), coef])
        intercept = np.r_[0.0, intercept]
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(coef, dtype=torch.float32))
        head.bias.copy_(torch.as_tensor(intercept, dtype=torch.float32))
    return TrainingResult(History(), 0, 0, None)


def _is_library_encoder(value):
    inner = value.estimator if isinstance(value, FrozenEstimator) else value
    return isinstance(inner, BasePretextEncoder)


#: What ``QMatchClassifier(encoder=...)`` accepts: it fine-tunes the encoder's network.
LIBRARY_ENCODER = Satisfies(
    _is_library_encoder,
    "an encoder of qmatch_sklearn (QMatchEncoder(), VIMEEncoder(), ...) or a "
    "FrozenEstimator wrapping a fitted one",
)


def labeled_mask(y):
    """True where ``y`` is a label, False where it is the integer -1
    (unlabeled, as in scikit-learn's semi-supervised estimators).

    As in ``SelfTrainingClassifier``, a string-dtype ``y`` is refused (it
    cannot hold the integer -1, and the string "-1" would silently become a
    class), and so is the string "-1" in an object array.
    """
    y = np.asarray(y)
    if y.dtype.kind in "US":
        raise ValueError(
            "y has a string dtype, which cannot mark unlabeled rows. Pass string labels "
            "in an object array with the integer -1 for unlabeled rows, e.g. "
            "np.array(['cat', -1], dtype=object)."
        )
    if y.dtype.kind in "iuf":
        return y != UNLABELED
    if any(isinstance(v, str) and v.strip() == str(UNLABELED) for v in y):
        raise ValueError(
            "y holds the string '-1'; unlabeled rows are marked with the integer -1."
        )
    return np.array([not (isinstance(v, numbers.Number) and v == UNLABELED) for v in y])


def _head_input(encoder, network):
    """What the head sees: the encoder's network, beside the input features
    when the encoder has ``passthrough=True`` (as its ``transform`` does)."""
    if not encoder.passthrough:
        return network
    missing = network[0] if len(encoder.missing_features_) else None
    return WithInput(network, encoder.embedding_mean_, encoder.embedding_scale_, missing)


def _unfrozen(encoder):
    """The encoder inside a FrozenEstimator, or ``encoder`` itself."""
    return encoder.estimator if isinstance(encoder, FrozenEstimator) else encoder


@dataclass(frozen=True)
class _Supervised:
    """What every head of one ``fit`` trains on: the labeled rows ``X`` and
    their class indices, the train/validation row selection (or a given
    validation set ``(X_val, targets_val)``), and the seeds."""

    X: object
    targets: np.ndarray
    train: np.ndarray
    valid: np.ndarray | None
    validation: tuple | None
    n_classes: int
    device: str
    head_seed: int
    data_seed: int
    split_seed: int


def _stratify_or_none(y, validation_fraction):
    """Stratify the validation split when every class can appear in both parts."""
    if validation_fraction is None:
        return None
    _, counts = np.unique(y, return_counts=True)
    n_valid = int(np.ceil(validation_fraction * len(y)))
    if counts.min() >= 2 and len(counts) <= n_valid <= len(y) - len(counts):
        return y
    return None


class BaseHeadClassifier(PersistenceMixin, ClassifierMixin, BaseEstimator):
    """Shared supervised stage (not for direct use).

    Subclasses provide ``_encoder_network(X, seed, device)`` returning the
    encoder network to start from and its output width, ``_head_choices``
    and ``_starting_network`` (which heads to train: on a frozen encoder,
    with it, or both, keeping the better on validation),
    ``_encoder_skeleton()`` returning the fitted encoder network's shape,
    untrained, for loading, and ``_embedding_dim()`` its output width.
    """

    _parameter_constraints = {**TRAINING_CONSTRAINTS, "scoring": [StrOptions({"loss", "accuracy"})]}

    def _network_skeleton(self):
        # the encoder network may be the user's (architecture=...): its output
        # width is the embedding_dim it was built for, not read off its layers
        return torch.nn.Sequential(
            self._encoder_skeleton(),
            torch.nn.Linear(self._embedding_dim(), len(self.classes_)),
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X, y, X_val=None, y_val=None):
        """Fit on ``X``; rows whose label is -1 are unlabeled.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Numeric, preprocessed rows, labeled and unlabeled.
        y : array-like of shape (n_samples,)
            Class labels; the integer -1 marks an unlabeled row. String labels
            go in an object array (as in scikit-learn's
            ``SelfTrainingClassifier``), e.g. ``np.array(["a", -1], dtype=object)``.
        X_val, y_val : array-like, default=None
            A fixed validation set for early stopping (e.g. a paper split's
            ``val`` rows). When given, every labeled row of ``X`` trains and
            ``validation_fraction`` is ignored. Give both or neither.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        self._validate_params()
        X, y = check_features(self, X, y, reset=True)
        check_two_samples(self, X.shape[0])
        labeled = np.flatnonzero(labeled_mask(y))
        label_encoder, targets = self._encode_labels(y[labeled])
        device = resolve_device(self.device)
        encoder_seed, head_seed, data_seed, split_seed = draw_seeds(self.random_state, 4)
        # Everything about the labeled rows is checked before pretraining, which can take hours.
        if X_val is None and y_val is None:
            fraction = resolve_validation_fraction(self.validation_fraction, len(targets))
            train, valid = split_rows(
                len(targets), fraction, split_seed, stratify=_stratify_or_none(targets, fraction)
            )
            validation = None
        else:
            validation = self._check_validation_set(X, X_val, y_val, label_encoder)
            train, valid = np.arange(len(targets)), None
        supervised = _Supervised(
            X if len(labeled) == X.shape[0] else X[labeled], targets, train, valid, validation,
            len(label_encoder.classes_), device, head_seed, data_seed, split_seed,
        )

        encoder_network, embedding_dim = self._encoder_network(X, encoder_seed, device)
        has_validation = valid is not None or validation is not None
        candidates = [
            self._train_head(kind, encoder_network, embedding_dim, supervised)
            for kind in self._head_choices(has_validation)
        ]
        # Between a linear and a fine-tuned head, the better validation score wins.
        sign = 1 if self.scoring == "loss" else -1
        result, frozen, network = min(
            candidates, key=lambda c: 0 if c[0].best_score is None else sign * c[0].best_score
        )
        keep_trained(self, network, result, device)
        self.frozen_encoder_ = frozen
        self._shares_encoder_network = network[0] is encoder_network
        self.classes_ = label_encoder.classes_
        return self

    def _train_head(self, kind, encoder_network, embedding_dim, data):
        """Train one head of ``kind`` (``LINEAR``, ``LOGISTIC`` or ``FINE_TUNED``);
        its training result, whether the encoder stayed frozen, and the network."""
        frozen = kind != FINE_TUNED
        network = self._starting_network(encoder_network, frozen, data.device)
        with isolated_global_rng():
            head = lecun_normal_(
                torch.nn.Linear(embedding_dim, data.n_classes),
                torch.Generator().manual_seed(data.head_seed),
            ).to(data.device)
        if frozen:
            # A frozen encoder is a fixed feature map: embed once, train the head.
            def features(rows):
                return batched_forward(network, rows, data.device, embedding_dim)

            module = head
        else:
            def features(rows):
                return rows

            network.requires_grad_(True)
            module = torch.nn.Sequential(network, head)
        if kind == LOGISTIC:
            result = fit_logistic_head_(head, features(data.X), data.targets, data.split_seed)
            return result, frozen, torch.nn.Sequential(network, head)
        train_rows, valid_rows = split_datasets(
            features(data.X), data.targets, data.train, data.valid, data.device
        )
        if data.validation is not None:
            X_val, targets_val = data.validation
            valid_rows = all_rows(features(X_val), targets_val, data.device)
        result = train_net(
            FineTuneNet,
            module,
            torch.nn.CrossEntropyLoss,
            train_rows,
            valid_rows,
            TrainingSettings.of(self),
            device=data.device,
            seed=data.data_seed,
            monitor="valid_loss" if self.scoring == "loss" else "valid_acc",
            lower_is_better=self.scoring == "loss",
            classes=np.arange(data.n_classes),
        )
        return result, frozen, torch.nn.Sequential(network, head)

    def _head_choices(self, has_validation):
        """The heads to train (the better on validation is kept): ``LINEAR``
        or ``LOGISTIC`` on the frozen encoder, or ``FINE_TUNED`` with it."""
        return (FINE_TUNED,)

    def _starting_network(self, encoder_network, frozen, device):
        """The encoder network a head starts from, on ``device``."""
        return encoder_network.to(device)

    def _encode_labels(self, y_labeled):
        """A LabelEncoder fitted on the labeled rows and their class indices;
        raises unless there are two classes."""
        check_classification_targets(y_labeled)
        label_encoder = LabelEncoder().fit(y_labeled)
        if len(label_encoder.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs labeled samples of at least 2 classes; got "
                f"{len(label_encoder.classes_)} class among {len(y_labeled)} labeled rows."
            )
        return label_encoder, label_encoder.transform(y_labeled).astype(np.int64)

    def _check_validation_set(self, X, X_val, y_val, label_encoder):
        """The validation rows as float32 and their labels as class indices
        (``X``: the training rows, whose missing values ``X_val`` may have)."""
        if X_val is None or y_val is None:
            raise ValueError("Pass both X_val and y_val, or neither.")
        X_val = check_features(self, X_val, reset=False)
        check_missing_columns(self, X_val, has_missing(X))
        y_val = np.asarray(y_val)
        if X_val.shape[0] != len(y_val) or len(y_val) == 0:
            raise ValueError(
                f"X_val and y_val need the same, non-zero number of rows; got "
                f"{X_val.shape[0]} and {len(y_val)}."
            )
        unseen = np.setdiff1d(y_val, label_encoder.classes_)
        if len(unseen):
            raise ValueError(
                f"y_val has labels not among the labeled rows of y: {unseen.tolist()}."
            )
        return X_val, label_encoder.transform(y_val).astype(np.int64)

    def _logits(self, X):
        check_is_fitted(self)
        X = check_features(self, X, reset=False)
        check_missing_columns(self, X, self._fitted_with_missing())
        return batched_forward(self.network_, X, self.device_, len(self.classes_))

    def decision_function(self, X):
        """Compute the logits of the head; for two classes, the logit margin of ``classes_[1]``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows preprocessed like those passed to ``fit``.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            The logits, or for two classes the logit of ``classes_[1]`` minus
            that of ``classes_[0]``.
        """
        logits = self._logits(X)
        return logits[:, 1] - logits[:, 0] if len(self.classes_) == 2 else logits

    def predict_proba(self, X):
        """Estimate the class probabilities, softmax of the logits.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows preprocessed like those passed to ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The float32 probability of each class of ``classes_``.
        """
        return torch.softmax(torch.from_numpy(self._logits(X)), dim=1).numpy()

    def predict(self, X):
        """Predict the most probable class of each row.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows preprocessed like those passed to ``fit``.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The predicted labels, among ``classes_``.
        """
        logits = self._logits(X)  # checks fitting before classes_ is read
        return self.classes_[np.argmax(logits, axis=1)]


class QMatchClassifier(BaseHeadClassifier):
    """Classifier on a self-supervised encoder: pretrain, then fine-tune or probe.

    ``fit(X, y)`` first fits ``encoder`` on every row of ``X``; rows whose
    label is -1 are unlabeled and serve pretraining only. A linear head is
    then trained on the labeled rows, together with the encoder
    (fine-tuning) or on its frozen embeddings (the paper's linear
    evaluation), with AdamW. By default (``freeze_encoder="auto"``) both are
    trained when there are enough labeled rows to validate on, and the one
    with the better validation score is kept; with few labels, the head is a
    logistic regression on the frozen embeddings, its C chosen by
    cross-validation on the labeled rows.

    Parameters
    ----------
    encoder : estimator, default=None
        An unfitted self-supervised encoder (cloned and fitted in ``fit``), or
        a fitted one wrapped in :class:`sklearn.frozen.FrozenEstimator` to
        reuse it across fits and CV folds. None means ``QMatchEncoder`` with
        this classifier's ``device``, ``random_state`` and ``verbose``.
    freeze_encoder : bool or "auto", default="auto"
        True trains only the linear head on the encoder's embeddings (linear
        evaluation), False fine-tunes the encoder with it. "auto" trains both
        when there is a validation set (``X_val``, or ``validation_fraction``
        gives one) and keeps the better on it. Without one (few labels) the
        head is a logistic regression on the frozen embeddings whose C is
        chosen by cross-validation on the labeled rows (as
        ``LogisticRegressionCV``; no epochs, ``n_epochs_ = 0``): fine-tuning,
        or an AdamW head, on a few dozen labeled rows with nothing to stop
        them overfit (``benchmarks/results/fewlabel.md``).
    lr : float, default=1e-3
        AdamW learning rate of the supervised stage.
    weight_decay : float, default=0.1
        AdamW weight decay on weight matrices (biases and norms are exempt).
    batch_size : int, default=512
        Labeled rows per step.
    max_epochs : int, default=500
        Upper bound on supervised epochs.
    patience : int, default=32
        Stop after this many epochs without a better validation ``scoring``;
        the best epoch's weights are restored.
    validation_fraction : float, "auto" or None, default="auto"
        Share of the labeled rows held out (stratified when possible) for early
        stopping. "auto" holds out 10% when that is at least 200 rows (from
        2,000 labeled rows on) and otherwise trains for ``max_epochs``: with
        few labels the held-out rows are too few to choose an epoch on. None
        trains for ``max_epochs``.
    scoring : {"loss", "accuracy"}, default="loss"
        What early stopping watches on the held-out rows: the cross-entropy
        (lower is better) or the accuracy (the paper's protocol). With few
        labeled rows, accuracy moves in coarse steps and stops training too
        early: on digits with 5 labels per class and a frozen encoder, test
        accuracy was 0.803 with "loss" and 0.609 with "accuracy" (mean of 3
        draws; ``benchmarks/results/early_stopping.md``).
    device : str, default="auto"
        "auto", "cpu", "cuda", ...
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, shuffling and the validation split
        (local generators).
    verbose : int, default=0
        1 shows a progress bar over epochs, 2 a table of every epoch's losses
        instead; both end with a line that says why training stopped and which
        epoch's weights were kept.

    Attributes
    ----------
    encoder_ : estimator
        The fitted encoder (before fine-tuning).
    frozen_encoder_ : bool
        Whether the kept head was trained on the frozen encoder (linear
        evaluation) rather than fine-tuned with it.
    network_ : torch.nn.Module
        The trained network: encoder followed by the linear head.
    classes_ : ndarray of shape (n_classes,)
        Class labels seen among the labeled rows.
    history_ : skorch.History
        Supervised training history (``train_loss``, ``valid_loss``, ``valid_acc``).
    n_epochs_ : int
        Supervised epochs run (0 when the head is the cross-validated
        logistic regression of ``freeze_encoder="auto"`` without validation).
    best_epoch_ : int
        Supervised epoch whose weights were kept (1-based; 0 as above).
    device_ : str
        Device the network lives on.
    n_features_in_ : int
        Number of input features.
    feature_names_in_ : ndarray of str
        Input column names, when ``X`` had string column names.

    See Also
    --------
    QMatchEncoder : The pretext trainer used by default.
    SupervisedMLPClassifier : The same network trained from random weights.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_breast_cancer
    >>> from qmatch_sklearn import QMatchClassifier, QMatchEncoder
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> y_semi = np.where(np.arange(len(y)) % 10 == 0, y, -1)  # 10% labeled
    >>> clf = QMatchClassifier(QMatchEncoder(max_epochs=2, random_state=0),
    ...                        max_epochs=5, random_state=0).fit(X, y_semi)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _parameter_constraints = {
        **BaseHeadClassifier._parameter_constraints,
        "encoder": [None, LIBRARY_ENCODER],
        "freeze_encoder": ["boolean", StrOptions({"auto"})],
    }

    def __init__(
        self,
        encoder=None,
        *,
        freeze_encoder="auto",
        lr=1e-3,
        weight_decay=0.1,
        batch_size=512,
        max_epochs=500,
        patience=32,
        validation_fraction="auto",
        scoring="loss",
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.encoder = encoder
        self.freeze_encoder = freeze_encoder
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _encoder_network(self, X, seed, device):
        if self.encoder is None:
            encoder = QMatchEncoder(device=self.device, random_state=seed, verbose=self.verbose)
        else:
            encoder = clone(self.encoder)
        encoder.fit(X, None)
        fitted = _unfrozen(encoder)
        check_is_fitted(fitted)
        if fitted.n_features_in_ != X.shape[1]:
            raise ValueError(
                f"X has {X.shape[1]} features, but the encoder was fitted on "
                f"{fitted.n_features_in_} features."
            )
        self.encoder_ = encoder
        return _head_input(fitted, fitted.network_), self._embedding_dim()

    def _head_choices(self, has_validation):
        if self.freeze_encoder == "auto":
            return (LINEAR, FINE_TUNED) if has_validation else (LOGISTIC,)
        return (LINEAR,) if self.freeze_encoder else (FINE_TUNED,)

    def _starting_network(self, encoder_network, frozen, device):
        # A frozen encoder never trains: its network is shared, and saved once (with
        # encoder_). Fine-tuning trains a copy, as does a frozen encoder used on another
        # device: the fitted encoder stays as it was.
        if frozen and _unfrozen(self.encoder_).device_ == device:
            return encoder_network
        return copy.deepcopy(encoder_network).to(device)

    def _stored_network(self, network):
        # a shared encoder network is stored with encoder_: only the head is stored here
        return network[1] if self._shares_encoder_network else network

    def _encoder_skeleton(self):
        encoder = _unfrozen(self.encoder_)
        network = encoder.network_ if self._shares_encoder_network else encoder._encoder_skeleton()
        return _head_input(encoder, network)

    def _embedding_dim(self):
        encoder = _unfrozen(self.encoder_)
        if not encoder.passthrough:
            return encoder.embedding_dim
        return encoder.n_features_in_ + len(encoder.missing_features_) + encoder.embedding_dim

    def _fitted_with_missing(self):
        return len(_unfrozen(self.encoder_).missing_features_) > 0


class SupervisedMLPClassifier(EncoderNetworkMixin, BaseHeadClassifier):
    """The encoder network plus a linear head, trained from random weights on labels only.

    The paper's "supervised baseline": the same architecture and supervised
    stage as :class:`QMatchClassifier`, without pretraining. Rows labeled -1
    are ignored.

    Parameters
    ----------
    hidden_sizes : tuple of int, default=None
        Hidden widths of the encoder network; None means (512, 512) for
        ``architecture="mlp"`` and the paper's widths for ``"imix"``.
    architecture : {"mlp", "imix"}, callable or torch.nn.Module, default="mlp"
        As in the encoders: a built-in network, or one of your own.
    embedding_dim : int, default=128
        Width of the layer the head reads.
    lr : float, default=1e-3
        AdamW learning rate of the supervised stage.
    weight_decay : float, default=0.1
        AdamW weight decay on weight matrices (biases and norms are exempt).
    batch_size : int, default=512
        Labeled rows per step.
    max_epochs : int, default=500
        Upper bound on supervised epochs.
    patience : int, default=32
        Stop after this many epochs without a better validation ``scoring``;
        the best epoch's weights are restored.
    validation_fraction : float, "auto" or None, default="auto"
        Share of the labeled rows held out (stratified when possible) for early
        stopping. "auto" holds out 10% when that is at least 200 rows (from
        2,000 labeled rows on) and otherwise trains for ``max_epochs``: with
        few labels the held-out rows are too few to choose an epoch on. None
        trains for ``max_epochs``.
    scoring : {"loss", "accuracy"}, default="loss"
        What early stopping watches on the held-out rows: the cross-entropy
        (lower is better) or the accuracy (the paper's protocol). With few
        labeled rows, accuracy moves in coarse steps and stops training too
        early: on digits with 5 labels per class and a frozen encoder, test
        accuracy was 0.803 with "loss" and 0.609 with "accuracy" (mean of 3
        draws; ``benchmarks/results/early_stopping.md``).
    device : str, default="auto"
        "auto", "cpu", "cuda", ...
    random_state : int, RandomState instance or None, default=None
        Seeds the network's initialisation, shuffling and the validation split
        (local generators).
    verbose : int, default=0
        1 shows a progress bar over epochs, 2 a table of every epoch's losses
        instead; both end with a line that says why training stopped and which
        epoch's weights were kept.

    Attributes
    ----------
    frozen_encoder_ : bool
        Always False: the whole network trains from random weights.
    network_ : torch.nn.Module
        The trained network: encoder followed by the linear head.
    classes_ : ndarray of shape (n_classes,)
        Class labels seen among the labeled rows.
    history_ : skorch.History
        Supervised training history (``train_loss``, ``valid_loss``, ``valid_acc``).
    n_epochs_ : int
        Supervised epochs run.
    best_epoch_ : int
        Supervised epoch whose weights were kept (1-based).
    device_ : str
        Device the network lives on.
    n_features_in_ : int
        Number of input features.
    missing_features_ : ndarray of int
        Input features that had missing values (NaN) at fit, each with an
        indicator channel at the network's input; empty when ``X`` had none
        (NaN at transform or predict is then an error).
    feature_names_in_ : ndarray of str
        Input column names, when ``X`` had string column names.

    See Also
    --------
    QMatchClassifier : The same network, pretrained with a self-supervised encoder.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from qmatch_sklearn import SupervisedMLPClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> SupervisedMLPClassifier(max_epochs=5, random_state=0).fit(X, y).predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints = {**BaseHeadClassifier._parameter_constraints, **NETWORK_CONSTRAINTS}
    def __init__(
        self,
        *,
        hidden_sizes=None,
        architecture="mlp",
        embedding_dim=128,
        lr=1e-3,
        weight_decay=0.1,
        batch_size=512,
        max_epochs=500,
        patience=32,
        validation_fraction="auto",
        scoring="loss",
        device="auto",
        random_state=None,
        verbose=0,
    ):
        self.hidden_sizes = hidden_sizes
        self.architecture = architecture
        self.embedding_dim = embedding_dim
        self.lr = lr
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.max_epochs = max_epochs
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _encoder_network(self, X, seed, device):
        missing = missing_values_layer(X)
        with isolated_global_rng():
            network = self._build_encoder(X.shape[1], torch.Generator().manual_seed(seed), missing)
        self.missing_features_ = indicated_features(missing)
        return network.to(device), self.embedding_dim

    def _embedding_dim(self):
        return self.embedding_dim

    def _fitted_with_missing(self):
        return len(self.missing_features_) > 0
