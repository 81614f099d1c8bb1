"""Averaging the closed-form heads over the weight of the embedding block.

How much the embedding should count against the input features (``passthrough=True``)
is not known in advance on a few dozen labeled rows, so each closed-form head is fitted at
every weight of :data:`EMBEDDING_WEIGHTS` and the fits are averaged by their
cross-validated likelihoods (pseudo-Bayesian model averaging, Yao et al., 2018, eq. 8).
"""

import numpy as np
from scipy.special import softmax

#: The embedding block's weights the closed-form heads average over; 0: the input alone.
EMBEDDING_WEIGHTS = (1.0, 0.5, 0.0)


def pseudo_bma_weights(log_likelihoods, n_rows):
    """Pseudo-BMA weights from mean cross-validated log-likelihoods per row: p_k
    proportional to exp(n_rows * log_likelihood_k) (Yao et al., 2018, "Using stacking to
    average Bayesian predictive distributions", eq. 8)."""
    return softmax(n_rows * np.asarray(log_likelihoods, dtype=float))


def block_weights(n_embedding):
    """The block weights to fit at: :data:`EMBEDDING_WEIGHTS`, or 1 when ``n_embedding`` is None."""
    return (1.0,) if n_embedding is None else EMBEDDING_WEIGHTS


def scale_block(array, n_embedding, weight):
    """``array`` (rows, or coefficients fitted on rows so scaled, which this makes the
    coefficients of the unscaled rows) with its last ``n_embedding`` columns multiplied by
    ``weight``: a copy, or ``array`` itself when ``n_embedding`` is None."""
    if n_embedding is None:
        return array
    scaled = array.copy()
    scaled[..., array.shape[-1] - n_embedding:] *= weight
    return scaled


def average_blocks(block_heads, n_embedding, n_rows):
    """The heads of every block weight averaged by :func:`pseudo_bma_weights`.

    ``block_heads`` holds, for each block weight w_k in :func:`block_weights`' order, the
    heads fitted on the features so weighted, as ``[(model, mean held-out log-likelihood),
    ...]``; ``n_rows`` is the number of rows their likelihoods are means over. Returns
    ``(coef, intercept, sum_k p_k w_k, log-likelihoods per block weight, p)``, ``coef`` of
    the unweighted features.
    """
    heads, slots, scales = [], [], []
    for weight, fitted in zip(block_weights(n_embedding), block_heads, strict=True):
        slots.append([])
        for model, log_likelihood in fitted:
            heads.append((scale_block(model.coef_, n_embedding, weight),
                          np.asarray(model.intercept_, dtype=float)))
            slots[-1].append(log_likelihood)
            scales.append(weight)
    p = pseudo_bma_weights([ll for slot in slots for ll in slot], n_rows)
    coef = sum(p_k * coef for p_k, (coef, _) in zip(p, heads, strict=True))
    intercept = sum(p_k * intercept for p_k, (_, intercept) in zip(p, heads, strict=True))
    return coef, intercept, float(p @ np.asarray(scales)), slots, p


def weigh_embedding_block(fit, features, n_embedding):
    """The closed-form head averaged over the weights of the embedding block:
    ``fit(features) -> [(model, mean held-out log-likelihood), ...]`` run on ``features``
    at each block weight, the heads averaged by :func:`average_blocks` (whose result this
    returns)."""
    return average_blocks([fit(scale_block(features, n_embedding, weight))
                           for weight in block_weights(n_embedding)],
                          n_embedding, len(features))
