"""Where the networks run: one place that turns ``device="auto"`` into a torch device."""

import torch

from ._warnings import warn


def _unavailable(device, backend):
    warn(
        f"device={device!r} was requested but {backend} is not available; using the CPU.",
        UserWarning,
    )
    return "cpu"


def resolve_device(device):
    """The torch device name for ``device``: ``"auto"`` is CUDA where available; a missing
    CUDA or MPS warns and falls back to the CPU (a GPU grid search still runs on a laptop);
    a CUDA index beyond the devices present raises."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    name = str(device)
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            return _unavailable(device, "CUDA")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r}: this machine has {torch.cuda.device_count()} CUDA "
                f"device(s), numbered from 0."
            )
    if name == "mps" and not torch.backends.mps.is_available():
        return _unavailable(device, "MPS")
    return name
