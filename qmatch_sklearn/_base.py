"""The base class of the self-supervised encoders: fit and transform, shared by every method."""

import functools
from collections import Counter
from dataclasses import replace
from numbers import Real

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import (
    _check_feature_names_in,
    _generate_get_feature_names_out,
    check_is_fitted,
)

from ._budget import epoch_tol, resolve_max_epochs
from ._constraints import NETWORK_CONSTRAINTS, TRAINING_CONSTRAINTS
from ._device import resolve_device
from ._distributed import current_group
from ._docstrings import fill_doc
from ._engine import (
    PretextNet,
    TrainingSettings,
    all_rows,
    batched_forward,
    keep_trained,
    make_net,
    net_result,
    split_datasets,
    train_net,
)
from ._networks import EncoderNetworkMixin, isolated_global_rng
from ._passthrough import balanced, embedding_balance
from ._persistence import PersistenceMixin
from ._precision import resolve_precision
from ._seeding import draw_seeds
from ._split import resolve_validation_fraction, split_rows
from ._table import (
    TableAttributes,
    TableInput,
    center_input,
    check_missing_columns,
    check_two_samples,
    column_groups,
    expand_groups,
    fill_and_indicate,
)
from ._warnings import warn

#: At most this many fit rows, drawn at random, give the passthrough balance of the embedding:
#: a pass of fixed cost, each column's scale within about 0.8% (one standard error) of its value.
BALANCE_ROWS = 8192


def balance_rows(n_rows):
    """Sorted indices of the ``BALANCE_ROWS`` rows, of ``n_rows`` > ``BALANCE_ROWS``, that give
    the passthrough balance; the seed is fixed, so that ``fit``, every ``partial_fit`` call and
    every data-parallel process embed the same rows."""
    return np.sort(np.random.default_rng(0).choice(n_rows, BALANCE_ROWS, replace=False))


def unchanged_on_failure(fit):
    """``fit`` (or ``partial_fit``) restoring its estimator's attributes when it raises, so that
    a refused or interrupted refit keeps the earlier fit whole. A fit replaces its attributes
    rather than changing them in place, so they are what is kept; a ``partial_fit`` continuing a
    run trains its network in place, and keeps the steps it took."""

    @functools.wraps(fit)
    def kept(self, *args, **kwargs):
        state = dict(vars(self))
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(state)
            raise

    return kept


def _same(a, b):
    """Whether two parameter values are equal (arrays and estimators included)."""
    try:
        return bool(np.all(a == b)) if not hasattr(a, "get_params") else a is b
    except (TypeError, ValueError):
        return a is b


