"""The CUDA path: every estimator trains and predicts on a GPU, in float32 and bf16, and a
model fitted there serves on a CPU. Skipped where torch sees no CUDA device (CI); run on a
GPU machine with ``python -m pytest tests/test_cuda.py``."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import load_digits

from qmatch_sklearn import (
    METHODS,
    QMatchClassifier,
    QMatchEncoder,
    QMatchRegressor,
    SupervisedMLPClassifier,
    config_context,
    load,
    save,
)
from qmatch_sklearn._captured_step import MIN_TORCH, CapturedStep, torch_records_steps

from .conftest import tiny_encoder_params, tiny_method_params

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


@pytest.mark.parametrize("name", sorted(METHODS))
@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed"])
def test_every_encoder_trains_on_the_gpu_and_returns_host_float32(name, precision, digits):
    X, _ = digits
    encoder = METHODS[name](**tiny_method_params(name, device="cuda", precision=precision))
    Z = encoder.fit(X).transform(X)
    assert encoder.device_.startswith("cuda") and encoder.precision_ == precision
    assert isinstance(Z, np.ndarray) and Z.dtype == np.float32 and np.isfinite(Z).all()
    assert np.isfinite(encoder.history_[:, "train_loss"]).all()


def test_auto_precision_keeps_float32_on_a_gpu():
    """bf16 autocast trained the default network slower than float32 on an H200
    (precision_cuda.md)."""
    encoder = QMatchEncoder(**tiny_encoder_params(device="cuda", max_epochs=1, precision="auto"))
    encoder.fit(np.random.RandomState(0).normal(size=(256, 6)).astype(np.float32))
    assert encoder.precision_ == "32-true"


def test_a_gpu_model_serves_on_the_cpu_through_pickle_and_the_file_format(
        digits, tmp_path, monkeypatch):
    X, _ = digits
    encoder = QMatchEncoder(**tiny_encoder_params(device="cuda")).fit(X)
    on_gpu = encoder.transform(X)
    save(encoder, tmp_path / "encoder.safetensors")
    payload = pickle.dumps(encoder)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for how, restore in {"pickle": lambda: pickle.loads(payload),
                         "file": lambda: load(tmp_path / "encoder.safetensors")}.items():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            restored = restore()
        assert restored.device_ == "cpu", how
        # cuBLAS and the CPU's BLAS round differently: equal up to float32 rounding
        np.testing.assert_allclose(restored.transform(X), on_gpu, rtol=1e-4, atol=1e-4,
                                   err_msg=how)


def test_the_classifier_fits_a_raw_frame_with_nan_and_categories_on_the_gpu(digits):
    X, y = digits
    frame = pd.DataFrame(X[:, :20] * 1000.0 + 50.0, columns=[f"x{i}" for i in range(20)])
    frame.iloc[::7, 3] = np.nan
    frame["kind"] = pd.Categorical(np.array(["a", "b", "c"])[y % 3])
    labels = np.where(np.arange(len(y)) % 5 == 0, y, -1)  # a fifth labeled, the rest not
    clf = QMatchClassifier(device="cuda", random_state=0, max_epochs=20)
    clf.fit(frame, labels)
    proba = clf.predict_proba(frame)
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1, atol=1e-5)
    assert clf.score(frame, y) > 0.5  # ten classes: chance is 0.1


def test_the_fine_tuned_classifier_and_the_regressor_train_on_the_gpu(digits):
    X, y = digits
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(device="cuda")),
                           freeze_encoder=False, device="cuda", max_epochs=5,
                           random_state=0).fit(X, y)
    assert clf.predict(X).shape == y.shape
    reg = QMatchRegressor(device="cuda", random_state=0).fit(X, y.astype(float))
    assert np.isfinite(reg.predict(X)).all()
    mlp = SupervisedMLPClassifier(hidden_sizes=(32,), embedding_dim=8, max_epochs=30,
                                  device="cuda", random_state=0).fit(X, y)
    assert mlp.score(X, y) > 0.5


def test_partial_fit_continues_on_the_gpu(digits):
    X, _ = digits
    encoder = QMatchEncoder(**tiny_encoder_params(device="cuda", max_epochs=1,
                                                  validation_fraction=None))
    encoder.partial_fit(X[:900]).partial_fit(X[900:])
    assert len(encoder.history_) == 2
    assert np.isfinite(encoder.transform(X)).all()


def test_the_label_spreading_twin_and_its_weight_come_from_the_gpu(digits):
    """Both twins (self-training, label spreading) fit on the GPU's embeddings; their
    stacking weights are host floats and the probabilities are distributions."""
    X, y = digits
    labels = np.where(np.arange(len(y)) % 10 == 0, y, -1)
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(device="cuda")),
                           label_spreading=True, device="cuda", random_state=0).fit(X, labels)
    assert isinstance(clf.label_spreading_weight_, float)
    assert 0.0 <= clf.label_spreading_weight_ <= 1.0
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1, atol=1e-5)
    assert clf.score(X, y) > 0.5


def test_nan_unseen_at_fit_is_filled_on_the_gpu_as_on_the_cpu(digits):
    """A column with NaN only at predict reads as its fit mean, on the GPU too."""
    X, y = digits
    frame = pd.DataFrame(X[:, :20] * 1000.0 + 50.0, columns=[f"x{i}" for i in range(20)])
    labels = np.where(np.arange(len(y)) % 5 == 0, y, -1)
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(device="cuda")),
                           device="cuda", random_state=0).fit(frame, labels)
    holes = frame.iloc[:8].copy()
    holes.iloc[[0, 5], 3] = np.nan
    with pytest.warns(UserWarning, match=r"column\(s\) \['x3'\]"):
        proba = clf.predict_proba(holes)
    filled = holes.fillna({"x3": frame["x3"].mean()})
    np.testing.assert_allclose(clf.predict_proba(filled), proba, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(torch_records_steps(), reason=f"torch {torch.__version__} records steps")
def test_a_torch_too_old_to_record_says_it_trains_eagerly(digits):
    X, _ = digits
    params = tiny_method_params("qmatch", device="cuda", max_epochs=1, validation_fraction=None)
    with config_context(cuda_graph=True), pytest.warns(RuntimeWarning, match="trains eagerly"):
        METHODS["qmatch"](**params).fit(X)


@pytest.mark.skipif(not torch_records_steps(),
                    reason=f"torch {torch.__version__} is older than {MIN_TORCH}: no step recorded")
@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_recorded_step_trains_as_the_eager_step_does(name, digits, monkeypatch):
    """``set_config(cuda_graph=True)``: every method's step (i-Mix's at its default
    Beta(1, 1), whose draws stay on the device) is recorded once as a CUDA graph,
    without a warning (nothing
    fell back to eager), and the fit's losses and weights stay those of eager
    steps within float tolerance (the same draws: the generator is registered
    with the graph)."""
    X, _ = digits
    params = tiny_method_params(name, device="cuda", max_epochs=2, validation_fraction=None)
    eager = METHODS[name](**params).fit(X)
    captures = []
    capture = CapturedStep._capture

    def counted(self, x):
        captures.append(len(x))
        return capture(self, x)

    monkeypatch.setattr(CapturedStep, "_capture", counted)
    with config_context(cuda_graph=True), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a capture that fell back
        warnings.filterwarnings("error", ".*capturable")  # AdamW's, for the warm-up steps
        recorded = METHODS[name](**params).fit(X)
    assert captures == [64]
    np.testing.assert_allclose(recorded.history_[:, "train_loss"],
                               eager.history_[:, "train_loss"], rtol=1e-3)
    for key, value in eager.network_.state_dict().items():
        torch.testing.assert_close(recorded.network_.state_dict()[key], value,
                                   rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("kind", ["host", "sparse"])
def test_rows_kept_on_the_host_add_no_sync_per_step(kind, digits, monkeypatch):
    """Rows kept on the host (too large for the device, or sparse) are gathered there
    from a host index: an epoch reads its shuffled order back once, and its steps
    add no host sync to those of a fit from rows on the device (counted under
    ``torch.cuda.set_sync_debug_mode("warn")``)."""
    import scipy.sparse as sp

    from qmatch_sklearn import _engine

    X = digits[0]
    params = tiny_encoder_params(device="cuda", max_epochs=3, batch_size=64,
                                 validation_fraction=None)
    QMatchEncoder(**params).fit(X[:256])  # warm-up: kernels and allocators

    def syncs(rows):
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                QMatchEncoder(**params).fit(rows)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        return sum("synchroniz" in str(w.message) for w in caught)

    on_device = syncs(X)
    if kind == "host":
        monkeypatch.setattr(_engine, "fits_on_device", lambda nbytes, device: False)
        rows = X
    else:
        rows = sp.csr_matrix(X)
    # one order read an epoch (3), where a read a step would add 3 x 29
    assert syncs(rows) <= on_device + 3
