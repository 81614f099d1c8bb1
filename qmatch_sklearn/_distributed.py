"""Data-parallel pretraining across processes (``torchrun``, Ray Train, Spark).

As ``DistributedDataParallel``: each process trains on its share of the rows (:func:`shard`),
gradients and epoch losses are averaged, ``PretextModule.gathered`` fields gathered, rank 0's
buffers broadcast. ``batch_size`` is per process; save the fitted encoder from rank 0.
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
    """The default process group when ``torch.distributed`` runs several processes, else None."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() < 2:
        return None
    return ProcessGroup(dist.get_rank(), dist.get_world_size())


def shard(index, group):
    """The rows of ``index`` that process ``group.rank`` runs: every ``world_size``-th, the
    shares padded to one length (as ``DistributedSampler``) so all run the same steps."""
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
    """``outputs`` with each of ``fields`` concatenated over every process, in rank order."""
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
    """The per-process mean ``value`` averaged over every process's rows; NaN stays NaN."""
    total = torch.tensor([value * n_rows, float(n_rows)], dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return float(total[0] / total[1]) if total[1] > 0 else float("nan")
