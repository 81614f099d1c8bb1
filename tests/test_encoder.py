"""QMatchEncoder as a user sees it: fit/transform, reproducibility, persistence, bad input."""

import pickle
import subprocess
import sys

import joblib
import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

from qmatch_sklearn import QMatchEncoder

from .conftest import tiny_encoder_params


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=10, n_informative=5, random_state=0)
    return X.astype(np.float64), y


@pytest.fixture(scope="module")
def fitted(data):
    return QMatchEncoder(**tiny_encoder_params()).fit(data[0])


def test_transform_returns_float32_embeddings_with_names(data, fitted):
    Z = fitted.transform(data[0])
    assert Z.shape == (300, 8) and Z.dtype == np.float32
    assert list(fitted.get_feature_names_out()) == [f"qmatchencoder{i}" for i in range(8)]
    df = pd.DataFrame(data[0], columns=[f"c{i}" for i in range(10)])
    encoder = QMatchEncoder(**tiny_encoder_params()).set_output(transform="pandas")
    out = encoder.fit(df).transform(df)
    assert isinstance(out, pd.DataFrame) and out.columns[0] == "qmatchencoder0"


def test_fitted_attributes(data, fitted):
    assert fitted.n_features_in_ == 10
    assert fitted.device_ == "cpu"
    assert fitted.n_epochs_ == len(fitted.history_) == 3
    assert {"train_loss", "valid_loss"} <= set(fitted.history_[-1])
    assert 1 <= fitted.best_epoch_ <= fitted.n_epochs_
    names = QMatchEncoder(**tiny_encoder_params()).fit(
        pd.DataFrame(data[0], columns=[f"c{i}" for i in range(10)])
    ).feature_names_in_
    assert list(names) == [f"c{i}" for i in range(10)]


def test_early_stopping_restores_the_best_epoch(data):
    enc = QMatchEncoder(**tiny_encoder_params(max_epochs=200, patience=2, lr=0.05)).fit(data[0])
    losses = enc.history_[:, "valid_loss"]
    assert enc.n_epochs_ < 200, "patience=2 should stop long before 200 epochs"
    assert enc.best_epoch_ == int(np.argmin(losses)) + 1
    assert enc.n_epochs_ == enc.best_epoch_ + 2
    # the kept weights are the best epoch's: re-evaluating them gives its loss
    assert losses[enc.best_epoch_ - 1] == min(losses)


def test_no_validation_trains_all_epochs(data):
    enc = QMatchEncoder(**tiny_encoder_params(max_epochs=4, validation_fraction=None)).fit(data[0])
    assert enc.n_epochs_ == 4 and enc.best_epoch_ == 4
    assert "valid_loss" not in enc.history_[-1]


def test_a_fixed_validation_set_drives_early_stopping(data):
    X = data[0]
    enc = QMatchEncoder(**tiny_encoder_params(max_epochs=3)).fit(X[:200], X_val=X[200:])
    batches = enc.history_[-1]["batches"]
    validated = sum(b["valid_batch_size"] for b in batches if "valid_batch_size" in b)
    trained = sum(b["train_batch_size"] for b in batches if "train_batch_size" in b)
    assert validated == 100 and trained == 200  # validation_fraction is ignored
    assert enc.best_epoch_ == int(np.argmin(enc.history_[:, "valid_loss"])) + 1
    with pytest.raises(ValueError, match="X has 4 features"):
        QMatchEncoder(**tiny_encoder_params()).fit(X, X_val=X[:5, :4])
    with pytest.raises(ValueError, match="at least 2 samples"):
        QMatchEncoder(**tiny_encoder_params()).fit(X, X_val=X[:1])


def test_same_seed_same_embeddings_and_global_rng_untouched(data):
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()
    a = QMatchEncoder(**tiny_encoder_params()).fit(data[0]).transform(data[0])
    b = QMatchEncoder(**tiny_encoder_params()).fit(data[0]).transform(data[0])
    np.testing.assert_array_equal(a, b)
    assert torch.equal(torch_state, torch.get_rng_state())
    after = np.random.get_state()
    assert numpy_state[0] == after[0] and np.array_equal(numpy_state[1], after[1])
    c = QMatchEncoder(**tiny_encoder_params(random_state=1)).fit(data[0]).transform(data[0])
    assert not np.allclose(a, c)
    # random_state=None draws fresh OS entropy, not the global generators
    QMatchEncoder(**tiny_encoder_params(random_state=None)).fit(data[0])
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(numpy_state[1], np.random.get_state()[1])


