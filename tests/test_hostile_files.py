"""``load`` on files an adversary edited: it checks everything before it builds anything.

Every edit either loads an estimator that predicts exactly like the original or
raises a ValueError that names the file; nothing else, and never a network the
header asks for but the file does not hold.
"""

import json
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import save_file
from sklearn.datasets import load_wine
from sklearn.frozen import FrozenEstimator

from qmatch_sklearn import QMatchClassifier, QMatchEncoder, QMatchRegressor, load, save
from qmatch_sklearn._persistence import InconsistentVersionWarning

from .conftest import tiny_encoder_params

X, Y = load_wine(return_X_y=True)
X = X.copy()
X[::11, 3] = np.nan
Y_SEMI = np.where(np.arange(len(Y)) % 2 == 0, Y, -1)


def _read(path):
    with safe_open(path, framework="numpy") as file:
        metadata = file.metadata()
        tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118
    return json.loads(metadata["document"]), tensors, metadata


def _write(path, document, tensors, metadata):
    save_file(tensors, path, metadata={**metadata, "document": json.dumps(document)})


def _outputs(estimator):
    if hasattr(estimator, "predict_proba"):
        return estimator.predict_proba(X)
    return estimator.predict(X) if hasattr(estimator, "predict") else estimator.transform(X)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Real saved files: an encoder with passthrough, a classifier with a boosted member
    and a frozen encoder inside, a regressor; each with its outputs."""
    folder = tmp_path_factory.mktemp("saved")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = QMatchEncoder(**tiny_encoder_params(passthrough=True)).fit(X)
        classifier = QMatchClassifier(FrozenEstimator(encoder), random_state=0).fit(X, Y_SEMI)
        regressor = QMatchRegressor(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                    random_state=0).fit(X, np.where(Y_SEMI >= 0, Y, np.nan))
    files = {}
    for name, estimator in [("encoder", encoder), ("classifier", classifier),
                            ("regressor", regressor)]:
        path = folder / f"{name}.qmatch"
        save(estimator, path)
        files[name] = (path, _outputs(estimator))
    return files


def _table(entry):
    """The entries of an estimator's ``_table_input`` in a file's document."""
    return entry["attributes"]["_table_input"]["items"]


def _edited(saved, tmp_path, name, edit_document=None, edit_tensors=None):
    path, _ = saved[name]
    document, tensors, metadata = _read(path)
    if edit_document:
        edit_document(document["estimator"])
    if edit_tensors:
        edit_tensors(tensors)
    out = tmp_path / "edited.qmatch"
    _write(out, document, tensors, metadata)
    return out


def _set_hidden_sizes(estimator, sizes):
    estimator["params"]["hidden_sizes"] = {"__type__": "tuple", "items": sizes}


def _first_weight(tensors):
    name = next(n for n in tensors if n.endswith("weight") and tensors[n].ndim == 2)
    tensors[name] = tensors[name][:, :-1]


#: name: (file, edit of the estimator entry, edit of the tensors, the field the error names)
EDITS = {
    "an attribute that shadows a method": (
        "encoder", lambda e: e["attributes"].update(transform=1), None, "transform"),
    "an unknown parameter": (
        "encoder", lambda e: e["params"].update(evil_param=1), None, "evil_param"),
    "a FrozenEstimator around a string": (
        "classifier",
        lambda e: e["params"]["encoder"]["params"].update(estimator="os.system"), None,
        "encoder.estimator"),
    "a single-output regressor's target_mean_ of 3 entries": (
        "regressor", lambda e: e["attributes"].update(target_mean_={
            "__type__": "array", "dtype": "<f8", "shape": [3], "items": [0.0, 1.0, 2.0]}),
        None, "target_mean_"),
    "a regressor that clips without its target range": (
        "regressor", lambda e: e["attributes"].pop("target_max_"), None, "target_max_"),
    "a target range upside down": (
        "regressor", lambda e: e["attributes"].update(target_min_={
            "__type__": "array", "dtype": "<f8", "shape": [1], "items": [1e9]}),
        None, "target_max_"),
    "a parameter deleted (its default is another model)": (
        "encoder", lambda e: e["params"].pop("passthrough"), None, "passthrough"),
    "a parameter added before the release deleted": (
        "regressor", lambda e: e["params"].pop("clip_predictions"), None, "clip_predictions"),
    "a regressor without its target range": (
        "regressor", lambda e: e["attributes"].pop("target_min_"), None, "target_min_"),
    "a parameter out of its range": (
        "encoder", lambda e: e["params"].update(embedding_dim=-4), None, "embedding_dim"),
    "a network larger than its tensors": (
        "encoder", lambda e: _set_hidden_sizes(e, [16384, 16384]), None, "network_"),
    "a tensor of the wrong shape": ("encoder", None, _first_weight, "network_"),
    "a missing tensor": (
        "encoder", None, lambda t: t.pop(sorted(t)[0]), "network_"),
    "an array whose shape does not hold its items": (
        "encoder", lambda e: _table(e)["center_"].update(shape=[5, 5]), None,
        "_table_input.center_"),
    "a table input with an attribute of its own": (
        "encoder", lambda e: _table(e).update(fit=1), None, "_table_input"),
    "a table input whose categorical_features is a number": (
        "encoder", lambda e: _table(e).update(categorical_features=3), None,
        "_table_input.categorical_features"),
    "a class outside the library": (
        "encoder", lambda e: e.update({"class": "Pipeline"}), None, "the top"),
    "a boosted tree whose child points back": (
        "classifier",
        lambda e: e["attributes"]["boosted_trees_"]["items"].update(left={
            "__type__": "array", "dtype": "<i8", "shape": [1], "items": [0]}),
        None, "boosted_trees_"),
    "a scale_ of 0": (
        "encoder", lambda e: _table(e)["scale_"]["items"].__setitem__(0, 0.0), None,
        "_table_input.scale_"),
    "a self-training weight above 1": (
        "classifier", lambda e: e["attributes"].update(self_training_weight_=2.0), None,
        "self_training_weight_"),
    "a label-spreading weight below 0": (
        "classifier", lambda e: e["attributes"].update(label_spreading_weight_=-0.5), None,
        "label_spreading_weight_"),
    "a mapping whose key is a list": (
        "classifier", lambda e: e["params"].update(class_weight={
            "__type__": "mapping", "items": [[[0, 1], 1.0]]}), None, "class_weight"),
    "a mapping of pairs that are not pairs": (
        "classifier", lambda e: e["params"].update(class_weight={
            "__type__": "mapping", "items": [[0]]}), None, "class_weight"),
    "a time-limited stage that does not exist": (
        "classifier", lambda e: e["attributes"].update(max_time_reached_="os.system"), None,
        "max_time_reached_"),
    "a max_time of 0": (
        "regressor", lambda e: e["params"].update(max_time=0), None, "max_time"),
    "a device that does not exist": (
        "encoder", lambda e: e["attributes"].update(device_="os.system"), None, "device_"),
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_an_edited_file_is_refused_with_a_value_error_naming_the_field(saved, tmp_path, edit):
    name, edit_document, edit_tensors, field = EDITS[edit]
    path = _edited(saved, tmp_path, name, edit_document, edit_tensors)
    with pytest.raises(ValueError, match=rf"{path}: refused at {field}"):
        load(path)


@pytest.mark.parametrize("content", [b"", b"\x00" * 4096, b"not a safetensors file" * 10])
def test_a_file_that_is_not_one_is_a_value_error_naming_it(tmp_path, content):
    path = tmp_path / "junk.qmatch"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=str(path)):
        load(path)


def test_a_document_that_does_not_parse_is_a_value_error(saved, tmp_path):
    path, _ = saved["encoder"]
    _, tensors, metadata = _read(path)
    out = tmp_path / "broken.qmatch"
    save_file(tensors, out, metadata={**metadata, "document": "{not json"})
    with pytest.raises(ValueError, match=rf"{out}: its JSON document does not parse"):
        load(out)


def test_a_header_asking_for_a_huge_network_allocates_nothing(saved, tmp_path):
    """hidden_sizes [16384, 16384] in a small file: refused before any layer exists, so the
    process's peak memory stays far below the 1 GB such a network would take."""
    path = _edited(saved, tmp_path, "encoder", lambda e: _set_hidden_sizes(e, [16384, 16384]))
    script = textwrap.dedent(f"""
        import resource
        import qmatch_sklearn
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            qmatch_sklearn.load({str(path)!r})
        except ValueError:
            pass
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
    """)
    grown_mb = int(subprocess.run([sys.executable, "-c", script], capture_output=True,
                                  text=True, check=True).stdout.strip())
    assert grown_mb < 100


