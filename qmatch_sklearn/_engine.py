"""The one training engine: skorch nets that every method, classifier and regressor share.

skorch brings the epoch loop, history, callbacks and devices; batches are sliced from one
store of the data, randomness comes from a local ``torch.Generator``.
"""

import contextlib
import functools
import time
import weakref
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.exceptions import ConvergenceWarning
from skorch import NeuralNet, NeuralNetClassifier, NeuralNetRegressor
from skorch.callbacks import Callback
from skorch.dataset import get_len, unpack_data
from skorch.helper import predefined_split
from skorch.history import History
from tqdm.auto import tqdm

from ._captured_step import CapturedStep, captures_steps, warn_unrecorded
from ._config import get_config
from ._distributed import (
    average_gradients,
    broadcast_state,
    current_group,
    gather_rows,
    global_mean,
    shard,
)
from ._networks import batch_statistics
from ._precision import autocast, grad_scaler
from ._split import AUTO_MIN_VALIDATION_ROWS
from ._time_limit import deadline
from ._warnings import warn

#: Most rows per forward pass in ``transform``/``predict``: small activations, fast on CPUs.
INFERENCE_BATCH_SIZE = 1024
#: Most bytes of float32 input per forward pass: bounds memory for wide (one-hot) inputs.
INFERENCE_CHUNK_BYTES = 32 * 2**20


#: Largest share of the accelerator's free memory a dense training matrix may take.
DEVICE_DATA_FRACTION = 0.5


def fits_on_device(nbytes, device):
    """Whether ``nbytes`` of training data fit on ``device`` (the CPU: always)."""
    if torch.device(device).type != "cuda":
        return True
    return nbytes <= DEVICE_DATA_FRACTION * torch.cuda.mem_get_info(device)[0]


class Rows(torch.utils.data.Dataset):
    """The rows ``index`` of ``X`` (and ``y``), never copied, served one batch at a time."""

    def __init__(self, X, y, index, device, weight=None):
        self.X, self.y, self.index, self.device, self.weight = X, y, index, device, weight

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):  # pragma: no cover - batches go through ``batch``
        return self.batch(self.index[i : i + 1])

    def batch(self, index):
        """Rows ``index`` of ``X`` and ``y``, on the training device."""
        if sp.issparse(self.X):
            X = torch.from_numpy(self.X[index.numpy()].toarray())
        else:
            X = self.X.index_select(0, index)
        X = _to_device(X, self.device)
        if self.weight is not None:  # a weighted batch: see _RowWeightsMixin
            X = (X, _to_device(self.weight.index_select(0, index), self.device))
        y = None if self.y is None else _to_device(self.y.index_select(0, index), self.device)
        return X, y

    def subset(self, index):
        """These rows restricted to ``index`` (a tensor of row numbers of ``X``)."""
        return Rows(self.X, self.y, index, self.device, self.weight)


def _to_device(rows, device):
    """``rows`` on ``device``; host rows go to CUDA through pinned memory, without blocking."""
    if rows.device == device:
        return rows
    if rows.device.type == "cpu" and device.type == "cuda":
        rows = rows.pin_memory()
    return rows.to(device, non_blocking=True)


def device_rows(X, y, device):
    """``X``, ``y`` and their store as :class:`Rows` keeps them (``y`` where ``X`` is)."""
    on_host = sp.issparse(X)
    if not on_host:
        X = torch.as_tensor(X if X.flags.writeable else np.array(X))
        on_host = not fits_on_device(X.nbytes, device)
        if not on_host:
            X = X.to(device)
    store = torch.device("cpu") if on_host else device
    return X, (None if y is None else torch.as_tensor(y, device=store)), store


def split_datasets(X, y, train, valid, device, weight=None):
    """:class:`Rows` for the ``train`` and ``valid`` (or None) indices of one ``X``."""
    device = torch.empty(0, device=device).device  # as its tensors name it: "cuda:0", not "cuda"
    X, y, store = device_rows(X, y, device)
    if weight is not None:
        weight = torch.as_tensor(weight, dtype=torch.float32, device=store)

    def rows(index):
        return Rows(X, y, torch.as_tensor(index, dtype=torch.int64, device=store), device,
                    weight)

    return rows(train), (None if valid is None else rows(valid))


