"""Regressors: an encoder network plus a linear head, trained on the labeled rows.

``QMatchRegressor`` starts from a pretrained self-supervised encoder,
``SupervisedMLPRegressor`` from random weights; the supervised stage is the classifiers'
(``_head.py``).
"""

from typing import NamedTuple

import numpy as np
import torch
from sklearn.base import RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_array, check_consistent_length

from ._constraints import NETWORK_CONSTRAINTS, TRAINING_CONSTRAINTS
from ._docstrings import fill_doc
from ._engine import FineTuneRegressorNet
from ._head import (
    PRETRAINED_ENCODER_CONSTRAINTS,
    BaseHeadEstimator,
    PretrainedEncoderMixin,
    RandomInitMixin,
)
from ._table import mean_and_std, power_of_two_above
from .heads import RIDGE, RegressorHead, fit_ridge_head_, run_head

#: The most standard deviations a validation target may lie from the labeled targets'
#: mean: float32's largest square root (its squared error stays finite).
FARTHEST_TARGET = float(np.sqrt(np.finfo(np.float32).max))


class _TargetScaling(NamedTuple):
    """Per-output mean and scale of the labeled targets, the labeled targets (n_labeled,
    n_outputs) and whether ``y`` was 1-D."""

    mean: np.ndarray
    scale: np.ndarray
    values: np.ndarray
    one_dimensional: bool

    def deviations(self, values):
        """``values`` (n_samples, n_outputs) standardised, in float64."""
        return (values - self.mean) / self.scale

    def standardise(self, values):
        """``values`` (n_samples, n_outputs) as float32 standardised targets."""
        return self.deviations(values).astype(np.float32)


def _as_columns(y):
    """``y`` (1-D or 2-D) as a 2-D array of shape (n_samples, n_outputs)."""
    return y.reshape(len(y), -1)