def _json_paths(node, path=()):
    """Every (path, value) inside a JSON document: dict keys and list positions."""
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _json_paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _json_paths(value, (*path, i))


def _kind(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


#: Replacement values of every JSON kind.
JSON_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False),
    st.text(max_size=8), st.lists(st.integers(0, 5), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=2),
)


@st.composite
def mutations(draw):
    """One structural edit: a key deleted or added, or a value replaced by one of another
    JSON kind (a value of the same kind is a different model, not a hostile file); or a
    tensor dropped, reshaped, recast or added."""
    return draw(st.sampled_from(["encoder", "classifier", "regressor"])), draw(st.one_of(
        st.tuples(st.just("delete"), st.integers(0, 10**6)),
        st.tuples(st.just("add"), st.integers(0, 10**6), st.text(min_size=1, max_size=6)),
        st.tuples(st.just("replace"), st.integers(0, 10**6), JSON_VALUES),
        st.tuples(st.just("tensor"), st.integers(0, 10**6),
                  st.sampled_from(["drop", "reshape", "float64", "int32", "extra"])),
    ))


def _mutate(document, tensors, mutation):
    action, index, *rest = mutation
    if action == "tensor":
        names = sorted(tensors)
        name = names[index % len(names)]
        how = rest[0]
        if how == "drop":
            del tensors[name]
        elif how == "reshape":
            tensors[name] = tensors[name].reshape(-1)[: max(tensors[name].size - 1, 0)]
        elif how == "extra":
            tensors["extra"] = np.zeros(3, dtype=np.float32)
        else:
            tensors[name] = tensors[name].astype(how)
        return f"{how} tensor {name}"
    containers = [(path, node) for path, node in _json_paths(document)
                  if isinstance(node, (dict, list)) and node]
    path, node = containers[index % len(containers)]
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    key = keys[(index // len(containers)) % len(keys)]
    if action == "delete":
        del node[key]
    elif action == "add":
        if isinstance(node, dict):
            node.setdefault(rest[0], 1)
        else:
            node.append(rest[0])
    elif _kind(rest[0]) != _kind(node[key]):
        node[key] = rest[0]
    return f"{action} at {'.'.join(map(str, (*path, key)))}"


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations())
def test_every_edit_loads_the_same_model_or_is_a_value_error(saved, tmp_path, mutation):
    name, edit = mutation
    path, expected = saved[name]
    document, tensors, metadata = _read(path)
    edited = _mutate(document, tensors, edit)
    out = tmp_path / "fuzzed.qmatch"
    _write(out, document, tensors, metadata)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InconsistentVersionWarning)
            loaded = load(out)
    except ValueError as error:
        assert str(out) in str(error)
        return
    np.testing.assert_array_equal(_outputs(loaded), expected, err_msg=edited)