def all_rows(X, y, device, weight=None):
    """:class:`Rows` over every row of ``X``."""
    return split_datasets(X, y, np.arange(X.shape[0]), None, device, weight)[0]


class SliceBatches:
    """Mini-batches of a :class:`Rows`; a last one-row batch, which batch norm cannot
    normalise, is dropped (``drop_singleton``) or merged (``merge_singleton``)."""

    def __init__(self, rows, batch_size, shuffle=False, generator=None, drop_singleton=False,
                 merge_singleton=False):
        self.rows = rows
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.generator = generator
        self.drop_singleton = drop_singleton
        self.merge_singleton = merge_singleton

    def _bounds(self):
        n = len(self.rows)
        starts = list(range(0, n, self.batch_size))
        singleton = len(starts) > 1 and n % self.batch_size == 1
        if singleton and (self.drop_singleton or self.merge_singleton):
            starts.pop()
            if self.drop_singleton:
                n -= 1
        return list(zip(starts, [*starts[1:], n], strict=True))

    def __len__(self):
        return len(self._bounds())

    def __iter__(self):
        index = self.rows.index
        if self.shuffle:
            device = index.device if self.generator is None else self.generator.device
            order = torch.randperm(len(index), generator=self.generator, device=device)
            index = index[order.to(index.device)]
        for start, stop in self._bounds():
            yield self.rows.batch(index[start:stop])


def _decay_groups(named_parameters, weight_decay):
    """AdamW groups: decay the weight matrices only, never biases or norms."""
    decay, no_decay = [], []
    for _, param in named_parameters:
        (decay if param.ndim > 1 else no_decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


@functools.cache
def fused_adamw_runs_on(device_type):
    """Whether AdamW's (much faster) fused kernel runs on ``device_type`` in this torch."""
    probe = torch.zeros(1, device=device_type, requires_grad=True)
    try:
        torch.optim.AdamW([probe], fused=True)
    except (RuntimeError, ValueError):
        return False
    return True


class _TabularNetMixin:
    """What both skorch nets share: slice batching, AdamW groups and a local ``generator``."""

    def __init__(self, *args, generator=None, weight_decay=0.0, precision="32-true", **kwargs):
        super().__init__(*args, **kwargs)
        self.generator = generator
        self.weight_decay = weight_decay
        self.precision = precision

    def initialize(self):
        super().initialize()
        self.scaler_ = grad_scaler(self.precision, self.device)
        self.group_ = None  # data-parallel processes (PretextNet), None: this one alone
        return self

    def autocast(self):
        """The forward passes' autocast context (``_precision.py``)."""
        return autocast(self.precision, self.device)

    def infer(self, x, **fit_params):
        with self.autocast():
            out = super().infer(x, **fit_params)
        return out.float()

    def backward(self, loss):
        """``loss.backward()``, scaled by the gradient scaler of ``"16-mixed"``."""
        (loss if self.scaler_ is None else self.scaler_.scale(loss)).backward()

    def train_step_single(self, batch, **fit_params):
        Xi, yi = unpack_data(batch)
        y_pred = self.infer(Xi, **fit_params)
        loss = self.get_loss(y_pred, yi, X=Xi, training=True)
        self.backward(loss)
        return {"loss": loss, "y_pred": y_pred}

    def _step_optimizer(self, step_fn):
        if self.scaler_ is None and self.group_ is None:
            return super()._step_optimizer(step_fn)
        # gradients first (averaged across processes): the scaler's step takes no closure
        step_fn()
        if self.group_ is not None:
            average_gradients(self.module_.parameters(), self.group_)
        for name in self._optimizers:
            optimizer = getattr(self, name + "_")
            if self.scaler_ is None:
                optimizer.step()
            else:
                self.scaler_.step(optimizer)
        if self.scaler_ is not None:
            self.scaler_.update()
        return None

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        """skorch's epoch, with one host sync (losses read at its end) and one mode switch."""
        if iterator is None:
            return
        self._set_training(training)
        losses = []
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=training)
            step = step_fn(batch, **fit_params)
            losses.append(step["loss"].detach())
            self.history.record_batch(f"{prefix}_batch_size",
                                      get_len(batch[0] if isinstance(batch, tuple | list)
                                              else batch))
            self.notify("on_batch_end", batch=batch, training=training, **step)
        if losses:
            rows = self.history[-1]["batches"][-len(losses):]
            for row, loss in zip(rows, torch.stack(losses).tolist(), strict=True):
                row[f"{prefix}_loss"] = loss
        self.history.record(f"{prefix}_batch_count", len(losses))

    def kept_network(self):
        """The part of ``module_`` the estimator keeps (:class:`KeepBestEpoch` restores it)."""
        return self.module_

    def get_iterator(self, dataset, training=False):
        return SliceBatches(
            dataset,
            self.batch_size,
            shuffle=training,
            generator=self.generator,
            drop_singleton=training,
        )

    def get_params_for_optimizer(self, prefix, named_parameters):
        fused = fused_adamw_runs_on(torch.device(self.device).type)
        return (_decay_groups(named_parameters, self.weight_decay),), {"lr": self.lr,
                                                                       "fused": fused}

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """skorch's ``partial_fit``, but a ``KeyboardInterrupt`` reaches the caller."""
        if not self.initialized_:
            self.initialize()
        self.notify("on_train_begin", X=X, y=y)
        with contextlib.suppress(StopTraining):
            self.fit_loop(X, y, **fit_params)
        self.notify("on_train_end", X=X, y=y)
        return self


