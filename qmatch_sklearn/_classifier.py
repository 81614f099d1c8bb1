"""Classifiers: an encoder network plus a linear head, trained on the labeled rows.

``QMatchClassifier`` starts from a pretrained self-supervised encoder,
``SupervisedMLPClassifier`` from random weights (the paper's supervised baseline); the
supervised stage is shared with the regressors (``_head.py``).
"""

import numbers

import numpy as np
import pandas as pd
import torch
from sklearn.base import ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from ._constraints import NETWORK_CONSTRAINTS, TRAINING_CONSTRAINTS
from ._docstrings import fill_doc
from ._engine import FineTuneNet
from ._head import (
    PRETRAINED_ENCODER_CONSTRAINTS,
    BaseHeadEstimator,
    PretrainedEncoderMixin,
    RandomInitMixin,
)
from .heads import LOGISTIC, ClassifierHead, fit_logistic_head_, run_head
from .heads._self_training import unlabeled_sample

UNLABELED = -1


def labeled_mask(y):
    """True where ``y`` is a label, False where it is the integer -1 (unlabeled, as in
    scikit-learn's semi-supervised estimators). Refused as in ``SelfTrainingClassifier``: a
    string dtype (it cannot hold -1) and the string "-1" (it would become a class); in an
    object array also None or NaN (they would be sorted with the strings) and labels that mix
    strings and numbers."""
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
    mask = np.array([not (isinstance(v, numbers.Number) and v == UNLABELED) for v in y])
    if any(pd.api.types.is_scalar(v) and pd.isna(v) for v in y[mask]):  # None, NaN, NA, NaT
        raise ValueError(
            "y holds None or NaN; a classifier's unlabeled rows are marked with the "
            "integer -1, e.g. np.array(['cat', -1], dtype=object)."
        )
    if len({isinstance(v, str) for v in y[mask]}) > 1:
        raise ValueError(
            "y mixes strings and numbers among its labels (the integer -1 aside, which "
            "marks unlabeled rows); pass labels of one type."
        )
    return mask


