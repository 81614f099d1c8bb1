"""Saving and loading: pickle/joblib, qmatch_sklearn.save/load and skops give the same model,
and a tampered file can at worst fail to load."""

import io
import json
import pickle
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io
import torch
from safetensors import safe_open
from safetensors.numpy import save_file
from sklearn.datasets import make_classification
from sklearn.decomposition import PCA
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import qmatch_sklearn
from qmatch_sklearn import (
    METHODS,
    InconsistentVersionWarning,
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    SupervisedMLPRegressor,
    load,
    save,
)
from qmatch_sklearn._persistence import TENSOR_MIN_SIZE

from .conftest import tiny_encoder_params, tiny_method_params


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=200, n_features=10, n_informative=5, n_classes=3, random_state=0
    )
    return X, y


@pytest.fixture(scope="module")
def fitted_encoder(data):
    return QMatchEncoder(**tiny_encoder_params()).fit(data[0])


def _restored(estimator, tmp_path):
    """The estimator after each way of saving it: pickle, joblib, save/load."""
    joblib.dump(estimator, tmp_path / "model.joblib")
    save(estimator, tmp_path / "model.safetensors")
    return {
        "pickle": pickle.loads(pickle.dumps(estimator)),
        "joblib": joblib.load(tmp_path / "model.joblib"),
        "save/load": load(tmp_path / "model.safetensors"),
    }


def _classifier(encoder=None, **params):
    params = {"max_epochs": 5, "random_state": 0, "device": "cpu", **params}
    return QMatchClassifier(encoder or QMatchEncoder(**tiny_encoder_params()), **params)


def _network_of(encoder):
    return (encoder.estimator if isinstance(encoder, FrozenEstimator) else encoder).network_


def _weight_bytes(module):
    return sum(t.numel() * t.element_size() for t in module.state_dict().values())


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_encoder_round_trips_with_identical_embeddings(name, data, tmp_path):
    encoder = METHODS[name](**tiny_method_params(name)).fit(data[0])
    expected = encoder.transform(data[0])
    for how, restored in _restored(encoder, tmp_path).items():
        assert type(restored) is type(encoder), how
        np.testing.assert_array_equal(restored.transform(data[0]), expected, err_msg=how)
        assert restored.get_params() == encoder.get_params(), how
        assert restored.history_ == encoder.history_, how
        assert type(restored.history_) is type(encoder.history_), how
        assert not any(p.requires_grad for p in restored.network_.parameters()), how
        assert not restored.network_.training, how


def _frozen_estimator_classifier(X):
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    return _classifier(encoder=FrozenEstimator(encoder), freeze_encoder=True)


CLASSIFIERS = {
    "fine-tuned": lambda X: _classifier(),
    "frozen": lambda X: _classifier(freeze_encoder=True),
    "frozen, FrozenEstimator encoder": _frozen_estimator_classifier,
    "supervised MLP": lambda X: SupervisedMLPClassifier(
        hidden_sizes=(32,), embedding_dim=8, max_epochs=5, random_state=0, device="cpu"
    ),
}


@pytest.mark.parametrize("case", list(CLASSIFIERS))
@pytest.mark.parametrize("labels", ["int", "str"])
def test_every_classifier_round_trips_with_identical_predictions(case, labels, data, tmp_path):
    X, y = data
    if labels == "str":
        y = np.array(["cat", "dog", "emu"], dtype=object)[y]
    clf = CLASSIFIERS[case](X).fit(X, y)
    for how, restored in _restored(clf, tmp_path).items():
        np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X), how)
        np.testing.assert_array_equal(restored.predict(X), clf.predict(X), err_msg=how)
        np.testing.assert_array_equal(restored.classes_, clf.classes_, err_msg=how)
        assert restored.classes_.dtype == clf.classes_.dtype, how
        if case.startswith("frozen"):
            # the frozen encoder's network is still the very module of encoder_
            assert restored.network_[0] is _network_of(restored.encoder_), how
        if case == "frozen, FrozenEstimator encoder":
            assert restored.encoder is restored.encoder_, how
        if case == "fine-tuned":
            np.testing.assert_array_equal(  # the pretrained encoder is kept as it was
                restored.encoder_.transform(X), clf.encoder_.transform(X), err_msg=how
            )