@fill_doc
class BaseHeadRegressor(RegressorMixin, BaseHeadEstimator):
    """The supervised stage for real-valued targets (not for direct use): NaN marks an
    unlabeled row, each output is standardised over its labeled values (predictions are
    de-standardised), the loss is the mean squared error, the closed-form head a ridge
    regression."""

    _parameter_constraints = {**TRAINING_CONSTRAINTS, "scoring": [StrOptions({"loss"})],
                              "clip_predictions": ["boolean"]}
    _closed_form_head = RIDGE
    _min_weighted_rows = 2

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def score(self, X, y, sample_weight=None):
        """Return the coefficient of determination R² of ``predict(X)`` against ``y``.

        scikit-learn's ``r2_score``, each output in units of a power of two above its largest
        absolute target or prediction, so that targets in extreme units (1e200) give a number,
        not ``r2_score``'s NaN.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test rows, read as at fit.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            True targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        score : float
            R² of ``predict(X)``, averaged uniformly over the outputs.
        """
        raw = self.predict(X)
        predicted = _as_columns(np.asarray(raw, dtype=np.float64))
        targets = _as_columns(np.asarray(y, dtype=np.float64))
        if targets.shape != predicted.shape:  # r2_score's message, on y as given
            return r2_score(y, raw, sample_weight=sample_weight)
        unit = power_of_two_above(np.maximum(np.abs(targets).max(axis=0, initial=0.0),
                                             np.abs(predicted).max(axis=0, initial=0.0)))
        return r2_score(targets / unit, predicted / unit, sample_weight=sample_weight)

    def fit(self, X, y, X_val=None, y_val=None, sample_weight=None):
        """Fit on ``X``; rows whose targets are NaN are unlabeled.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows, labeled and unlabeled: a numeric matrix, or a DataFrame whose
            categorical columns are read natively; numeric columns in any units, NaN allowed.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued targets; NaN marks an unlabeled row (-1 is a target like any other).
            With several outputs a row is unlabeled when all its targets are NaN, and an error
            when only some are. At least 2 rows must be labeled.
        X_val, y_val : array-like, default=None
            A fixed validation set for early stopping, ``y_val`` with the outputs of ``y`` and
            no NaN. When given, every labeled row of ``X`` trains and ``validation_fraction``
            is ignored. Give both or neither.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows in the supervised loss, the early-stopping loss
            and the ridge head (``X_val`` rows are unweighted); unlabeled rows' weights are
            ignored, as pretraining treats every row alike. At least two labeled rows must
            weigh more than 0. Only ratios count: the labeled rows' weights are scaled to a
            mean of 1, so that the ridge penalty's grid and the losses mean the same at any
            scale.

        Returns
        -------
        self : object
            The fitted regressor.
        """
        return self._fit(X, y, X_val, y_val, sample_weight)

    def _check_fit_data(self, X, y):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        X = self._read_fit_rows(X)
        y = check_array(
            y, ensure_2d=False, dtype=np.float64, ensure_all_finite="allow-nan",
            input_name="y", estimator=self,
        )
        check_consistent_length(X, y)
        return X, y

    def _encode_targets(self, y):
        values = _as_columns(y)
        missing = np.isnan(values)
        unlabeled = missing.all(axis=1)
        partial = np.flatnonzero(missing.any(axis=1) & ~unlabeled)
        if len(partial):
            raise ValueError(
                f"y has {len(partial)} row(s) with some targets NaN and others not (the "
                f"first is row {partial[0]}). A row is unlabeled when all its targets are "
                "NaN; drop these rows or fill in their missing targets."
            )
        labeled = np.flatnonzero(~unlabeled)
        if len(labeled) < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 labeled rows (targets that are not "
                f"NaN); got {len(labeled)} among {len(y)} rows."
            )
        labeled_values = values[labeled]
        mean, scale = mean_and_std(labeled_values)  # from 1e-300 to 1e300 alike
        if not (np.isfinite(mean).all() and np.isfinite(scale).all()):
            raise ValueError(
                "y has values too large to standardise in float64; rescale the targets."
            )
        scale[scale == 0] = 1.0  # a constant target is only centred
        scaling = _TargetScaling(mean, scale, labeled_values, y.ndim == 1)
        return labeled, scaling, scaling.standardise(labeled_values)

    def _validation_target_array(self, y_val):
        y_val = check_array(
            y_val, ensure_2d=False, dtype=np.float64, ensure_all_finite="allow-nan",
            ensure_min_samples=0, input_name="y_val", estimator=self,
        )
        if np.isnan(y_val).any():
            raise ValueError(
                "y_val has NaN: every validation row needs all its targets (NaN marks "
                "unlabeled rows in y only)."
            )
        return y_val

    def _encode_validation_targets(self, y_val, scaling):
        values = _as_columns(y_val)
        if values.shape[1] != len(scaling.mean):
            raise ValueError(
                f"y_val has {values.shape[1]} target(s) per row, but y has "
                f"{len(scaling.mean)}."
            )
        deviations = scaling.deviations(values)
        farthest = np.abs(deviations).max()
        if not farthest < FARTHEST_TARGET:  # its squared error would overflow float32
            raise ValueError(
                f"y_val lies up to {farthest:.3g} standard deviations of y's labeled targets "
                f"from their mean, beyond the {FARTHEST_TARGET:.3g} the float32 loss can "
                "square. Are y and y_val in the same units?"
            )
        return deviations.astype(np.float32)

    def _head_width(self, scaling):
        return len(scaling.mean)

    def _n_network_outputs(self):
        return self.n_outputs_

    def _net_spec(self, n_outputs):
        return FineTuneRegressorNet, torch.nn.MSELoss, {}

    def _fit_closed_form_head(
        self, head, embeddings, inputs, targets, seed, sample_weight, n_embedding, unlabeled
    ):
        # a regression self-trained on its own predictions is the same regression
        return fit_ridge_head_(head, embeddings, targets, sample_weight, n_embedding)

    def _keep_targets(self, scaling, weights):
        self.n_outputs_ = len(scaling.mean)
        self.target_mean_ = scaling.mean
        self.target_scale_ = scaling.scale
        # the range of the labeled rows that count (a row of weight 0 is as good as absent)
        counted = scaling.values if weights is None else scaling.values[weights > 0]
        self.target_min_ = counted.min(axis=0)
        self.target_max_ = counted.max(axis=0)
        self._one_dimensional_y = scaling.one_dimensional

    def predict(self, X):
        """Predict the targets of each row.

        %(X_parameters)s

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            The predicted targets, float64, in the units of ``y``; 1-D when ``y`` was 1-D at
            fit. With ``clip_predictions``, within [``target_min_``, ``target_max_``].
        """
        outputs = self._network_outputs(X)  # checks fitting before the head is read
        y = run_head(self._prediction_head(), outputs)
        return y[:, 0] if self._one_dimensional_y else y

    def _prediction_head(self):
        """The fitted head's prediction module (:class:`~.heads.RegressorHead`, which the ONNX
        export runs too): outputs in the target's units, clipped with ``clip_predictions``."""
        low, high = ((self.target_min_, self.target_max_) if self.clip_predictions
                     else (None, None))
        return RegressorHead(self.target_mean_, self.target_scale_, low, high)


