"""Saving fitted estimators: the state that pickle, joblib and skops read, and a pickle-free file.

The network is stored as NumPy arrays, never read with ``torch.load``; :func:`save` writes
the state as one safetensors file (weights as tensors, the rest as JSON in its header).
"""

import json

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file
from sklearn.frozen import FrozenEstimator
from skorch.history import History

from ._device import resolve_device
from ._file_schema import (
    Refused,
    _require,
    check_attributes,
    check_weights,
    checked_params,
)
from ._networks import isolated_global_rng
from ._precision import check_float32_default
from ._table import TableInput
from ._version import __version__
from ._warnings import warn

#: State key of the library version that wrote a pickle (or a :func:`save` file).
VERSION_KEY = "_qmatch_sklearn_version"
#: The header entry that marks a :func:`save` file, and the one layout version :func:`load` reads.
FORMAT_NAME = "qmatch_sklearn"
FORMAT_VERSION = 2
#: Numeric arrays this large are stored as tensors: safetensors caps the JSON header's size.
TENSOR_MIN_SIZE = 1024
#: dtype kinds of weights: bool, signed and unsigned integers, floats.
NUMERIC_KINDS = "biuf"


class InconsistentVersionWarning(UserWarning):
    """A model saved by another version of qmatch_sklearn was loaded."""


