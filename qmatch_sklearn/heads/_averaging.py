"""Averaging the closed-form heads over the weight of the embedding block.

An encoder with ``passthrough=True`` hands the head the input features beside its
embedding. How much the embedding should count against the input on a few dozen
labeled rows is not known in advance, so each closed-form head (logistic,
ridge) is fitted at every weight of :data:`EMBEDDING_WEIGHTS` and the fits are
averaged by their cross-validated likelihoods (pseudo-Bayesian model averaging,
Yao et al., 2018, eq. 8): the average of linear heads is one linear head.
"""

import numpy as np

#: The weights of the embedding block beside the input features over which the
#: closed-form heads average (encoders with ``passthrough=True``); 0 is the input
#: features alone.
EMBEDDING_WEIGHTS = (1.0, 0.5, 0.0)


def pseudo_bma_weights(log_likelihoods, n_rows):
    """Pseudo-Bayesian-model-averaging weights of models from their mean
    cross-validated log-likelihoods per row: p_k proportional to
    exp(n_rows * log_likelihood_k) (Yao et al., 2018, "Using stacking to average
    Bayesian predictive distributions", eq. 8)."""
    evidence = n_rows * np.asarray(log_likelihoods, dtype=float)
    p = np.exp(evidence - evidence.max())
    return p / p.sum()


def block_weights(n_embedding):
    """The weights of the embedding block a closed-form head is fitted at:
    :data:`EMBEDDING_WEIGHTS` beside ``n_embedding`` input columns, 1 alone
    without them (None)."""
    return (1.0,) if n_embedding is None else EMBEDDING_WEIGHTS


def unscaled_coef(coef, n_embedding, weight):
    """A copy of ``coef``, fitted on features whose last ``n_embedding``
    columns were multiplied by ``weight``, as coefficients of the unscaled
    features (those columns' coefficients multiplied by ``weight`` too)."""
    coef = coef.copy()
    if n_embedding is not None:
        coef[..., coef.shape[-1] - n_embedding:] *= weight
    return coef


def weigh_embedding_block(fit, features, n_embedding, unlabeled=None):
    """The closed-form head averaged over the weights of the embedding block.

    ``fit(features, unlabeled) -> [(model, log_likelihood), ...]`` fits one or
    more heads on ``features`` (the labeled rows; ``unlabeled``, the unlabeled
    rows' features scaled alike, or None) and returns each with its mean
    cross-validated log-likelihood per row; ``features`` end with the
    ``n_embedding`` embedding columns (None: no input block to weigh them
    against, fit once). Each weight w_k of :data:`EMBEDDING_WEIGHTS` scales
    those columns and gives its heads; all heads' linear scores are averaged
    with their pseudo-Bayesian-model-averaging weights
    (:func:`pseudo_bma_weights`): a head on few labeled rows keeps the
    embedding where it predicts held-out rows better, falls back to the input
    features alone where it is noise, and does not stake everything on one
    noisy choice. The average of linear heads is one linear head.

    Returns ``(coef, intercept, weight, slots, p)``: the averaged ``coef_`` of
    the unscaled features (each head's embedding coefficients multiplied by its
    w_k) and ``intercept_``, the average weight sum_k p_k w_k of the embedding
    block (1 when ``n_embedding`` is None), the heads' log-likelihoods as one
    list per block weight (what ``fit`` returned there) and the heads'
    weights p, in the order ``fit`` returned the heads.
    """
    heads, slots, scales = [], [], []
    for weight in block_weights(n_embedding):
        weighted, weighted_unlabeled = features, unlabeled
        if n_embedding is not None:
            weighted, weighted_unlabeled = (
                None if rows is None else _scale_block(rows, n_embedding, weight)
                for rows in (features, unlabeled)
            )
        slots.append([])
        for model, log_likelihood in fit(weighted, weighted_unlabeled):
            heads.append((unscaled_coef(model.coef_, n_embedding, weight),
                          np.asarray(model.intercept_, dtype=float)))
            slots[-1].append(log_likelihood)
            scales.append(weight)
    p = pseudo_bma_weights([ll for slot in slots for ll in slot], len(features))
    coef = sum(p_k * coef for p_k, (coef, _) in zip(p, heads, strict=True))
    intercept = sum(p_k * intercept for p_k, (_, intercept) in zip(p, heads, strict=True))
    return coef, intercept, float(p @ np.asarray(scales)), slots, p


def _scale_block(rows, n_embedding, weight):
    """``rows`` with their last ``n_embedding`` columns multiplied by ``weight`` (a copy)."""
    scaled = rows.copy()
    scaled[:, rows.shape[1] - n_embedding:] *= weight
    return scaled
