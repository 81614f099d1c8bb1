"""The training engine as a user meets it: divergence, Ctrl-C, what verbose says, memory."""

import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.frozen import FrozenEstimator

from qmatch_sklearn import METHODS, QMatchClassifier, QMatchEncoder, _corruption, _engine
from qmatch_sklearn._engine import FineTuneNet, PretextNet, fits_on_device
from qmatch_sklearn.methods import qmatch

from .conftest import tiny_encoder_params, tiny_method_params

N_ROWS, BATCH = 300, 64
STEPS_PER_EPOCH = 5  # ceil(300 / 64), no validation split


@pytest.fixture(scope="module")
def X():
    X, _ = make_classification(n_samples=N_ROWS, n_features=10, random_state=0)
    return X


def loss_failing_after(monkeypatch, n_calls, failure):
    """Make the Q-Match loss ``failure(loss)`` from its ``n_calls + 1``-th call on."""
    calls = {"n": 0}
    original = qmatch.distribution_matching_loss

    def loss(*args, **kwargs):
        calls["n"] += 1
        value = original(*args, **kwargs)
        return failure(value) if calls["n"] > n_calls else value

    monkeypatch.setattr(qmatch, "distribution_matching_loss", loss)


def test_a_diverging_fit_keeps_the_last_finite_epoch_with_a_warning(X, monkeypatch):
    params = tiny_encoder_params(max_epochs=10, validation_fraction=None)
    reference = QMatchEncoder(**{**params, "max_epochs": 3}).fit(X).transform(X)
    loss_failing_after(monkeypatch, 3 * STEPS_PER_EPOCH, lambda loss: loss * float("nan"))
    with pytest.warns(ConvergenceWarning, match="non-finite at epoch 4.*epoch 3 were restored"):
        encoder = QMatchEncoder(**params).fit(X)
    assert (encoder.n_epochs_, encoder.best_epoch_) == (4, 3)
    np.testing.assert_array_equal(encoder.transform(X), reference)


def test_with_validation_the_best_finite_epoch_is_restored(X, monkeypatch):
    loss_failing_after(monkeypatch, 60, lambda loss: loss * float("inf"))
    with pytest.warns(ConvergenceWarning, match="were restored"):
        encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=50)).fit(X)
    finite = np.asarray(encoder.history_[:-1, "valid_loss"])
    assert encoder.best_epoch_ == int(np.argmin(finite)) + 1
    assert np.isfinite(encoder.transform(X)).all()


def test_the_best_epoch_copy_holds_the_kept_encoder_and_skips_the_last_epoch(X, monkeypatch):
    """The copy that a later divergence or early stop restores covers what the encoder
    keeps (not the teacher, projector or queue), and no run copies its last epoch,
    which nothing can need back: a partial_fit call (one epoch) copies nothing."""
    copied = []
    original = _engine.KeepBestEpoch._copy_weights

    def copy_weights(self, state):
        copied.append(sorted(state))
        original(self, state)

    monkeypatch.setattr(_engine.KeepBestEpoch, "_copy_weights", copy_weights)
    params = tiny_encoder_params(max_epochs=3, validation_fraction=None)
    encoder = QMatchEncoder(**params).fit(X)
    assert copied == [sorted(encoder.network_.state_dict())] * 2  # epochs 1 and 2
    copied.clear()
    QMatchEncoder(**params).partial_fit(X).partial_fit(X)
    assert copied == []


def test_a_fit_with_no_finite_epoch_raises_and_names_lr(X):
    encoder = QMatchEncoder(**tiny_encoder_params(lr=1e30))
    with pytest.raises(FloatingPointError, match=r"diverged.*Lower lr"):
        encoder.fit(X)
    assert not hasattr(encoder, "network_")


def test_a_fitted_estimator_raises_rather_than_return_non_finite_values(X):
    encoder = QMatchEncoder(**tiny_encoder_params()).fit(X)
    # values far beyond the fit rows are clipped by the numeric map: finite outputs
    assert np.isfinite(encoder.transform(np.full((2, 10), 3e38))).all()
    with torch.no_grad():  # a network that overflows all the same
        encoder.network_[-1].bias.fill_(3e38)
        encoder.network_[-1].weight.fill_(3e38)
    with pytest.raises(FloatingPointError, match="non-finite outputs"):
        encoder.transform(X[:2])


def interrupt_on_step(monkeypatch, net_class, step):
    """Raise KeyboardInterrupt in the ``step``-th training step of ``net_class``,
    where a Ctrl-C would raise it."""
    calls = {"n": 0}
    original = net_class.train_step_single

    def train_step_single(self, batch, **fit_params):
        calls["n"] += 1
        if calls["n"] == step:
            raise KeyboardInterrupt
        return original(self, batch, **fit_params)

    monkeypatch.setattr(net_class, "train_step_single", train_step_single)


