"""``precision``: bf16 / fp16 autocast in training, float32 everywhere it matters."""

import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import qmatch_sklearn
from qmatch_sklearn import (
    METHODS,
    QMatchClassifier,
    QMatchEncoder,
    SupervisedMLPRegressor,
    _base,
    _precision,
)
from qmatch_sklearn._precision import resolve_precision

from .conftest import tiny_method_params


@pytest.fixture(scope="module")
def data():
    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32), y


@pytest.fixture
def fast_bf16(monkeypatch):
    """Pretend the CPU has (or lacks) bf16 matrix units."""
    def set_to(value):
        monkeypatch.setattr(_precision, "cpu_has_fast_bf16", lambda: value)
    return set_to


@pytest.mark.parametrize(("precision", "fast", "expected"), [
    ("32-true", False, "32-true"),
    ("auto", False, "32-true"),
    ("auto", True, "bf16-mixed"),
    ("bf16-mixed", True, "bf16-mixed"),
])
def test_resolution_on_the_cpu(precision, fast, expected, fast_bf16):
    fast_bf16(fast)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_precision(precision, "cpu") == expected


def test_auto_keeps_float32_on_cuda(fast_bf16):
    """bf16 autocast trained slower than float32 on an H200 (precision_cuda.md)."""
    fast_bf16(True)
    assert resolve_precision("auto", "cuda") == "32-true"
    assert resolve_precision("auto", "cuda:0") == "32-true"


def test_bf16_on_a_cpu_without_bf16_units_runs_with_a_warning(fast_bf16):
    fast_bf16(False)
    with pytest.warns(UserWarning, match="no bf16 matrix units"):
        assert resolve_precision("bf16-mixed", "cpu") == "bf16-mixed"


@pytest.mark.parametrize(("precision", "device", "match"), [
    ("16-mixed", "cpu", "needs a CUDA device"),
    ("16-mixed", "mps", "needs a CUDA device"),
    ("bf16-mixed", "mps", "not supported on the device 'mps'"),
])
def test_unsupported_precisions_are_errors(precision, device, match):
    with pytest.raises(ValueError, match=match):
        resolve_precision(precision, device)


def linear_output_dtypes(module):
    """Record the output dtype of every Linear layer of ``module``'s forward passes."""
    seen = []
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            layer.register_forward_hook(lambda _, __, out: seen.append(out.dtype))
    return seen


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_trains_in_bf16_and_stays_float32_outside(name, data, fast_bf16,
                                                                 monkeypatch):
    fast_bf16(True)
    seen = {}
    build = METHODS[name]._build_pretext

    def recording_build(self, *args):
        module, criterion = build(self, *args)
        seen["dtypes"] = linear_output_dtypes(module)
        return module, criterion

    monkeypatch.setattr(METHODS[name], "_build_pretext", recording_build)
    encoder = METHODS[name](**tiny_method_params(name, max_epochs=2, precision="bf16-mixed"))
    encoder.fit(data[0])
    assert encoder.precision_ == "bf16-mixed"
    assert torch.bfloat16 in seen["dtypes"]  # the forward passes ran under autocast
    assert all(p.dtype == torch.float32 for p in encoder.network_.parameters())
    assert np.isfinite(encoder.history_[:, "train_loss"]).all()
    seen["dtypes"].clear()
    Z = encoder.transform(data[0])
    assert Z.dtype == np.float32 and np.isfinite(Z).all()
    assert set(seen["dtypes"]) <= {torch.float32}  # inference in float32


def test_the_queue_and_teacher_stay_float32_in_bf16(data, fast_bf16, monkeypatch):
    fast_bf16(True)
    modules = []
    build = QMatchEncoder._build_pretext

    def keep(self, *args):
        module, criterion = build(self, *args)
        modules.append(module)
        return module, criterion

    monkeypatch.setattr(QMatchEncoder, "_build_pretext", keep)
    QMatchEncoder(**tiny_method_params("qmatch", precision="bf16-mixed")).fit(data[0])
    module = modules[0]
    assert module.queue.embeddings.dtype == torch.float32
    assert all(p.dtype == torch.float32 for p in module.teacher.parameters())


def test_supervised_estimators_train_in_bf16(data, fast_bf16):
    fast_bf16(True)
    X, y = data
    classifier = QMatchClassifier(
        QMatchEncoder(**tiny_method_params("qmatch")), precision="bf16-mixed",
        freeze_encoder=False, validation_fraction=0.3, max_epochs=3, random_state=0,
    ).fit(X, y)
    assert classifier.precision_ == "bf16-mixed"
    assert classifier.predict_proba(X).dtype == np.float32
    regressor = SupervisedMLPRegressor(hidden_sizes=(16,), embedding_dim=4, max_epochs=3,
                                       precision="bf16-mixed", random_state=0).fit(X, X[:, 0])
    assert np.isfinite(regressor.predict(X)).all()


def test_the_default_encoder_of_a_classifier_follows_its_precision(data, fast_bf16):
    fast_bf16(True)
    X, y = data
    classifier = QMatchClassifier(precision="bf16-mixed", random_state=0).set_params(
        max_epochs=2)
    classifier.fit(X, np.where(np.arange(len(y)) % 3 == 0, y, -1))
    assert classifier.encoder_.precision_ == "bf16-mixed"


def test_the_gradient_scaler_path_of_16_mixed(data, monkeypatch):
    """CUDA's "16-mixed", exercised on the CPU (float16 autocast and a CPU scaler)."""
    monkeypatch.setattr(_base, "resolve_precision", lambda precision, device: "16-mixed")
    encoder = QMatchEncoder(**tiny_method_params("qmatch", max_epochs=2)).fit(data[0])
    assert encoder.precision_ == "16-mixed"
    assert np.isfinite(encoder.history_[:, "train_loss"]).all()
    assert np.isfinite(encoder.transform(data[0])).all()


def test_a_float64_default_dtype_is_named_before_anything_is_built(data, tmp_path):
    """Under float64, the layers were built in float64: fit failed deep in the batch
    norm, and load refused a sound file as if it were forged."""
    X, y = data
    encoder = QMatchEncoder(**tiny_method_params("qmatch", max_epochs=1)).fit(X)
    path = tmp_path / "encoder.safetensors"
    qmatch_sklearn.save(encoder, path)
    torch.set_default_dtype(torch.float64)
    try:
        for call, caller in ((lambda: QMatchEncoder().fit(X), "QMatchEncoder"),
                             (lambda: encoder.transform(X), "QMatchEncoder"),
                             (lambda: QMatchClassifier().fit(X, y), "QMatchClassifier"),
                             (lambda: qmatch_sklearn.load(path), "qmatch_sklearn.load")):
            with pytest.raises(ValueError, match=rf"^{caller} builds and runs float32 networks, "
                                                 r"but torch's default dtype is torch.float64"):
                call()
    finally:
        torch.set_default_dtype(torch.float32)
    np.testing.assert_array_equal(qmatch_sklearn.load(path).transform(X), encoder.transform(X))
