"""The one training engine: skorch nets that every method and the classifier share.

skorch brings the epoch loop, ``history``, callbacks (early stopping with best
weights restored, progress output) and device placement. We change three
things that matter for tabular self-supervision:

* batches are slices of one tensor that lives on the training device (one
  shuffle per epoch, no per-row ``Dataset.__getitem__`` and collate);
* randomness comes from a local ``torch.Generator`` (the global RNG is never
  touched);
* a pretext step asks the method's module for the inputs of its loss and, after
  the optimiser step, lets it update its own state (EMA teacher, queue).
"""

import numpy as np
import torch
from skorch import NeuralNet, NeuralNetClassifier
from skorch.callbacks import Callback, EarlyStopping
from skorch.dataset import Dataset
from skorch.helper import predefined_split
from skorch.utils import noop
from tqdm.auto import tqdm

#: Rows per forward pass in ``transform``/``predict``: bounds inference memory.
INFERENCE_BATCH_SIZE = 8192


class SliceBatches:
    """Mini-batches as contiguous slices of a tensor.

    The whole tensor is permuted once per epoch (one gather) when ``shuffle``
    is set, then sliced. With ``drop_singleton`` a last batch of one row is
    skipped, since batch normalisation cannot train on a single row.
    """

    def __init__(self, dataset, batch_size, shuffle=False, generator=None, drop_singleton=False):
        self.X, self.y = dataset.X, dataset.y
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.generator = generator
        self.drop_singleton = drop_singleton

    def _stop(self):
        n = len(self.X)
        if self.drop_singleton and n > 1 and n % self.batch_size == 1:
            return n - 1
        return n

    def __len__(self):
        return -(-self._stop() // self.batch_size)

    def __iter__(self):
        X, y = self.X, self.y
        if self.shuffle:
            order = torch.randperm(len(X), generator=self.generator, device=X.device)
            X = X[order]
            y = None if y is None else y[order]
        for start in range(0, self._stop(), self.batch_size):
            stop = start + self.batch_size
            yield X[start:stop], (None if y is None else y[start:stop])


def _decay_groups(named_parameters, weight_decay):
    """AdamW groups: decay the weight matrices only, never biases or norms."""
    decay, no_decay = [], []
    for _, param in named_parameters:
        (decay if param.ndim > 1 else no_decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


class _TabularNetMixin:
    """What both skorch nets share: slice batching, a local generator, AdamW groups.

    ``generator`` is a ``torch.Generator`` on the data's device; it drives the
    shuffling (and, in pretext nets, the corruption).
    """

    def __init__(self, *args, generator=None, weight_decay=0.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.generator = generator
        self.weight_decay = weight_decay

    def get_iterator(self, dataset, training=False):
        return SliceBatches(
            dataset,
            self.batch_size,
            shuffle=training,
            generator=self.generator,
            drop_singleton=training,
        )

    def get_params_for_optimizer(self, prefix, named_parameters):
        return (_decay_groups(named_parameters, self.weight_decay),), {"lr": self.lr}


class PretextNet(_TabularNetMixin, NeuralNet):
    """A skorch net whose module is a :class:`~qmatch_sklearn.methods.PretextModule`.

    The module maps a clean batch to the inputs of the criterion (the method's
    loss); ``after_step`` runs once the optimiser has updated the student.
    Validation corruption is re-seeded each epoch so that validation losses
    are comparable across epochs.
    """

    def __init__(self, *args, valid_seed=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.valid_seed = valid_seed

    def _pretext_loss(self, X, generator):
        outputs = self.module_(X, generator)
        return self.criterion_(*outputs), outputs

    def train_step_single(self, batch, **fit_params):
        self._set_training(True)
        loss, outputs = self._pretext_loss(batch[0], self.generator)
        loss.backward()
        return {"loss": loss, "y_pred": outputs}

    def train_step(self, batch, **fit_params):
        step = super().train_step(batch, **fit_params)
        self.module_.after_step(step["y_pred"])
        return step

    def validation_step(self, batch, **fit_params):
        self._set_training(False)
        with torch.no_grad():
            loss, outputs = self._pretext_loss(batch[0], self.valid_generator_)
        return {"loss": loss, "y_pred": outputs}

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if not training:
            self.valid_generator_ = torch.Generator(self.device).manual_seed(self.valid_seed)
        super().run_single_epoch(iterator, training, prefix, step_fn, **fit_params)


class FineTuneNet(_TabularNetMixin, NeuralNetClassifier):
    """A skorch classifier over encoded class indices, trained with AdamW."""


class EpochProgressBar(Callback):
    """One tqdm bar over epochs, showing the latest losses.

    skorch's own ``ProgressBar`` draws a bar of batches per epoch; for
    hundreds of short epochs one bar over epochs reads better.
    """

    def __init__(self, desc):
        self.desc = desc

    def on_train_begin(self, net, **kwargs):
        self.bar_ = tqdm(total=net.max_epochs, desc=self.desc, unit="epoch", leave=True)

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


def _training_callbacks(*, monitor, lower_is_better, patience, has_validation, verbose, desc):
    """Early stopping (best weights restored) when there is a validation split,
    and a progress bar when ``verbose``."""
    callbacks = []
    if has_validation:
        callbacks.append(
            (
                "early_stopping",
                EarlyStopping(
                    monitor=monitor,
                    lower_is_better=lower_is_better,
                    patience=patience,
                    threshold=0.0,
                    threshold_mode="abs",
                    load_best=True,
                    sink=noop,
                ),
            )
        )
    if verbose:
        callbacks.append(("progress", EpochProgressBar(desc)))
    return callbacks


def as_tensor(X, device):
    """A float32 tensor on ``device`` that never aliases a read-only array."""
    if isinstance(X, np.ndarray) and not X.flags.writeable:
        X = np.array(X)
    return torch.as_tensor(X, device=device)


def to_dataset(X, y, device):
    return Dataset(as_tensor(X, device), None if y is None else as_tensor(y, device))


@torch.no_grad()
def batched_forward(module, X, device, out_dim):
    """Run ``module`` in eval mode over ``X`` in bounded chunks; float32 numpy out."""
    module.eval()
    out = np.empty((len(X), out_dim), dtype=np.float32)
    for start in range(0, len(X), INFERENCE_BATCH_SIZE):
        chunk = torch.tensor(X[start : start + INFERENCE_BATCH_SIZE], device=device)
        out[start : start + len(chunk)] = module(chunk).float().cpu().numpy()
    return out


def train_net(net_class, estimator, module, criterion, train, valid, *, device, seed, monitor,
              lower_is_better, **net_params):
    """Fit a skorch net configured from the estimator's shared training parameters.

    ``train`` and ``valid`` are ``(X, y)`` pairs (``y`` may be None); ``valid``
    may be None, which disables early stopping. ``monitor`` names the history
    column that early stopping watches.
    """
    has_validation = valid is not None
    net = net_class(
        module,
        criterion=criterion,
        optimizer=torch.optim.AdamW,
        lr=estimator.lr,
        weight_decay=estimator.weight_decay,
        batch_size=estimator.batch_size,
        max_epochs=estimator.max_epochs,
        train_split=predefined_split(to_dataset(*valid, device)) if has_validation else None,
        callbacks=_training_callbacks(
            monitor=monitor,
            lower_is_better=lower_is_better,
            patience=estimator.patience,
            has_validation=has_validation,
            verbose=estimator.verbose,
            desc=type(estimator).__name__,
        ),
        device=device,
        verbose=int(estimator.verbose >= 2),
        generator=torch.Generator(device).manual_seed(seed),
        **net_params,
    )
    return net.fit(to_dataset(*train, device), None)


def keep_trained(estimator, network, net, device):
    """Store what a fitted estimator keeps: the network (eval mode, no
    gradients), the skorch history, epoch counts and the device."""
    network.eval().requires_grad_(False)
    for param in network.parameters():
        param.grad = None
    stopper = dict(net.callbacks_).get("early_stopping")
    estimator.network_ = network
    estimator.history_ = net.history
    estimator.n_epochs_ = len(net.history)
    estimator.best_epoch_ = int(stopper.best_epoch_) if stopper is not None else len(net.history)
    estimator.device_ = device
