"""What a fitted head does to the network's output, as torch modules: one prediction path.

``predict``, ``predict_proba``, ``decision_function`` and the ONNX export (``_serving.py``)
all run these modules, so they cannot drift apart. :class:`Trees` walks every tree one
level per step for a fixed depth, so that the export is a plain graph.
"""

import numpy as np
import torch
from scipy.sparse import issparse
from torch import nn

#: Rows one call of a head reads at once in ``predict``: the trees' walk holds
#: rows x trees node indices.
ROWS_PER_BATCH = 2048


def tree_depth(trees):
    """The most edges from a root to a leaf; finite, as ``load`` runs
    ``_boosting.check_trees``."""
    frontier, depth = trees["roots"], 0
    while True:
        inner = frontier[~trees["is_leaf"][frontier]]
        if not len(inner):
            return depth
        frontier = np.r_[trees["left"][inner], trees["right"][inner]]
        depth += 1


def _at(values, node):
    """``values[node]`` for a (rows, trees) index ``node``, as one flat gather (Gather in
    ONNX): (rows, trees) of a 1-D ``values``, (rows, trees, outputs) of a 2-D one."""
    return values.index_select(0, node.reshape(-1)).view(*node.shape, *values.shape[1:])


class Trees(nn.Module):
    """The boosted member's float64 log-probabilities at ``temperature``."""

    def __init__(self, trees, temperature):
        super().__init__()
        for name in ("feature", "left", "right", "roots"):
            self.register_buffer(name, torch.tensor(trees[name], dtype=torch.int64))
        for name in ("threshold", "value", "baseline"):
            self.register_buffer(name, torch.tensor(trees[name], dtype=torch.float64))
        self.register_buffer("is_leaf", torch.tensor(trees["is_leaf"], dtype=torch.bool))
        self.register_buffer("missing_left",
                             torch.tensor(trees["missing_left"], dtype=torch.bool))
        self.depth = tree_depth(trees)
        self.temperature = float(temperature)

    def forward(self, rows):
        rows = rows.to(torch.float64)
        node = self.roots.unsqueeze(0).expand(rows.shape[0], -1)
        for _ in range(self.depth):
            value = torch.gather(rows, 1, _at(self.feature, node))
            # logical operators: ONNX Runtime has no Where on booleans
            missing = torch.isnan(value)
            left = ((missing & _at(self.missing_left, node))
                    | (~missing & (value <= _at(self.threshold, node))))
            child = torch.where(left, _at(self.left, node), _at(self.right, node))
            node = torch.where(_at(self.is_leaf, node), node, child)
        raw = self.baseline + _at(self.value, node).sum(dim=1)  # each leaf's outputs
        if raw.shape[1] == 1:  # the log-odds of class 1 against class 0
            raw = torch.cat([torch.zeros_like(raw), raw], dim=1)
        return torch.log_softmax(raw / self.temperature, dim=1)


class ClassifierHead(nn.Module):
    """(logits, input rows) -> the classifier's float32 logits: with ``trees``, the log of
    ``(1 - weight) softmax(logits) + weight p_trees``."""

    def __init__(self, trees=None, temperature=1.0, weight=0.0):
        super().__init__()
        self.trees = None if trees is None else Trees(trees, temperature)
        with np.errstate(divide="ignore"):  # a weight of 1: the trees alone
            self.log_weights = (float(np.log1p(-weight)), float(np.log(weight)))

    def forward(self, logits, rows=None):
        if self.trees is None:
            return logits
        network = torch.log_softmax(logits.to(torch.float64), dim=1)
        mixed = torch.logaddexp(self.log_weights[0] + network,
                                self.log_weights[1] + self.trees(rows))
        return mixed.to(torch.float32)


class RegressorHead(nn.Module):
    """Network outputs -> float64 targets in their units, clipped to ``[low, high]`` if
    given (``clip_predictions``)."""

    def __init__(self, mean, scale, low=None, high=None):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float64))
        self.register_buffer("target_scale", torch.tensor(scale, dtype=torch.float64))
        self.clips = low is not None
        if self.clips:
            self.register_buffer("low", torch.tensor(low, dtype=torch.float64))
            self.register_buffer("high", torch.tensor(high, dtype=torch.float64))

    def forward(self, outputs):
        y = outputs.to(torch.float64) * self.target_scale + self.mean
        return torch.minimum(torch.maximum(y, self.low), self.high) if self.clips else y


def run_head(head, outputs, rows=None):
    """``head`` on the NumPy ``outputs`` (and a classifier's input ``rows``) in batches."""
    results = []
    with torch.no_grad():
        for start in range(0, len(outputs), ROWS_PER_BATCH):
            batch = slice(start, start + ROWS_PER_BATCH)
            inputs = [torch.from_numpy(outputs[batch])]
            if rows is not None:
                dense = rows[batch].toarray() if issparse(rows) else rows[batch]
                inputs.append(torch.as_tensor(np.asarray(dense, dtype=np.float64)))
            results.append(head(*inputs).numpy())
    return np.concatenate(results)