@fill_doc
class BasePretextEncoder(
    PersistenceMixin,
    EncoderNetworkMixin,
    TableAttributes,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    BaseEstimator,
):
    """Base class of the self-supervised encoders (not for direct use).

    A method subclasses it with a keyword-only ``__init__`` that stores its own parameters,
    then the shared ones (``NETWORK_CONSTRAINTS``, ``passthrough``, ``TRAINING_CONSTRAINTS``),
    and nothing else, a numpydoc docstring, ``_parameter_constraints`` for its own parameters
    and ``_build_pretext(n_features, generator, missing)`` returning ``(PretextModule, loss
    module)`` (``docs/adding_a_method.md``). Validation, seeding, training and ``transform``
    live here, saving in ``PersistenceMixin``.
    """

    _parameter_constraints = {
        **NETWORK_CONSTRAINTS,
        "passthrough": ["boolean"],
        **TRAINING_CONSTRAINTS,
        "max_epochs": [*TRAINING_CONSTRAINTS["max_epochs"], StrOptions({"auto"})],
        "tol": [None, Interval(Real, 0, 1, closed="neither")],
    }

    def _network_skeleton(self):
        return self._encoder_skeleton()

    def _build_pretext(self, n_features, generator, missing):  # pragma: no cover - abstract
        raise NotImplementedError

    @unchanged_on_failure
    def fit(self, X, y=None, X_val=None):
        """Pretrain the encoder on the rows of ``X`` (``y`` is ignored).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows: a numeric matrix (e.g. a ColumnTransformer's output), or a DataFrame
            whose categorical columns are read natively (``categorical_features``); numeric
            columns in any units, NaN allowed.
        y : None
            Ignored; present for Pipeline compatibility.
        X_val : array-like of shape (n_val_samples, n_features), default=None
            A fixed pretext-validation set for early stopping (e.g. a paper split's
            ``pretext_val`` rows), preprocessed like ``X``. When given, every row of ``X``
            trains and ``validation_fraction`` is ignored. In a Pipeline,
            ``fit(..., enc__X_val=...)`` passes it through the earlier steps untransformed.

        Returns
        -------
        self : object
            The fitted encoder.
        """
        X, missing, module, criterion, device, (data_seed, split_seed, valid_seed) = (
            self._start(X)
        )
        for name in ("_partial_net", "_partial_params"):  # fit starts over
            self.__dict__.pop(name, None)
        if X_val is None:
            fraction = resolve_validation_fraction(self.validation_fraction, X.shape[0])
            train, valid = split_rows(X.shape[0], fraction, split_seed)
            train_rows, valid_rows = split_datasets(X, None, train, valid, device)
        else:
            X_val = self._table_input.validation_rows(self, X_val, missing is not None)
            check_two_samples(self, X_val.shape[0])
            train_rows, valid_rows = all_rows(X, None, device), all_rows(X_val, None, device)
        group = current_group()  # under data-parallel training, each process's share
        n_rows = len(train_rows) if group is None else -(-len(train_rows) // group.world_size)
        max_epochs = resolve_max_epochs(self.max_epochs, n_rows, self.batch_size)
        tol, tol_from_epoch = epoch_tol(self.tol, n_rows, self.batch_size)
        result = train_net(
            PretextNet,
            module,
            criterion,
            train_rows,
            valid_rows,
            replace(TrainingSettings.of(self), max_epochs=max_epochs, tol=tol,
                    tol_from_epoch=tol_from_epoch),
            device=device,
            seed=data_seed,
            monitor="valid_loss",
            lower_is_better=True,
            valid_seed=valid_seed,
        )
        self._keep(module, result, device, X, missing)
        return self

    @unchanged_on_failure
    def partial_fit(self, X, y=None):
        """One pass of the pretext task over the rows of ``X``, continuing the last call.

        Each call trains one epoch over its rows, keeping the optimiser, teacher and queue of
        the call before, so that a loop over chunks (a memory-mapped array, parquet row groups,
        Dask-ML's ``Incremental``) pretrains on data larger than memory; the first call builds
        the network from its rows. No validation or early stopping (``max_epochs``,
        ``patience``, ``tol`` and ``validation_fraction`` do not apply). ``fit`` starts over, and so
        does a first ``partial_fit`` after ``fit`` (with a warning); an encoder loaded from a
        file cannot continue. Changing a parameter between calls is an error.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            A chunk of rows, preprocessed like the first one (same columns). Each chunk is one
            epoch: shuffle rows across chunks if the data is ordered.
        y : None
            Ignored; present for API compatibility.

        Returns
        -------
        self : object
            The encoder, fitted on the chunks seen so far: ``center_`` and ``scale_`` are the
            first chunk's, ``embedding_mean_`` and ``embedding_scale_`` the last one's.
        """
        net = getattr(self, "_partial_net", None)
        if net is None:
            self._check_partial_start()
            X, missing, module, criterion, device, (data_seed, _, _) = self._start(X)
            net = make_net(
                PretextNet, module, criterion, None,
                replace(TrainingSettings.of(self), max_epochs=1),
                device=device, seed=data_seed, monitor=None, lower_is_better=True,
            )
            self._partial_net, self._partial_params = net, self.get_params(deep=False)
        else:
            self._check_partial_params()
            module, device, missing = net.module, self.device_, self._missing_values_layer()
            module.encoder.requires_grad_(True)  # keep_trained froze it for transform
            X = self._table_input.transform(self, X)
            check_missing_columns(self, X, missing is not None)
            check_two_samples(self, X.shape[0])
        net.partial_fit(all_rows(X, None, device), None)
        self._keep(module, net_result(net, replace(TrainingSettings.of(self), max_epochs=1)),
                   device, X, missing)
        return self

    def _start(self, X):
        """What ``fit`` and a first ``partial_fit`` set up before training: ``X`` checked, its
        missing-values layer, the pretext module (corruption groups set) and loss, the device
        and the seeds of the data order, the validation split and the validation corruption."""
        self._validate_params()
        table = TableInput(self.categorical_features)  # kept once it has read X
        X = table.fit_transform(self, X)
        check_two_samples(self, X.shape[0])
        missing = table.fit_missing_values(self, X)
        self._table_input = table
        own_output = getattr(self, "_sklearn_output_config", {}).get("transform", "default")
        if self.passthrough and own_output != "default":
            # its own DataFrame output (set_output) names its columns: a clash is refused
            # before training (a classifier reads its encoder's arrays, whatever set_config says)
            self._passthrough_names(_check_feature_names_in(self, None),
                                    _generate_get_feature_names_out(self, self.embedding_dim))
        groups = expand_groups(
            column_groups(self, getattr(self, "feature_groups", None), self.n_features_in_),
            table.input_widths(),
        )
        device = resolve_device(self.device)
        self.precision_ = resolve_precision(self.precision, device)
        init_seed, *seeds = draw_seeds(self.random_state, 4)
        with isolated_global_rng():
            init_generator = torch.Generator().manual_seed(init_seed)
            module, criterion = self._build_pretext(X.shape[1], init_generator, missing)
        if groups is not None:
            module.set_corruption_groups(groups)
        center_input(module, X, missing)
        return X, missing, module, criterion, device, seeds

    def _keep(self, module, result, device, X, missing):
        """Store the trained encoder and what ``transform`` needs from the rows ``X``."""
        keep_trained(self, module.encoder, result, device)
        self._n_features_out = self.embedding_dim
        if not self.passthrough:
            # no pass over rows transform would never read; drop an earlier fit's balance
            for name in ("embedding_mean_", "embedding_scale_"):
                vars(self).pop(name, None)
            return
        # the embedding block's balance, from at most BALANCE_ROWS of the rows
        if X.shape[0] > BALANCE_ROWS:
            X = X[balance_rows(X.shape[0])]
        inputs = X if missing is None else fill_and_indicate(X, missing)
        self.embedding_mean_, self.embedding_scale_ = embedding_balance(
            inputs, batched_forward(self.network_, X, self.device_, self.embedding_dim)
        )

    def _embedding_balance(self):
        """``(embedding_mean_, embedding_scale_)`` for ``passthrough=True``; a ValueError when
        fitted with ``passthrough=False``."""
        if not hasattr(self, "embedding_mean_"):
            raise ValueError(
                f"This {type(self).__name__} was fitted with passthrough=False, so it "
                "holds no balance for the embedding block (embedding_mean_, "
                "embedding_scale_) that passthrough=True needs; fit it again with "
                "passthrough=True."
            )
        return self.embedding_mean_, self.embedding_scale_

    def _check_partial_start(self):
        """A first ``partial_fit`` replaces a network fitted with ``fit``, with a warning, and
        refuses one loaded from a file (its optimiser, teacher and queue were not saved)."""
        if not hasattr(self, "network_"):
            return
        if hasattr(self, "_partial_params"):
            raise ValueError(
                f"This {type(self).__name__} was loaded from a file or a pickle, which keep "
                "the network but not the optimiser, teacher and queue that partial_fit "
                "continues. Call partial_fit on an unfitted clone (sklearn.base.clone) to "
                "train chunk by chunk from the start."
            )
        warn(
            f"partial_fit on a {type(self).__name__} fitted with fit starts a new run: fit "
            "keeps no optimiser, teacher or queue to continue, and its network is replaced. "
            "Train with partial_fit from the start to continue across chunks.",
            UserWarning,
        )

    def _check_partial_params(self):
        changed = sorted(
            name for name, value in self.get_params(deep=False).items()
            if name != "verbose" and not _same(value, self._partial_params[name])
        )
        if changed:
            raise ValueError(
                f"The parameters {changed} of this {type(self).__name__} changed since the "
                "first partial_fit; the run cannot continue with other ones. Call fit, or "
                "partial_fit on an unfitted clone, to start over with them."
            )

    def transform(self, X):
        """Embed rows with the pretrained encoder.

        %(X_parameters)s

        Returns
        -------
        Z : ndarray of shape (n_samples, embedding_dim)
            The float32 embeddings z of the rows; with ``passthrough=True``, the rows (missing
            entries filled, then an indicator column per feature of ``missing_indicators_``)
            followed by their balanced embeddings, a CSR matrix when ``X`` is sparse.
        """
        check_is_fitted(self)
        balance = self._embedding_balance() if self.passthrough else None
        X = self._table_input.transform(self, X)
        missing = self._missing_values_layer()
        X = self._table_input.fill_unseen_missing(self, X)
        Z = batched_forward(self.network_, X, self.device_, self._n_features_out)
        if balance is None:
            return Z
        if missing is not None:
            X = fill_and_indicate(X, missing)
        Z = balanced(Z, *balance)
        if sp.issparse(X):
            return sp.hstack([X, Z], format="csr", dtype=np.float32)
        return np.hstack([X, Z])

    def get_feature_names_out(self, input_features=None):
        """Get the names of the columns of ``transform``'s output.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Input feature names, checked against ``feature_names_in_``; only used with
            ``passthrough=True``.

        Returns
        -------
        feature_names_out : ndarray of str
            ``"<class name lower-cased><i>"`` for the embedding's columns; with
            ``passthrough=True`` after the input feature names and ``"missingindicator_<name>"``
            for each feature in ``missing_indicators_``. A repeated name raises a ValueError.
        """
        embedding_names = super().get_feature_names_out()
        if not self.passthrough:
            return embedding_names
        self._embedding_balance()  # names only for columns transform can return
        return self._passthrough_names(_check_feature_names_in(self, input_features),
                                       embedding_names)

    def _passthrough_names(self, input_names, embedding_names):
        """The names of ``transform``'s columns with ``passthrough=True``: the input's, its
        indicators' and ``embedding_names``; raises a ValueError where two are alike (a
        DataFrame output would repeat them)."""
        indicator_names = [f"missingindicator_{input_names[j]}" for j in self.missing_indicators_]
        names = np.concatenate([self._table_input.input_feature_names(input_names),
                                np.asarray(indicator_names, dtype=object), embedding_names])
        repeated = [name for name, count in Counter(names.tolist()).items() if count > 1]
        if repeated:
            raise ValueError(
                f"{type(self).__name__}(passthrough=True) would name two output columns "
                f"alike: {', '.join(map(repr, repeated[:5]))}. Its output names are "
                "the input's, one per category of a categorical column ('<column>_<category>'), "
                f"'missingindicator_<column>' and {embedding_names[0]!r}...; rename the input "
                "columns that clash (a second passthrough encoder in a pipeline repeats the "
                "first one's embedding names: give it passthrough=False)."
            )
        return names

    def _output_width(self):
        """The number of columns of ``transform``'s output."""
        if not self.passthrough:
            return self.embedding_dim
        return self._table_input.n_inputs + len(self.missing_indicators_) + self.embedding_dim

    def _missing_values_layer(self):
        """The network's :class:`~._networks.MissingValues` input layer, or None."""
        return self.network_[0] if self._table_input.fitted_with_missing else None

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = True
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags
