"""ONNX export: the library's estimators as skl2onnx converters, and ``to_onnx`` (issue #33).

The converters splice ``torch.onnx.export``'s graph of the prediction module (``_serving.py``)
into skl2onnx's graph of a whole ``Pipeline``. Sparse input does not convert, and the graph
does not check its input as ``predict`` does. Needs the ``[onnx]`` extra.
"""

import copy

import numpy as np
import pandas as pd
import torch
from scipy.sparse import issparse
from sklearn.preprocessing import QuantileTransformer
from sklearn.utils.validation import check_is_fitted

from . import _serving
from ._quantile_graph import QuantileMap
from ._table import as_pandas

#: The first ONNX opset of torch's exporter.
MIN_OPSET = 18


def serving_module(estimator):
    """The fitted ``estimator``'s prediction as one torch module on the CPU.

    A ``QuantileTransformer``'s is :class:`~._quantile_graph.QuantileMap`.
    """
    from ._head import _head_input

    check_is_fitted(estimator)
    if isinstance(estimator, QuantileTransformer):
        return QuantileMap(estimator).eval()
    center, scale = estimator._table_input.network_input_map()
    scaled = _serving.Scaled(center, scale,
                             fills_missing=not estimator._table_input.fitted_with_missing)
    network = copy.deepcopy(estimator.network_).cpu().eval()
    kind = _kind(estimator)
    if kind == "transformer":
        # with passthrough=True, transform's [filled input, indicators, balanced embedding]
        return _serving.Transformer(scaled, _head_input(estimator, network)).eval()
    module = _serving.Classifier if kind == "classifier" else _serving.Regressor
    return module(scaled, network, estimator._prediction_head()).eval()


def export_graph(estimator, dtype=np.float32, opset=MIN_OPSET):
    """The ONNX ``ModelProto`` of :func:`serving_module`: ``X`` in, ``Y`` (and ``L``) out."""
    module = serving_module(estimator)
    outputs = ["L", "Y"] if _kind(estimator) == "classifier" else ["Y"]
    if opset < MIN_OPSET:
        raise ValueError(f"torch exports ONNX opset {MIN_OPSET} or later; the target opset "
                         f"is {opset}. Pass target_opset={MIN_OPSET} or more.")
    n_inputs = (estimator.n_features_in_ if isinstance(estimator, QuantileTransformer)
                else estimator._table_input.n_inputs)
    sample = torch.from_numpy(np.zeros((2, n_inputs), dtype=dtype))
    rows = torch.export.Dim("rows")
    program = torch.onnx.export(
        module, (sample,), dynamo=True, dynamic_shapes=({0: rows},), input_names=["X"],
        output_names=outputs, opset_version=opset, optimize=True, verbose=False,
    )
    return program.model_proto


def _kind(estimator):
    if hasattr(estimator, "predict_proba"):
        return "classifier"
    return "regressor" if hasattr(estimator, "predict") else "transformer"


def _integer_labels(classes):
    """Whether skl2onnx writes these classes as int64 labels (else as strings)."""
    if classes.dtype.kind in "iub":
        return True
    return classes.dtype.kind == "f" and bool(np.all(np.mod(classes, 1) == 0))


def _double_input(operator):
    """Whether the graph reads float64 rows: unless every input is float32 (exact integers)."""
    from skl2onnx.common.data_types import FloatTensorType

    return not all(isinstance(variable.type, FloatTensorType) for variable in operator.inputs)


def _shape_calculator(operator):
    from skl2onnx.common.data_types import (
        DoubleTensorType,
        FloatTensorType,
        Int64TensorType,
        StringTensorType,
    )

    estimator = operator.raw_operator
    kind = _kind(estimator)
    rows = operator.inputs[0].get_first_dimension()
    tensor = DoubleTensorType if _double_input(operator) else FloatTensorType
    if kind == "classifier":
        label = Int64TensorType if _integer_labels(estimator.classes_) else StringTensorType
        operator.outputs[0].type = label([rows])
        operator.outputs[1].type = FloatTensorType([rows, len(estimator.classes_)])
    elif kind == "regressor":
        operator.outputs[0].type = tensor([rows, estimator.n_outputs_])
    elif isinstance(estimator, QuantileTransformer):  # one column per fitted column
        operator.outputs[0].type = tensor([rows, estimator.quantiles_.shape[1]])
    else:
        operator.outputs[0].type = tensor([rows, estimator._output_width()])


def _node(scope, container, prefix, op_type, inputs, output=None, **attributes):
    """Add one node to ``container``; the name of its (one) output, a new one unless given."""
    if output is None:
        output = scope.get_unique_variable_name(f"{prefix}{op_type.lower()}")
    container.add_node(op_type, inputs, [output],
                       name=scope.get_unique_operator_name(f"{prefix}{op_type}"), **attributes)
    return output


def _network_rows(scope, operator, container, to, prefix):
    """The name of the rows as one tensor of type ``to``, categorical columns one-hot."""
    from onnx import TensorProto
    from skl2onnx.common.data_types import StringTensorType

    estimator = operator.raw_operator
    mask = getattr(estimator, "is_categorical_", None)
    inputs = [variable.full_name for variable in operator.inputs]
    strings = [isinstance(variable.type, StringTensorType) for variable in operator.inputs]
    if mask is not None and len(inputs) == 1 and len(mask) > 1:  # one array: its columns
        inputs = [
            _node(scope, container, prefix, "Gather",
                  [inputs[0], _constant(scope, container, prefix, TensorProto.INT64, [1], [j])],
                  axis=1)
            for j in range(len(mask))
        ]
        strings *= len(mask)
    categories = iter(estimator.categories_ if mask is not None else ())
    columns = []
    for j, (column, is_string) in enumerate(zip(inputs, strings, strict=True)):
        if mask is not None and mask[j]:
            column = _one_hot(scope, container, prefix, column, is_string, next(categories))
        columns.append(_node(scope, container, prefix, "Cast", [column], to=to))
    if len(columns) == 1:
        return columns[0]
    return _node(scope, container, prefix, "Concat", columns, axis=1)


def _constant(scope, container, prefix, data_type, shape, values):
    name = scope.get_unique_variable_name(f"{prefix}constant")
    container.add_initializer(name, data_type, shape, values)
    return name


def _one_hot(scope, container, prefix, column, is_string, categories):
    """The one-hot block of ``column``; a missing or unseen category gives zeros."""
    from onnx import TensorProto

    indices = np.arange(len(categories))
    if is_string:
        codes = _node(scope, container, prefix, "LabelEncoder", [column], op_domain="ai.onnx.ml",
                      op_version=2, keys_strings=[str(c) for c in categories],
                      values_int64s=indices.tolist(), default_int64=-1)
        reference = _constant(scope, container, prefix, TensorProto.INT64,
                              [1, len(categories)], indices.tolist())
        return _node(scope, container, prefix, "Equal", [codes, reference])
    values = _node(scope, container, prefix, "Cast", [column], to=TensorProto.DOUBLE)
    reference = _constant(scope, container, prefix, TensorProto.DOUBLE, [1, len(categories)],
                          np.asarray(categories, dtype=np.float64).tolist())
    return _node(scope, container, prefix, "Equal", [values, reference])


def _splice(scope, operator, container, graph, to):
    """Add ``graph`` to ``container``; returns the renaming of its names there."""
    from onnx import helper, numpy_helper

    prefix = scope.get_unique_variable_name(f"{operator.full_name}_")
    names = {"X": _network_rows(scope, operator, container, to, prefix)}

    def renamed(name):
        if not name:  # an omitted optional input
            return name
        return names.setdefault(name, f"{prefix}{name}")

    for tensor in graph.initializer:
        array = numpy_helper.to_array(tensor)
        container.add_initializer(renamed(tensor.name), tensor.data_type, list(array.shape),
                                  numpy_helper.from_array(array, renamed(tensor.name)))
    for node in graph.node:
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        container.add_node(node.op_type, [renamed(i) for i in node.input],
                           [renamed(o) for o in node.output], op_domain=node.domain,
                           name=scope.get_unique_operator_name(f"{prefix}{node.op_type}"),
                           **attributes)
    return renamed


def _converter(scope, operator, container):
    from onnx import TensorProto

    estimator = operator.raw_operator
    double = _double_input(operator)
    graph = export_graph(estimator, np.float64 if double else np.float32,
                         container.target_opset).graph
    to = TensorProto.DOUBLE if double else TensorProto.FLOAT
    renamed = _splice(scope, operator, container, graph, to)
    prefix = scope.get_unique_variable_name(f"{operator.full_name}_")
    result = renamed("Y")
    outputs = [o.full_name for o in operator.outputs]
    kind = _kind(estimator)
    if kind == "classifier":
        _node(scope, container, prefix, "Identity", [result], output=outputs[1])
        # predict's argmax of the logits (the softmax can round two of them equal)
        index = _node(scope, container, prefix, "ArgMax", [renamed("L")], axis=1, keepdims=0)
        labels = estimator.classes_
        if _integer_labels(labels):
            classes = _constant(scope, container, prefix, TensorProto.INT64, [len(labels)],
                                labels.astype(np.int64).tolist())
        else:
            classes = _constant(scope, container, prefix, TensorProto.STRING, [len(labels)],
                                [str(label).encode() for label in labels])
        picked = _node(scope, container, prefix, "ArrayFeatureExtractor", [classes, index],
                       op_domain="ai.onnx.ml")
        flat = _constant(scope, container, prefix, TensorProto.INT64, [1], [-1])
        _node(scope, container, prefix, "Reshape", [picked, flat], output=outputs[0])
        return
    _node(scope, container, prefix, "Cast", [result], output=outputs[0], to=to)


def register_onnx_converters():
    """Register skl2onnx converters for the library's estimators and ``QuantileTransformer``.

    ``skl2onnx.to_onnx`` then converts them inside any ``Pipeline``. Idempotent.
    """
    from skl2onnx import update_registered_converter

    from ._persistence import _LOADABLE

    update_registered_converter(QuantileTransformer, "SklearnQuantileTransformer",
                                _shape_calculator, _converter)

    for name, cls in _LOADABLE.items():
        if name == "FrozenEstimator":  # to_onnx converts the estimator it wraps
            continue
        # skl2onnx's ZipMap step reads "nocl" too (class names as keys or not)
        options = ({"zipmap": [True, False, "columns"], "nocl": [False, True]}
                   if hasattr(cls, "predict_proba") else None)
        update_registered_converter(cls, f"QMatchSklearn{name}", _shape_calculator,
                                    _converter, options=options)


#: Default largest difference between the graph's and the fitted model's outputs.
PARITY_TOLERANCE = 1e-4
#: The parity check's perturbed copies: numeric columns moved by these fractions of spread.
PERTURBATIONS = (0.01, 0.1)
#: Sample rows the parity check runs at most.
PARITY_ROWS = 256


def to_onnx(model, X, *, parity_tolerance=PARITY_TOLERANCE, **options):
    """Convert a fitted estimator of the library, or a ``Pipeline`` holding some, to ONNX.

    Registers the converters (:func:`register_onnx_converters`) and calls
    ``skl2onnx.to_onnx(model, X, **options)`` (target opset 18 at least). Classifiers
    output their label and their probabilities as a (rows, classes) array (no zipmap).

    Parameters
    ----------
    model : estimator or Pipeline
        Fitted.
    X : ndarray or DataFrame of shape (n_samples, n_features)
        Sample rows: they give the graph's inputs, and the graph is checked on
        them. A DataFrame with string column names (the fitted columns, in order)
        gives one input per column (numbers, or strings); else one input ``X``.
    parity_tolerance : float or None, default=1e-4
        The export is refused, naming the first step whose graph disagrees, where
        an output differs from the fitted model's by more than this (absolute, or
        relative) on the sample rows or perturbed copies. None skips the check.
    **options
        Passed to ``skl2onnx.to_onnx`` (``target_opset``, ``options``, ...).

    Returns
    -------
    onnx.ModelProto
        The model; ``onnx.save(model, path)`` writes it.
    """
    import skl2onnx

    check_is_fitted(model)
    X = as_pandas(X)  # a polars or pyarrow sample reads as the pandas one
    if issparse(X):
        raise ValueError(
            "to_onnx needs dense sample rows: the exported graph reads a dense tensor "
            "(sparse input is not supported by the export)."
        )
    width = np.shape(X)[1] if np.ndim(X) == 2 else None
    expected = getattr(model, "n_features_in_", width)
    if width != expected:
        raise ValueError(
            f"to_onnx: the sample X has shape {np.shape(X)}, but the model was fitted on "
            f"{expected} features; pass a few rows (n_samples, {expected}) as it reads them."
        )
    names = getattr(model, "feature_names_in_", None)
    if isinstance(X, pd.DataFrame) and names is not None and list(X.columns) != list(names):
        raise ValueError(
            f"to_onnx: the sample's columns {list(X.columns)} are not the columns the model "
            f"was fitted on, in their order: {list(names)}. Pass X[{list(names)}]."
        )
    register_onnx_converters()
    converted = _unfrozen(model)
    last = converted.steps[-1][1] if hasattr(converted, "steps") else converted
    if hasattr(model, "predict_proba"):
        given = options.get("options") or {}
        if id(last) not in given and type(last) not in given:
            options["options"] = {id(last): {"zipmap": False}, **given}
    sample = X.iloc[:PARITY_ROWS] if isinstance(X, pd.DataFrame) else np.asarray(X)[:PARITY_ROWS]
    if isinstance(sample, pd.DataFrame) and not all(isinstance(c, str) for c in sample.columns):
        sample = sample.to_numpy()  # names that are not strings name no graph input: one X
    onnx_model = skl2onnx.to_onnx(converted, _as_graph_inputs(sample[:1]), **options)
    if parity_tolerance is not None:
        _check_parity(model, onnx_model, sample, parity_tolerance)
    return onnx_model


def _perturbed(sample):
    """``sample`` and seeded copies with its float columns moved (:data:`PERTURBATIONS`)."""
    rng = np.random.default_rng(0)

    def moved(values, fraction):
        spread = np.nanstd(values, axis=0) if np.isfinite(values).any() else 0.0
        noise = rng.normal(size=values.shape) * fraction * np.nan_to_num(spread)
        return (values + noise).astype(values.dtype)

    copies = [sample]
    for fraction in PERTURBATIONS:
        if isinstance(sample, pd.DataFrame):
            frame = sample.copy()
            for column in frame.columns:
                if pd.api.types.is_float_dtype(frame[column]):
                    frame[column] = moved(frame[column].to_numpy(), fraction)
            copies.append(frame)
        elif np.issubdtype(sample.dtype, np.floating):
            copies.append(moved(sample, fraction))
    return copies


def _session(onnx_model):
    import onnxruntime

    return onnxruntime.InferenceSession(onnx_model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])


def _unfrozen(model):
    """``model`` with each ``FrozenEstimator`` unwrapped: skl2onnx converts no wrapper."""
    from sklearn.frozen import FrozenEstimator
    from sklearn.pipeline import Pipeline

    if isinstance(model, FrozenEstimator):
        return _unfrozen(model.estimator)
    if isinstance(model, Pipeline):
        return Pipeline([(name, _unfrozen(step)) for name, step in model.steps])
    return model


#: What the parity check feeds for a missing category: no column's category (unlike "").
MISSING_CATEGORY = "\x00missing"


