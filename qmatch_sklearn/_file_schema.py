"""What a file written by ``save`` may hold: ``load`` checks it all before it builds anything.

Parameters (all of them: a default may be another model), fitted attributes by name, type
and shape, and tensors against the network built on the ``meta`` device, so ``load``'s
memory is bounded by the file's size. Every refusal is a :class:`Refused`.
"""

import inspect
import numbers
import re

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.frozen import FrozenEstimator
from sklearn.utils._param_validation import InvalidParameterError, validate_parameter_constraints

from ._networks import isolated_global_rng
from ._precision import PRECISIONS
from ._table import MAX_CATEGORIES, TableInput
from .heads._boosting import check_trees

#: What a fitted estimator's ``device_`` may be: a torch device with its index.
DEVICE = re.compile(r"(cpu|mps|cuda)(:\d+)?")
#: What ``set_output`` may have stored (``_sklearn_output_config``).
OUTPUT_CONFIGS = ("default", "pandas", "polars")
#: The heads a classifier or regressor can keep (``head_``).
HEADS = ("logistic", "ridge", "linear", "fine-tuned")


class Refused(ValueError):
    """A field of a file that ``load`` will not build an estimator from (an empty field: the
    document's top)."""

    def __init__(self, field, message):
        super().__init__(message)
        self.field = field or "the top"


def _require(condition, field, message):
    if not condition:
        raise Refused(field, message)


def _refuse_first(names, field, describe):
    """Refuse the first of ``names`` (sorted), if there is one: ``describe(name)`` says why."""
    if names:
        name = sorted(names)[0]
        raise Refused(field(name), describe(name))


def _count(state, name, field, minimum=0):
    value = state[name]
    _require(isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
             and value >= minimum, field,
             f"{name} must be an integer of at least {minimum}, got {value!r}.")
    return int(value)


def _array(state, name, field, dtype, shape=None, finite=False):
    """``state[name]``, refused unless an array of exactly ``dtype`` (fit's: another rounds
    differently) and ``shape``, and with ``finite`` finite."""
    value = state[name]
    _require(isinstance(value, np.ndarray) and value.dtype == np.dtype(dtype), field,
             f"{name} must be an array of dtype {np.dtype(dtype)}, got {type(value).__name__}"
             + (f" of dtype {value.dtype}" if isinstance(value, np.ndarray) else "") + ".")
    if shape is not None:
        _require(value.shape == shape, field,
                 f"{name} must have shape {shape}, got {value.shape}.")
    if finite:
        _require(np.isfinite(value).all(), field, f"{name} must be finite.")
    return value


def _indices(state, name, field, n_features):
    value = _array(state, name, field, np.int64)
    _require(value.ndim == 1 and np.all((value >= 0) & (value < n_features)), field,
             f"{name} must list columns among the {n_features} of X.")


def _number(state, name, field, low, high):
    value = state[name]
    _require(isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
             and low <= value <= high, field,
             f"{name} must be a number in [{low}, {high}], got {value!r}.")


def _flag(state, name, field):
    _require(isinstance(state[name], (bool, np.bool_)), field,
             f"{name} must be True or False, got {state[name]!r}.")


def _check_table(state, field):
    """Check ``_table_input``, a :class:`~._table.TableInput`'s state."""
    table = state["_table_input"]
    names = {"categorical_features", *TableInput.FITTED}
    _require(isinstance(table, dict) and set(table) == names, field("_table_input"),
             f"_table_input must hold exactly {sorted(names)}.")

    def entry(name):
        return field(f"_table_input.{name}")

    try:
        validate_parameter_constraints(TableInput._parameter_constraints,
                                       {"categorical_features": table["categorical_features"]},
                                       "TableInput")
    except InvalidParameterError as error:
        raise Refused(entry("categorical_features"), str(error)) from None
    n_features = state["n_features_in_"]
    _array(table, "center_", entry("center_"), np.float64, (n_features,), finite=True)
    scale = _array(table, "scale_", entry("scale_"), np.float64, (n_features,), finite=True)
    _require((scale > 0).all(), entry("scale_"), "scale_ must be finite and positive.")
    mask = table["is_categorical_"]
    if mask is not None:
        mask = _array(table, "is_categorical_", entry("is_categorical_"), bool, (n_features,))
    categories = table["categories_"]
    if mask is None:
        _require(categories is None, entry("categories_"),
                 "categories_ must be None when no column is categorical.")
    else:
        _require(isinstance(categories, list) and len(categories) == int(mask.sum())
                 and all(isinstance(values, np.ndarray) and values.ndim == 1
                         and 0 < len(values) <= MAX_CATEGORIES for values in categories),
                 entry("categories_"),
                 f"categories_ must hold one array of 1 to {MAX_CATEGORIES} categories for "
                 "each categorical column.")
    for name in ("missing_features_", "missing_indicators_"):
        _indices(table, name, entry(name), n_features)


def _check_columns(state, field):
    n_features = _count(state, "n_features_in_", field("n_features_in_"), minimum=1)
    if "feature_names_in_" in state:
        names = state["feature_names_in_"]
        _require(isinstance(names, np.ndarray) and names.shape == (n_features,)
                 and all(isinstance(name, str) for name in names.flat),
                 field("feature_names_in_"),
                 f"feature_names_in_ must be {n_features} strings.")
    _check_table(state, field)


