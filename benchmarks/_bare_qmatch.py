"""Q-Match in plain torch, from a ``QMatchEncoder``'s public parameters.

The bare loop of ``benchmarks.throughput`` trains this instead of the library's
own network, so that it measures torch alone; ``peer_tabnet`` counts its
student's parameters. Built from the same init seed it holds the same weights
and queue as the network ``QMatchEncoder.fit`` trains, and a step computes the
same loss (``tests/test_benchmarks.py`` checks both; the throughput report
checks the losses of whole runs). VIME corruption only (the default
``corruption_type``).
"""

import contextlib
import copy
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

#: ``hidden_sizes=None`` means these widths (QMatchEncoder's documented defaults).
DEFAULT_HIDDEN_SIZES = {"mlp": (512, 512), "imix": (2048, 2048, 4096, 4096, 8192)}
#: The "imix" encoder's maxout takes the maximum over groups of this many units.
MAXOUT = 4
#: Std of a standard normal truncated to [-2, 2]: LeCun-normal init divides by it.
TRUNCATED_STD = 0.87962566103423978


def fit_seeds(random_state, n=4):
    """The seeds ``fit`` draws from an integer ``random_state``: init, data, split, validation."""
    entropy = np.random.RandomState(random_state).randint(2**31 - 1)
    return [int(seed) for seed in np.random.SeedSequence(entropy).generate_state(n)]


def _blocks(n_in, widths):
    """Linear (no bias) -> BatchNorm -> ReLU per width; returns the layers and the last width."""
    layers = []
    for width in widths:
        layers += [nn.Linear(n_in, width, bias=False), nn.BatchNorm1d(width), nn.ReLU()]
        n_in = width
    return layers, n_in


class _Scale(nn.Module):
    """A learnable scale per input column, from 1, after a fixed centring,
    compression and per-column bound (``mean``, ``compression``, ``bound``, set by
    the caller; the defaults leave a column as it is)."""

    def __init__(self, n_features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n_features))
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("compression", torch.ones(n_features))
        self.register_buffer("bound", torch.full((n_features,), torch.finfo(torch.float32).max))

    def forward(self, x):
        bounded = torch.clamp((x - self.mean) * self.compression, -self.bound, self.bound)
        return bounded * self.weight


class _Maxout(nn.Module):
    def forward(self, x):
        return x.unflatten(-1, (-1, MAXOUT)).amax(-1)


@torch.no_grad()
def _lecun_init(network, generator):
    """Truncated-normal weights of variance 1 / fan_in, zero biases, in module order;
    drawn by the inverse normal CDF (uniform in (-erf(sqrt 2), erf(sqrt 2)), then
    sqrt(2) erfinv), as JAX's ``truncated_normal`` does."""
    linears = [m for m in network.modules() if isinstance(m, nn.Linear)]
    bound = math.erf(math.sqrt(2.0))
    for linear in linears:
        std = linear.in_features**-0.5 / TRUNCATED_STD
        weight = linear.weight.uniform_(-bound, bound, generator=generator).erfinv_()
        weight.mul_(std * math.sqrt(2.0)).clamp_(-2 * std, 2 * std)
        if linear.bias is not None:
            linear.bias.zero_()
    return network


def bare_encoder(n_features, params):
    """f: a per-column scale of the centred input, hidden blocks, then a linear layer to z."""
    sizes = tuple(params["hidden_sizes"] or DEFAULT_HIDDEN_SIZES[params["architecture"]])
    imix = params["architecture"] == "imix"
    layers, width = _blocks(n_features, sizes[:-1] if imix else sizes)
    if imix:
        layers += [nn.Linear(width, sizes[-1]), _Maxout()]
        width = sizes[-1] // MAXOUT
    return nn.Sequential(_Scale(n_features), *layers,
                         nn.Linear(width, params["embedding_dim"]))


def _vime(x, p, generator):
    """Each entry replaced, with probability p, by a row of its column drawn without replacement."""
    if p == 0:
        return x
    replaced = torch.rand(x.shape, device=x.device, generator=generator) < p
    order = torch.rand(x.shape, device=x.device, generator=generator).argsort(dim=0)
    return torch.where(replaced, x.gather(0, order), x)


