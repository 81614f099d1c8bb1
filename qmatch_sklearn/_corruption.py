"""Corruption: how the methods make a corrupted view of a clean batch.

Every method corrupts through :func:`corrupt`, of the kind ``corruption_type`` names: a function
``(x, p, generator, groups, n_groups) -> (x_tilde, mask)`` registered in :data:`CORRUPTIONS`.
``groups`` (from ``feature_groups``) gives each column a group id in 0..G-1; a group is corrupted
as one unit, so a corrupted one-hot feature keeps one category on (None: a group per column).
``n_groups``, G as a Python int, spares a host sync to read it from ``groups``."""

import numpy as np
import torch


def _per_group(draws, groups):
    """Per-group draws of shape (batch, G) spread over the columns of each group."""
    return draws if groups is None else draws[:, groups]


def _n_groups(x, groups, n_groups):
    if groups is None:
        return x.shape[1]
    return int(groups.max()) + 1 if n_groups is None else n_groups


def vime_corruption(x, p, generator=None, groups=None, n_groups=None):
    """VIME's corruption (Yoon et al., NeurIPS 2020, section 4.1); arguments as :func:`corrupt`.

    x~ = m * x_bar + (1 - m) * x, m_ij ~ Bernoulli(p), x_bar[:, j] a random permutation of
    column j of the batch; with ``groups`` both are drawn per group, so a corrupted group
    takes all its values from one other row.
    """
    if p == 0:
        return x, torch.zeros_like(x, dtype=torch.bool)
    n, g = len(x), _n_groups(x, groups, n_groups)
    mask = _per_group(torch.rand(n, g, device=x.device, generator=generator) < p, groups)
    perm = column_permutations(torch.rand(n, g, device=x.device, generator=generator))
    x_bar = torch.gather(x, 0, _per_group(perm, groups))
    return torch.where(mask, x_bar, x), mask


def column_permutations(keys):
    """The stable argsort of each column of ``keys`` (batch, G), uniforms in [0, 1): a random
    permutation per column. On the CPU, NumPy's faster int64 sort of each key's float32 bits
    shifted above its row index gives the same permutations."""
    if keys.device.type != "cpu":
        return keys.argsort(dim=0, stable=True)
    n = keys.shape[0]
    row_bits = max(1, (n - 1).bit_length())
    packed = np.ascontiguousarray(keys.numpy().T).view(np.int32).astype(np.int64)
    packed <<= row_bits
    packed |= np.arange(n)
    packed.sort(axis=1)
    packed &= (1 << row_bits) - 1
    return torch.from_numpy(packed.T)


def zero_corruption(x, p, generator=None, groups=None, n_groups=None):
    """TabNet's masking: each entry (group) set to 0 with probability ``p``; as :func:`corrupt`."""
    if p == 0:
        return x, torch.zeros_like(x, dtype=torch.bool)
    draws = torch.rand(len(x), _n_groups(x, groups, n_groups), device=x.device,
                       generator=generator)
    mask = _per_group(draws < p, groups)
    return x.masked_fill(mask, 0.0), mask


#: The corruption kinds by the name ``corruption_type`` takes.
CORRUPTIONS = {"vime": vime_corruption, "zero": zero_corruption}


def corrupt(kind, x, p, generator=None, groups=None, n_groups=None):
    """Corrupt each entry (group) of ``x`` with probability ``p`` in the way ``kind`` names.

    Parameters
    ----------
    kind : {"vime", "zero"}
        A key of :data:`CORRUPTIONS`.
    x : Tensor of shape (batch, n_features)
    p : float in [0, 1]
    generator : torch.Generator on ``x.device``, optional
    groups : LongTensor of shape (n_features,), optional
        Each column's group id in 0..G-1 (see the module docstring).
    n_groups : int, optional

    Returns
    -------
    x_tilde : Tensor, same shape as ``x``
    mask : Tensor of bool, True where an entry was corrupted
    """
    return CORRUPTIONS[kind](x, p, generator, groups, n_groups)