def _as_graph_inputs(rows):
    """``rows`` as the graph reads them: numbers of an extension dtype (pandas' nullable
    ``Int64``, ``boolean``, Arrow-backed) as float64 with NaN for a missing value, as the
    estimators read them; missing categories as :data:`MISSING_CATEGORY`."""
    if not isinstance(rows, pd.DataFrame):
        return rows
    rows = rows.copy()
    for column in rows.columns:
        dtype = rows[column].dtype
        numeric = ((pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))
                   and not isinstance(dtype, pd.CategoricalDtype))
        if not numeric:
            values = rows[column].astype(object)
            rows[column] = values.where(values.notna(), MISSING_CATEGORY).map(str).astype(object)
        elif not isinstance(dtype, np.dtype):  # pandas' nullable or Arrow-backed
            rows[column] = rows[column].to_numpy(dtype=np.float64, na_value=np.nan)
    return rows


def _graph_outputs(session, rows):
    """What ``session`` computes for ``rows``, fed as ``to_onnx``'s sample was."""
    inputs = session.get_inputs()
    if isinstance(rows, pd.DataFrame):
        rows = _as_graph_inputs(rows)
        # in the columns' order: skl2onnx renames inputs ("mean radius": "mean_radius")
        feeds = {i.name: rows[[column]].to_numpy()
                 for i, column in zip(inputs, rows.columns, strict=True)}
    else:
        feeds = {inputs[0].name: rows}
    return session.run(None, feeds)


def _fitted_outputs(model, rows):
    """The fitted model's probabilities, predictions or transform of ``rows``, dense."""
    for method in ("predict_proba", "predict", "transform"):
        if hasattr(model, method):
            out = getattr(model, method)(rows)
            return np.asarray(out.toarray() if issparse(out) else out, dtype=np.float64)
    raise TypeError(f"{type(model).__name__} has no predict_proba, predict or transform.")


def _disagreement(model, session, rows):
    """The largest difference over ``1 + |expected|`` between graph and model on ``rows``."""
    expected = _fitted_outputs(model, rows)
    outputs = _graph_outputs(session, rows)
    if hasattr(model, "predict_proba") and len(outputs) > 2:  # zipmap="columns"
        graph = np.column_stack(outputs[1:])
    elif isinstance(outputs[-1], list):  # zipmap: a dict of probabilities a row
        graph = pd.DataFrame(outputs[-1]).to_numpy()
    else:
        graph = outputs[-1]
    graph = np.asarray(graph, dtype=np.float64).reshape(expected.shape)
    if np.any(np.isnan(graph) != np.isnan(expected)):
        return np.inf
    return float(np.nanmax(np.abs(graph - expected) / (1.0 + np.abs(expected)), initial=0.0))


def _check_parity(model, onnx_model, sample, tolerance):
    """Refuse the export past ``tolerance``, naming the first step whose graph disagrees."""
    import skl2onnx
    from sklearn.pipeline import Pipeline

    rows = _perturbed(sample)
    session = _session(onnx_model)
    worst = max(_disagreement(model, session, r) for r in rows)
    if worst <= tolerance:
        return
    steps = model.steps if isinstance(model, Pipeline) else [(type(model).__name__, model)]
    culprit = steps[-1]
    for end in range(1, len(steps)):
        prefix = Pipeline(steps[:end])
        session = _session(skl2onnx.to_onnx(_unfrozen(prefix), _as_graph_inputs(sample[:1])))
        if max(_disagreement(prefix, session, r) for r in rows) > tolerance:
            culprit = steps[end - 1]
            break
    name, step = culprit
    raise ValueError(
        f"to_onnx: the exported graph differs from the fitted model by up to {worst:.3g} "
        f"(tolerance {tolerance:g}) on the sample rows, first at the step {name!r} "
        f"({type(step).__name__}): its ONNX converter does not reproduce it on these rows. "
        "Replace the step (or its converter), or, for a float32 graph whose trees split "
        "near a threshold, pass a float64 sample; parity_tolerance=None exports anyway."
    )