class PersistenceMixin:
    """State hooks for pickle, joblib, skops and :func:`save`: portable, and safe to read;
    ``network_`` is rebuilt on load (``_network_skeleton``) on the device that exists then."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in vars(cls) and cls.__module__.startswith(f"{__package__}."):
            _LOADABLE[cls.__name__] = cls

    def _network_skeleton(self):  # pragma: no cover - abstract
        """An untrained module shaped like ``network_``, from parameters and fitted attributes."""
        raise NotImplementedError

    def _stored_network(self, network):
        """The part of ``network`` this state holds (a nested estimator may store the rest)."""
        return network

    def __getstate__(self):
        state = dict(super().__getstate__())
        # a partial_fit run's skorch net (optimiser, teacher, queue) is not saved
        state.pop("_partial_net", None)
        if "_table_input" in state:
            state["_table_input"] = self._table_input.state()
        if "network_" in state:
            stored = self._stored_network(self.network_).state_dict()
            state["network_"] = {name: tensor.numpy(force=True) for name, tensor in stored.items()}
            state["history_"] = list(self.history_)
        state[VERSION_KEY] = __version__
        return state

    def __setstate__(self, state):
        state = dict(state)
        version = state.pop(VERSION_KEY, None)
        if version != __version__:
            warn(
                f"This {type(self).__name__} was saved with qmatch_sklearn {version} and "
                f"is loaded with {__version__}; results may differ.",
                InconsistentVersionWarning,
            )
        weights = state.pop("network_", None)
        # checked before anything is restored: a refused state leaves no half-built estimator
        tensors = None if weights is None else _tensors_from_arrays(weights, type(self).__name__)
        if "_table_input" in state:
            state["_table_input"] = TableInput.from_state(state["_table_input"])
        if "device_" in state:
            state["device_"] = resolve_device(state["device_"])
        if "history_" in state:
            state["history_"] = History(state["history_"])
        super().__setstate__(state)
        if tensors is not None:
            # the skeleton's initial weights are overwritten: keep the global RNG where it was
            with isolated_global_rng():
                network = self._network_skeleton()
            self._stored_network(network).load_state_dict(tensors)
            self.network_ = network.to(self.device_).eval().requires_grad_(False)


def _tensors_from_arrays(weights, owner):
    """``{name: ndarray}`` as tensors; anything else is refused, never deserialised."""
    is_arrays = isinstance(weights, dict) and all(
        isinstance(name, str) and isinstance(array, np.ndarray)
        and array.dtype.kind in NUMERIC_KINDS
        for name, array in weights.items()
    )
    if not is_arrays:
        raise ValueError(
            f"The saved {owner} holds network_ as {type(weights).__name__}, not as a dict of "
            "numeric NumPy arrays: it was written by an earlier qmatch_sklearn (weights as a "
            "torch.save blob) or it was altered. It is not loaded, since reading such a blob "
            "can run code. Refit the model, or load it with the version that wrote it in a "
            "trusted environment and save it again."
        )
    return {name: torch.from_numpy(array) for name, array in weights.items()}


#: The classes :func:`load` rebuilds, by name (see :meth:`PersistenceMixin.__init_subclass__`).
_LOADABLE = {"FrozenEstimator": FrozenEstimator}


def _join(path, name):
    return f"{path}.{name}" if path else str(name)


class _Writer:
    """Encodes an estimator's state as JSON, collecting its weights as named arrays."""

    def __init__(self):
        self.tensors = {}
        self._paths = {}

    def estimator(self, estimator, path):
        if id(estimator) in self._paths:  # e.g. encoder=FrozenEstimator(e), the same as encoder_
            return {"__type__": "same_estimator", "path": self._paths[id(estimator)]}
        name = type(estimator).__name__
        if _LOADABLE.get(name) is not type(estimator):
            where = f"{path!r}" if path else "the estimator"
            raise TypeError(
                f"qmatch_sklearn.save stores the library's estimators (and FrozenEstimator "
                f"around one); {where} is a {type(estimator).__module__}."
                f"{type(estimator).__qualname__}. Save a whole Pipeline with skops.io "
                "(see the user guide on saving models)."
            )
        self._paths[id(estimator)] = path
        state = dict(estimator.__getstate__())  # a copy: object's is the instance's own
        state.pop(VERSION_KEY, None)
        weights = state.pop("network_", None)
        params = {
            key: self.value(state.pop(key), _join(path, key))
            for key in estimator.get_params(deep=False)
        }
        attributes = {key: self.value(value, _join(path, key)) for key, value in state.items()}
        if weights is not None:
            attributes["network_"] = self.weights(weights, _join(path, "network_"))
        return {"__type__": "estimator", "class": name, "params": params, "attributes": attributes}

    def weights(self, arrays, path):
        names = {key: _join(path, key) for key in arrays}
        self.tensors.update({names[key]: np.ascontiguousarray(arrays[key]) for key in arrays})
        return {"__type__": "weights", "tensors": names}

    def value(self, value, path):
        # numpy scalars first: np.float64 is also a float, and its dtype is kept
        if isinstance(value, np.generic):
            return {"__type__": "scalar", "dtype": value.dtype.str, "value": value.item()}
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self.value(item, _join(path, i)) for i, item in enumerate(value)]
        if isinstance(value, tuple):
            items = [self.value(item, _join(path, i)) for i, item in enumerate(value)]
            return {"__type__": "tuple", "items": items}
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            items = {key: self.value(item, _join(path, key)) for key, item in value.items()}
            return {"__type__": "dict", "items": items}
        if isinstance(value, dict) and all(map(_is_scalar_key, value)):
            # keys of other scalars (class_weight={0: 1.0, 1: 3.0}): a list of pairs
            items = [[self.value(key, _join(path, i)), self.value(item, _join(path, i))]
                     for i, (key, item) in enumerate(value.items())]
            return {"__type__": "mapping", "items": items}
        if (isinstance(value, np.ndarray) and value.dtype.kind in NUMERIC_KINDS
                and value.size >= TENSOR_MIN_SIZE):
            self.tensors[path] = np.ascontiguousarray(value)
            return {"__type__": "tensor", "name": path}
        # arrays of numbers, booleans or strings (str dtype, or object dtype holding str)
        if isinstance(value, np.ndarray) and (
                value.dtype.kind in NUMERIC_KINDS + "U"
                or (value.dtype == object and all(isinstance(item, str) for item in value.flat))):
            return {
                "__type__": "array",
                "dtype": value.dtype.str,
                "shape": list(value.shape),
                "items": value.ravel().tolist(),
            }
        if isinstance(value, np.random.RandomState):
            return {"__type__": "RandomState", "state": self.value(value.get_state(), path)}
        if hasattr(value, "get_params"):
            return self.estimator(value, path)
        if callable(value):  # e.g. architecture=<a network of the user's own>
            raise TypeError(
                f"qmatch_sklearn.save cannot store {path!r}: it is code "
                f"({type(value).__module__}.{type(value).__qualname__}), and a file "
                "written by save holds none, so that it loads without running any. "
                "Pickle the estimator (joblib.dump) instead; the network's class or "
                "factory must then be importable where it is loaded."
            )
        if isinstance(value, np.ndarray):
            kinds = sorted({type(item).__qualname__ for item in value.flat})
            raise TypeError(
                f"qmatch_sklearn.save cannot store {path!r}, an array of {value.dtype} "
                f"({', '.join(kinds[:5])}): a file written by save holds numbers and strings "
                "only. Pickle the estimator (joblib.dump) instead"
                + (", or fit on the column's categories as strings (astype(str))."
                   if "categories_" in path.split(".") else ".")
            )
        raise TypeError(
            f"qmatch_sklearn.save cannot store {path!r}, of type "
            f"{type(value).__module__}.{type(value).__qualname__}."
        )


def _is_scalar_key(key):
    """Whether a dict key is a scalar a file holds: a number, a boolean or a string."""
    return isinstance(key, (bool, int, float, str)) or (
        isinstance(key, np.generic) and key.dtype.kind in NUMERIC_KINDS)