def test_ctrl_c_during_pretraining_reaches_the_caller(X, monkeypatch):
    interrupt_on_step(monkeypatch, PretextNet, 12)
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=200))
    with pytest.raises(KeyboardInterrupt):
        encoder.fit(X)
    assert not hasattr(encoder, "network_")
    interrupt_on_step(monkeypatch, PretextNet, 12)
    clf = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(max_epochs=200)), device="cpu")
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, np.arange(N_ROWS) % 2)
    assert not hasattr(clf, "classes_")


def test_ctrl_c_during_fine_tuning_reaches_the_caller(X, monkeypatch):
    encoder = FrozenEstimator(QMatchEncoder(**tiny_encoder_params()).fit(X))
    interrupt_on_step(monkeypatch, FineTuneNet, 7)
    clf = QMatchClassifier(encoder, freeze_encoder=False, max_epochs=200, device="cpu")
    with pytest.raises(KeyboardInterrupt):
        clf.fit(X, np.arange(N_ROWS) % 2)
    assert not hasattr(clf, "classes_")


def test_verbose_says_where_training_stopped_and_which_epoch_was_kept(X, capsys):
    params = tiny_encoder_params(max_epochs=200, patience=2, lr=0.05)
    encoder = QMatchEncoder(**params, verbose=1).fit(X)
    out = capsys.readouterr()
    assert (
        f"QMatchEncoder: stopped at epoch {encoder.n_epochs_}: valid_loss did not improve "
        f"for 2 epochs; kept epoch {encoder.best_epoch_} (valid_loss "
    ) in out.out
    assert f"{encoder.n_epochs_}/200" in out.err  # the bar counts the epoch it stopped at
    QMatchEncoder(**{**params, "max_epochs": 2}, verbose=2).fit(X)
    out = capsys.readouterr()
    assert "train_loss    valid_loss" in out.out  # skorch's table of epochs, not a bar
    assert "epoch/s" not in out.err
    assert "QMatchEncoder: ran all 2 epochs; kept epoch" in out.out


