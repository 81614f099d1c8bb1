"""Where the networks run: one place that turns ``device="auto"`` into a torch device."""

import warnings

import torch


def resolve_device(device):
    """Return the torch device name for the ``device`` parameter.

    ``"auto"`` picks CUDA when it is available and the CPU otherwise. Asking
    for CUDA on a machine without it warns and falls back to the CPU, so a
    grid search written on a GPU box still runs on a laptop.
    """
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    name = str(device)
    if name.startswith("cuda") and not torch.cuda.is_available():
        warnings.warn(
            f"device={device!r} was requested but CUDA is not available; using the CPU.",
            UserWarning,
            stacklevel=3,
        )
        return "cpu"
    return name
