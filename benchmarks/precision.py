"""Training speed by ``precision``: float32 against bf16 autocast, and matmul peaks (issue #17).

In one run on the same rows: ``QMatchEncoder(precision=...).fit(X)`` (``--epochs`` epochs,
no validation) and the bare torch loop of the same network (``benchmarks.throughput``'s, its
networks under bfloat16 autocast for bf16) for each network (the default ``"mlp"`` and the
paper's ``"imix"``) and each precision (``"32-true"``, ``"bf16-mixed"``), in interleaved
repeats, reporting the median samples/s, library / bare and the bf16 / fp32 ratio. The bare
loop computes the loss in float32 as the library does (the queue's softmax at temperatures of
0.1 and below, issue #17's rule); in bf16 a second bare loop that leaves the loss to autocast
too shows what that rule costs. On a CUDA device float32 is also timed with its
matrix products in TF32 (``torch.backends.cuda.matmul.allow_tf32``, NVIDIA's
TensorFloat-32: float32 operands rounded to a 10-bit mantissa inside the product, issue
#58), which a user turns on for a whole process, not through ``precision``. And
``torch.mm`` of two 2048 x 2048 matrices in float32, in TF32 on CUDA and in bfloat16
(best of three), the hardware's ratios that the precisions can at most approach. What
``precision="auto"`` picks on the machine is reported too. On a CUDA device the library's
fit is timed a second way, its step recorded as a CUDA graph and replayed
(``set_config(cuda_graph=True)``, issue #58). Timings beside other work mean nothing: run
it on an idle machine.

Each configuration is fitted twice, for 1 and for 1 + ``--epochs`` epochs: the steady-state
rate is the extra epochs' rows over the extra seconds, so that building the network (the
paper's 63M-parameter student and teacher), the first step's allocations and the final pass
over the rows cancel out (issue #58: one epoch of the paper's network measured mostly its
construction, bf16 / fp32 1.09x where a step alone ran 1.8x). The longer fit's rate, set-up
included, is what a user waits for; both are reported.

    OMP_NUM_THREADS=2 python -m benchmarks.precision          # ~10 minutes on 2 CPU cores
    python -m benchmarks.precision --rows 2048 --imix-rows 512 --epochs 1 --repeats 1 \
        --out /tmp/p   # smoke
"""

import argparse
import contextlib
import functools
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from qmatch_sklearn import QMatchEncoder, config_context

from ._harness import cpu_model
from .throughput import run_bare, run_library

RESULTS = Path(__file__).parent / "results"
#: name -> encoder parameters: the default network and the paper's i-Mix network (which
#: trains on fewer rows, --imix-rows: a 63M-parameter student on a CPU)
NETWORKS = {"default (mlp 512-512)": {}, "paper (imix)": {"architecture": "imix"}}
PRECISIONS = ("32-true", "bf16-mixed")
#: The row of float32 with TF32 matrix products, timed on CUDA only.
TF32 = "32-true + TF32"


@contextlib.contextmanager
def tf32_matmuls(enabled):
    """float32 matrix products (and cuDNN's) in TF32 while inside when ``enabled``, in
    full float32 otherwise, whatever the process had set."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def matmul_gflops(dtype, device, size=2048, repeats=3):
    """Best GFLOP/s of ``torch.mm`` on two ``size`` x ``size`` matrices of ``dtype``."""
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    torch.mm(a, b)  # warm-up
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        if device != "cpu":
            torch.cuda.synchronize()
        best = max(best, 2 * size**3 / (time.perf_counter() - start) / 1e9)
    return best


def samples_per_second(runner, X, params, epochs):
    """Training rows per second of ``runner`` (library or bare loop): ``(steady, whole)``,
    the rows of ``epochs`` epochs beyond a first one over their extra seconds (two fits,
    of 1 and 1 + ``epochs`` epochs: set-up cancels), and the longer fit's rate with its
    set-up."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bf16 on a CPU without bf16 units warns
        short_seconds, short_samples, _ = runner(X, params, 1)
        seconds, samples, _ = runner(X, params, 1 + epochs)
    return (samples - short_samples) / max(seconds - short_seconds, 1e-9), samples / seconds


def run_recorded(X, params, epochs):
    """``run_library`` with the step recorded as a CUDA graph (``cuda_graph=True``,
    issue #58)."""
    with config_context(cuda_graph=True):
        return run_library(X, params, epochs)


def unrecorded(device):
    """Why a fit on ``device`` records no step under ``cuda_graph=True`` (the library's
    warning), or None where it records one."""
    X = np.zeros((64, 2), dtype=np.float32)
    with config_context(cuda_graph=True), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        QMatchEncoder(hidden_sizes=(4,), embedding_dim=2, projection_sizes=(4, 2),
                      queue_size=4, batch_size=8, max_epochs=1, validation_fraction=None,
                      device=device).fit(X)
    reasons = [str(w.message) for w in caught if "record" in str(w.message)]
    return reasons[0] if reasons else None