def _check_training(state, field):
    for name in ("best_epoch_", "n_epochs_"):
        _count(state, name, field(name))
    history = state["history_"]
    _require(isinstance(history, list) and all(isinstance(row, dict) for row in history),
             field("history_"), "history_ must be a list of dicts.")
    _require(isinstance(state["device_"], str) and DEVICE.fullmatch(state["device_"]),
             field("device_"), f"device_ must name a device, got {state['device_']!r}.")
    _require(state["precision_"] in PRECISIONS[:-1], field("precision_"),
             f"precision_ must be one of {PRECISIONS[:-1]}, got {state['precision_']!r}.")


def _check_head(state, field):
    _flag(state, "frozen_encoder_", field("frozen_encoder_"))
    _flag(state, "_shares_encoder_network", field("_shares_encoder_network"))
    _require(state["head_"] in HEADS, field("head_"),
             f"head_ must be one of {HEADS}, got {state['head_']!r}.")
    for name in ("embedding_weight_", "self_training_weight_", "label_spreading_weight_"):
        if name in state:  # the last two: a classifier's
            _number(state, name, field(name), 0.0, 1.0)
    if "max_time_reached_" in state:
        _require(state["max_time_reached_"] in (None, *TIME_LIMITED_STAGES),
                 field("max_time_reached_"),
                 f"max_time_reached_ must be None or one of {TIME_LIMITED_STAGES}.")
    if "encoder_" in state:
        encoder = state["encoder_"]
        inner = encoder.estimator if isinstance(encoder, FrozenEstimator) else encoder
        _require(isinstance(inner, BaseEstimator) and hasattr(inner, "network_")
                 and hasattr(inner, "transform"), field("encoder_"),
                 "encoder_ must be a fitted encoder of qmatch_sklearn.")
    if "classes_" in state:
        classes = state["classes_"]
        _require(isinstance(classes, np.ndarray) and classes.ndim == 1 and len(classes) >= 2,
                 field("classes_"), "classes_ must be an array of at least 2 classes.")
        _number(state, "boosting_weight_", field("boosting_weight_"), 0.0, 1.0)
        _number(state, "boosting_temperature_", field("boosting_temperature_"), 1e-6, 1e6)
        n_inputs = TableInput.from_state(state["_table_input"]).n_inputs
        if state["boosted_trees_"] is not None:
            try:
                check_trees(state["boosted_trees_"], n_inputs, len(classes))
            except ValueError as error:
                raise Refused(field("boosted_trees_"), str(error)) from None
    if "n_outputs_" in state:
        n_outputs = _count(state, "n_outputs_", field("n_outputs_"), minimum=1)
        for name in ("target_mean_", "target_scale_"):
            _array(state, name, field(name), np.float64, (n_outputs,), finite=True)
        low, high = (_array(state, name, field(name), np.float64, (n_outputs,), finite=True)
                     for name in ("target_min_", "target_max_"))
        _require(np.all(low <= high), field("target_max_"),
                 "target_max_ must be at least target_min_.")
        _flag(state, "_one_dimensional_y", field("_one_dimensional_y"))
        _require(not state["_one_dimensional_y"] or n_outputs == 1, field("_one_dimensional_y"),
                 "a one-dimensional target has one output.")


def _check_encoder(state, params, field):
    if "embedding_mean_" in state or params.get("passthrough"):
        for name in ("embedding_mean_", "embedding_scale_"):
            _require(name in state, field(name),
                     f"a fitted encoder with passthrough=True needs {name}.")
            _array(state, name, field(name), np.float32, (params["embedding_dim"],),
                   finite=True)
    if "_n_features_out" in state:
        _require(state["_n_features_out"] == params["embedding_dim"], field("_n_features_out"),
                 "_n_features_out must equal embedding_dim.")


#: The fitted attributes each kind of estimator may hold (beyond ``network_``).
_COMMON = {"n_features_in_", "feature_names_in_", "_table_input", "best_epoch_", "n_epochs_",
           "history_", "device_", "precision_", "_partial_params", "_sklearn_output_config"}
_ENCODER = _COMMON | {"embedding_mean_", "embedding_scale_", "_n_features_out"}
_HEAD = _COMMON | {"frozen_encoder_", "_shares_encoder_network", "head_", "embedding_weight_"}
_CLASSIFIER = {"classes_", "boosting_weight_", "boosted_trees_", "boosting_temperature_",
               "self_training_weight_", "label_spreading_weight_"}
_REGRESSOR = {"n_outputs_", "target_mean_", "target_scale_", "target_min_", "target_max_",
              "_one_dimensional_y"}


def allowed_attributes(cls):
    """The fitted attributes an estimator of ``cls`` may hold: an encoder's or a head's."""
    if not hasattr(cls, "_closed_form_head"):
        return _ENCODER
    names = set(_HEAD)
    takes_encoder = "encoder" in inspect.signature(cls.__init__).parameters
    if takes_encoder:
        names |= {"encoder_", "max_time_reached_"}
    return names | (_CLASSIFIER if hasattr(cls, "predict_proba") else _REGRESSOR)