class PretextNet(_TabularNetMixin, NeuralNet):
    """A skorch net whose module is a :class:`~qmatch_sklearn.methods.PretextModule`;
    validation corruption is re-seeded each epoch (data-parallel: ``_distributed.py``)."""

    def __init__(self, *args, valid_seed=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.valid_seed = valid_seed

    def initialize(self):
        super().initialize()
        self.group_ = current_group()
        if self.group_ is not None:
            broadcast_state(self.module_)
            # each process corrupts (and shuffles its share) with its own draws
            self.generator.manual_seed(self.generator.initial_seed() + self.group_.rank)
        self.captured_step_ = None
        if self._captures_steps():
            # AdamW warns once that capturable steps run uncaptured: the warm-up steps do
            self.optimizer_._warned_capturable_if_run_uncaptured = True
            net = weakref.proxy(self)  # no cycle: the graph's memory goes with the net
            self.captured_step_ = CapturedStep(
                lambda x: net._bare_train_step(x),
                lambda: net.optimizer_.zero_grad(set_to_none=True), self.generator, self.device)
        return self

    def _captures_steps(self):
        return captures_steps(get_config()["cuda_graph"], self.device, self.precision,
                              current_group() is not None, self.module_.recordable)

    def get_params_for_optimizer(self, prefix, named_parameters):
        args, kwargs = super().get_params_for_optimizer(prefix, named_parameters)
        # a recorded step keeps AdamW's step counts on the device
        return args, ({**kwargs, "capturable": True} if self._captures_steps() else kwargs)

    def _zero_grad_optimizer(self, set_to_none=None):
        # a recorded step writes the gradients where its capture put them
        captured = self.captured_step_ is not None and self.captured_step_.captured
        super()._zero_grad_optimizer(set_to_none=False if captured else set_to_none)

    def get_default_callbacks(self):
        # the epoch's losses of every process, before they are printed or read
        defaults = list(super().get_default_callbacks())
        at = next(i for i, (name, _) in enumerate(defaults) if name == "print_log")
        return [*defaults[:at], ("global_losses", GlobalLosses()), *defaults[at:]]

    def kept_network(self):
        """The encoder: the projection heads, teacher and queue end with the fit."""
        return self.module_.encoder

    def _pretext_loss(self, X, generator):
        with self.autocast():
            outputs = self.module_(X, generator)
        # the loss, the queue and the teacher's EMA read float32 outputs
        outputs = type(outputs)(*(
            field.float() if torch.is_tensor(field) and field.is_floating_point() else field
            for field in outputs
        ))
        return self.criterion_(outputs), outputs

    def train_step_single(self, batch, **fit_params):
        loss, outputs = self._pretext_loss(batch[0], self.generator)
        self.backward(loss)
        return {"loss": loss, "y_pred": outputs}

    def _bare_train_step(self, x):
        """One step without skorch's bookkeeping, as :class:`CapturedStep` records it."""
        loss, outputs = self._pretext_loss(x, self.generator)
        loss.backward()
        self.optimizer_.step()
        self.module_.after_step(outputs)
        return loss.detach()

    def train_step(self, batch, **fit_params):
        x = batch[0]
        if self.captured_step_ is not None and len(x) == self.batch_size:
            return {"loss": self.captured_step_(x), "y_pred": None}
        step = super().train_step(batch, **fit_params)
        outputs = step["y_pred"]
        if self.group_ is not None:
            outputs = gather_rows(outputs, self.module_.gathered)
        self.module_.after_step(outputs)
        return step

    def get_iterator(self, dataset, training=False):
        if self.group_ is not None:
            dataset = dataset.subset(shard(dataset.index, self.group_))
        if training:
            return super().get_iterator(dataset, training=True)
        # a last row alone joins the batch before it: batch statistics need two
        return SliceBatches(dataset, self.batch_size, merge_singleton=True)

    def validation_step(self, batch, **fit_params):
        """The pretext loss of a validation batch as training computes it (train mode)."""
        x = batch[0]
        mode = batch_statistics(self.module_) if len(x) > 1 else contextlib.nullcontext()
        with torch.no_grad(), mode:
            loss, outputs = self._pretext_loss(x, self.valid_generator_)
        return {"loss": loss, "y_pred": outputs}

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if not training:
            rank = 0 if self.group_ is None else self.group_.rank
            self.valid_generator_ = torch.Generator(self.device).manual_seed(
                self.valid_seed + rank
            )
        super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)
        if training and self.group_ is not None:
            broadcast_state(self.module_)  # batch-norm statistics: rank 0's