def auto_precision(device):
    """What ``precision="auto"`` resolves to on ``device``."""
    X = np.zeros((4, 2), dtype=np.float32)
    encoder = QMatchEncoder(precision="auto", hidden_sizes=(4,), embedding_dim=2,
                            projection_sizes=(4, 2), queue_size=4, max_epochs=1,
                            validation_fraction=None, device=device)
    return encoder.fit(X).precision_


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16_384)
    parser.add_argument("--imix-rows", type=int, default=2048)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--features", type=int, default=54)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    X = np.random.RandomState(0).normal(size=(args.rows, args.features)).astype(np.float32)
    cuda = torch.device(args.device).type == "cuda"
    precisions = (*PRECISIONS, TF32) if cuda else PRECISIONS
    with tf32_matmuls(False):
        peaks = {dtype: matmul_gflops(dtype, args.device)
                 for dtype in (torch.float32, torch.bfloat16)}
    if cuda:
        with tf32_matmuls(True):
            peaks[TF32] = matmul_gflops(torch.float32, args.device)
    where = (cpu_model() if args.device == "cpu"
             else f"{args.device} ({torch.cuda.get_device_name(args.device)})")
    lines = [
        "# Training speed by precision: float32 against bf16 autocast",
        "",
        f"`python -m benchmarks.precision` on {where}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; "
        f"{args.rows:,} x {args.features} float32 rows ({args.imix_rows:,} for the paper's "
        f"network), steady state from fits of 1 and {1 + args.epochs} epochs (set-up "
        "cancels; the longer fit's rate with its set-up in the last column), "
        f"{args.repeats} interleaved repeats (median); the bare loop is "
        "`benchmarks.throughput`'s. `precision=\"auto\"` picks "
        f"`{auto_precision(args.device)}` here.",
        "",
        f"- `torch.mm` 2048 x 2048: float32 {peaks[torch.float32]:.1f} GFLOP/s, bfloat16 "
        f"{peaks[torch.bfloat16]:.1f} GFLOP/s (bf16 / fp32 = "
        f"{peaks[torch.bfloat16] / peaks[torch.float32]:.3f})"
        + (f"; TF32 {peaks[TF32]:.1f} GFLOP/s (TF32 / fp32 = "
           f"{peaks[TF32] / peaks[torch.float32]:.3f})" if cuda else ""),
        "",
        "| network | precision | library samples/s | bare loop samples/s | library / bare "
        "| bare loop, loss under autocast too | library vs 32-true "
        "| library samples/s, set-up included | recorded step samples/s | recorded / eager |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    runners = {"library": run_library, "bare": run_bare,
               "bare, autocast loss": functools.partial(run_bare, float32_loss=False)}
    not_recorded = unrecorded(args.device) if cuda else None  # nothing is recorded elsewhere
    if cuda and not_recorded is None:
        runners["recorded"] = run_recorded
    elif not_recorded is not None:
        lines.insert(-2, f"- Recorded step not timed: {not_recorded}")
        lines.insert(-2, "")
    for name, network in NETWORKS.items():
        rows = X[: args.imix_rows] if network else X
        runs = {}
        for runner in runners.values():  # warm-up
            samples_per_second(runner, rows[:128], {**network, "device": args.device}, 1)
        for _ in range(args.repeats):
            for precision in precisions:
                params = {**network, "device": args.device,
                          "precision": "32-true" if precision == TF32 else precision}
                for r, runner in runners.items():
                    if r == "bare, autocast loss" and params["precision"] == "32-true":
                        continue  # no autocast: the same loop as "bare"
                    with tf32_matmuls(precision == TF32):
                        runs.setdefault((precision, r), []).append(
                            samples_per_second(runner, rows, params, args.epochs))
        speed = {key: statistics.median(steady for steady, _ in values)
                 for key, values in runs.items()}
        whole = {key: statistics.median(rate for _, rate in values)
                 for key, values in runs.items()}
        for precision in precisions:
            library, bare = speed[precision, "library"], speed[precision, "bare"]
            autocast_loss = speed.get((precision, "bare, autocast loss"))
            recorded = speed.get((precision, "recorded"))
            lines.append(
                f"| {name} | {precision} | {library:,.0f} | {bare:,.0f} | {library / bare:.2f} "
                f"| {'-' if autocast_loss is None else f'{autocast_loss:,.0f}'} "
                f"| {library / speed[PRECISIONS[0], 'library']:.2f} "
                f"| {whole[precision, 'library']:,.0f} "
                f"| {'-' if recorded is None else f'{recorded:,.0f}'} "
                f"| {'-' if recorded is None else f'{recorded / library:.2f}'} |"
            )
            print(lines[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "precision.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
