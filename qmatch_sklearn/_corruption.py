"""Corruption: how the methods make a corrupted view of a clean batch.

Every method that corrupts rows goes through :func:`corrupt`, with the kind
chosen by the estimators' ``corruption_type`` parameter. A kind is one
function ``(x, p, generator) -> (x_tilde, mask)`` registered in
:data:`CORRUPTIONS`: adding one there (e.g. one that respects missing-value
masks or categorical groups) makes it available to every method at once.
"""

import torch


def vime_corruption(x, p, generator=None):
    """Corrupt each entry of ``x`` with probability ``p``.

    Implements x~ = m * x_bar + (1 - m) * x with m_ij ~ Bernoulli(p) i.i.d. and
    x_bar[:, j] a random permutation of column j of the batch, so a corrupted
    value is a draw (without replacement) from that column's empirical
    marginal in the batch (VIME, Yoon et al., NeurIPS 2020, section 4.1: the
    view generator of Q-Match and most baselines). One-hot columns are
    shuffled independently, as in the Q-Match authors' code.

    Parameters
    ----------
    x : Tensor of shape (batch, n_features)
    p : float in [0, 1]
    generator : torch.Generator on ``x.device``, optional

    Returns
    -------
    x_tilde : Tensor, same shape as ``x`` (a new tensor; ``x`` is not modified)
    mask : Tensor of bool, True where an entry was replaced
    """
    if p == 0:
        return x, torch.zeros_like(x, dtype=torch.bool)
    n, d = x.shape
    mask = torch.rand(n, d, device=x.device, generator=generator) < p
    # argsort of i.i.d. uniforms gives an independent permutation per column
    perm = torch.rand(n, d, device=x.device, generator=generator).argsort(dim=0)
    x_bar = torch.gather(x, 0, perm)
    return torch.where(mask, x_bar, x), mask


def zero_corruption(x, p, generator=None):
    """TabNet's masking: each entry is set to 0 with probability ``p``.

    Returns ``(x_tilde, mask)`` like :func:`vime_corruption`.
    """
    if p == 0:
        return x, torch.zeros_like(x, dtype=torch.bool)
    mask = torch.rand(x.shape, device=x.device, generator=generator) < p
    return x.masked_fill(mask, 0.0), mask


#: The corruption kinds by the name ``corruption_type`` takes.
CORRUPTIONS = {"vime": vime_corruption, "zero": zero_corruption}


def corrupt(kind, x, p, generator=None):
    """Corrupt each entry of ``x`` with probability ``p`` in the way ``kind`` names.

    Parameters
    ----------
    kind : {"vime", "zero"}
        A key of :data:`CORRUPTIONS`.
    x : Tensor of shape (batch, n_features)
    p : float in [0, 1]
    generator : torch.Generator on ``x.device``, optional

    Returns
    -------
    x_tilde : Tensor, same shape as ``x``
    mask : Tensor of bool, True where an entry was corrupted
    """
    return CORRUPTIONS[kind](x, p, generator)