def test_sparse_input_is_densified_one_batch_at_a_time():
    """A one-hot matrix whose dense form is 400 MB fits and transforms with no
    NumPy allocation near that size (the densified batches are small)."""
    rng = np.random.default_rng(0)
    n_rows, n_columns = 20_000, 5000
    rows = np.repeat(np.arange(n_rows), 10)
    X = sp.csr_matrix(
        (np.ones(len(rows)), (rows, rng.integers(0, n_columns, len(rows)))),
        shape=(n_rows, n_columns),
    )
    dense_bytes = n_rows * n_columns * 4
    encoder = QMatchEncoder(**tiny_encoder_params(max_epochs=1))
    # the first fit in a process imports modules lazily (torch pulls in sympy): a
    # small warm-up keeps those allocations out of the measured peak
    with warnings.catch_warnings():  # its validation split is small
        warnings.simplefilter("ignore")
        QMatchEncoder(**tiny_encoder_params(max_epochs=1)).fit(X[:200]).transform(X[:200])
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            Z = encoder.fit(X).transform(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert Z.shape == (n_rows, 8) and np.isfinite(Z).all()
    assert peak < dense_bytes / 8, f"peak NumPy allocation {peak / 1e6:.1f} MB"


def test_auto_validation_early_stops_only_on_large_data():
    X_large, _ = make_classification(n_samples=2000, n_features=10, random_state=0)
    auto = tiny_encoder_params(validation_fraction="auto", max_epochs=2)
    small = QMatchEncoder(**auto).fit(X_large[:1999])  # 10% would be 199.9 rows: too few
    assert "valid_loss" not in small.history_[-1] and small.n_epochs_ == small.best_epoch_ == 2
    large = QMatchEncoder(**auto).fit(X_large)  # 200 validation rows
    assert "valid_loss" in large.history_[-1]
    clf = QMatchClassifier(QMatchEncoder(**auto), freeze_encoder=True, max_epochs=3,
                           device="cpu", random_state=0)
    clf.fit(X_large, np.r_[np.arange(100) % 2, np.full(1900, -1)])
    assert "valid_loss" not in clf.history_[-1] and clf.n_epochs_ == 3


def test_early_stopping_on_a_tiny_validation_split_warns(X):
    with pytest.warns(UserWarning, match="validation split of only 30 rows.*'auto'"):
        QMatchEncoder(**tiny_encoder_params(validation_fraction=0.1)).fit(X)


def test_training_data_too_large_for_the_device_stays_on_the_host(X, monkeypatch):
    """On the CPU the data always 'fits' (the tensor shares the array); where it does
    not fit, X stays a host tensor and batches are gathered there."""
    assert fits_on_device(10**15, "cpu")
    monkeypatch.setattr(_engine, "fits_on_device", lambda nbytes, device: False)
    X32 = X.astype(np.float32)
    stored, _, _ = _engine.device_rows(X32, None, "cpu")
    assert stored.device.type == "cpu" and np.shares_memory(stored.numpy(), X32)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_fit_from_host_batches_equals_one_from_device_data(X, monkeypatch):
    """Batches gathered on the host (with their labels and weights, from a host
    index) and copied through pinned memory give the network of a fit whose data
    sat on the GPU."""
    params = tiny_encoder_params(device="cuda", validation_fraction=None)
    y, weight = np.arange(N_ROWS) % 2, np.linspace(0.5, 2.0, N_ROWS)

    def fits():
        encoder = QMatchEncoder(**params).fit(X).transform(X)
        classifier = QMatchClassifier(QMatchEncoder(**params), freeze_encoder=False,
                                      max_epochs=2, batch_size=BATCH, validation_fraction=0.2,
                                      device="cuda", random_state=0)
        return encoder, classifier.fit(X, y, sample_weight=weight).predict_proba(X)

    on_device = fits()
    monkeypatch.setattr(_engine, "fits_on_device", lambda nbytes, device: False)
    for from_host, expected in zip(fits(), on_device, strict=True):
        np.testing.assert_allclose(from_host, expected, rtol=1e-5, atol=1e-5)


def test_adamw_steps_with_the_fused_kernel_where_torch_has_one(X, monkeypatch):
    """The optimiser is AdamW's fused kernel where this torch runs it (the CPU from torch
    2.4 on); without it, the for-loop step trains the same network up to rounding."""
    expected = _engine.fused_adamw_runs_on("cpu")  # probed (and cached) before the spy
    made = []

    class RecordingAdamW(torch.optim.AdamW):
        def __init__(self, *args, **kwargs):
            made.append(kwargs["fused"])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    params = tiny_encoder_params(max_epochs=1, validation_fraction=None, random_state=0)
    fused = QMatchEncoder(**params).fit(X)
    assert made == [expected]
    monkeypatch.setattr(_engine, "fused_adamw_runs_on", lambda device_type: False)
    looped = QMatchEncoder(**params).fit(X)
    assert made[-1] is False
    # a gradient entry near zero can flip the sign of its ~lr-sized first Adam update
    Z = fused.transform(X)
    difference = np.abs(Z - looped.transform(X))
    assert difference.mean() < 2e-3 * np.abs(Z).mean() and difference.max() < 1e-2


class _HostSyncSentinel(torch.utils._python_dispatch.TorchDispatchMode):
    """Raises on the ops that read a device tensor back to the host (issue #58)."""

    SYNCS = (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.nonzero.default)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in self.SYNCS:
            raise AssertionError(f"{func} reads the device back inside a training step")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("name, imix_alpha", [*((name, None) for name in sorted(METHODS)),
                                              ("imix", 0.5)])
def test_a_training_epoch_never_reads_the_device_back(name, imix_alpha, monkeypatch):
    """Every method's epoch (per batch: corruption with feature groups, forwards,
    loss, backward, AdamW, EMA, queue) under a sentinel that raises on a host read
    or a copy to the host (issue #58), i-Mix's at its default Beta(1, 1) (other
    alphas copy their draws, which the case with ``imix_alpha`` checks, and are
    not ``PretextModule.recordable``); the losses are read once, after the
    last batch (a list on the CPU, which dispatches no scalar read), and the
    history holds them per batch as ``loss.item()`` gave them."""
    steps = []
    train_step, run_single_epoch = PretextNet.train_step, PretextNet.run_single_epoch

    def host_copy(*args, **kwargs):
        raise AssertionError("a training step copies a tensor to the host")

    def recorded_step(self, batch, **fit_params):
        with monkeypatch.context() as step_only:  # no-ops on the CPU, copies on a GPU
            step_only.setattr(torch.Tensor, "cpu", host_copy)
            step_only.setattr(torch.Tensor, "numpy", host_copy)
            step = train_step(self, batch, **fit_params)
        steps.append(step["loss"].detach().clone())
        return step

    def guarded_epoch(self, *args, **kwargs):
        with _HostSyncSentinel():
            return run_single_epoch(self, *args, **kwargs)

    monkeypatch.setattr(PretextNet, "train_step", recorded_step)
    monkeypatch.setattr(PretextNet, "run_single_epoch", guarded_epoch)
    # the corruption sorts its permutations through NumPy on the CPU only (no copy
    # there); what runs on a GPU is torch's argsort, which the copy check covers
    monkeypatch.setattr(_corruption, "column_permutations",
                        lambda keys: keys.argsort(dim=0, stable=True))
    X = np.random.default_rng(0).normal(size=(300, 6)).astype(np.float32)
    groups = {} if name == "imix" else {"feature_groups": [[0, 1], [2, 3]]}
    estimator = METHODS[name](**tiny_method_params(name, max_epochs=2,
                                                   validation_fraction=None, **groups))
    if imix_alpha is not None:  # its Beta draws go through the host: it is not recorded
        estimator.set_params(alpha=imix_alpha)
        with pytest.raises(AssertionError, match="copies a tensor to the host"):
            estimator.fit(X)
        return
    estimator.fit(X)
    assert len(steps) == 2 * 5  # 300 rows in batches of 64, twice
    recorded = [batch["train_loss"] for epoch in estimator.history_ for batch in epoch["batches"]]
    assert recorded == [loss.item() for loss in steps]


#: aten ops one Q-Match training step of the default network may dispatch on the CPU
#: (issue #58; 193 with torch 2.13: forwards, loss, backward, fused AdamW, the EMA as
#: one foreach update, the queue written in place at a head kept on the device (4 ops
#: a step, so that a recorded step moves it), the first layer's per-column bound, the
#: teacher normalised once and its clean view not masked, the corruption's permutations
#: sorted by NumPy (2 ops: to and from NumPy; 1 for torch's argsort elsewhere); 194
#: with a Python loop of lerps, the queue rebuilt by concatenation and no bound).
STEP_OP_BUDGET = 193


class _OpCounter(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def test_a_q_match_step_stays_within_its_op_budget(monkeypatch):
    counts = []
    train_step = PretextNet.train_step

    def counted(self, batch, **fit_params):
        counter = _OpCounter()
        with counter:
            step = train_step(self, batch, **fit_params)
        counts.append(counter.count)
        return step

    monkeypatch.setattr(PretextNet, "train_step", counted)
    X = np.random.default_rng(0).normal(size=(1536, 20)).astype(np.float32)
    QMatchEncoder(max_epochs=1, validation_fraction=None, random_state=0,
                  device="cpu").fit(X)
    # the first step also builds AdamW's state
    assert len(counts) == 3 and max(counts[1:]) <= STEP_OP_BUDGET, counts


class EagerStep:
    """A :class:`~qmatch_sklearn._captured_step.CapturedStep` whose "graph" is the
    step it would record, run eagerly; it counts as captured after its first
    step, so that skorch's step on the last, shorter batch zeroes the gradients
    in place, as after a real capture. ``sizes`` holds the batches it ran."""

    sizes = []

    def __init__(self, step, zero_grad, generator, device):
        self.step, self.zero_grad = step, zero_grad

    @property
    def captured(self):
        return bool(self.sizes)

    def __call__(self, x):
        self.zero_grad()
        self.sizes.append(len(x))
        return self.step(x)


@pytest.mark.parametrize("name", ["qmatch", "dino", "imix"])
def test_the_step_a_cuda_graph_records_trains_as_skorchs_step(name, X, monkeypatch):
    """What ``set_config(cuda_graph=True)`` records on a GPU
    (``PretextNet._bare_train_step``: the loss, backward, AdamW with its step counts
    on the device, the method's ``after_step``) gives the losses and weights of
    skorch's step, here eagerly on the CPU; the last, shorter batch of each
    epoch still takes skorch's step."""
    params = tiny_method_params(name, validation_fraction=None)  # 300 rows: 4 x 64 + 44
    reference = METHODS[name](**params).fit(X)
    monkeypatch.setattr(_engine, "captures_steps", lambda *args: True)
    monkeypatch.setattr(_engine, "CapturedStep", EagerStep)
    monkeypatch.setattr(EagerStep, "sizes", [])
    bare = METHODS[name](**params).fit(X)
    assert EagerStep.sizes == [64] * 4 * 3  # the 44-row batches took skorch's step
    np.testing.assert_allclose(bare.history_[:, "train_loss"],
                               reference.history_[:, "train_loss"], rtol=1e-6)
    for key, value in reference.network_.state_dict().items():
        torch.testing.assert_close(bare.network_.state_dict()[key], value, rtol=1e-5, atol=1e-6)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.integers(1, 8), st.sampled_from(["keep", "drop", "merge"]))
def test_batches_cover_the_rows_and_a_last_row_alone_is_dropped_or_merged(n_rows, batch_size,
                                                                           singleton):
    """Batches are consecutive slices of ``batch_size`` rows; a last batch of one row
    (after others) is skipped with ``drop_singleton`` and joins the batch before
    it with ``merge_singleton``; every other row is served once."""
    rows = _engine.Rows(torch.arange(n_rows, dtype=torch.float32)[:, None], None,
                        torch.arange(n_rows), torch.device("cpu"))
    batches = _engine.SliceBatches(rows, batch_size, drop_singleton=singleton == "drop",
                                   merge_singleton=singleton == "merge")
    served = [batch[0][:, 0].long().tolist() for batch in batches]
    assert len(served) == len(batches)
    alone = n_rows > batch_size and n_rows % batch_size == 1
    expected = list(range(n_rows - (alone and singleton == "drop")))
    assert [row for batch in served for row in batch] == expected
    if alone and singleton != "keep":
        assert min(map(len, served)) > 1


def test_pretext_validation_runs_the_network_as_a_training_step_does(X, monkeypatch):
    """The validation loss normalises each batch by its own statistics (train
    mode, issue #55) and leaves the running statistics where training put them;
    a last validation row alone joins the batch before it."""
    seen = []
    loss = PretextNet._pretext_loss

    def spy(net, x, generator):
        if torch.is_grad_enabled():
            return loss(net, x, generator)
        norms = [m for m in net.module_.modules() if isinstance(m, torch.nn.BatchNorm1d)]
        before = [m.running_mean.clone() for m in norms]
        result = loss(net, x, generator)
        kept = all(torch.equal(b, m.running_mean) for b, m in zip(before, norms, strict=True))
        seen.append((len(x), all(m.training for m in norms), kept))
        return result

    monkeypatch.setattr(PretextNet, "_pretext_loss", spy)
    QMatchEncoder(**tiny_encoder_params(validation_fraction=0.25, batch_size=37)).fit(X)
    assert seen and all(training and kept for _, training, kept in seen)
    assert {size for size, _, _ in seen} == {37, 38}  # 75 validation rows: 37 + 38


def test_a_validation_set_of_one_row_reads_the_running_statistics():
    """One validation row has no batch statistics: its loss is measured in eval mode
    (skorch's validation mode), not in train mode, where batch norm cannot run."""
    X, _ = make_classification(n_samples=10, n_features=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # an epoch chosen on one row
        encoder = QMatchEncoder(**tiny_encoder_params(validation_fraction=0.1)).fit(X)
    assert np.isfinite(encoder.history_[:, "valid_loss"]).all()


@pytest.mark.parametrize("net_class", [PretextNet, FineTuneNet])
def test_each_epoch_sets_the_train_or_eval_mode_once_and_steps_run_in_it(X, net_class,
                                                                        monkeypatch):
    """The modules' mode is set at an epoch's start, not at every training step:
    training steps run in train mode, validation steps in eval mode (each after
    an epoch of the other)."""
    events = []  # ("set", training) and (step name, the module's training flag)
    set_training = net_class._set_training

    def spy_set(net, training=True):
        events.append(("set", training))
        return set_training(net, training)

    monkeypatch.setattr(net_class, "_set_training", spy_set)
    for name in ("train_step", "validation_step"):
        step = getattr(net_class, name)

        def spy_step(net, batch, _step=step, _name=name, **fit_params):
            events.append((_name, net.module_.training))
            return _step(net, batch, **fit_params)

        monkeypatch.setattr(net_class, name, spy_step)
    params = tiny_encoder_params(max_epochs=3, validation_fraction=0.25, batch_size=BATCH)
    if net_class is PretextNet:
        QMatchEncoder(**params).fit(X)
    else:
        encoder = FrozenEstimator(QMatchEncoder(**tiny_encoder_params()).fit(X))
        QMatchClassifier(encoder, freeze_encoder=False, max_epochs=3, batch_size=BATCH,
                         validation_fraction=0.25, device="cpu").fit(X, np.arange(N_ROWS) % 2)
    steps = [(name, training) for name, training in events if name != "set"]
    assert {name for name, _ in steps} == {"train_step", "validation_step"}
    assert all(training == (name == "train_step") for name, training in steps)
    # an epoch's training steps follow each other with no mode set between them
    # (skorch's own validation step, which the fine-tuning net keeps, sets it each batch)
    starts = [i for i, (name, _) in enumerate(events)
              if name == "train_step" and events[i - 1][0] != "train_step"]
    assert len(starts) == 3
    assert steps.count(("train_step", True)) == 3 * 4  # 225 training rows, batches of 64
