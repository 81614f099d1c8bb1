"""What a self-supervised method hands to the shared engine."""

from typing import NamedTuple

import torch
from torch import nn

from .._corruption import corrupt


class PretextModule(nn.Module):
    """Base class of a method's network: the encoder plus its pretext parts.

    A method subclasses it, pairs it with a loss module (the skorch criterion) and defines:

    * ``forward(x, generator)``: the views of the clean batch ``x`` (random only from
      ``generator``) and the output, a ``NamedTuple`` named after the paper's symbols;
    * ``after_step(outputs)``: state after each optimiser step (momentum teachers, queues),
      not in validation. The per-row fields it reads, ``gathered``, hold every process's rows
      in data-parallel training, so that the state stays identical in every process.

    ``encoder`` is what the fitted estimator keeps; views are corrupted by :meth:`corrupt`."""

    #: The per-row output fields ``after_step`` reads (gathered across processes).
    gathered = ()
    #: Whether a step reads nothing from the host, so a CUDA graph can record it (``cuda_graph``).
    recordable = True

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("corruption_groups", None, persistent=False)
        self.n_corruption_groups = None

    def set_corruption_groups(self, groups):
        """Corrupt the columns by ``groups`` (each column's group id, an int array); their
        count is kept as a Python int, never read back from the device."""
        self.corruption_groups = torch.from_numpy(groups)
        self.n_corruption_groups = int(groups.max()) + 1

    def corrupt(self, x, p, generator):
        """``x`` corrupted with probability ``p`` (:func:`qmatch_sklearn._corruption.corrupt`)."""
        return corrupt(self.corruption_type, x, p, generator, self.corruption_groups,
                       self.n_corruption_groups)

    def corrupted_view(self, x, p, generator):
        """The view of :meth:`corrupt` without its mask: ``x`` itself at ``p`` = 0."""
        return x if p == 0 else self.corrupt(x, p, generator)[0]

    def forward(self, x, generator):  # pragma: no cover - abstract
        raise NotImplementedError

    def after_step(self, outputs):
        """Hook for state updated outside the gradient step; nothing by default."""


def two_views(module, x, p, generator):
    """Two independent corruptions of the batch by ``module`` (SimCLR, SimSiam, VICReg, DINO),
    both drawn afresh at every step (unlike the authors' code, see docs/baselines.md)."""
    return module.corrupted_view(x, p, generator), module.corrupted_view(x, p, generator)


class TwoViewOutput(NamedTuple):
    """The head's outputs z_a, z_b for the two views of each row (batch, dim)."""

    z_a: torch.Tensor
    z_b: torch.Tensor


class TwoViewModule(PretextModule):
    """Encoder plus a head; returns the head's output for two corrupted views."""

    def __init__(self, encoder, head, corruption, corruption_type="vime"):
        super().__init__(encoder)
        self.head = head
        self.corruption = corruption
        self.corruption_type = corruption_type

    def forward(self, x, generator):
        view_a, view_b = two_views(self, x, self.corruption, generator)
        return TwoViewOutput(self.head(self.encoder(view_a)), self.head(self.encoder(view_b)))


def soft_cross_entropy(target_logits, logits):
    """mean_i H(softmax(target_logits_i), softmax(logits_i)), H(p, q) = -sum_k p_k log q_k,
    targets under stop-gradient: the distribution-matching term of Q-Match and DINO."""
    targets = target_logits.detach().softmax(dim=1)
    return -(targets * logits.log_softmax(dim=1)).sum(dim=1).mean()


def check_shape(owner, name, tensor, expected, symbols):
    """Raise a ValueError unless ``tensor`` has the shape ``expected`` (a size per dimension,
    None: any) and dimension names ``symbols``, as in ``QMatchLoss expects teacher of shape
    (batch=6, dim=128), got (6, 64)``."""
    shape = tuple(tensor.shape)
    if len(shape) == len(expected) and all(
        want is None or want == got for want, got in zip(expected, shape, strict=True)
    ):
        return
    wanted = ", ".join(
        symbol if want is None else f"{symbol}={want}"
        for symbol, want in zip(symbols, expected, strict=True)
    )
    raise ValueError(f"{owner} expects {name} of shape ({wanted}), got {shape}.")