class BareQMatch(nn.Module):
    """Student (encoder + projector), EMA teacher and queue; ``loss(x, generator)`` per step."""

    def __init__(self, n_features, params, generator):
        super().__init__()
        if params["corruption_type"] != "vime":
            raise ValueError("the bare Q-Match network implements corruption_type='vime' only")
        self.params = params
        self.encoder = _lecun_init(bare_encoder(n_features, params), generator)
        projection = tuple(params["projection_sizes"])
        layers, width = _blocks(params["embedding_dim"], projection[:-1])
        self.projector = _lecun_init(nn.Sequential(*layers, nn.Linear(width, projection[-1])),
                                     generator)
        queue = torch.randn(params["queue_size"], projection[-1], generator=generator)
        self.register_buffer("queue", F.normalize(queue, dim=1))
        self.teacher = copy.deepcopy(nn.Sequential(self.encoder, self.projector))
        self.teacher.requires_grad_(False)

    def loss(self, x, generator, float32_loss=True):
        """The Q-Match loss of a batch; remembers the teacher's embeddings for ``after_step``.

        Under autocast the networks run in the lower precision; with ``float32_loss`` the
        loss (the queue's logits and softmax) and the queue's new rows are computed in
        float32 from the float32-cast projections, as the library does (issue #17's rule),
        else in whatever precision autocast gives them."""
        student_view = _vime(x, self.params["student_corruption"], generator)
        teacher_view = _vime(x, self.params["teacher_corruption"], generator)
        student = self.projector(self.encoder(student_view))
        with torch.no_grad():
            self.last_teacher = F.normalize(self.teacher(teacher_view).float(), dim=1)
        teacher = self.last_teacher
        precision = contextlib.nullcontext()
        if float32_loss:
            student, teacher = student.float(), teacher.float()
            self.last_teacher = teacher
            precision = torch.autocast(x.device.type, enabled=False)
        with precision:
            student = F.normalize(student, dim=1)
            targets = (teacher @ self.queue.T / self.params["teacher_temperature"]).softmax(dim=1)
            log_p = (student @ self.queue.T / self.params["student_temperature"]).log_softmax(
                dim=1)
            return -(targets * log_p).sum(dim=1).mean()

    @torch.no_grad()
    def after_step(self):
        """Teacher <- EMA of the student (one foreach update); the batch's teacher
        embeddings replace the queue's oldest rows, in place (a ring whose newest row
        is ``head``)."""
        student = [*self.encoder.parameters(), *self.projector.parameters()]
        torch._foreach_lerp_(list(self.teacher.parameters()), student,
                             1.0 - self.params["ema_decay"])
        size = len(self.queue)
        rows = self.last_teacher[:size]
        self.head = (getattr(self, "head", 0) - len(rows)) % size
        first = min(len(rows), size - self.head)
        self.queue[self.head : self.head + first].copy_(rows[:first])
        self.queue[: len(rows) - first].copy_(rows[first:])


def build(estimator, n_features, seed):
    """The bare network for ``estimator``'s parameters, initialised from ``seed``,
    leaving the global torch RNG as it was (as ``fit`` does)."""
    params = estimator.get_params()
    with torch.random.fork_rng(devices=[]):
        return BareQMatch(n_features, params, torch.Generator().manual_seed(seed))


def decay_groups(module, weight_decay):
    """AdamW groups as the library makes them: decay weight matrices, not biases or norms."""
    params = list(module.parameters())
    return [
        {"params": [p for p in params if p.ndim > 1], "weight_decay": weight_decay},
        {"params": [p for p in params if p.ndim <= 1], "weight_decay": 0.0},
    ]


def adamw(module, estimator):
    """AdamW over ``decay_groups`` at the estimator's learning rate, with the fused
    kernel where this torch runs it on the module's device (as the library does)."""
    groups = decay_groups(module, estimator.weight_decay)
    try:
        return torch.optim.AdamW(groups, lr=estimator.lr, fused=True)
    except (RuntimeError, ValueError):  # no fused kernel for this device in this torch
        return torch.optim.AdamW(groups, lr=estimator.lr)