def test_input_is_never_modified(data):
    X32 = data[0].astype(np.float32)
    frame = pd.DataFrame(data[0], columns=[f"c{i}" for i in range(10)])
    X32_copy, frame_copy = X32.copy(), frame.copy()
    enc = QMatchEncoder(**tiny_encoder_params(student_corruption=0.9)).fit(X32)
    enc.transform(X32)
    QMatchEncoder(**tiny_encoder_params()).fit(frame).transform(frame)
    np.testing.assert_array_equal(X32, X32_copy)
    pd.testing.assert_frame_equal(frame, frame_copy)


def test_step_uses_pre_update_teacher_embeddings_then_ema_then_queue():
    enc = QMatchEncoder(**tiny_encoder_params(ema_decay=0.5))
    module, criterion = enc._build_pretext(4, torch.Generator().manual_seed(0), None)
    module.train()
    x = torch.randn(16, 4)
    outputs = module(x, torch.Generator().manual_seed(1))
    teacher, queue = outputs.teacher, outputs.queue.clone()  # the push writes in place
    # teacher_corruption=0: the teacher saw the clean batch
    with torch.no_grad():
        expected_teacher = torch.nn.functional.normalize(module.teacher(x), dim=1)
    torch.testing.assert_close(teacher, expected_teacher)
    loss = criterion(outputs)
    loss.backward()
    with torch.no_grad():
        for p in module.parameters():
            if p.grad is not None:
                p -= 0.1 * p.grad
    before = [p.detach().clone() for p in module.teacher.parameters()]
    student_params = list(module.encoder.parameters()) + list(module.projector.parameters())
    module.after_step(outputs)
    for old, new, s in zip(before, module.teacher.parameters(), student_params, strict=True):
        torch.testing.assert_close(new, 0.5 * old + 0.5 * s.detach())
    newest_first = module.queue.embeddings.roll(-int(module.queue.head), 0)
    torch.testing.assert_close(newest_first[:16], teacher)
    torch.testing.assert_close(newest_first[16:], queue[: 64 - 16])


def test_errors_name_the_problem(data):
    X = data[0]
    with pytest.raises(NotFittedError):
        QMatchEncoder().transform(X)
    enc = QMatchEncoder(**tiny_encoder_params()).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but QMatchEncoder is expecting 10"):
        enc.transform(X[:, :3])
    with pytest.raises(ValueError, match="0 sample"):
        QMatchEncoder(**tiny_encoder_params()).fit(X[:0])
    with pytest.raises(ValueError, match="at least 2 samples"):
        QMatchEncoder(**tiny_encoder_params()).fit(X[:1])
    bad = X.copy()
    bad[3, 4] = np.nan
    with pytest.warns(UserWarning, match=r"X has missing values \(NaN\) in column\(s\) \[4\]"):
        assert np.isfinite(enc.transform(bad)).all()
    bad[3, 4] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        enc.transform(bad)
    strings = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    with pytest.raises(ValueError, match=r"numeric features.*categorical_features.*OneHotEncoder"):
        QMatchEncoder(**tiny_encoder_params(), categorical_features=None).fit(strings)
    with pytest.raises(ValueError, match=r"numeric features.*DataFrame"):
        QMatchEncoder(**tiny_encoder_params()).fit(strings.to_numpy())
    with pytest.raises(ValueError, match="student_corruption"):
        QMatchEncoder(student_corruption=1.5).fit(X)
    with pytest.raises(ValueError, match="divisible by 4"):
        QMatchEncoder(architecture="imix", hidden_sizes=(8, 10)).fit(X)


def test_imix_architecture_has_maxout(data):
    params = tiny_encoder_params(architecture="imix", hidden_sizes=(16, 32))
    enc = QMatchEncoder(**params).fit(data[0])
    layers = [type(layer).__name__ for layer in enc.network_]
    assert "Maxout" in layers
    assert enc.network_[-1].in_features == 8 and enc.transform(data[0][:3]).shape == (3, 8)


def test_pickle_keeps_only_the_encoder_weights(fitted):
    restored = pickle.loads(pickle.dumps(fitted))
    keys = set(restored.network_.state_dict())
    assert not any(k.startswith(("teacher", "projector", "queue")) for k in keys)
    assert not hasattr(restored, "optimizer_")
    n_bytes = sum(p.numel() * 4 for p in restored.network_.state_dict().values())
    assert len(pickle.dumps(fitted)) < 3 * n_bytes + 100_000


