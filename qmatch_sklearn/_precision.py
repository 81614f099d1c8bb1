"""Mixed precision: the ``precision`` parameter, with Lightning's names.

``"bf16-mixed"`` and ``"16-mixed"`` (CUDA, with a gradient scaler) run forward passes under
autocast; weights, losses, teacher, queue and inference stay float32. ``"auto"`` picks bf16
only where it trained faster, on CPUs with AMX or AVX512-BF16 (not on CUDA): measured in
benchmarks/results/precision.md and precision_cuda.md.
"""

import contextlib
import functools

import torch

from ._warnings import warn

PRECISIONS = ("32-true", "bf16-mixed", "16-mixed", "auto")
_AUTOCAST_DTYPES = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}


def check_float32_default(caller):
    """Raise a ValueError naming ``caller`` unless torch's default dtype is float32."""
    if torch.get_default_dtype() != torch.float32:
        raise ValueError(
            f"{caller} builds and runs float32 networks, but torch's default dtype is "
            f"{torch.get_default_dtype()} (torch.set_default_dtype), in which their layers "
            "would be built. Call torch.set_default_dtype(torch.float32) before it."
        )


@functools.cache
def cpu_has_fast_bf16():
    """Whether this CPU has bf16 matrix units (AMX, AVX512-BF16), from ``/proc/cpuinfo``."""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line for line in info if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def _device_type(device):
    return str(device).partition(":")[0]


def resolve_precision(precision, device):
    """The precision training runs in on ``device``; raises where the device cannot."""
    kind = _device_type(device)
    if precision == "auto":
        return "bf16-mixed" if kind == "cpu" and cpu_has_fast_bf16() else "32-true"
    if precision == "16-mixed" and kind != "cuda":
        raise ValueError(
            f"precision='16-mixed' needs a CUDA device (its gradient scaler is CUDA's); the "
            f"device is {device!r}. Use 'bf16-mixed' or '32-true'."
        )
    if precision == "bf16-mixed":
        if kind == "mps" or (kind == "cuda" and not torch.cuda.is_bf16_supported()):
            raise ValueError(
                f"precision='bf16-mixed' is not supported on the device {device!r}. Use "
                "'16-mixed' on CUDA, or '32-true'."
            )
        if kind == "cpu" and not cpu_has_fast_bf16():
            warn(
                "precision='bf16-mixed' runs on this CPU, but it has no bf16 matrix units "
                "(Intel AMX, AVX512-BF16): expect it slower than '32-true' "
                "(benchmarks/results/throughput.md).",
                UserWarning,
            )
    return precision


def autocast(precision, device):
    """The autocast context of a resolved ``precision`` on ``device`` (none for float32)."""
    dtype = _AUTOCAST_DTYPES.get(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(_device_type(device), dtype=dtype)


def grad_scaler(precision, device):
    """A gradient scaler for ``"16-mixed"``, else None."""
    return torch.amp.GradScaler(_device_type(device)) if precision == "16-mixed" else None