#: The stages of a fit during which ``max_time`` can run out (``max_time_reached_``).
TIME_LIMITED_STAGES = ("pretraining", "head")


def checked_params(cls, params, field):
    """``params``, refused unless exactly the class's parameters, within its constraints."""
    names = set(inspect.signature(cls.__init__).parameters) - {"self"}
    _refuse_first(set(params) - names, field,
                  lambda name: f"{cls.__name__} has no parameter {name!r}.")
    _refuse_first(names - set(params), field,
                  lambda name: f"the file holds no value for {cls.__name__}'s parameter "
                               f"{name!r}.")
    if cls is FrozenEstimator:
        inner = params["estimator"]
        _require(isinstance(inner, BaseEstimator) and not isinstance(inner, FrozenEstimator),
                 field("estimator"),
                 f"FrozenEstimator must wrap an estimator of qmatch_sklearn, got "
                 f"{type(inner).__name__}.")
        return params
    try:
        validate_parameter_constraints(cls._parameter_constraints, params, cls.__name__)
    except InvalidParameterError as error:
        name = next((n for n in params if f"'{n}' parameter" in str(error)), "")
        raise Refused(field(name), str(error)) from None
    return params


def check_attributes(cls, params, attributes, field):
    """Raise :class:`Refused` unless ``attributes`` are what a fitted ``cls`` holds."""
    if cls is FrozenEstimator:
        _refuse_first(set(attributes) - {"_sklearn_version"}, field,
                      lambda name: f"FrozenEstimator holds no attribute {name!r}.")
        _require(isinstance(attributes.get("_sklearn_version", ""), str),
                 field("_sklearn_version"), "_sklearn_version must be a version string.")
        return
    if "_sklearn_output_config" in attributes:
        config = attributes["_sklearn_output_config"]
        _require(isinstance(config, dict) and set(config) <= {"transform"}
                 and all(value in OUTPUT_CONFIGS for value in config.values()),
                 field("_sklearn_output_config"),
                 f"_sklearn_output_config must be set_output's, got {config!r}.")
    if "network_" not in attributes:  # unfitted: parameters (and set_output's config) only
        _refuse_first(set(attributes) - {"_sklearn_output_config"}, field,
                      lambda name: f"an unfitted {cls.__name__} holds no attribute {name!r}.")
        return
    allowed = allowed_attributes(cls)
    _refuse_first(set(attributes) - allowed - {"network_"}, field,
                  lambda name: f"{cls.__name__} holds no fitted attribute {name!r}.")

    def needs(name):
        return f"a fitted {cls.__name__} needs {name!r}."

    required = {"n_features_in_", "_table_input", "best_epoch_", "n_epochs_", "history_",
                "device_", "precision_"}
    _refuse_first(required - set(attributes), field, needs)
    state = {**params, **attributes}
    _check_columns(state, field)
    _check_training(state, field)
    if "_partial_params" in state:
        _require(isinstance(state["_partial_params"], dict)
                 and set(state["_partial_params"]) <= set(params), field("_partial_params"),
                 "_partial_params must hold parameters of the estimator.")
    if "frozen_encoder_" in allowed:
        _refuse_first(allowed - _COMMON - set(attributes), field, needs)
        _check_head(state, field)
    else:
        _check_encoder(state, params, field)


def _torch_dtype(dtype):
    try:
        return torch.from_numpy(np.empty(0, dtype=dtype)).dtype
    except TypeError:  # a dtype torch has no tensor of
        return None


def check_weights(cls, params, attributes, tensors, field):
    """Raise :class:`Refused` unless ``tensors`` match the network built on ``meta``."""
    probe = cls.__new__(cls)
    vars(probe).update({**params, **attributes,
                        "_table_input": TableInput.from_state(attributes["_table_input"])})
    try:
        with torch.device("meta"), isolated_global_rng():
            expected = probe._stored_network(probe._network_skeleton()).state_dict()
    except (ValueError, TypeError, IndexError, KeyError, RuntimeError) as error:
        raise Refused(field("network_"), f"its parameters describe no network ({error}).") \
            from None
    _refuse_first(set(expected) ^ set(tensors), lambda name: field(f"network_.{name}"),
                  lambda name: f"the network has {'no' if name in tensors else 'a'} tensor "
                               f"{name!r} that the file "
                               f"{'holds' if name in tensors else 'lacks'}.")
    for name, tensor in expected.items():
        array = tensors[name]
        # save writes a 0-d tensor (a batch norm's step count) with shape (1,)
        shape = tuple(tensor.shape) or ((), (1,))
        _require((tuple(array.shape) in shape if not tensor.shape
                  else tuple(array.shape) == shape)
                 and _torch_dtype(array.dtype) == tensor.dtype,
                 field(f"network_.{name}"),
                 f"the tensor has shape {tuple(array.shape)} and dtype {array.dtype}; the "
                 f"network needs {tuple(tensor.shape)} and {tensor.dtype}.")