def _transform_in_fresh_process(model_path, X_path, env=None):
    code = (
        "import sys, warnings, joblib, numpy as np;"
        "warnings.simplefilter('always');"
        "m = joblib.load(sys.argv[1]);"
        "np.save(sys.argv[2] + '.out.npy', m.transform(np.load(sys.argv[2])));"
        "print(m.device_)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(model_path), str(X_path)],
        capture_output=True, text=True, env=env, check=True,
    )
    return np.load(str(X_path) + ".out.npy"), result


def test_joblib_round_trip_in_a_fresh_process(tmp_path, data, fitted):
    joblib.dump(fitted, tmp_path / "enc.joblib")
    np.save(tmp_path / "X.npy", data[0])
    out, _ = _transform_in_fresh_process(tmp_path / "enc.joblib", tmp_path / "X.npy")
    np.testing.assert_array_equal(out, fitted.transform(data[0]))


def test_a_cuda_model_loads_on_a_cpu_only_machine(tmp_path, data, fitted, monkeypatch):
    # Simulate a model fitted on CUDA: the pickle records device_="cuda"; the
    # weights are mapped to the device that exists at load time.
    import os

    monkeypatch.setattr(fitted, "device_", "cuda")
    joblib.dump(fitted, tmp_path / "enc.joblib")
    monkeypatch.setattr(fitted, "device_", "cpu")
    np.save(tmp_path / "X.npy", data[0])
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    out, result = _transform_in_fresh_process(tmp_path / "enc.joblib", tmp_path / "X.npy", env)
    assert result.stdout.strip() == "cpu"
    assert "CUDA is not available" in result.stderr
    np.testing.assert_array_equal(out, fitted.transform(data[0]))


def test_cuda_request_without_cuda_falls_back_to_cpu_with_a_warning(data, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        enc = QMatchEncoder(**tiny_encoder_params(device="cuda", max_epochs=1)).fit(data[0])
    assert enc.device_ == "cpu"
    auto = QMatchEncoder(**tiny_encoder_params(device="auto", max_epochs=1)).fit(data[0])
    assert auto.device_ == "cpu"


def test_verbose_shows_a_progress_bar_over_epochs(data, capsys):
    QMatchEncoder(**tiny_encoder_params(verbose=1)).fit(data[0])
    err = capsys.readouterr().err
    assert "QMatchEncoder" in err and "3/3" in err and "valid_loss" in err
    QMatchEncoder(**tiny_encoder_params(verbose=0)).fit(data[0])
    assert capsys.readouterr().err == ""


def test_transform_does_not_depend_on_the_batch(data, fitted):
    X = data[0]
    full = fitted.transform(X)
    order = np.random.default_rng(0).permutation(len(X))
    np.testing.assert_allclose(fitted.transform(X[:7]), full[:7], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fitted.transform(X[order]), full[order], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fitted.transform(X[3:4]), full[3:4], rtol=1e-5, atol=1e-6)


def test_the_progress_bar_counts_the_batches_of_a_long_epoch(data, capsys, monkeypatch):
    from qmatch_sklearn import _engine

    class EveryBatch(_engine.EpochProgressBar):  # "long": redraw at every batch
        def __init__(self, desc):
            super().__init__(desc, refresh_seconds=0.0)

    monkeypatch.setattr(_engine, "EpochProgressBar", EveryBatch)
    X = data[0]
    QMatchEncoder(**tiny_encoder_params(verbose=1, max_epochs=1, batch_size=32,
                                        validation_fraction=None)).fit(X)
    batches = -(-len(X) // 32)
    assert f"batch {batches}/{batches}" in capsys.readouterr().err


def test_a_rows_embedding_does_not_depend_on_its_batch_beyond_float32_rounding():
    """What scikit-learn's check_methods_subset_invariance and _sample_order_invariance
    ask at atol=1e-7, at float32 tolerance: the BLAS picks its kernels by the batch's
    shape, so a row embedded among other rows may round differently (by ~2e-7)."""
    from sklearn.datasets import load_wine

    X = load_wine().data
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=2, hidden_sizes=(64, 64))).fit(X)
    Z = encoder.transform(X)
    for rows in (slice(0, 1), slice(3, 7), slice(10, 47), np.arange(len(X))[::-1]):
        np.testing.assert_allclose(encoder.transform(X[rows]), Z[rows], rtol=1e-5, atol=1e-6)