#: What an item of a JSON array may be, by the array's dtype kind.
_ITEM_KINDS = {
    "b": lambda item: isinstance(item, bool),
    "i": lambda item: isinstance(item, int) and not isinstance(item, bool),
    "u": lambda item: isinstance(item, int) and not isinstance(item, bool) and item >= 0,
    "f": lambda item: isinstance(item, (int, float)) and not isinstance(item, bool),
    "U": lambda item: isinstance(item, str),
    "O": lambda item: isinstance(item, str),
}


class _Reader:
    """Rebuilds what :class:`_Writer` encoded, through each class's ``__setstate__``."""

    def __init__(self, tensors, version):
        self.tensors = tensors
        self.version = version
        self._built = {}

    def estimator(self, node, path):
        """The estimator ``node`` describes, once all of it is checked (``_file_schema.py``)."""
        def field(name):
            return _join(path, name)

        _require(isinstance(node, dict) and set(node) == {"__type__", "class", "params",
                                                          "attributes"}
                 and isinstance(node["params"], dict) and isinstance(node["attributes"], dict),
                 path, "an estimator entry holds __type__, class, params and attributes.")
        cls = _LOADABLE.get(node["class"]) if isinstance(node["class"], str) else None
        if cls is None:
            raise Refused(
                path,
                f"refusing to load class {node['class']!r}: qmatch_sklearn.load rebuilds "
                f"only {', '.join(sorted(_LOADABLE))}.",
            )
        params = checked_params(
            cls, {key: self.value(value, field(key)) for key, value in node["params"].items()},
            field,
        )
        attributes = {key: self.value(value, field(key))
                      for key, value in node["attributes"].items()}
        try:
            check_attributes(cls, params, attributes, field)
            if "network_" in attributes:
                weights = attributes["network_"]
                _require(isinstance(weights, dict), field("network_"), "network_ must be weights.")
                check_weights(cls, params, attributes, weights, field)
        except Refused:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            raise Refused(path, f"{type(error).__name__}: {error}") from None
        state = {**params, **attributes}
        if issubclass(cls, PersistenceMixin):
            state[VERSION_KEY] = self.version
        estimator = cls.__new__(cls)
        estimator.__setstate__(state)
        self._built[path] = estimator
        return estimator

    def value(self, node, path):
        if isinstance(node, list):
            return [self.value(item, _join(path, i)) for i, item in enumerate(node)]
        if not isinstance(node, dict):
            return node
        kind = node.get("__type__")
        if kind == "estimator":
            return self.estimator(node, path)
        try:
            return self._typed_value(kind, node, path)
        except Refused:
            raise
        except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as error:
            raise Refused(path, f"a malformed {kind!r} entry ({type(error).__name__}: "
                                f"{error}).") from None

    def _typed_value(self, kind, node, path):
        if kind == "same_estimator":
            _require(node["path"] in self._built, path, "it names no estimator read before.")
            return self._built[node["path"]]
        if kind == "weights":
            return {key: self._tensor(name, _join(path, key))
                    for key, name in node["tensors"].items()}
        if kind == "tuple":
            return tuple(self.value(item, _join(path, i)) for i, item in enumerate(node["items"]))
        if kind == "dict":
            _require(isinstance(node["items"], dict), path, "a dict entry holds items.")
            return {key: self.value(item, _join(path, key)) for key, item in node["items"].items()}
        if kind == "mapping":
            pairs = node["items"]
            _require(isinstance(pairs, list) and all(
                isinstance(pair, list) and len(pair) == 2 for pair in pairs), path,
                "a mapping entry holds [key, value] pairs.")
            keys = [self.value(key, _join(path, i)) for i, (key, _) in enumerate(pairs)]
            _require(all(map(_is_scalar_key, keys)), path,
                     "a mapping's keys are numbers, booleans or strings.")
            return {key: self.value(item, _join(path, i))
                    for i, (key, (_, item)) in enumerate(zip(keys, pairs, strict=True))}
        if kind == "tensor":
            return self._tensor(node["name"], path)
        if kind == "array":
            dtype = np.dtype(node["dtype"])
            _require(dtype.kind in _ITEM_KINDS, path, f"arrays of {dtype} are not read.")
            items = node["items"]
            _require(isinstance(items, list) and all(map(_ITEM_KINDS[dtype.kind], items)), path,
                     f"an array of {dtype} holds items of another kind.")
            shape = tuple(node["shape"])
            _require(all(isinstance(n, int) and n >= 0 for n in shape)
                     and int(np.prod(shape)) == len(node["items"]), path,
                     f"shape {list(shape)} does not hold its {len(node['items'])} items.")
            return np.array(node["items"], dtype=dtype).reshape(shape)
        if kind == "scalar":
            dtype = np.dtype(node["dtype"])
            _require(dtype.kind in NUMERIC_KINDS, path, f"scalars of {dtype} are not read.")
            return dtype.type(node["value"])
        if kind == "RandomState":
            random_state = np.random.RandomState()
            random_state.set_state(self.value(node["state"], path))
            return random_state
        raise Refused(path, f"unknown entry {kind!r}.")

    def _tensor(self, name, path):
        _require(isinstance(name, str) and name in self.tensors, path,
                 f"the file holds no tensor {name!r}.")
        return self.tensors[name]