def test_frozen_classifier_stores_the_encoder_weights_once(data, tmp_path):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params(hidden_sizes=(256, 256), max_epochs=1))
    frozen = QMatchClassifier(encoder, freeze_encoder=True, max_epochs=1, device="cpu").fit(X, y)
    assert frozen.network_[0] is frozen.encoder_.network_
    assert len(pickle.dumps(frozen)) <= 1.1 * _weight_bytes(frozen.network_)
    save(frozen, tmp_path / "frozen.safetensors")
    assert (tmp_path / "frozen.safetensors").stat().st_size <= 1.1 * _weight_bytes(frozen.network_)
    restored = pickle.loads(pickle.dumps(frozen))
    assert restored.network_[0] is restored.encoder_.network_
    # fine-tuning: the pretrained and the tuned encoder differ, each is stored once
    tuned = QMatchClassifier(encoder, freeze_encoder=False, max_epochs=1, device="cpu").fit(X, y)
    assert tuned.network_[0] is not tuned.encoder_.network_
    assert len(pickle.dumps(tuned)) <= 2.1 * _weight_bytes(tuned.network_)


def test_a_frozen_encoder_on_another_device_is_copied_and_still_round_trips(data, tmp_path):
    X, y = data
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    encoder.device_ = "cpu:0"  # another name of the CPU stands in for another device
    clf = _classifier(encoder=FrozenEstimator(encoder), freeze_encoder=True).fit(X, y)
    assert clf.network_[0] is not encoder.network_
    for how, restored in _restored(clf, tmp_path).items():
        np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X), how)


def test_pandas_input_keeps_feature_names_and_output_config(data, tmp_path):
    frame = pd.DataFrame(data[0], columns=[f"c{i}" for i in range(10)])
    encoder = QMatchEncoder(**tiny_encoder_params()).set_output(transform="pandas").fit(frame)
    expected = encoder.transform(frame)
    for how, restored in _restored(encoder, tmp_path).items():
        assert restored.feature_names_in_.dtype == object, how
        np.testing.assert_array_equal(restored.feature_names_in_, encoder.feature_names_in_)
        pd.testing.assert_frame_equal(restored.transform(frame), expected)


@pytest.mark.parametrize(
    "make",
    [
        lambda: QMatchEncoder(hidden_sizes=(64, 32), random_state=np.random.RandomState(3)),
        lambda: QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), freeze_encoder=True),
        lambda: QMatchClassifier(),
        lambda: SupervisedMLPClassifier(hidden_sizes=[16], lr=np.float32(0.01)),
        lambda: QMatchRegressor(QMatchEncoder(**tiny_encoder_params()), freeze_encoder=False),
        lambda: SupervisedMLPRegressor(hidden_sizes=(8, 4), validation_fraction=0.2),
        *[lambda cls=cls: cls() for cls in METHODS.values()],
    ],
)
def test_unfitted_estimators_round_trip_their_parameters(make, tmp_path):
    estimator = make()
    restored = _restored(estimator, tmp_path)["save/load"]
    assert type(restored) is type(estimator)
    assert list(restored.get_params()) == list(estimator.get_params())
    for (name, value), (_, restored_value) in zip(
        estimator.get_params().items(), restored.get_params().items(), strict=True
    ):
        assert type(restored_value) is type(value), name
        if isinstance(value, np.random.RandomState):
            np.testing.assert_array_equal(restored_value.get_state()[1], value.get_state()[1])
        elif not hasattr(value, "get_params"):
            assert restored_value == value, name


def test_an_unfitted_classifier_around_a_fitted_frozen_encoder(data, fitted_encoder, tmp_path):
    clf = QMatchClassifier(FrozenEstimator(fitted_encoder), freeze_encoder=True)
    restored = _restored(clf, tmp_path)["save/load"]
    np.testing.assert_array_equal(
        restored.encoder.transform(data[0]), fitted_encoder.transform(data[0])
    )


def test_a_random_state_instance_keeps_its_stream(data, tmp_path):
    params = tiny_encoder_params(random_state=np.random.RandomState(7))
    encoder = QMatchEncoder(**params)
    save(encoder, tmp_path / "encoder.safetensors")
    restored = load(tmp_path / "encoder.safetensors")
    np.testing.assert_array_equal(
        restored.fit(data[0]).transform(data[0]), encoder.fit(data[0]).transform(data[0])
    )


