"""scikit-learn's ``QuantileTransformer.transform`` as a torch module that exports to ONNX.

skl2onnx's converter maps tied values elsewhere and has no ``output_distribution="normal"``
(issue #57). This computes ``QuantileTransformer._transform_col`` with ONNX operations: the
mean of an ascending and a descending ``numpy.interp`` (ties land in the middle), found by
counting quantiles (no ONNX operator searches a sorted array); the ends map to 0 and 1; for
``normal``, Acklam's inverse normal approximation (P. J. Acklam, 2003, "An algorithm for
computing the inverse normal cumulative distribution function"; relative error < 1.2e-9).
It rounds where scikit-learn rounds to the input's type. Memory: rows x columns x quantiles.
"""

import numpy as np
import torch
from scipy import stats

#: scikit-learn's ``BOUNDS_THRESHOLD`` (``sklearn.preprocessing._data``).
BOUNDS_THRESHOLD = 1e-7
#: Acklam's coefficients: central (a/b) and tail (c/d) numerators/denominators; tail start.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
      1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
      6.680131188771972e01, -1.328068155288572e01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
      -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00,
      3.754408661907416e00)
_TAIL = 0.02425


def _constant(value, like):
    """``value`` in ``like``'s dtype: a Python number may export as a float32 constant."""
    return torch.tensor(value, dtype=like.dtype)


def _polynomial(coefficients, x):
    """Horner's scheme: coefficients from the highest power down."""
    value = torch.full_like(x, 1.0) * _constant(coefficients[0], x)
    for c in coefficients[1:]:
        value = value * x + _constant(c, x)
    return value


def normal_quantile(p):
    """The standard normal quantile function at ``p`` in (0, 1) (float64), by Acklam."""
    half = _constant(0.5, p)
    central = p - half
    r = central * central
    middle = (_polynomial(_A, r) * central) / (_polynomial((*_B, 1.0), r))
    tail_p = torch.minimum(p, 1 - p)
    q = torch.sqrt(_constant(-2.0, p) * torch.log(tail_p))
    tail = _polynomial(_C, q) / _polynomial((*_D, 1.0), q)  # the lower tail's value
    tail = torch.where(p < half, tail, -tail)
    return torch.where(tail_p < _constant(_TAIL, p), tail, middle)


def _interp(x, xp, fp):
    """``numpy.interp(x[:, j], xp[:, j], fp)`` for every column j (``xp`` non-decreasing)."""
    below = (xp.unsqueeze(0) <= x.unsqueeze(1)).sum(dim=1)  # quantiles at most x
    last = xp.shape[0] - 1
    i = torch.clamp(below - 1, 0, last - 1)
    low, high = torch.gather(xp, 0, i), torch.gather(xp, 0, i + 1)
    f_low, f_high = fp[i], fp[i + 1]
    slope = (f_high - f_low) / (high - low)
    inside = slope * (x - low) + f_low
    return torch.where(below == 0, fp[0], torch.where(below > last, fp[last], inside))


class QuantileMap(torch.nn.Module):
    """A fitted ``QuantileTransformer``'s ``transform`` on dense rows."""

    def __init__(self, transformer):
        super().__init__()
        quantiles = np.asarray(transformer.quantiles_, dtype=np.float64)
        references = np.asarray(transformer.references_, dtype=np.float64)
        self.normal = transformer.output_distribution == "normal"
        self.register_buffer("quantiles", torch.from_numpy(quantiles))
        self.register_buffer("references", torch.from_numpy(references))
        # the descending interpolation's points, as numpy.interp is given them
        self.register_buffer("reversed_quantiles", torch.from_numpy(-quantiles[::-1].copy()))
        self.register_buffer("reversed_references", torch.from_numpy(-references[::-1].copy()))
        # the clipping of the normal values, and the same clipping of p before them
        p_min = BOUNDS_THRESHOLD - np.spacing(1)
        p_max = 1 - p_min
        self.register_buffer("p_bounds", torch.tensor([p_min, p_max], dtype=torch.float64))
        self.register_buffer("clip_bounds", torch.tensor(stats.norm.ppf([p_min, p_max]),
                                                         dtype=torch.float64))

    def forward(self, rows):
        x = rows.to(torch.float64)
        missing = torch.isnan(x)
        x = torch.where(missing, torch.zeros_like(x), x)
        first, last = self.quantiles[0], self.quantiles[-1]
        if self.normal:
            threshold = _constant(BOUNDS_THRESHOLD, rows)
            at_low = (rows - threshold).to(torch.float64) < first
            at_high = (rows + threshold).to(torch.float64) > last
        else:
            at_low, at_high = x == first, x == last
        at_low, at_high = at_low & ~missing, at_high & ~missing
        uniform = 0.5 * (_interp(x, self.quantiles, self.references)
                         - _interp(-x, self.reversed_quantiles, self.reversed_references))
        uniform = torch.where(at_high, torch.ones_like(uniform), uniform)
        uniform = torch.where(at_low, torch.zeros_like(uniform), uniform)
        # scikit-learn writes the uniform values back into the rows' own type
        out = uniform = uniform.to(rows.dtype).to(torch.float64)
        if self.normal:
            p = torch.clamp(uniform, self.p_bounds[0], self.p_bounds[1])
            out = torch.clamp(normal_quantile(p), self.clip_bounds[0], self.clip_bounds[1])
        out = torch.where(missing, torch.full_like(out, float("nan")), out)
        return out.to(rows.dtype)