@fill_doc
class QMatchRegressor(PretrainedEncoderMixin, BaseHeadRegressor):
    """Regressor on a self-supervised encoder: pretrain, then fine-tune or probe.

    ``fit(X, y)`` pretrains ``encoder`` on every row of ``X`` (rows whose target is NaN serve
    pretraining only; -1 is a target like any other), then trains a linear head on the labeled
    rows' standardised targets (``freeze_encoder``). The paper (Mulc & Dwibedi) evaluates
    classification only; this is its pretraining and its two protocols with a regression head.

    Parameters
    ----------
    %(encoder)s
    freeze_encoder : bool or "auto", default="auto"
        True trains only the linear head on the encoder's embeddings (linear evaluation),
        False fine-tunes the encoder with it. "auto" trains both when there is a validation set
        (``X_val``, or from ``validation_fraction``) and keeps the better on it. Without one
        (few labels), where nothing would stop fine-tuning or an AdamW head from overfitting,
        the head is a ridge regression on the frozen embeddings, its alpha chosen by
        leave-one-out cross-validation as in ``RidgeCV`` (no epochs, ``n_epochs_ = 0``): beside
        the input features, an average over weights of the embedding block
        (``embedding_weight_``).
    %(predictor_training)s
    %(validation_fraction_regressor)s
    %(scoring_regressor)s
    %(clip_predictions)s
    %(max_time)s
    %(pretrained_device)s

    Attributes
    ----------
    %(encoder_)s
    head_ : {"ridge", "linear", "fine-tuned"}
        The head kept: ``"ridge"`` (closed form on the frozen encoder, no epochs: few labels and
        no validation set), ``"linear"`` (AdamW on the frozen encoder) or ``"fine-tuned"``
        (AdamW on encoder and head).
    %(frozen_encoder_qmatch)s
    %(center_)s
    %(scale_)s
    %(network_regressor)s
    %(target_attributes)s
    %(history_regressor)s
    n_epochs_ : int
        Supervised epochs run (0 with the closed-form head, ``head_="ridge"``).
    %(best_epoch_qmatch)s
    embedding_weight_ : float
        With an encoder of ``passthrough=True`` and the closed-form head, the average weight of
        the embedding block beside the input features: the ridge regressions fitted with the
        block scaled by 1, 0.5 and 0 are averaged, each weighted by the Gaussian likelihood of
        its leave-one-out errors (pseudo-Bayesian model averaging). Near 0 the embedding did
        not help on the labeled rows. 1.0 otherwise.
    %(max_time_reached_)s
    %(fit_attributes)s
    %(missing_features_)s
    %(missing_indicators_)s
    %(feature_names_in_)s

    See Also
    --------
    QMatchEncoder : The pretext trainer used by default.
    SupervisedMLPRegressor : The same network trained from random weights.
    QMatchClassifier : The same for class labels.

    References
    ----------
    %(qmatch_reference)s

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_diabetes
    >>> from qmatch_sklearn import QMatchEncoder, QMatchRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> y_semi = np.where(np.arange(len(y)) % 4 == 0, y, np.nan)  # 25% labeled
    >>> encoder = QMatchEncoder(hidden_sizes=(64,), embedding_dim=16, max_epochs=2,
    ...                         random_state=0)
    >>> reg = QMatchRegressor(encoder, max_epochs=5, random_state=0).fit(X, y_semi)
    >>> reg.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints = {
        **BaseHeadRegressor._parameter_constraints,
        **PRETRAINED_ENCODER_CONSTRAINTS,
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
        clip_predictions=True,
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
        self.clip_predictions = clip_predictions
        self.max_time = max_time
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.verbose = verbose


@fill_doc
class SupervisedMLPRegressor(RandomInitMixin, BaseHeadRegressor):
    """The encoder network plus a linear head, trained from random weights on targets only.

    The regression twin of the paper's "supervised baseline": :class:`QMatchRegressor`'s
    architecture and supervised stage without pretraining. Rows whose targets are NaN are
    ignored.

    Parameters
    ----------
    %(categorical_features_uncorrupted)s
    %(hidden_sizes_supervised)s
    %(architecture_supervised)s
    %(embedding_dim_supervised)s
    %(predictor_training)s
    %(validation_fraction_regressor)s
    %(scoring_regressor)s
    %(clip_predictions)s
    %(predictor_device)s

    Attributes
    ----------
    %(head_)s
    %(frozen_encoder_supervised)s
    %(network_regressor)s
    %(target_attributes)s
    %(history_regressor)s
    %(supervised_attributes)s

    See Also
    --------
    QMatchRegressor : The same network, pretrained with a self-supervised encoder.
    SupervisedMLPClassifier : The same for class labels.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from qmatch_sklearn import SupervisedMLPRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = SupervisedMLPRegressor(hidden_sizes=(64,), embedding_dim=16, max_epochs=5,
    ...                              random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape
    (3,)
    """

    _parameter_constraints = {**BaseHeadRegressor._parameter_constraints, **NETWORK_CONSTRAINTS}

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
        clip_predictions=True,
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
        self.clip_predictions = clip_predictions
        self.device = device
        self.precision = precision
        self.random_state = random_state
        self.verbose = verbose
