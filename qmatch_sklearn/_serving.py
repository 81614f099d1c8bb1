"""A fitted estimator's whole prediction as one torch module, for export (issue #33).

``transform``, ``predict_proba`` and ``predict`` map the numeric columns by
``center_`` and ``scale_`` in float64 (NumPy), then run the network in float32 (the
embedding balanced beside the input with ``passthrough``) and the fitted head's
prediction module (``heads/_prediction.py``: a boosted member's trees, the
target's units). :func:`_onnx.serving_module` puts the map, the network and that
same head module into one torch module, so that ``torch.onnx.export`` turns the
fitted estimator into one plain ONNX graph (``_onnx.py``): the same arithmetic,
not a re-implementation of the layers. The module reads the rows as the
estimator's input, numeric columns only, NaN read as ``predict`` reads it.
"""

import torch
from torch import nn

from ._scaling import MAX_DEVIATION


class Scaled(nn.Module):
    """``x -> (x - center) / scale`` in float64, clipped to +-``MAX_DEVIATION``, as
    float32: the numeric map of ``_scaling.py``; with ``fills_missing`` (a network
    without a missing-values layer) a NaN then becomes 0, as ``predict`` reads it
    (``TableInput.fill_unseen_missing``)."""

    def __init__(self, center, scale, fills_missing):
        super().__init__()
        self.register_buffer("center", torch.tensor(center, dtype=torch.float64))
        self.register_buffer("scale", torch.tensor(scale, dtype=torch.float64))
        self.fills_missing = bool(fills_missing)

    def forward(self, x):
        rows = (x.to(torch.float64) - self.center) / self.scale
        rows = rows.clamp(-MAX_DEVIATION, MAX_DEVIATION).to(torch.float32)  # NaN stays NaN
        if self.fills_missing:
            rows = torch.where(torch.isnan(rows), torch.zeros_like(rows), rows)
        return rows


class Classifier(nn.Module):
    """Rows -> (logits, class probabilities): the network's logits through the
    fitted head's prediction module (``heads.ClassifierHead``, the module
    ``predict`` runs), and their softmax. ``predict`` takes the argmax of the
    first, ``predict_proba`` is the second."""

    def __init__(self, scaled, network, head):
        super().__init__()
        self.scaled, self.network, self.head = scaled, network, head

    def forward(self, x):
        rows = self.scaled(x)
        logits = self.head(self.network(rows), rows)
        return logits, torch.softmax(logits, dim=1)


class Regressor(nn.Module):
    """Rows -> targets in their units (float64), through the fitted head's
    prediction module (``heads.RegressorHead``, the module ``predict`` runs)."""

    def __init__(self, scaled, network, head):
        super().__init__()
        self.scaled, self.network, self.head = scaled, network, head

    def forward(self, x):
        return self.head(self.network(self.scaled(x)))


class Transformer(nn.Module):
    """Rows -> ``transform``'s output (float32)."""

    def __init__(self, scaled, network):
        super().__init__()
        self.scaled, self.network = scaled, network

    def forward(self, x):
        return self.network(self.scaled(x))
