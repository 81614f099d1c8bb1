"""A fitted estimator's whole prediction as one torch module, for export (issue #33).

``transform``, ``predict_proba`` and ``predict`` run NumPy around the network: the
numeric columns mapped by ``center_`` and ``scale_`` in float64, the network in
float32, the embedding balanced beside the input (``passthrough``), a boosted
member's trees, the target's units. :func:`serving_module` writes all of it as
torch operations, so that ``torch.onnx.export`` turns the fitted estimator into one
plain ONNX graph (``_onnx.py``): the same arithmetic, not a re-implementation of
the layers. The module reads the rows as the estimator's input, numeric columns
only, NaN read as ``predict`` reads it.
"""

import numpy as np
import torch
from torch import nn

from ._scaling import MAX_DEVIATION


class Scaled(nn.Module):
    """``x -> (x - center) / scale`` in float64, clipped to +-``bound``, as float32:
    the numeric map of ``_scaling.py`` (identity, ``bound`` None, for a model saved
    before it existed); with ``fills_missing`` (a network without a missing-values
    layer) a NaN then becomes 0, as ``predict`` reads it
    (``TableInputMixin._fill_unseen_missing``)."""

    def __init__(self, center, scale, fills_missing, bound=MAX_DEVIATION):
        super().__init__()
        self.register_buffer("center", torch.tensor(center, dtype=torch.float64))
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float64))
        self.fills_missing = bool(fills_missing)
        self.bound = bound

    def forward(self, x):
        rows = (x.to(torch.float64) - self.center) / self.scale
        if self.bound is not None:  # NaN stays NaN
            rows = rows.clamp(-self.bound, self.bound)
        rows = rows.to(torch.float32)
        if self.fills_missing:
            rows = torch.where(torch.isnan(rows), torch.zeros_like(rows), rows)
        return rows


class Trees(nn.Module):
    """The boosted member's per-class log-probabilities (``_boosting.tree_log_proba``):
    every tree walked from its root, one level per step, for ``depth`` steps (a leaf
    stays where it is), the rows compared in float64 as the NumPy walk does."""

    def __init__(self, trees, temperature):
        super().__init__()
        for name in ("feature", "left", "right", "roots", "output"):
            self.register_buffer(name, torch.tensor(trees[name], dtype=torch.int64))
        for name in ("threshold", "value", "baseline"):
            self.register_buffer(name, torch.tensor(trees[name], dtype=torch.float64))
        self.register_buffer("is_leaf", torch.tensor(trees["is_leaf"], dtype=torch.bool))
        self.register_buffer("missing_left",
                             torch.tensor(trees["missing_left"], dtype=torch.bool))
        n_outputs = len(trees["baseline"])
        # sums each tree's leaf value into its output column: (trees, outputs)
        self.register_buffer("to_output", torch.nn.functional.one_hot(
            self.output, n_outputs).to(torch.float64))
        self.depth = _depth(trees)
        self.temperature = float(temperature)

    def forward(self, x):
        rows = x.to(torch.float64)
        node = self.roots.unsqueeze(0).expand(rows.shape[0], -1)
        for _ in range(self.depth):
            value = torch.gather(rows, 1, self.feature[node])
            # NaN goes where missing_left says (logical operators: ONNX Runtime has no
            # Where on booleans)
            missing = torch.isnan(value)
            left = ((missing & self.missing_left[node])
                    | (~missing & (value <= self.threshold[node])))
            child = torch.where(left, self.left[node], self.right[node])
            node = torch.where(self.is_leaf[node], node, child)
        raw = self.baseline + self.value[node] @ self.to_output
        if raw.shape[1] == 1:  # the log-odds of class 1 against class 0
            raw = torch.cat([torch.zeros_like(raw), raw], dim=1)
        return torch.log_softmax(raw / self.temperature, dim=1)


def _depth(trees):
    """The most edges from a root to a leaf over all the trees."""
    depth = np.zeros(len(trees["feature"]), dtype=np.int64)
    inner = np.flatnonzero(~trees["is_leaf"])
    # children point forward (checked at load), so one pass in node order suffices
    for node in inner:
        depth[trees["left"][node]] = depth[node] + 1
        depth[trees["right"][node]] = depth[node] + 1
    return int(depth.max()) if len(depth) else 0


class Classifier(nn.Module):
    """Rows -> (logits, class probabilities): the network's logits and their softmax,
    or the log of their mixture with the boosted member's probabilities,
    ``(1 - w) softmax(network) + w trees``, and its softmax. ``predict`` takes the
    argmax of the first, ``predict_proba`` is the second."""

    def __init__(self, scaled, network, trees=None, weight=0.0):
        super().__init__()
        self.scaled, self.network, self.trees = scaled, network, trees
        self.weight = float(weight)

    def forward(self, x):
        rows = self.scaled(x)
        logits = self.network(rows)
        if self.trees is None:
            return logits, torch.softmax(logits, dim=1)
        network = torch.log_softmax(logits.to(torch.float64), dim=1)
        trees = self.trees(rows)
        log_proba = torch.logaddexp(np.log1p(-self.weight) + network,
                                    np.log(self.weight) + trees)
        log_proba = log_proba.to(torch.float32)  # the estimator's logits are float32
        return log_proba, torch.softmax(log_proba, dim=1)


class Regressor(nn.Module):
    """Rows -> targets in their units (float64), one column per output, clipped to
    ``[low, high]`` where those are given (``clip_predictions``)."""

    def __init__(self, scaled, network, mean, scale, low=None, high=None):
        super().__init__()
        self.scaled, self.network = scaled, network
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float64))
        self.register_buffer("target_scale", torch.tensor(scale, dtype=torch.float64))
        self.clips = low is not None
        if self.clips:
            self.register_buffer("low", torch.tensor(low, dtype=torch.float64))
            self.register_buffer("high", torch.tensor(high, dtype=torch.float64))

    def forward(self, x):
        y = self.network(self.scaled(x)).to(torch.float64) * self.target_scale + self.mean
        return torch.minimum(torch.maximum(y, self.low), self.high) if self.clips else y


class Transformer(nn.Module):
    """Rows -> ``transform``'s output (float32)."""

    def __init__(self, scaled, network):
        super().__init__()
        self.scaled, self.network = scaled, network

    def forward(self, x):
        return self.network(self.scaled(x))