class GlobalLosses(Callback):
    """Under data-parallel training, the epoch's losses averaged over every process."""

    def on_epoch_end(self, net, **kwargs):
        if net.group_ is None:
            return
        row = net.history[-1]
        for prefix in ("train", "valid"):
            if f"{prefix}_loss" in row:
                n_rows = sum(b.get(f"{prefix}_batch_size", 0) for b in row["batches"])
                net.history.record(
                    f"{prefix}_loss", global_mean(row[f"{prefix}_loss"], n_rows, net.device)
                )


class _RowWeightsMixin:
    """Row weights: a batch of ``((X, w), y)`` has the loss ``sum_i w_i l_i / sum_i w_i``."""

    def infer(self, x, **fit_params):
        return super().infer(x[0] if isinstance(x, tuple) else x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        if not isinstance(X, tuple):
            return super().get_loss(y_pred, y_true, X=X, training=training)
        weight = X[1]
        reduction, self.criterion_.reduction = self.criterion_.reduction, "none"
        try:
            losses = self.criterion_(y_pred, y_true.to(self.device))
        finally:
            self.criterion_.reduction = reduction
        losses = losses.reshape(len(weight), -1).mean(dim=1)  # multi-output: mean per row
        return (losses * weight).sum() / weight.sum().clamp_min(torch.finfo(weight.dtype).tiny)


class FineTuneNet(_RowWeightsMixin, _TabularNetMixin, NeuralNetClassifier):
    """A skorch classifier over encoded class indices, trained with AdamW."""


class FineTuneRegressorNet(_RowWeightsMixin, _TabularNetMixin, NeuralNetRegressor):
    """A skorch regressor over standardised float32 targets, trained with AdamW."""


class EpochProgressBar(Callback):
    """One tqdm bar over epochs with the latest losses, and a long epoch's batch count."""

    def __init__(self, desc, refresh_seconds=1.0):
        self.desc = desc
        self.refresh_seconds = refresh_seconds

    def on_train_begin(self, net, **kwargs):
        self.bar_ = tqdm(total=net.max_epochs, desc=self.desc, unit="epoch", leave=True)

    def on_epoch_begin(self, net, dataset_train=None, **kwargs):
        self.batches_ = -(-len(dataset_train) // net.batch_size)
        self.batch_, self.shown_ = 0, time.monotonic()

    def on_batch_end(self, net, training=False, **kwargs):
        if not training:
            return
        self.batch_ += 1
        if time.monotonic() - self.shown_ >= self.refresh_seconds:
            self.bar_.set_postfix_str(f"batch {self.batch_}/{self.batches_}")
            self.shown_ = time.monotonic()

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        shown = ("train_loss", "valid_loss", "valid_acc")
        self.bar_.set_postfix({k: f"{row[k]:.4f}" for k in shown if k in row}, refresh=False)
        self.bar_.update(1)

    def on_train_end(self, net, **kwargs):
        self.bar_.close()

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("bar_", None)
        return state


class StopTraining(Exception):
    """Raised by a callback to end the epoch loop (early stopping, divergence)."""


def all_finite(tensors):
    """Whether ``tensors`` are finite, by one norm each (no mask as large as the weights)."""
    norms = [torch.linalg.vector_norm(t.detach()) for t in tensors]
    return not norms or bool(torch.isfinite(torch.stack(norms)).all())


class KeepBestEpoch(Callback):
    """Early stopping, the divergence guard, ``tol``, ``deadline`` and best-weights restoration.

    ``tol`` ends training at the first epoch from ``tol_from_epoch`` on whose mean training
    loss is lower than the epoch before's by less than that share of it. ``best_epoch_``
    stays 0 if no epoch was finite. The run's last epoch is never copied: nothing can need it
    back.
    """

    def __init__(self, monitor, lower_is_better, patience, deadline, tol, tol_from_epoch):
        self.monitor = monitor
        self.lower_is_better = lower_is_better
        self.patience = patience
        self.deadline = deadline
        self.tol = tol
        self.tol_from_epoch = tol_from_epoch

    def on_train_begin(self, net, **kwargs):
        self.best_epoch_ = 0
        self.best_score_ = None
        self.misses_ = 0
        self.diverged_epoch_ = None
        self.weights_ = None
        self.epochs_run_ = 0
        self.out_of_time_ = False
        self.converged_ = False

    def _improves(self, score):
        if self.best_score_ is None:
            return True
        return score < self.best_score_ if self.lower_is_better else score > self.best_score_

    def _converged(self, history):
        """Whether the last epoch lowered the training loss by less than ``tol`` of it."""
        if self.tol is None or len(history) < self.tol_from_epoch:
            return False
        before, now = history[-2, "train_loss"], history[-1, "train_loss"]
        return before - now < self.tol * abs(before)

    def on_epoch_end(self, net, **kwargs):
        self.epochs_run_ += 1
        row = net.history[-1]
        score = row[self.monitor] if self.monitor else None
        losses = [row["train_loss"]] + ([score] if self.monitor else [])
        if not (np.isfinite(losses).all() and all_finite(net.module_.parameters())):
            self.diverged_epoch_ = row["epoch"]
            raise StopTraining
        past_deadline = self.deadline is not None and time.monotonic() >= self.deadline
        ends = self.epochs_run_ >= net.max_epochs
        converged = not ends and self._converged(net.history)
        if self.monitor is None or self._improves(score):
            self.best_epoch_, self.best_score_, self.misses_ = row["epoch"], score, 0
            if not (ends or past_deadline or converged):
                self._copy_weights(net.kept_network().state_dict())
        else:
            self.misses_ += 1
            if self.misses_ >= self.patience:
                raise StopTraining
        self.out_of_time_, self.converged_ = past_deadline, converged and not past_deadline
        if past_deadline or converged:
            raise StopTraining

    def _copy_weights(self, state):
        """Copy the weights into the run's first copy's buffers: no new memory per epoch."""
        if self.weights_ is None:
            self.weights_ = {k: v.detach().clone() for k, v in state.items()}
        else:
            for k, v in state.items():
                self.weights_[k].copy_(v)

    def on_train_end(self, net, **kwargs):
        if self.weights_ is not None and self.best_epoch_ != len(net.history):
            net.kept_network().load_state_dict(self.weights_)
        self.weights_ = None


@dataclass
class TrainingResult:
    """A training run's history, epochs run, kept epoch (1-based) and its score (or None)."""

    history: History
    n_epochs: int
    best_epoch: int
    best_score: float | None


#: A kept epoch this early while training went on makes early stopping suspect: ``fit`` warns.
EARLY_EPOCH = 2


def _warn_if_suspect(name, guard, n_epochs, n_valid):
    """Warn when early stopping likely followed noise (a tiny split, an early kept epoch)."""
    if (guard.monitor is None or guard.diverged_epoch_ is not None or guard.out_of_time_
            or guard.converged_):
        return
    best = guard.best_epoch_
    if n_valid < AUTO_MIN_VALIDATION_ROWS:
        why = f"chose epoch {best} of {n_epochs} on a validation split of only {n_valid} rows"
    elif best <= EARLY_EPOCH < n_epochs:
        why = f"kept epoch {best} of {n_epochs}: the validation {guard.monitor} never improved"
    else:
        return
    warn(
        f"{name} {why}, which is more likely noise than a finished network. "
        "validation_fraction='auto' (early stopping on large data only) or None trains "
        "all max_epochs instead.",
        UserWarning,
    )


def _outcome(name, guard, history, max_epochs, lr):
    """The guard's record as a result (or a warning, or an error) and a summary sentence."""
    n_epochs, best = len(history), guard.best_epoch_
    if guard.diverged_epoch_ is not None:
        if best == 0:
            raise FloatingPointError(
                f"{name} diverged: the loss or the weights were not finite at epoch "
                f"{guard.diverged_epoch_}, and no earlier epoch was finite. Lower lr "
                f"(it is {lr})."
            )
        warn(
            f"{name}: the loss or the weights became non-finite at epoch "
            f"{guard.diverged_epoch_}; training stopped and the weights of epoch {best} "
            f"were restored. A lower lr (it is {lr}) usually avoids this.",
            ConvergenceWarning,
        )
        how = f"stopped at epoch {n_epochs} (non-finite loss or weights)"
    elif guard.out_of_time_:
        how = f"stopped at epoch {n_epochs} of {max_epochs}: max_time reached"
    elif guard.converged_:
        how = (f"stopped at epoch {n_epochs} of {max_epochs}: the training loss fell by less "
               f"than {guard.tol:.2%} of itself in an epoch (tol)")
    elif guard.monitor is None:
        how = f"trained {n_epochs} epochs (no validation)"
    elif n_epochs < max_epochs:
        how = (
            f"stopped at epoch {n_epochs}: {guard.monitor} did not improve for "
            f"{guard.patience} epochs"
        )
    else:
        how = f"ran all {n_epochs} epochs"
    kept = f"kept epoch {best}"
    if guard.monitor is not None:
        kept += f" ({guard.monitor} {guard.best_score_:.4f})"
    return TrainingResult(history, n_epochs, best, guard.best_score_), f"{name}: {how}; {kept}."


@torch.no_grad()
def batched_forward(module, X, device, out_dim):
    """``module`` in eval mode over ``X`` in bounded chunks; float32, finite or raises."""
    module.eval()
    out = np.empty((X.shape[0], out_dim), dtype=np.float32)
    rows = max(1, min(INFERENCE_BATCH_SIZE, INFERENCE_CHUNK_BYTES // (4 * X.shape[1])))
    for start in range(0, X.shape[0], rows):
        chunk = X[start : start + rows]
        chunk = chunk.toarray() if sp.issparse(chunk) else chunk
        out[start : start + len(chunk)] = module(torch.tensor(chunk, device=device)).float().cpu()
    if not np.isfinite(out).all():
        raise FloatingPointError(
            "The network produced non-finite outputs: some input values lie far "
            "outside the range it was trained on. Scale the features as at fit time."
        )
    return out


@dataclass(frozen=True)
class TrainingSettings:
    """The training parameters an estimator hands to :func:`train_net`."""

    name: str
    lr: float
    weight_decay: float
    batch_size: int
    max_epochs: int
    patience: int
    verbose: int
    precision: str
    deadline: float | None = None
    tol: float | None = None
    tol_from_epoch: int = 2

    @classmethod
    def of(cls, estimator):
        """An estimator's settings; under data-parallel training only rank 0 shows progress."""
        group = current_group()
        verbose = estimator.verbose if group is None or group.rank == 0 else 0
        return cls(
            type(estimator).__name__, estimator.lr, estimator.weight_decay,
            estimator.batch_size, estimator.max_epochs, estimator.patience, verbose,
            estimator.precision_, deadline(),
        )


def make_net(net_class, module, criterion, valid, settings, *, device, seed, monitor,
             lower_is_better, **net_params):
    """The unfitted skorch net; ``valid`` None disables early stopping on ``monitor``. Its
    callbacks: early stopping, time limit and divergence guard, after a progress bar with
    ``verbose=1`` (first, so that it counts the epoch on which training stops)."""
    has_validation = valid is not None
    progress = [("progress", EpochProgressBar(settings.name))] if settings.verbose == 1 else []
    guard = KeepBestEpoch(monitor if has_validation else None, lower_is_better,
                          settings.patience, settings.deadline, settings.tol,
                          settings.tol_from_epoch)
    if issubclass(net_class, PretextNet):  # said here: inside skorch it names skorch's line
        warn_unrecorded(get_config()["cuda_graph"], device, settings.precision,
                        current_group() is not None, module.recordable)
    return net_class(
        module,
        criterion=criterion,
        optimizer=torch.optim.AdamW,
        lr=settings.lr,
        weight_decay=settings.weight_decay,
        batch_size=settings.batch_size,
        max_epochs=settings.max_epochs,
        train_split=predefined_split(valid) if has_validation else None,
        callbacks=[*progress, ("keep_best", guard)],
        device=device,
        verbose=int(settings.verbose >= 2),
        generator=torch.Generator(device).manual_seed(seed),
        precision=settings.precision,
        **net_params,
    )


def net_result(net, settings, n_valid=None):
    """What ``net``'s last fit kept, as a :class:`TrainingResult` (see :func:`_outcome`)."""
    guard = dict(net.callbacks_)["keep_best"]
    result, summary = _outcome(settings.name, guard, net.history, settings.max_epochs,
                               settings.lr)
    if n_valid is not None:
        _warn_if_suspect(settings.name, guard, result.n_epochs, n_valid)
    if settings.verbose:
        print(summary)
    return result


def train_net(net_class, module, criterion, train, valid, settings, *, device, seed, monitor,
              lower_is_better, **net_params):
    """Fit :func:`make_net`'s net on ``train``; returns a :class:`TrainingResult`."""
    net = make_net(net_class, module, criterion, valid, settings, device=device, seed=seed,
                   monitor=monitor, lower_is_better=lower_is_better, **net_params)
    net.fit(train, None)
    return net_result(net, settings, None if valid is None else len(valid))


def keep_trained(estimator, network, result, device):
    """Store the fitted network (eval mode, no gradients), history, epochs and device."""
    network.eval().requires_grad_(False)
    for param in network.parameters():
        param.grad = None
    estimator.network_ = network
    estimator.history_ = result.history
    estimator.n_epochs_ = result.n_epochs
    estimator.best_epoch_ = result.best_epoch
    estimator.device_ = device
