"""The supervised stage shared by the classifiers and the regressors.

The encoder network comes from :class:`PretrainedEncoderMixin` (a library encoder) or
:class:`RandomInitMixin` (random weights); ``_classifier.py``, ``_regressor.py`` fill in the rest.
"""

import copy
import inspect
from dataclasses import dataclass
from numbers import Real

import numpy as np
import torch
from sklearn.base import BaseEstimator, clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._base import BasePretextEncoder, _same, unchanged_on_failure
from ._budget import default_pretraining
from ._constraints import Satisfies
from ._device import resolve_device
from ._engine import (
    TrainingSettings,
    all_rows,
    batched_forward,
    keep_trained,
    split_datasets,
    train_net,
)
from ._networks import EncoderNetworkMixin, isolated_global_rng, lecun_normal_
from ._passthrough import WithInput
from ._persistence import PersistenceMixin
from ._precision import resolve_precision
from ._seeding import draw_seeds
from ._split import resolve_validation_fraction, split_rows
from ._table import (
    NO_Y,
    TableAttributes,
    TableInput,
    as_pandas,
    center_input,
    check_two_samples,
    has_missing,
)
from ._time_limit import expired, note_if_expired, time_limit
from ._warnings import warn
from .methods import QMatchEncoder

#: Heads trained with AdamW: a linear layer on the frozen encoder (the paper's linear
#: evaluation), or fine-tuned with the encoder. Tasks add ``heads.LOGISTIC``, ``heads.RIDGE``.
LINEAR, FINE_TUNED = "linear", "fine-tuned"

#: Parameters that only the heads trained with AdamW read.
ADAMW_PARAMS = ("lr", "weight_decay", "batch_size", "max_epochs", "patience", "scoring")


def _is_library_encoder(value):
    inner = value.estimator if isinstance(value, FrozenEstimator) else value
    return isinstance(inner, BasePretextEncoder)


#: What ``QMatchClassifier(encoder=...)`` and ``QMatchRegressor(encoder=...)`` accept.
LIBRARY_ENCODER = Satisfies(
    _is_library_encoder,
    "an encoder of qmatch_sklearn (QMatchEncoder(), VIMEEncoder(), ...) or a "
    "FrozenEstimator wrapping a fitted one",
)


def _head_input(encoder, network):
    """The encoder's network, beside the input features if ``passthrough=True``."""
    if not encoder.passthrough:
        return network
    missing = network[0] if encoder._table_input.fitted_with_missing else None
    return WithInput(network, *encoder._embedding_balance(), missing)


def _unfrozen(encoder):
    """The encoder inside a FrozenEstimator, or ``encoder`` itself."""
    return encoder.estimator if isinstance(encoder, FrozenEstimator) else encoder


@dataclass(frozen=True)
class _Supervised:
    """What every head of one ``fit`` trains on."""

    X: object
    targets: np.ndarray
    train: np.ndarray
    valid: np.ndarray | None
    validation: tuple | None
    n_outputs: int
    device: str
    head_seed: int
    data_seed: int
    split_seed: int
    weights: np.ndarray | None = None
    validation_weights: np.ndarray | None = None
    unlabeled: object = None