@fill_doc
class BaseHeadClassifier(ClassifierMixin, BaseHeadEstimator):
    """The supervised stage for classes (not for direct use): -1 marks an unlabeled row, the
    validation split is stratified when possible, the loss is the cross-entropy, the
    closed-form head a logistic regression."""

    _parameter_constraints = {
        **TRAINING_CONSTRAINTS,
        "scoring": [StrOptions({"loss", "accuracy"})],
        "class_weight": [None, StrOptions({"balanced"}), dict],
    }
    _monitors = {"loss": "valid_loss", "accuracy": "valid_acc"}
    _closed_form_head = LOGISTIC
    _head_attributes = {
        **BaseHeadEstimator._head_attributes,
        "boosting_weight_": 0.0, "boosted_trees_": None, "boosting_temperature_": 1.0,
        "self_training_weight_": 0.0, "label_spreading_weight_": 0.0,
    }

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on ``X``; rows whose label is -1 are unlabeled.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows, labeled and unlabeled: a numeric matrix, or a DataFrame whose
            categorical columns are read natively; numeric columns in any units, NaN allowed.
        y : array-like of shape (n_samples,)
            Class labels; the integer -1 marks an unlabeled row. String labels go in an object
            array (as in ``SelfTrainingClassifier``), e.g. ``np.array(["a", -1], dtype=object)``.
        X_val, y_val : array-like, default=None
            A fixed validation set for early stopping (e.g. a paper split's ``val`` rows). When
            given, every labeled row of ``X`` trains and ``validation_fraction`` is ignored.
            Give both or neither.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows in the supervised loss, the early-stopping loss
            and the logistic head, multiplied by ``class_weight`` (``X_val`` rows take
            ``class_weight`` only); unlabeled rows' weights are ignored, as pretraining treats
            every row alike. At least one labeled row must weigh more than 0. Only ratios
            count: the labeled rows' weights are scaled to a mean of 1, so that C's grid and
            the losses mean the same at any scale.

        Returns
        -------
        self : object
            The fitted classifier.
        """
        return self._fit(X, y, X_val, y_val, sample_weight)

    def _check_fit_data(self, X, y):
        return self._read_fit_rows(X, y)

    def _encode_targets(self, y):
        labeled = np.flatnonzero(labeled_mask(y))
        label_encoder, targets = self._encode_labels(y[labeled], len(y) - len(labeled))
        return labeled, label_encoder, targets

    def _stratify(self, targets, validation_fraction):
        """Stratify the validation split when every class can appear in both parts."""
        if validation_fraction is None:
            return None
        _, counts = np.unique(targets, return_counts=True)
        n_valid = int(np.ceil(validation_fraction * len(targets)))
        if counts.min() >= 2 and len(counts) <= n_valid <= len(targets) - len(counts):
            return targets
        return None

    def _head_width(self, label_encoder):
        return len(label_encoder.classes_)

    def _n_network_outputs(self):
        return len(self.classes_)

    def _net_spec(self, n_outputs):
        return FineTuneNet, torch.nn.CrossEntropyLoss, {"classes": np.arange(n_outputs)}

    def _fit_closed_form_head(
        self, head, embeddings, inputs, targets, seed, sample_weight, n_embedding, unlabeled
    ):
        return fit_logistic_head_(
            head, embeddings, targets, seed, sample_weight, n_embedding, inputs, unlabeled,
            self._twins(),
        )

    def _twins(self):
        """The twins the closed-form head's regressions get (keys of
        :data:`~.heads._logistic.TWINS`)."""
        return ()

    def _class_weights(self, targets, label_encoder):
        if self.class_weight is None:
            return None
        class_weight = self.class_weight
        if isinstance(class_weight, dict):
            unknown = [c for c in class_weight if c not in set(label_encoder.classes_)]
            if unknown:
                raise ValueError(
                    f"class_weight has classes not among the labeled rows of y: {unknown}."
                )
            negative = {c: w for c, w in class_weight.items() if not 0 <= w < np.inf}
            if negative:
                raise ValueError(
                    f"class_weight has negative, infinite or NaN weights: {negative}. A "
                    "class weight multiplies the loss of its rows, as sample_weight does, "
                    "and must be a finite number of at least 0."
                )
        per_class = compute_class_weight(
            class_weight, classes=label_encoder.classes_, y=label_encoder.classes_[targets]
        )
        return per_class[targets]

    def _keep_targets(self, label_encoder, weights):
        self.classes_ = label_encoder.classes_

    def _encode_labels(self, y_labeled, n_unlabeled):
        """A LabelEncoder fitted on the labeled rows and their class indices; raises unless
        there are two classes, naming the ``n_unlabeled`` rows marked -1."""
        check_classification_targets(y_labeled)
        label_encoder = LabelEncoder().fit(y_labeled)
        if len(label_encoder.classes_) < 2:
            unlabeled = (f" ({n_unlabeled} rows labeled -1 are unlabeled rows, not a class)"
                         if n_unlabeled else "")
            raise ValueError(
                f"{type(self).__name__} needs labeled samples of at least 2 classes; got "
                f"{len(label_encoder.classes_)} class among {len(y_labeled)} labeled "
                f"rows{unlabeled}."
            )
        return label_encoder, label_encoder.transform(y_labeled).astype(np.int64)

    def _validation_target_array(self, y_val):
        try:  # a column (n, 1), as y may be, becomes 1-D, with scikit-learn's warning
            return column_or_1d(np.asarray(y_val), warn=True)
        except ValueError as error:
            raise ValueError(f"y_val: {error}") from error

    def _encode_validation_targets(self, y_val, label_encoder):
        # without sorting y_val, whose None or NaN would not sort with strings
        known = set(label_encoder.classes_.tolist())
        unseen = [label for label in dict.fromkeys(y_val.tolist()) if label not in known]
        if unseen:
            raise ValueError(f"y_val has labels not among the labeled rows of y: {unseen}.")
        return label_encoder.transform(y_val).astype(np.int64)

    def _logits(self, X):
        """The float32 logits of the rows ``X``: the network's, through the head's prediction
        module (:class:`~.heads.ClassifierHead`, which the ONNX export runs too)."""
        logits, X = self._network_outputs(X, return_rows=True)
        # the rows only where trees read them: a wide sparse X is never densified otherwise
        return run_head(self._prediction_head(), logits,
                        None if self.boosted_trees_ is None else X)

    def _prediction_head(self):
        """The fitted head's prediction module: the network's logits, or their mixture with a
        boosted member (``boosted_trees_``, see :func:`~.heads.fit_logistic_head_`)."""
        return ClassifierHead(self.boosted_trees_, self.boosting_temperature_,
                              self.boosting_weight_)

    def decision_function(self, X):
        """Compute the logits; for two classes, the logit margin of ``classes_[1]``.

        With a boosted member (``boosting_weight_`` > 0) the logits are the logs of the mixed
        probabilities: their softmax is ``predict_proba`` either way.

        %(X_parameters)s

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            The logits, or for two classes the logit of ``classes_[1]`` minus that of
            ``classes_[0]``.
        """
        logits = self._logits(X)
        return logits[:, 1] - logits[:, 0] if len(self.classes_) == 2 else logits

    def predict_proba(self, X):
        """Estimate the class probabilities, softmax of the logits.

        %(X_parameters)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The float32 probability of each class of ``classes_``.
        """
        return torch.softmax(torch.from_numpy(self._logits(X)), dim=1).numpy()

    def predict_log_proba(self, X):
        """Estimate the log class probabilities, log-softmax of the logits.

        Finite where ``predict_proba`` underflows to 0.

        %(X_parameters)s

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            The float32 log-probability of each class of ``classes_``.
        """
        return torch.log_softmax(torch.from_numpy(self._logits(X)), dim=1).numpy()

    def predict(self, X):
        """Predict the most probable class of each row.

        %(X_parameters)s

        Returns
        -------
        y : ndarray of shape (n_samples,)
            The predicted labels, among ``classes_``.
        """
        logits = self._logits(X)  # checks fitting before classes_ is read
        return self.classes_[np.argmax(logits, axis=1)]


@fill_doc
class QMatchClassifier(PretrainedEncoderMixin, BaseHeadClassifier):
    """Classifier on a self-supervised encoder: pretrain, then fine-tune or probe.

    ``fit(X, y)`` pretrains ``encoder`` on every row of ``X`` (rows labeled -1 serve
    pretraining only), then trains a linear head on the labeled rows (``freeze_encoder``; user
    guide: "Linear evaluation, fine-tuning and unlabeled rows").

    Parameters
    ----------
    %(encoder)s
    freeze_encoder : bool or "auto", default="auto"
        True trains only the linear head on the encoder's embeddings (linear evaluation),
        False fine-tunes the encoder with it. "auto" trains both when there is a validation set
        (``X_val``, or from ``validation_fraction``) and keeps the better on it. Without one
        (few labels) the head is a logistic regression on the frozen embeddings, its C chosen
        by cross-validation on the labeled rows as in ``LogisticRegressionCV`` (no epochs,
        ``n_epochs_ = 0``): beside the input features, an average over weights of the
        embedding block (``embedding_weight_``); from 50 labeled rows (and 10 per class on
        average) on, mixed with gradient-boosted trees on the input features by stacking
        (``boosting_weight_``).
    %(predictor_training)s
    %(validation_fraction_classifier)s
    %(scoring_classifier)s
    %(class_weight)s
    self_training : bool, default=True
        Whether the closed-form head of ``freeze_encoder="auto"`` (few labels, no validation
        set) also reads the unlabeled rows (a seeded sample of at most 4,096): each of its
        logistic regressions gets a twin self-trained on them (Yarowsky, 1995; as
        ``SelfTrainingClassifier``, threshold 0.75, at most 5 refits; the pseudo-labeled rows
        together weigh as much as the labeled ones), weighed against the plain regressions by
        its likelihood on held-out labeled rows, self-training repeated inside each fold
        (``self_training_weight_``). The other heads ignore it.
    label_spreading : bool, default=False
        Whether each logistic regression of that head also gets a twin trained on labels spread
        to the unlabeled rows over their 7-nearest-neighbour graph (Zhou et al., 2004; as in
        Iscen et al., 2019, threshold 0.75), weighed like the self-trained twin and repeated
        inside each fold (``label_spreading_weight_``). Off by default: it helps where the
        classes are clusters of the embedding (image-like tables) and can hurt elsewhere. The
        other heads ignore it.
    %(max_time)s
    %(pretrained_device)s

    Attributes
    ----------
    %(encoder_)s
    head_ : {"logistic", "linear", "fine-tuned"}
        The head kept: ``"logistic"`` (closed form on the frozen encoder, no epochs: few labels
        and no validation set), ``"linear"`` (AdamW on the frozen encoder) or ``"fine-tuned"``
        (AdamW on encoder and head).
    %(frozen_encoder_qmatch)s
    %(center_)s
    %(scale_)s
    %(network_classifier)s
    %(classes_)s
    %(history_classifier)s
    n_epochs_ : int
        Supervised epochs run (0 with the closed-form head, ``head_="logistic"``).
    %(best_epoch_qmatch)s
    embedding_weight_ : float
        With an encoder of ``passthrough=True`` and the closed-form head, the average weight of
        the embedding block beside the input features: the logistic regressions fitted with the
        block scaled by 1, 0.5 and 0 are averaged, each weighted by its cross-validated
        likelihood (pseudo-Bayesian model averaging). Near 0 the embedding did not help on the
        labeled rows. 1.0 otherwise.
    self_training_weight_ : float
        With ``self_training=True`` and the closed-form head, the self-trained regressions'
        share of the regressions' weight (0 to 1); 0.0 otherwise.
    label_spreading_weight_ : float
        With ``label_spreading=True`` and the closed-form head, the share of the regressions
        trained on spread labels (0 to 1); 0.0 otherwise.
    boosting_weight_ : float
        With the closed-form head and at least 50 labeled rows (10 per class on average), the
        weight w of the gradient-boosted member (on the input features: for two classes
        ``HistGradientBoostingClassifier``, for more one tree of vector leaves a round, each
        leaf holding every class's value; its log-odds divided by
        ``boosting_temperature_``) in the probabilities (1 - w) softmax(network) + w trees:
        the likeliest mixture of the two's out-of-fold probabilities (stacking; Yao et al.,
        2018, eq. 4). 0.0 otherwise (or below 1e-6).
    boosted_trees_ : dict of ndarray or None
        The boosted member's trees as arrays; None when ``boosting_weight_`` is 0.
    boosting_temperature_ : float
        The temperature fitted on the member's out-of-fold log-odds (1.0 without a member).
    %(max_time_reached_)s
    %(fit_attributes)s
    %(missing_features_)s
    %(missing_indicators_)s
    %(feature_names_in_)s

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
        **PRETRAINED_ENCODER_CONSTRAINTS,
        "self_training": ["boolean"],
        "label_spreading": ["boolean"],
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
        class_weight=None,
        self_training=True,
        label_spreading=False,
        max_time=None,
        device="auto",
        precision="auto",
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
        self.class_weight = class_weight
        self.self_training = self_training
        self.label_spreading = label_spreading
        self.max_time = max_time
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.verbose = verbose

    def _twins(self):
        return tuple(name for name, wanted in (
            ("self_training_weight_", self.self_training),
            ("label_spreading_weight_", self.label_spreading)) if wanted)

    def _unlabeled_rows(self, X, labeled, seed):
        if not self._twins():
            return None
        rows = np.delete(np.arange(X.shape[0]), labeled)
        return X[rows[unlabeled_sample(len(rows), seed)]] if len(rows) else None


@fill_doc
class SupervisedMLPClassifier(RandomInitMixin, BaseHeadClassifier):
    """The encoder network plus a linear head, trained from random weights on labels only.

    The paper's "supervised baseline": :class:`QMatchClassifier`'s architecture and supervised
    stage without pretraining. Rows labeled -1 are ignored.

    Parameters
    ----------
    %(categorical_features_uncorrupted)s
    %(hidden_sizes_supervised)s
    %(architecture_supervised)s
    %(embedding_dim_supervised)s
    %(predictor_training)s
    %(validation_fraction_classifier)s
    %(scoring_classifier)s
    %(class_weight)s
    %(predictor_device)s

    Attributes
    ----------
    %(head_)s
    %(frozen_encoder_supervised)s
    %(network_classifier)s
    %(classes_)s
    %(history_classifier)s
    %(supervised_attributes)s

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
        categorical_features="from_dtype",
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
        class_weight=None,
        device="auto",
        precision="32-true",
        random_state=None,
        verbose=0,
    ):
        self.categorical_features = categorical_features
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
        self.class_weight = class_weight
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.verbose = verbose
