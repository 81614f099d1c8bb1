"""Data-parallel pretraining across processes (``torchrun``, Ray Train, Spark).

When ``torch.distributed`` is initialised with more than one process, an
encoder's ``fit`` (and ``partial_fit``) trains data-parallel, as
``DistributedDataParallel`` does: every process passes the same rows, trains
on its own share of them (:func:`shard`), and after each backward pass the
gradients are averaged across processes, so that every process takes the same
optimiser step. What a method updates outside the gradient step sees the whole
step: the per-row fields its ``after_step`` reads (``PretextModule.gathered``,
e.g. the teacher embeddings that Q-Match pushes onto its queue) are gathered
from every process first, so the teacher and the queue stay identical
everywhere. The epoch's losses are averaged over every process's rows before
early stopping reads them: every process stops at the same epoch and keeps
the same weights. Batch-norm statistics are rank 0's, broadcast after each
epoch (as ``DistributedDataParallel`` broadcasts buffers).

``batch_size`` is per process: a step sees ``world_size * batch_size`` rows.
Nothing here writes files; save the fitted encoder from rank 0.
"""

from dataclasses import dataclass

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class ProcessGroup:
    """A process's ``rank`` among ``world_size`` training processes."""

    rank: int
    world_size: int


def current_group():
    """The default process group when ``torch.distributed`` runs more than one
    process, else None (single-process training)."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    return ProcessGroup(dist.get_rank(), dist.get_world_size())


def shard(index, group):
    """The rows of ``index`` (a 1-d tensor) that process ``group.rank`` trains
    (or validates) on: every ``world_size``-th row from its rank on, the shares
    made equal in length by repeating rows from the start of ``index`` (as
    ``DistributedSampler`` does) so that every process runs the same number of
    steps, each with collectives."""
    if len(index) % group.world_size:
        extra = group.world_size - len(index) % group.world_size
        index = torch.cat([index, index[:extra].repeat(-(-extra // len(index)))[:extra]])
    return index[group.rank :: group.world_size]


def average_gradients(parameters, group):
    """Replace each gradient by its mean across processes (one all-reduce)."""
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= group.world_size
    start = 0
    for g in grads:
        g.copy_(flat[start : start + g.numel()].view_as(g))
        start += g.numel()


def gather_rows(outputs, fields):
    """``outputs`` (a NamedTuple) with each of ``fields`` replaced by the
    concatenation, in rank order, of that field's rows in every process."""
    gathered = {}
    for name in fields:
        local = getattr(outputs, name).detach().contiguous()
        parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, local)
        gathered[name] = torch.cat(parts)
    return outputs._replace(**gathered)


def broadcast_state(module):
    """Copy rank 0's parameters and buffers to every process."""
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            dist.broadcast(tensor, src=0)


def global_mean(value, n_rows, device):
    """The mean of a per-process mean ``value`` over ``n_rows`` rows, weighted
    by every process's rows; NaN stays NaN (divergence is seen everywhere)."""
    total = torch.tensor([value * n_rows, float(n_rows)], dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return float(total[0] / total[1]) if total[1] > 0 else float("nan")