def save(estimator, path):
    """Write an estimator of qmatch_sklearn to a file that loads without running code.

    A safetensors file, with nested estimators; an unfitted one holds parameters only.

    Parameters
    ----------
    estimator : estimator
        An estimator of this library (fitted or not), or a
        :class:`~sklearn.frozen.FrozenEstimator` around one; not a Pipeline.
    path : str or path-like
        The file to write (e.g. ``"model.safetensors"``); it is overwritten.

    Raises
    ------
    TypeError
        If ``estimator`` or an attribute has a type the file cannot store (e.g.
        a network of your own: the file holds no code); the message names it.

    See Also
    --------
    load : read the file back.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import QMatchEncoder, load, save
    >>> X, _ = load_digits(return_X_y=True)
    >>> encoder = QMatchEncoder(hidden_sizes=(64,), embedding_dim=8, max_epochs=2,
    ...                         random_state=0).fit(X)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save(encoder, Path(folder) / "encoder.safetensors")
    ...     restored = load(Path(folder) / "encoder.safetensors")
    >>> bool((restored.transform(X) == encoder.transform(X)).all())
    True
    """
    writer = _Writer()
    document = {
        "format_version": FORMAT_VERSION,
        "qmatch_sklearn_version": __version__,
        "estimator": writer.estimator(estimator, ""),
    }
    metadata = {"format": FORMAT_NAME, "document": json.dumps(document)}
    save_file(writer.tensors, path, metadata=metadata)


def load(path):
    """Read an estimator written by :func:`save`; no code from the file runs.

    Only this library's estimator classes (and :class:`~sklearn.frozen.FrozenEstimator`)
    are rebuilt, as unpickling rebuilds them: the network moves to the device that exists
    now (CUDA falls back to the CPU with a warning). Another version's file warns with
    :class:`InconsistentVersionWarning`.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`.

    Returns
    -------
    estimator : estimator
        The estimator, with identical outputs on the same device.

    Raises
    ------
    ValueError
        If the file is not a qmatch_sklearn file or holds anything the library's
        estimators do not (class, parameter, attribute, shape or tensor); the
        message names the file and the field. All is checked before any network is built,
        so the memory ``load`` uses is bounded by the file's size.

    See Also
    --------
    save : write the file.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn.datasets import load_digits
    >>> from qmatch_sklearn import QMatchClassifier, QMatchEncoder, load, save
    >>> X, y = load_digits(return_X_y=True)
    >>> clf = QMatchClassifier(QMatchEncoder(hidden_sizes=(64,), embedding_dim=8,
    ...                                      max_epochs=2, random_state=0),
    ...                        freeze_encoder=True, max_epochs=3, random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save(clf, Path(folder) / "classifier.safetensors")
    ...     restored = load(Path(folder) / "classifier.safetensors")
    >>> bool((restored.predict_proba(X) == clf.predict_proba(X)).all())
    True
    """
    check_float32_default("qmatch_sklearn.load")
    try:
        with safe_open(path, framework="numpy") as file:
            metadata = file.metadata() or {}
            if metadata.get("format") != FORMAT_NAME:
                raise ValueError(
                    f"{path} is a safetensors file, but not one written by qmatch_sklearn.save."
                )
            tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118 (not iterable)
    except (SafetensorError, OSError, TypeError) as error:
        raise ValueError(
            f"{path} is not a file written by qmatch_sklearn.save ({error})."
        ) from error
    try:
        document = json.loads(metadata.get("document", ""))
        _require(isinstance(document, dict)
                 and set(document) == {"format_version", "qmatch_sklearn_version", "estimator"},
                 "", "the document holds format_version, qmatch_sklearn_version and estimator.")
        if document["format_version"] != FORMAT_VERSION:
            raise Refused(
                "format_version",
                f"format version {document['format_version']!r}; this qmatch_sklearn "
                f"({__version__}) reads version {FORMAT_VERSION}.",
            )
        _require(isinstance(document["qmatch_sklearn_version"], str), "qmatch_sklearn_version",
                 "the version is a string.")
        reader = _Reader(tensors, document["qmatch_sklearn_version"])
        return reader.estimator(document["estimator"], "")
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: its JSON document does not parse ({error}).") from None
    except Refused as error:
        raise ValueError(f"{path}: refused at {error.field}: {error}") from None
    except RecursionError:
        raise ValueError(f"{path}: its JSON document nests too deeply.") from None