class BaseHeadEstimator(PersistenceMixin, TableAttributes, BaseEstimator):
    """Shared supervised stage of the classifiers and regressors (not for direct use).

    The encoder mixin gives ``_encoder_network`` (the network and its width),
    ``_encoder_skeleton`` and ``_embedding_dim``; the task (``BaseHeadClassifier``,
    ``BaseHeadRegressor``) the target hooks, ``_net_spec`` and ``_fit_closed_form_head``.
    """

    #: The history column early stopping watches, for each ``scoring``.
    _monitors = {"loss": "valid_loss"}
    #: The head kind fitted in closed form on the frozen embeddings.
    _closed_form_head = None
    #: The closed-form head's fitted attributes, with their values for the other heads.
    _head_attributes = {"embedding_weight_": 1.0}
    #: Labeled rows that must weigh more than 0 (a regression needs two).
    _min_weighted_rows = 1

    def _network_skeleton(self):
        # embedding_dim, not read off the layers: the network may be the user's (architecture=)
        return torch.nn.Sequential(
            self._encoder_skeleton(),
            torch.nn.Linear(self._embedding_dim(), self._n_network_outputs()),
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        return tags

    @unchanged_on_failure
    def _fit(self, X, y, X_val, y_val, sample_weight=None):
        """The body of ``fit`` (documented by each task)."""
        self._validate_params()
        table = X
        X, y = self._check_fit_data(X, y)
        check_two_samples(self, X.shape[0])
        labeled, encoding, targets = self._encode_targets(y)
        weights = self._row_weights(sample_weight, X, labeled, targets, encoding)
        device = resolve_device(self.device)
        self.precision_ = resolve_precision(self.precision, device)
        encoder_seed, head_seed, data_seed, split_seed = draw_seeds(self.random_state, 4)
        # Everything about the labeled rows is checked before pretraining, which can take hours.
        if X_val is None and y_val is None:
            fraction = resolve_validation_fraction(self.validation_fraction, len(targets))
            train, valid = split_rows(
                len(targets), fraction, split_seed, stratify=self._stratify(targets, fraction)
            )
            validation = None
        else:
            validation = self._check_validation_set(X, X_val, y_val, encoding)
            train, valid = np.arange(len(targets)), None
        validation_weights = None
        if validation is not None and weights is not None:
            validation_weights = self._class_weights(validation[1], encoding)
        kinds = self._head_choices(valid is not None or validation is not None)
        closed_form = kinds == (self._closed_form_head,)
        if closed_form:
            self._warn_unused_training_params(len(targets))
        supervised = _Supervised(
            X if len(labeled) == X.shape[0] else X[labeled], targets, train, valid, validation,
            self._head_width(encoding), device, head_seed, data_seed, split_seed,
            weights, validation_weights,
            self._unlabeled_rows(X, labeled, data_seed) if closed_form else None,
        )

        # an encoder pretrained here reads the table itself (the same center_ and scale_)
        encoder_network, embedding_dim = self._encoder_network(X, table, encoder_seed, device)
        candidates = [
            (kind, *self._train_head(kind, encoder_network, embedding_dim, supervised))
            for kind in kinds
        ]
        sign = 1 if self.scoring == "loss" else -1
        kind, result, frozen, network, attributes = min(
            candidates, key=lambda c: 0 if c[1].best_score is None else sign * c[1].best_score
        )
        keep_trained(self, network, result, device)
        for name, value in {**self._head_attributes, **attributes}.items():
            setattr(self, name, value)
        self.head_ = kind
        self.frozen_encoder_ = frozen
        self._shares_encoder_network = network[0] is encoder_network
        self._keep_targets(encoding, weights)
        return self

    def _read_fit_rows(self, X, y=NO_Y):
        """``X`` (and ``y``) as the network's input rows, read by ``_table_input``."""
        X = as_pandas(X)
        table = self._reading_table(X)
        if hasattr(table, "center_"):  # fitted elsewhere: X's columns recorded
            rows = table.transform(self, X, y, reset=True)
            # NaN where that encoder's network has no input for one: read as predict reads it
            if isinstance(rows, tuple):
                rows = (table.fill_unseen_missing(self, rows[0]), rows[1])
            else:
                rows = table.fill_unseen_missing(self, rows)
        else:
            rows = table.fit_transform(self, X, y)
        self._table_input = table
        return rows

    def _reading_table(self, X):
        """A table input to fit on ``X`` (``categorical_features``), or a fitted one."""
        return TableInput(self.categorical_features)

    def _warn_unused_training_params(self, n_labeled):
        """Warn when AdamW parameters were set but the head is fitted in closed form."""
        defaults = inspect.signature(type(self).__init__).parameters
        unused = [
            f"{name}={getattr(self, name)!r}" for name in ADAMW_PARAMS
            if name in defaults and not _same(getattr(self, name), defaults[name].default)
        ]
        if unused:
            warn(
                f"{type(self).__name__}: {', '.join(unused)} not used. With {n_labeled} "
                "labeled rows there is no validation set, so freeze_encoder='auto' fits the "
                f"head in closed form (head_ = {self._closed_form_head!r}), without epochs. "
                "Pass X_val and y_val, or freeze_encoder=True or False, to train the head "
                "with AdamW.",
                UserWarning,
            )

    def _train_head(self, kind, encoder_network, embedding_dim, data):
        """Train one head of ``kind``; its training result, whether the encoder stayed
        frozen, the network and the fitted attributes it sets."""
        frozen = kind != FINE_TUNED
        network = self._starting_network(encoder_network, frozen, data.device)
        with isolated_global_rng():
            head = lecun_normal_(
                torch.nn.Linear(embedding_dim, data.n_outputs),
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
        if kind == self._closed_form_head:
            # past max_time the regressions alone: no twins, no boosted member
            short = expired()
            result, attributes = self._fit_closed_form_head(
                head, features(data.X), None if short else data.X, data.targets,
                data.split_seed, data.weights, self._embedding_block(),
                None if short or data.unlabeled is None else features(data.unlabeled),
            )
            return result, frozen, torch.nn.Sequential(network, head), attributes
        train_rows, valid_rows = split_datasets(
            features(data.X), data.targets, data.train, data.valid, data.device, data.weights
        )
        if data.validation is not None:
            X_val, targets_val = data.validation
            valid_rows = all_rows(
                features(X_val), targets_val, data.device, data.validation_weights
            )
        net_class, criterion, net_params = self._net_spec(data.n_outputs)
        result = train_net(
            net_class,
            module,
            criterion,
            train_rows,
            valid_rows,
            TrainingSettings.of(self),
            device=data.device,
            seed=data.data_seed,
            monitor=self._monitors[self.scoring],
            lower_is_better=self.scoring == "loss",
            **net_params,
        )
        return result, frozen, torch.nn.Sequential(network, head), {}

    def _embedding_block(self):
        """Width of the embedding block after the input features (``passthrough``), or None."""
        return None

    def _unlabeled_rows(self, X, labeled, seed):
        """The unlabeled rows the closed-form head reads, or None (only a classifier's)."""
        return None

    def _head_choices(self, has_validation):
        """The heads to train (the better on validation is kept)."""
        return (FINE_TUNED,)

    def _starting_network(self, encoder_network, frozen, device):
        """The encoder network a head starts from, on ``device``."""
        return encoder_network.to(device)

    def _stratify(self, targets, validation_fraction):
        """The labels to stratify the validation split by, or None."""
        return None

    def _class_weights(self, targets, encoding):
        """Each labeled row's weight from ``class_weight`` (classifiers), or None."""
        return None

    def _row_weights(self, sample_weight, X, labeled, targets, encoding):
        """``sample_weight`` times ``class_weight`` of the labeled rows scaled to a mean of 1,
        or None when every row weighs the same."""
        weights = None
        if sample_weight is not None:
            weights = _check_sample_weight(
                sample_weight, X, dtype=np.float64, ensure_non_negative=True
            )[labeled]
        per_class = self._class_weights(targets, encoding)
        if per_class is not None:
            weights = per_class if weights is None else weights * per_class
        if weights is None:
            return None
        if not np.isfinite(weights).all():  # sample_weight times class_weight overflowed
            raise ValueError(
                f"{type(self).__name__}: sample_weight times class_weight overflows float64; "
                "only the weights' ratios count, so scale them down."
            )
        if weights.max() > 0:  # the max first: no overflow
            weights = weights / weights.max()
            weights = weights / weights.mean()
        # counted as the losses read them, in float32 (where 1e-50 of the largest is 0)
        counting = int(np.count_nonzero(weights.astype(np.float32) > 0))
        if counting < self._min_weighted_rows:
            source = "sample_weight, class_weight" if hasattr(self, "class_weight") else (
                "sample_weight")
            raise ValueError(
                f"{type(self).__name__}: the labeled rows of weight above 0 ({source}) "
                f"number {counting}; at least {self._min_weighted_rows} are needed."
            )
        return None if np.all(weights == weights[0]) else weights.astype(np.float32)

    def _check_validation_set(self, X, X_val, y_val, encoding):
        """The validation rows as float32 and their targets, encoded as the training ones."""
        if X_val is None or y_val is None:
            raise ValueError("Pass both X_val and y_val, or neither.")
        table = self._table_input
        if hasattr(table, "missing_features_"):  # an encoder fitted elsewhere: read as X was
            X_val = table.fill_unseen_missing(self, table.validation_rows(self, X_val, True),
                                              "X_val")
        else:  # the encoder fitted here on X has an input for NaN if X has any
            X_val = table.validation_rows(self, X_val, has_missing(X))
        y_val = self._validation_target_array(y_val)
        if X_val.shape[0] != len(y_val) or len(y_val) == 0:
            raise ValueError(
                f"X_val and y_val need the same, non-zero number of rows; got "
                f"{X_val.shape[0]} and {len(y_val)}."
            )
        return X_val, self._encode_validation_targets(y_val, encoding)

    def _network_outputs(self, X, return_rows=False):
        """The network's float32 outputs for ``X`` (and with ``return_rows`` the rows read)."""
        check_is_fitted(self)
        X = self._table_input.transform(self, X)
        X = self._table_input.fill_unseen_missing(self, X)
        outputs = batched_forward(self.network_, X, self.device_, self._n_network_outputs())
        return (outputs, X) if return_rows else outputs


#: Parameters of the estimators that start from a library encoder.
PRETRAINED_ENCODER_CONSTRAINTS = {
    "encoder": [None, LIBRARY_ENCODER],
    "freeze_encoder": ["boolean", StrOptions({"auto"})],
    "max_time": [None, Interval(Real, 0, None, closed="neither")],
}


class PretrainedEncoderMixin:
    """The encoder network of ``encoder``, pretrained in ``fit`` on every row of ``X`` (or
    a FrozenEstimator's); ``max_time`` bounds the whole fit."""

    def _fit(self, X, y, X_val, y_val, sample_weight=None):
        self._validate_params()  # max_time is read before the fit validates the rest
        with time_limit(self.max_time) as limit:
            super()._fit(X, y, X_val, y_val, sample_weight)
            note_if_expired("head")
        self.max_time_reached_ = None if limit is None else limit.reached
        if self.max_time_reached_ is not None:
            stage = (f"pretraining, which stopped at epoch {_unfrozen(self.encoder_).n_epochs_}"
                     "; the head was fitted in its cheapest form"
                     if self.max_time_reached_ == "pretraining" else "the head's fit")
            warn(f"{type(self).__name__}: max_time={self.max_time:g} s ran out during "
                 f"{stage}. The result depends on this machine's speed.", UserWarning)
        return self

    def _encoder_network(self, X, encoder_rows, seed, device):
        if self.encoder is None:
            encoder = QMatchEncoder(
                passthrough=True, **default_pretraining(X.shape[0]),
                device=self.device, precision=self.precision,
                random_state=seed, verbose=self.verbose,
            )
        else:
            encoder = clone(self.encoder)
            if (self.random_state is not None
                    and "random_state" in (params := encoder.get_params(deep=False))
                    and params["random_state"] is None):
                # seeded from ours, so a seeded estimator refits alike with an unseeded encoder
                encoder.set_params(random_state=seed)
        encoder.fit(encoder_rows, None)
        if not isinstance(encoder, FrozenEstimator):  # a frozen one does not train here
            note_if_expired("pretraining")
        fitted = _unfrozen(encoder)
        check_is_fitted(fitted)
        # the encoder read the same rows: the same table input, kept once
        self._table_input = fitted._table_input
        self.encoder_ = encoder
        return _head_input(fitted, fitted.network_), self._embedding_dim()

    def _head_choices(self, has_validation):
        if self.freeze_encoder == "auto":
            return (LINEAR, FINE_TUNED) if has_validation else (self._closed_form_head,)
        return (LINEAR,) if self.freeze_encoder else (FINE_TUNED,)

    def _starting_network(self, encoder_network, frozen, device):
        # a frozen encoder's network is shared (saved with encoder_); fine-tuning, or another
        # device, takes a copy so that the fitted encoder stays as it was
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
        return _unfrozen(self.encoder_)._output_width()

    def _embedding_block(self):
        encoder = _unfrozen(self.encoder_)
        return encoder.embedding_dim if encoder.passthrough else None

    def _reading_table(self, X):
        # a frozen encoder's table input is reused whole (X's columns checked)
        if isinstance(self.encoder, FrozenEstimator):
            fitted = self.encoder.estimator
            check_is_fitted(fitted)
            validate_data(fitted, X, reset=False, skip_check_array=True)
            return fitted._table_input
        return TableInput("from_dtype" if self.encoder is None
                          else self.encoder.categorical_features)


class RandomInitMixin(EncoderNetworkMixin):
    """The encoder network from the ``NETWORK_CONSTRAINTS`` parameters with random weights
    (the paper's supervised baseline)."""

    def _encoder_network(self, X, encoder_rows, seed, device):
        missing = self._table_input.fit_missing_values(self, X)
        with isolated_global_rng():
            network = self._build_encoder(X.shape[1], torch.Generator().manual_seed(seed), missing)
        center_input(network, X, missing)
        return network.to(device), self.embedding_dim

    def _embedding_dim(self):
        return self.embedding_dim