def test_loading_leaves_the_global_rng_alone(fitted_encoder, tmp_path):
    save(fitted_encoder, tmp_path / "encoder.safetensors")
    torch_state = torch.get_rng_state()
    pickle.loads(pickle.dumps(fitted_encoder))
    load(tmp_path / "encoder.safetensors")
    assert torch.equal(torch_state, torch.get_rng_state())


def test_save_names_what_it_cannot_store(fitted_encoder, tmp_path, monkeypatch):
    with pytest.raises(TypeError, match=r"'encoder' is a sklearn\.decomposition.*PCA"):
        save(QMatchClassifier(PCA()), tmp_path / "model.safetensors")
    with pytest.raises(TypeError, match=r"the estimator is a sklearn\.pipeline.*Pipeline.*skops"):
        save(make_pipeline(StandardScaler()), tmp_path / "model.safetensors")
    monkeypatch.setattr(fitted_encoder, "notes_", {(1, 2): "a key that is not a scalar"},
                        raising=False)
    with pytest.raises(TypeError, match=r"'notes_', of type builtins\.dict"):
        save(fitted_encoder, tmp_path / "model.safetensors")


def _edit_document(path, edit):
    """Rewrite the JSON document of a save() file as a tamperer would."""
    with safe_open(path, framework="numpy") as file:
        metadata = file.metadata()
        tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118 (not iterable)
    document = json.loads(metadata["document"])
    edit(document)
    save_file(tensors, path, metadata={**metadata, "document": json.dumps(document)})


def test_large_attribute_arrays_are_tensors_and_other_format_versions_are_refused(
    fitted_encoder, tmp_path, monkeypatch
):
    """Numeric arrays of TENSOR_MIN_SIZE elements or more leave the JSON header
    (safetensors caps it); a file of another format version is refused by name."""
    large = np.arange(TENSOR_MIN_SIZE, dtype=np.float64) / 3
    # an epoch of the history with arrays in it (any attribute's arrays are written alike)
    history = [dict(epoch) for epoch in fitted_encoder.history_]
    history[0]["notes"] = {"large": large, "small": large[:3]}
    monkeypatch.setattr(fitted_encoder, "history_", history)
    path = tmp_path / "encoder.safetensors"
    save(fitted_encoder, path)
    with safe_open(path, framework="numpy") as file:
        names = set(file.keys())
        document = json.loads(file.metadata()["document"])
    notes = document["estimator"]["attributes"]["history_"][0]["items"]["notes"]["items"]
    assert notes["large"] == {"__type__": "tensor", "name": "history_.0.notes.large"}
    assert "history_.0.notes.large" in names and notes["small"]["__type__"] == "array"
    np.testing.assert_array_equal(load(path).history_[0]["notes"]["large"], large)

    _edit_document(path, lambda document: document.update(format_version=99))
    with pytest.raises(ValueError, match=r"format version 99; .* reads version 2\."):
        load(path)


def test_load_refuses_classes_outside_the_library(fitted_encoder, tmp_path):
    path = tmp_path / "encoder.safetensors"
    save(fitted_encoder, path)
    _edit_document(path, lambda document: document["estimator"].update({"class": "Pipeline"}))
    with pytest.raises(ValueError, match=r"refusing to load class 'Pipeline'.*QMatchEncoder"):
        load(path)


def test_load_refuses_files_it_did_not_write(fitted_encoder, tmp_path):
    joblib.dump(fitted_encoder, tmp_path / "encoder.joblib")
    with pytest.raises(ValueError, match=r"not a file written by qmatch_sklearn.save"):
        load(tmp_path / "encoder.joblib")
    save_file({"weight": np.ones(3, np.float32)}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="safetensors file, but not one written by"):
        load(tmp_path / "other.safetensors")


def test_another_version_warns_on_every_load_path(fitted_encoder, tmp_path, monkeypatch):
    path = tmp_path / "encoder.safetensors"
    save(fitted_encoder, path)
    payload = pickle.dumps(fitted_encoder)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InconsistentVersionWarning)
        pickle.loads(payload)
        load(path)
    _edit_document(path, lambda document: document.update(qmatch_sklearn_version="0.0.1"))
    with pytest.warns(InconsistentVersionWarning, match="saved with qmatch_sklearn 0.0.1"):
        load(path)
    monkeypatch.setattr(qmatch_sklearn._persistence, "__version__", "99.0")
    with pytest.warns(InconsistentVersionWarning, match="saved with qmatch_sklearn 0.1.0 and is "
                      "loaded with 99.0"):
        pickle.loads(payload)


