"""QMatchClassifier: pretrain an encoder on all rows, then fit a head on the labeled ones."""

import copy
import numbers

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import HasMethods, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._base import (
    TRAINING_CONSTRAINTS,
    TorchPickleMixin,
    check_features,
    check_two_samples,
    draw_seeds,
    split_rows,
)
from ._device import resolve_device
from ._engine import FineTuneNet, batched_forward, keep_trained, train_net
from ._networks import isolated_global_rng, lecun_normal_
from .methods import QMatchEncoder

UNLABELED = -1


def labeled_mask(y):
    """True where ``y`` is a label, False where it is -1 (unlabeled, as in
    scikit-learn's semi-supervised estimators)."""
    y = np.asarray(y)
    if y.dtype.kind in "iuf":
        return y != UNLABELED
    return np.array([not (isinstance(v, numbers.Number) and v == UNLABELED) for v in y])


def _stratify_or_none(y, validation_fraction):
    """Stratify the validation split when every class can appear in both parts."""
    if validation_fraction is None:
        return None
    _, counts = np.unique(y, return_counts=True)
    n_valid = int(np.ceil(validation_fraction * len(y)))
    if counts.min() >= 2 and len(counts) <= n_valid <= len(y) - len(counts):
        return y
    return None


class QMatchClassifier(TorchPickleMixin, ClassifierMixin, BaseEstimator):
    """Classifier on a self-supervised encoder: pretrain, then fine-tune or probe.

    ``fit(X, y)`` first fits ``encoder`` on every row of ``X``; rows whose
    label is -1 are unlabeled and serve pretraining only. A linear head is
    then trained on the labeled rows, together with the encoder
    (fine-tuning) or on its frozen embeddings (``freeze_encoder=True``, the
    paper's linear evaluation), with AdamW and early stopping on a held-out
    share of the labeled rows.

    Parameters
    ----------
    encoder : estimator, default=None
        An unfitted self-supervised encoder (cloned and fitted in ``fit``), or
        a fitted one wrapped in :class:`sklearn.frozen.FrozenEstimator` to
        reuse it across fits and CV folds. None means ``QMatchEncoder`` with
        this classifier's ``device``, ``random_state`` and ``verbose``.
    freeze_encoder : bool, default=False
        Train only the linear head on the encoder's embeddings.
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
    validation_fraction : float or None, default=0.1
        Share of the labeled rows held out (stratified when possible) for early
        stopping. None trains for ``max_epochs``.
    scoring : {"loss", "accuracy"}, default="loss"
        What early stopping watches on the held-out rows: the cross-entropy
        (lower is better) or the accuracy (the paper's protocol). With few
        labeled rows, accuracy moves in coarse steps and stops training too
        early: on digits with 5 labels per class and a frozen encoder, test
        accuracy was 0.794 with "loss" and 0.378 with "accuracy" (mean of 3
        draws; ``benchmarks/results/early_stopping.md``).
    device : str, default="auto"
        "auto", "cpu", "cuda", ...
    random_state : int, RandomState instance or None, default=None
        Seeds the head, shuffling and the validation split (local generators).
    verbose : int, default=0
        1 shows progress bars.

    Attributes
    ----------
    encoder_ : estimator
        The fitted encoder (before fine-tuning).
    network_ : torch.nn.Module
        The trained network: encoder followed by the linear head.
    classes_ : ndarray of shape (n_classes,)
        Class labels seen among the labeled rows.
    history_ : skorch.History
        Supervised training history (``train_loss``, ``valid_loss``, ``valid_acc``).
    n_epochs_, best_epoch_ : int
        Supervised epochs run and the epoch whose weights were kept.
    device_ : str
        Device the network lives on.
    n_features_in_, feature_names_in_
        As in every scikit-learn estimator.

    See Also
    --------
    QMatchEncoder : the pretext trainer used by default.

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
        "encoder": [None, HasMethods(["fit", "transform"])],
        "freeze_encoder": ["boolean"],
        **TRAINING_CONSTRAINTS,
        "scoring": [StrOptions({"loss", "accuracy"})],
    }
    _torch_attributes = ("network_",)

    def __init__(
        self,
        encoder=None,
        *,
        freeze_encoder=False,
        lr=1e-3,
        weight_decay=0.1,
        batch_size=512,
        max_epochs=500,
        patience=32,
        validation_fraction=0.1,
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

    def _fit_encoder(self, X):
        if self.encoder is None:
            encoder = QMatchEncoder(
                device=self.device, random_state=self.random_state, verbose=self.verbose
            )
        else:
            encoder = clone(self.encoder)
        encoder.fit(X, None)
        fitted = encoder.estimator if isinstance(encoder, FrozenEstimator) else encoder
        check_is_fitted(fitted)
        if fitted.n_features_in_ != X.shape[1]:
            raise ValueError(
                f"X has {X.shape[1]} features, but the encoder was fitted on "
                f"{fitted.n_features_in_} features."
            )
        return encoder, fitted

    def fit(self, X, y):
        """Pretrain the encoder on all rows, then train the head on labeled rows.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Class labels; -1 marks an unlabeled row.

        Returns
        -------
        self
        """
        self._validate_params()
        X, y = check_features(self, X, y, reset=True)
        check_two_samples(self, len(X))
        labeled = labeled_mask(y)
        X_labeled, y_labeled = X[labeled], y[labeled]
        check_classification_targets(y_labeled)
        classes = np.unique(y_labeled)
        if len(classes) < 2:
            raise ValueError(
                f"{type(self).__name__} needs labeled samples of at least 2 classes; "
                f"got {len(classes)} class among {len(y_labeled)} labeled rows."
            )
        device = resolve_device(self.device)
        head_seed, data_seed, split_seed = draw_seeds(self.random_state, 3)

        self.encoder_, fitted_encoder = self._fit_encoder(X)
        label_encoder = LabelEncoder().fit(y_labeled)
        targets = label_encoder.transform(y_labeled).astype(np.int64)
        with isolated_global_rng():
            head = lecun_normal_(
                torch.nn.Linear(fitted_encoder.embedding_dim, len(classes)),
                torch.Generator().manual_seed(head_seed),
            )
        encoder_network = copy.deepcopy(fitted_encoder.network_)
        if self.freeze_encoder:
            # A frozen encoder is a fixed feature map: embed once, train the head.
            inputs, module = fitted_encoder.transform(X_labeled), head
        else:
            encoder_network.requires_grad_(True)
            inputs, module = X_labeled, torch.nn.Sequential(encoder_network, head)

        train, valid = split_rows(
            len(targets),
            self.validation_fraction,
            split_seed,
            stratify=_stratify_or_none(targets, self.validation_fraction),
        )
        net = train_net(
            FineTuneNet,
            self,
            module,
            torch.nn.CrossEntropyLoss,
            (inputs[train], targets[train]),
            None if valid is None else (inputs[valid], targets[valid]),
            device=device,
            seed=data_seed,
            monitor="valid_loss" if self.scoring == "loss" else "valid_acc",
            lower_is_better=self.scoring == "loss",
            classes=np.arange(len(classes)),
        )
        network = torch.nn.Sequential(encoder_network, head) if self.freeze_encoder else module
        keep_trained(self, network, net, device)
        self.classes_ = label_encoder.classes_
        return self

    def decision_function(self, X):
        """Logits of the head; for two classes, the logit margin of ``classes_[1]``.

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
        """
        check_is_fitted(self)
        X = check_features(self, X, reset=False)
        logits = batched_forward(self.network_, X, self.device_, len(self.classes_))
        return logits[:, 1] - logits[:, 0] if len(self.classes_) == 2 else logits

    def predict_proba(self, X):
        """Class probabilities, softmax of the logits.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float32
        """
        check_is_fitted(self)
        X = check_features(self, X, reset=False)
        logits = batched_forward(self.network_, X, self.device_, len(self.classes_))
        return torch.softmax(torch.from_numpy(logits), dim=1).numpy()

    def predict(self, X):
        """Most probable class of each row.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
