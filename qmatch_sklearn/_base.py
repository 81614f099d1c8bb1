"""scikit-learn plumbing shared by every encoder: validation, seeding, fit, transform."""

from numbers import Integral, Real

import numpy as np
import pandas as pd
import torch
from pandas.api.types import is_numeric_dtype
from scipy.sparse import issparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._constraints import DEVICE_NAMES, LAYER_SIZES, MAX_LR, USER_NETWORK
from ._device import resolve_device
from ._engine import PretextNet, all_rows, batched_forward, keep_trained, split_datasets, train_net
from ._networks import ARCHITECTURES, build_encoder, isolated_global_rng
from ._persistence import PersistenceMixin

def check_features(estimator, X, y="no_validation", *, reset):
    """``validate_data`` to float32, with a hint when the input holds strings.

    Sparse input (e.g. a ColumnTransformer's one-hot output) stays sparse, as
    CSR: the engine densifies one batch at a time, so a wide one-hot matrix
    never exists densely in memory.
    """
    try:
        return validate_data(estimator, X, y, reset=reset, dtype=np.float32, accept_sparse="csr")
    except ValueError as error:
        if not holds_non_numbers(X):
            raise
        raise ValueError(
            f"{type(estimator).__name__} needs numeric features ({error}). Encode "
            "categorical columns first, e.g. with a OneHotEncoder in a ColumnTransformer."
        ) from error


def holds_non_numbers(X):
    """Whether dense ``X`` holds values that do not convert to numbers (strings, say).

    Judged from ``X`` itself: a DataFrame's columns of a non-numeric dtype, or
    an array (or nested list) of strings or objects, tried as float.
    """
    if issparse(X):
        return False
    if isinstance(X, pd.DataFrame):
        columns = [X[name].to_numpy() for name in X.columns if not is_numeric_dtype(X[name])]
    else:
        try:
            columns = [np.asarray(X)]
        except ValueError:  # ragged nested lists: not a matter of numbers
            return False
    for column in columns:
        if column.dtype.kind in "OUS":
            try:
                column.astype(np.float64)
            except (TypeError, ValueError):
                return True
    return False


def draw_seeds(random_state, n):
    """``n`` independent integer seeds from ``random_state``.

    ``None`` takes fresh OS entropy instead of the global NumPy generator, so
    fitting never advances a global random state.
    """
    if random_state is None:
        sequence = np.random.SeedSequence()
    else:
        sequence = np.random.SeedSequence(check_random_state(random_state).randint(2**31 - 1))
    return [int(seed) for seed in sequence.generate_state(n)]


#: ``validation_fraction="auto"`` holds out this share of the rows for early
#: stopping, but only when that gives at least ``AUTO_MIN_VALIDATION_ROWS``:
#: on fewer the validation loss is noise (on wine, 12 validation rows kept the
#: first epoch in 5 of 5 seeds), and training runs all ``max_epochs``.
AUTO_VALIDATION_FRACTION = 0.1
AUTO_MIN_VALIDATION_ROWS = 200


def resolve_validation_fraction(validation_fraction, n_samples):
    """The share of ``n_samples`` rows to hold out, or None for no validation."""
    if validation_fraction != "auto":
        return validation_fraction
    enough = n_samples * AUTO_VALIDATION_FRACTION >= AUTO_MIN_VALIDATION_ROWS
    return AUTO_VALIDATION_FRACTION if enough else None


def split_rows(n_samples, validation_fraction, seed, stratify=None):
    """Sorted row indices (train, validation); validation is None when
    ``validation_fraction`` is None (already resolved, see
    :func:`resolve_validation_fraction`)."""
    if validation_fraction is None:
        return np.arange(n_samples), None
    indices = np.arange(n_samples)
    train, valid = train_test_split(
        indices, test_size=validation_fraction, random_state=seed, stratify=stratify
    )
    if len(train) < 2:
        raise ValueError(
            f"validation_fraction={validation_fraction} leaves {len(train)} training "
            f"row(s) of {n_samples}; at least 2 are needed. Pass more rows or "
            "validation_fraction=None."
        )
    return np.sort(train), np.sort(valid)


def check_two_samples(estimator, n_samples):
    if n_samples < 2:
        raise ValueError(
            f"{type(estimator).__name__} needs at least 2 samples to fit (batch "
            f"normalisation), got n_samples = {n_samples}."
        )


#: Parameters of the encoder network.
NETWORK_CONSTRAINTS = {
    "hidden_sizes": [None, LAYER_SIZES],
    "architecture": [StrOptions(set(ARCHITECTURES)), USER_NETWORK],
    "embedding_dim": [Interval(Integral, 1, None, closed="left")],
}


