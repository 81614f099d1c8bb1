"""What a fitted head does to the network's output, as torch modules: one prediction path.

``predict``, ``predict_proba`` and ``decision_function`` run these modules on the
network's output, and the ONNX export (``_serving.py``) runs the same modules
inside its graph, so the two cannot drift apart.

- :class:`ClassifierHead`: the network's logits, or with a boosted member the
  log of the mixture ``(1 - w) softmax(logits) + w p_trees`` (the stacking of
  ``_logistic.fit_logistic_head_``), whose softmax is the class probabilities.
- :class:`Trees`: the member's tempered per-class log-probabilities, every tree
  walked from its root one level per step for the trees' depth (a fixed count,
  so that the export is a plain graph), the rows compared in float64.
- :class:`RegressorHead`: the network's outputs back in the target's units,
  clipped to the labeled range where the estimator says so.
"""

import numpy as np
import torch
from scipy.sparse import issparse
from torch import nn

#: Rows one call of a head reads at once in ``predict``: the trees' walk holds
#: rows x trees node indices.
ROWS_PER_BATCH = 2048


def tree_depth(trees):
    """The most edges from a root to a leaf over all the trees. Children point
    forward and no node has two parents (``_boosting.check_trees``, which ``load``
    runs): a walk always ends, and each level holds each node once."""
    frontier, depth = trees["roots"], 0
    while True:
        inner = frontier[~trees["is_leaf"][frontier]]
        if not len(inner):
            return depth
        frontier = np.r_[trees["left"][inner], trees["right"][inner]]
        depth += 1


def _at(values, node):
    """``values[node]`` for a (rows, trees) index ``node``, as one flat gather
    (``index_select``: a third of advanced indexing's time; Gather in ONNX)."""
    return values.index_select(0, node.reshape(-1)).view(node.shape)


class Trees(nn.Module):
    """The boosted member's per-class log-probabilities: softmax of its per-class
    log-odds (the boosting's raw scores; two classes: ``[0, raw]``) divided by
    ``temperature``, float64."""

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
        self.depth = tree_depth(trees)
        self.temperature = float(temperature)

    def forward(self, rows):
        rows = rows.to(torch.float64)
        node = self.roots.unsqueeze(0).expand(rows.shape[0], -1)
        for _ in range(self.depth):
            value = torch.gather(rows, 1, _at(self.feature, node))
            # NaN goes where missing_left says (logical operators: ONNX Runtime has no
            # Where on booleans)
            missing = torch.isnan(value)
            left = ((missing & _at(self.missing_left, node))
                    | (~missing & (value <= _at(self.threshold, node))))
            child = torch.where(left, _at(self.left, node), _at(self.right, node))
            node = torch.where(_at(self.is_leaf, node), node, child)
        raw = self.baseline + _at(self.value, node) @ self.to_output
        if raw.shape[1] == 1:  # the log-odds of class 1 against class 0
            raw = torch.cat([torch.zeros_like(raw), raw], dim=1)
        return torch.log_softmax(raw / self.temperature, dim=1)


class ClassifierHead(nn.Module):
    """(network logits, the network's input rows) -> the classifier's logits, float32:
    the network's own, or with ``trees`` (weighed ``weight``) the log of the
    mixture of both models' probabilities; softmax gives ``predict_proba``."""

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
    """Network outputs -> targets in their units (float64), one column per output,
    clipped to ``[low, high]`` where those are given (``clip_predictions``)."""

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
    """``head`` over the network's ``outputs`` (NumPy, at least one row) and, for a
    classifier's head, the network's input ``rows`` (dense or sparse),
    ``ROWS_PER_BATCH`` rows at a time; a NumPy array."""
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
