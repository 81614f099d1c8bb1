"""A fitted estimator's whole prediction as one torch module, for export (issue #33).

The numeric map (float64), the network (float32) and the fitted head's prediction module
(``heads/_prediction.py``) in one module, which ``torch.onnx.export`` turns into one ONNX
graph (``_onnx.py``): the same arithmetic as ``predict``, not a re-implementation.
"""

import torch
from torch import nn

from ._table import MAX_DEVIATION


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


class Transformer(nn.Module):
    """Rows -> ``transform``'s output (float32)."""

    def __init__(self, scaled, network):
        super().__init__()
        self.scaled, self.network = scaled, network

    def forward(self, x):
        return self.network(self.scaled(x))


class Regressor(Transformer):
    """Rows -> targets in their units (float64), through ``heads.RegressorHead``."""

    def __init__(self, scaled, network, head):
        super().__init__(scaled, network)
        self.head = head

    def forward(self, x):
        return self.head(super().forward(x))


class Classifier(Regressor):
    """Rows -> (logits, probabilities), through ``heads.ClassifierHead``, which reads the
    rows too (its boosted member's trees)."""

    def forward(self, x):
        rows = self.scaled(x)
        logits = self.head(self.network(rows), rows)
        return logits, torch.softmax(logits, dim=1)