class EncoderNetworkMixin:
    """Builds the encoder network of an estimator with the ``NETWORK_CONSTRAINTS`` parameters."""

    def _build_encoder(self, n_features, generator):
        return build_encoder(
            n_features, self.hidden_sizes, self.embedding_dim, self.architecture, generator
        )

    def _encoder_skeleton(self):
        """The fitted encoder's shape, untrained (its weights are about to be loaded)."""
        return self._build_encoder(self.n_features_in_, torch.Generator())


#: Parameters of the training loop, shared by every estimator that trains a network.
TRAINING_CONSTRAINTS = {
    "lr": [Interval(Real, 0, MAX_LR, closed="right")],
    "weight_decay": [Interval(Real, 0, None, closed="left")],
    "batch_size": [Interval(Integral, 2, None, closed="left")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "patience": [Interval(Integral, 1, None, closed="left")],
    "validation_fraction": [None, StrOptions({"auto"}), Interval(Real, 0, 1, closed="neither")],
    "device": [DEVICE_NAMES],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


class BasePretextEncoder(
    PersistenceMixin,
    EncoderNetworkMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    BaseEstimator,
):
    """Base class of the self-supervised encoders (not for direct use).

    A method subclasses it with an explicit keyword-only ``__init__`` that
    stores its own parameters and the shared ones (``NETWORK_CONSTRAINTS``
    and ``TRAINING_CONSTRAINTS``, in that order) and nothing else, a numpydoc
    docstring that documents all of them, ``_parameter_constraints`` for its
    own parameters, and ``_build_pretext(n_features, generator)`` returning
    ``(PretextModule, loss module)``. Everything else (validation, seeding,
    the training engine, transform) lives here, and saving in
    ``PersistenceMixin``. ``tests/test_api_contract.py`` checks that the
    shared parameters keep the same defaults and documentation everywhere.
    """

    _parameter_constraints = {**NETWORK_CONSTRAINTS, **TRAINING_CONSTRAINTS}

    def _network_skeleton(self):
        return self._encoder_skeleton()

    def _build_pretext(self, n_features, generator):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, X, y=None, X_val=None):
        """Pretrain the encoder on the rows of ``X`` (``y`` is ignored).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Numeric, preprocessed rows (e.g. the output of a ColumnTransformer).
        y : None
            Ignored; present for Pipeline compatibility.
        X_val : array-like of shape (n_val_samples, n_features), default=None
            A fixed pretext-validation set for early stopping (e.g. a paper
            split's ``pretext_val`` rows), preprocessed like ``X``. When given,
            every row of ``X`` trains and ``validation_fraction`` is ignored.
            In a Pipeline, ``fit(..., enc__X_val=...)`` passes it through
            unchanged: the earlier steps do not transform it.

        Returns
        -------
        self : object
            The fitted encoder.
        """
        self._validate_params()
        X = check_features(self, X, reset=True)
        check_two_samples(self, X.shape[0])
        device = resolve_device(self.device)
        init_seed, data_seed, split_seed, valid_seed = draw_seeds(self.random_state, 4)
        if X_val is None:
            fraction = resolve_validation_fraction(self.validation_fraction, X.shape[0])
            train, valid = split_rows(X.shape[0], fraction, split_seed)
            train_rows, valid_rows = split_datasets(X, None, train, valid, device)
        else:
            X_val = check_features(self, X_val, reset=False)
            check_two_samples(self, X_val.shape[0])
            train_rows, valid_rows = all_rows(X, None, device), all_rows(X_val, None, device)

        with isolated_global_rng():
            init_generator = torch.Generator().manual_seed(init_seed)
            module, criterion = self._build_pretext(X.shape[1], init_generator)
        result = train_net(
            PretextNet,
            self,
            module,
            criterion,
            train_rows,
            valid_rows,
            device=device,
            seed=data_seed,
            monitor="valid_loss",
            lower_is_better=True,
            valid_seed=valid_seed,
        )
        keep_trained(self, module.encoder, result, device)
        self._n_features_out = self.embedding_dim
        return self

    def transform(self, X):
        """Embed rows with the pretrained encoder.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows preprocessed like those passed to ``fit``.

        Returns
        -------
        Z : ndarray of shape (n_samples, embedding_dim)
            The float32 embeddings z of the rows.
        """
        check_is_fitted(self)
        X = check_features(self, X, reset=False)
        return batched_forward(self.network_, X, self.device_, self._n_features_out)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags
