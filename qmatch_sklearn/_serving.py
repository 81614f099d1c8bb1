"""A fitted estimator's whole prediction as one torch module, for export (issue #33).

The numeric map (float64), the network (float32) and the fitted head's prediction module
(``heads/_prediction.py``) in one module, which ``torch.onnx.export`` turns into one ONNX
graph (``_onnx.py``): the same arithmetic as ``predict``, not a re-implementation.
"""

import torch
from torch import nn

from ._table import MAX_DEVIATION
from .heads._prediction import ClassifierHead


class Scaled(nn.Module):
    """The numeric map of ``_table.py``; with ``fills_missing`` a NaN becomes 0."""

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


class Prediction(nn.Module):
    """Rows -> ``transform``'s output (float32) without ``head``; through
    ``heads.RegressorHead``, targets in their units (float64); through
    ``heads.ClassifierHead``, (logits, probabilities)."""

    def __init__(self, scaled, network, head=None):
        super().__init__()
        self.scaled, self.network, self.head = scaled, network, head

    def forward(self, x):
        rows = self.scaled(x)
        outputs = self.network(rows)
        if self.head is None:
            return outputs
        if not isinstance(self.head, ClassifierHead):
            return self.head(outputs)
        logits = self.head(outputs, rows)
        return logits, torch.softmax(logits, dim=1)