def test_a_cuda_model_loads_on_the_cpu_from_a_file(data, fitted_encoder, tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(fitted_encoder, "device_", "cuda")
    save(fitted_encoder, tmp_path / "encoder.safetensors")
    monkeypatch.setattr(fitted_encoder, "device_", "cpu")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        restored = load(tmp_path / "encoder.safetensors")
    assert restored.device_ == "cpu"
    np.testing.assert_array_equal(restored.transform(data[0]), fitted_encoder.transform(data[0]))


class _CreatesFile:
    """Unpickling this creates a file: the stand-in for arbitrary code."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return open, (self.path, "w")


def _torch_blob(marker):
    buffer = io.BytesIO()
    torch.save({"1.weight": _CreatesFile(marker)}, buffer)
    return buffer.getvalue()


def test_the_payload_of_the_security_tests_would_run(tmp_path):
    # loading the blob unsafely does create the marker: the tests below are not vacuous
    opened = torch.load(io.BytesIO(_torch_blob(tmp_path / "ran")), weights_only=False)
    opened["1.weight"].close()
    assert (tmp_path / "ran").exists()


def test_a_state_holding_a_torch_blob_is_refused_unread(fitted_encoder, tmp_path):
    marker = tmp_path / "code-ran"
    state = fitted_encoder.__getstate__()
    state["network_"] = _torch_blob(marker)  # also what earlier versions wrote
    with pytest.raises(ValueError, match=r"not as a dict of numeric NumPy arrays.*earlier"):
        QMatchEncoder.__new__(QMatchEncoder).__setstate__(state)
    assert not marker.exists()


def test_a_tampered_skops_file_fails_without_running_code(fitted_encoder, tmp_path, monkeypatch):
    marker = tmp_path / "code-ran"
    tampered = {**fitted_encoder.__getstate__(), "network_": _torch_blob(marker)}
    monkeypatch.setattr(QMatchEncoder, "__getstate__", lambda self: tampered)
    skops.io.dump(fitted_encoder, tmp_path / "encoder.skops")
    monkeypatch.undo()
    trusted = ["qmatch_sklearn.methods.qmatch.QMatchEncoder"]
    assert skops.io.get_untrusted_types(file=tmp_path / "encoder.skops") == trusted
    with pytest.raises(ValueError, match="not as a dict of numeric NumPy arrays"):
        skops.io.load(tmp_path / "encoder.skops", trusted=trusted)
    assert not marker.exists()


def test_skops_saves_a_pipeline_trusting_only_the_encoder_type(data, tmp_path):
    X, y = data
    pipe = make_pipeline(
        StandardScaler(), QMatchEncoder(**tiny_encoder_params()), LogisticRegression()
    ).fit(X, y)
    skops.io.dump(pipe, tmp_path / "pipe.skops")
    untrusted = skops.io.get_untrusted_types(file=tmp_path / "pipe.skops")
    assert untrusted == ["qmatch_sklearn.methods.qmatch.QMatchEncoder"]
    restored = skops.io.load(tmp_path / "pipe.skops", trusted=untrusted)
    np.testing.assert_array_equal(restored.predict_proba(X), pipe.predict_proba(X))
    np.testing.assert_array_equal(restored[:-1].transform(X), pipe[:-1].transform(X))


def test_skops_trusts_the_classifier_and_its_encoder(data, tmp_path):
    X, y = data
    clf = _classifier(freeze_encoder=True).fit(X, y)
    skops.io.dump(clf, tmp_path / "clf.skops")
    untrusted = skops.io.get_untrusted_types(file=tmp_path / "clf.skops")
    assert untrusted == [
        "qmatch_sklearn._classifier.QMatchClassifier",
        "qmatch_sklearn.methods.qmatch.QMatchEncoder",
    ]
    restored = skops.io.load(tmp_path / "clf.skops", trusted=untrusted)
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))
    assert restored.network_[0] is restored.encoder_.network_


def test_class_weight_keyed_by_integer_labels_saves_and_loads(tmp_path):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params()), random_state=0,
                           class_weight={0: 1.0, 1: 3.0}).fit(X, y)
    qmatch_sklearn.save(clf, tmp_path / "clf.qmatch")
    loaded = qmatch_sklearn.load(tmp_path / "clf.qmatch")
    assert loaded.class_weight == {0: 1.0, 1: 3.0}
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
