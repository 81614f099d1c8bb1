"""Pretext-training throughput: ``QMatchEncoder.fit`` against a bare torch loop.

What is measured, in one run on the same data:

* **library**: the wall time of a whole ``QMatchEncoder(...).fit(X)`` (input
  validation, network construction, the skorch loop, everything), with the
  default hyper-parameters except ``validation_fraction=None``,
  ``max_epochs=--epochs``, ``random_state=0`` and ``device=--device``;
* **bare**: the same network and loss written in plain torch
  (``benchmarks/_bare_qmatch.py``, from the estimator's parameters and the
  same seeds the estimator draws, so both loops compute the same losses, which
  the report checks), AdamW with the library's two parameter groups, one
  ``torch.randperm`` shuffle per epoch, contiguous slices of ``batch_size``
  rows, ``train()`` once an epoch and, per step, forward and loss / ``zero_grad`` /
  ``backward`` / ``step`` / EMA (one foreach update) and queue update (in
  place), the loss summed on the device and read once an epoch, as the library
  reads it.
  No skorch, no callbacks. Its timer also covers moving the data to the device
  and building the module and optimiser, as the library's does.

Both loops are warmed up once on a few batches, then run in pairs, taking turns
at running first (library then bare, bare then library, ...), until ``--repeats``
pairs are done; the report gives
the median samples/s of each (rows trained per second of wall time), the ratio
library/bare (goal >= ``GOAL_RATIO``), and the achieved GFLOP/s as a share of a measured
float32 ``torch.mm`` peak on the same device (best of one measurement before
and one after the runs).

Shared machines: on a 2-core machine one core taken by another job slows
torch's 2-thread kernels ten-fold or more, so timings taken beside other work
mean nothing. Before each timed run the script waits (up to ``--max-wait``
seconds) until other processes use less than ``--quiet-threshold`` of the
cores, and a watchdog aborts a run as soon as they go above it for a second;
the pair is then run again, up to ``--retries`` times in all. Every run records
the share of the cores that other processes kept busy (``/proc/stat`` minus
this process's CPU time), and the report counts the aborted attempts. Once the
retries are spent, runs complete whatever the load (and say so); no new pair
starts after ``--time-budget`` seconds once at least one pair is done.

FLOPs per training sample are counted analytically: 2*in*out per Linear layer
in the forward pass; the student (encoder + projector) counts 3x its forward
(forward + ~2x backward), the EMA teacher (encoder + projector) 1x; the loss's
two (batch x queue x dim) matmuls count 3x (student) and 1x (teacher).
BatchNorm, ReLU, softmax, corruption, AdamW and EMA are not counted.

Data: 113,400 x 54 float32 rows like Cover Type 1%: a seeded random subset of
``../shared/data/covtype/covtype.data.gz`` (relative to the repository root;
first 54 columns, first 10 z-scored) when that file exists, else synthetic rows
of the same shape and layout (10 Gaussian columns, a 4-way and a 40-way one-hot
group); the report says which.

Run from the repository root::

    python -m benchmarks.throughput        # defaults: 2 epochs x 5 pairs, ~2 min on 2 idle cores
    python -m benchmarks.throughput --rows 4096 --epochs 1 --repeats 1 --out /tmp/bench  # smoke
    python -m benchmarks.throughput --device cuda --architecture imix --epochs 3   # paper's network
    python -m benchmarks.throughput --hidden-sizes 1024,1024 --batch-size 1024  # other sizes

Results go to ``<out>/throughput.md`` (the Markdown table printed to stdout,
with a header describing the machine and the command) and
``<out>/throughput.json`` (the raw numbers); ``--out`` defaults to
``benchmarks/results``.
"""

import argparse
import json
import os
import platform
import shlex
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from qmatch_sklearn import QMatchEncoder, __version__

from . import _bare_qmatch
from ._harness import cpu_model

REPO_ROOT = Path(__file__).resolve().parent.parent
COVTYPE_PATH = REPO_ROOT.parent / "shared" / "data" / "covtype" / "covtype.data.gz"
DEFAULT_ROWS = 113_400
N_FEATURES = 54
N_CONTINUOUS = 10
WARMUP_BATCHES = 8
RANDOM_STATE = 0
#: The least library/bare ratio of median samples/s (issue #58: the library costs nothing).
GOAL_RATIO = 1.0


# ----------------------------------------------------------------------------- data


def load_data(rows, seed=0):
    """(X float32 of shape (rows, 54), description of the source)."""
    rng = np.random.default_rng(seed)
    if COVTYPE_PATH.exists():
        import pandas as pd

        frame = pd.read_csv(COVTYPE_PATH, header=None)
        if rows > len(frame):
            raise SystemExit(f"--rows {rows} exceeds the {len(frame)} rows of {COVTYPE_PATH}")
        index = np.sort(rng.choice(len(frame), size=rows, replace=False))
        X = frame.iloc[index, :N_FEATURES].to_numpy(dtype=np.float32)
        source = (
            f"Cover Type: seeded random subset (seed {seed}) of {rows:,} of the {len(frame):,} "
            f"rows of `covtype.data.gz`, first {N_FEATURES} columns, first {N_CONTINUOUS} "
            "z-scored"
        )
    else:
        X = np.zeros((rows, N_FEATURES), dtype=np.float32)
        X[:, :N_CONTINUOUS] = rng.standard_normal((rows, N_CONTINUOUS))
        X[np.arange(rows), N_CONTINUOUS + rng.integers(0, 4, rows)] = 1.0
        X[np.arange(rows), N_CONTINUOUS + 4 + rng.integers(0, 40, rows)] = 1.0
        source = (
            f"SYNTHETIC ({COVTYPE_PATH} not found): {rows:,} rows, {N_CONTINUOUS} Gaussian "
            "columns, a 4-way and a 40-way one-hot group"
        )
    continuous = X[:, :N_CONTINUOUS]
    X[:, :N_CONTINUOUS] = (continuous - continuous.mean(0)) / continuous.std(0)
    return np.ascontiguousarray(X, dtype=np.float32), source


def trained_rows_per_epoch(n, batch_size):
    """Rows one epoch trains on: the library skips a last batch of a single row."""
    return n - 1 if n > 1 and n % batch_size == 1 else n


# ----------------------------------------------------------------------------- other processes


def cpu_snapshot():
    """(machine busy CPU-seconds from /proc/stat, this process's CPU-seconds); None off Linux."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")  # without guest time
    own = os.times()
    return busy, own.user + own.system


def others_cpu_share(before, after, seconds):
    """Share of the machine's cores that other processes kept busy between two snapshots."""
    if before is None or after is None or seconds <= 0:
        return None
    others = (after[0] - before[0]) - (after[1] - before[1])
    return max(0.0, others) / (seconds * (os.cpu_count() or 1))


def wait_until_quiet(threshold, max_wait, window=0.5):
    """Sleep until other processes use less than ``threshold`` of the cores
    (measured over ``window`` seconds), at most ``max_wait`` seconds; returns seconds waited."""
    waited = 0.0
    while waited < max_wait:
        before = cpu_snapshot()
        time.sleep(window)
        waited += window
        share = others_cpu_share(before, cpu_snapshot(), window)
        if share is None or share < threshold:
            break
    return waited


class Contended(Exception):
    """Raised in the main thread when other processes took the cores during a run."""


class Watchdog:
    """Context that raises :class:`Contended` in the main thread once other
    processes have used ``threshold`` of the cores for ``patience`` windows in
    a row. Does nothing when disabled, off Linux or outside the main thread."""

    def __init__(self, threshold, enabled=True, window=0.5, patience=2):
        self.threshold, self.window, self.patience = threshold, window, patience
        self.enabled = (
            enabled
            and cpu_snapshot() is not None
            and hasattr(signal, "pthread_kill")
            and threading.current_thread() is threading.main_thread()
        )
        self.armed = False

    def _handler(self, signum, frame):
        if self.armed:
            self.armed = False
            raise Contended

    def _watch(self):
        previous, clock, strikes = cpu_snapshot(), time.perf_counter(), 0
        while not self._stop.wait(self.window):
            now, now_clock = cpu_snapshot(), time.perf_counter()
            share = others_cpu_share(previous, now, now_clock - clock)
            previous, clock = now, now_clock
            strikes = strikes + 1 if share is not None and share >= self.threshold else 0
            if strikes >= self.patience:
                signal.pthread_kill(self._main, signal.SIGUSR1)
                return

    def __enter__(self):
        if self.enabled:
            self._main = threading.main_thread().ident
            self._previous_handler = signal.signal(signal.SIGUSR1, self._handler)
            self._stop = threading.Event()
            self.armed = True
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.armed = False
            self._stop.set()
            self._thread.join()
            signal.signal(signal.SIGUSR1, self._previous_handler)
        return False


# ----------------------------------------------------------------------------- the two loops


def estimator(params, epochs):
    return QMatchEncoder(
        **params,
        max_epochs=epochs,
        validation_fraction=None,
        random_state=RANDOM_STATE,
    )


def synchronize(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize(device)


def run_library(X, params, epochs):
    """Time ``QMatchEncoder.fit``; returns seconds, rows trained, per-epoch train losses."""
    model = estimator(params, epochs)
    synchronize(params["device"])
    start = time.perf_counter()
    model.fit(X)
    synchronize(params["device"])
    seconds = time.perf_counter() - start
    losses = [float(row["train_loss"]) for row in model.history_]
    samples = trained_rows_per_epoch(len(X), model.batch_size) * model.n_epochs_
    return seconds, samples, losses


def run_bare(X, params, epochs, float32_loss=True):
    """The same module, loss, optimiser and step as the library, in a plain loop; with
    ``params["precision"] == "bf16-mixed"`` the step's forward passes run under
    bfloat16 autocast, and the loss in float32 as in the library (``float32_loss``) or
    under autocast too."""
    model = estimator(params, epochs)
    bf16 = params.get("precision") == "bf16-mixed"
    device = params["device"]
    batch_size = model.batch_size
    # The seeds fit() draws: identical initial weights, queue, shuffles and corruption.
    init_seed, data_seed, _, _ = _bare_qmatch.fit_seeds(model.random_state)
    synchronize(device)
    start = time.perf_counter()
    data = torch.as_tensor(X, device=device)
    module = _bare_qmatch.build(model, data.shape[1], init_seed).to(device)
    optimizer = _bare_qmatch.adamw(module, model)
    generator = torch.Generator(device).manual_seed(data_seed)
    n = len(data)
    stop = trained_rows_per_epoch(n, batch_size)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator, device=data.device)
        shuffled = data[order]
        total, count = torch.zeros((), device=data.device), 0
        module.train()  # once an epoch, as the library sets it
        for begin in range(0, stop, batch_size):
            xb = shuffled[begin : begin + batch_size]
            with torch.autocast(torch.device(device).type, torch.bfloat16, enabled=bf16):
                loss = module.loss(xb, generator, float32_loss)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            module.after_step()
            total += loss.detach().float() * len(xb)
            count += len(xb)
        losses.append(total.item() / count)
    synchronize(device)
    seconds = time.perf_counter() - start
    return seconds, stop * epochs, losses


# ----------------------------------------------------------------------------- FLOPs and peak


def linear_forward_flops(module):
    return sum(
        2 * m.in_features * m.out_features for m in module.modules() if isinstance(m, nn.Linear)
    )


def flops_per_sample(params, n_features):
    """Analytic training FLOPs per row (see the module docstring), with the parts."""
    model = estimator(params, 1)
    module = _bare_qmatch.build(model, n_features, seed=0)
    network = linear_forward_flops(module.encoder) + linear_forward_flops(module.projector)
    queue_size, dim = module.queue.shape
    loss_matmul = 2 * queue_size * dim
    parts = {
        "student encoder+projector (3x fwd)": 3 * network,
        "teacher encoder+projector (1x fwd)": network,
        "loss student matmul (3x)": 3 * loss_matmul,
        "loss teacher matmul (1x)": loss_matmul,
    }
    n_params = sum(p.numel() for p in module.encoder.parameters()) + sum(
        p.numel() for p in module.projector.parameters()
    )
    encoder_widths = [m.out_features for m in module.encoder.modules() if isinstance(m, nn.Linear)]
    return {
        "hidden_sizes": encoder_widths[:-1],
        "queue_size": queue_size,
        "per_sample": sum(parts.values()),
        "parts": parts,
        "encoder_projector_forward": network,
        "loss_matmul": loss_matmul,
        "trainable_params": n_params,
    }


def matmul_peak(device, min_seconds=1.0):
    """Measured float32 ``torch.mm`` GFLOP/s on ``device`` (square matrices)."""
    size = 4096 if str(device).startswith("cuda") else 2048
    generator = torch.Generator(device).manual_seed(0)
    a = torch.randn(size, size, device=device, generator=generator)
    b = torch.randn(size, size, device=device, generator=generator)
    for _ in range(3):
        torch.mm(a, b)
    synchronize(device)
    before = cpu_snapshot()
    calls, start = 0, time.perf_counter()
    while True:
        for _ in range(4 if str(device).startswith("cuda") else 1):
            torch.mm(a, b)
            calls += 1
        synchronize(device)
        seconds = time.perf_counter() - start
        if seconds >= min_seconds:
            break
    return {
        "size": size,
        "calls": calls,
        "seconds": seconds,
        "gflops": 2 * size**3 * calls / seconds / 1e9,
        "others_cpu_share": others_cpu_share(before, cpu_snapshot(), seconds),
    }


# ----------------------------------------------------------------------------- report


def device_name(device):
    if str(device).startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU: {cpu_model()} ({os.cpu_count()} logical cores)"


def command_line():
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    if argv and os.path.isabs(argv[0]):
        argv[0] = os.path.basename(argv[0])
    return shlex.join(argv)


def percent(share):
    return "n/a" if share is None else f"{100 * share:.0f}%"


def markdown(r):
    peak = r["peak"]["gflops"]
    config, machine = r["config"], r["machine"]
    peak_share = r["peak"]["others_cpu_share"]
    peak_clean = peak_share is None or peak_share < config["quiet_threshold"]

    def fmt_runs(runs):
        return ", ".join(
            f"{run['samples_per_s']:,.0f} [{percent(run['others_cpu_share'])}]" for run in runs
        )

    lines = [
        "# Q-Match pretext-training throughput: library vs bare torch loop",
        "",
        f"- Date: {r['date']}",
        f"- Command: `{r['command']}`",
        f"- Machine: {machine['device_name']}; {machine['platform']}",
        (
            f"- Python {machine['python']}, torch {machine['torch']}, skorch {machine['skorch']}, "
            f"qmatch_sklearn {machine['qmatch_sklearn']}; torch.get_num_threads() = "
            f"{machine['torch_threads']}"
        ),
        f"- Device: `{config['device']}`",
        (
            f"- Data: {r['data']['source']} ({r['data']['rows']:,} x "
            f"{r['data']['n_features']} float32)"
        ),
        (
            f"- Network: architecture `{config['architecture']}`, hidden sizes "
            f"{tuple(config['hidden_sizes'])}, embedding {config['embedding_dim']}, projector "
            f"{tuple(config['projection_sizes'])}, "
            f"queue {config['queue_size']}, batch {config['batch_size']} "
            f"({r['flops']['trainable_params']:,} student parameters)"
        ),
        (
            f"- Epochs per run: {config['epochs']}; timed pairs: {len(r['pair_ratios'])} of "
            f"{config['repeats']} asked (the loops taking turns at running first, after one "
            f"warm-up of each on {config['warmup_rows']:,} rows); attempts aborted because "
            f"other processes took >= {percent(config['quiet_threshold'])} of the cores: "
            f"{r['aborted_attempts']}"
        ),
        (
            f"- Other processes kept {percent(machine['others_cpu_share_overall'])} of the "
            f"{machine['logical_cores']} logical cores busy over the whole measurement, aborted "
            f"attempts included (load average at start / end: {machine['loadavg_start']} / "
            f"{machine['loadavg_end']}, this benchmark included)"
        ),
    ]
    if r.get("note"):
        lines.append(f"- Note: {r['note']}")
    lines += [
        "",
        (
            "| loop | samples/s (median) | runs: samples/s [others' CPU] | s per run (median) "
            "| GFLOP/s | % of mm peak |"
        ),
        "|---|---:|---|---:|---:|---:|",
    ]
    for name, entry in (
        ("library: `QMatchEncoder.fit`", r["library"]),
        ("bare torch loop", r["bare"]),
    ):
        lines.append(
            f"| {name} | {entry['median_samples_per_s']:,.0f} | {fmt_runs(entry['runs'])} | "
            f"{entry['median_seconds']:.2f} | {entry['gflops']:.1f} | "
            f"{entry['percent_of_peak']:.1f} |"
        )
    contended = [i for i, clean in enumerate(r["clean_pairs"]) if not clean]
    lines += [
        "",
        f"**Ratio library / bare (median samples/s): {r['ratio']:.3f}** (goal >= {GOAL_RATIO}: "
        f"{'met' if r['ratio'] >= GOAL_RATIO else 'NOT met'}); per-pair ratios (each pair run back "
        f"to back, the loops taking turns at running first, so that a change in the "
        f"machine's speed between pairs and the order within one cancel): "
        + ", ".join(f"{x:.3f}" for x in r["pair_ratios"])
        + f", median {r['median_pair_ratio']:.3f} (the goal reads the ratio of medians)",
        "",
        (
            f"- All pairs ran with other processes below {percent(config['quiet_threshold'])} of "
            "the cores."
            if not contended
            else f"- CONTENDED: pair(s) {[i + 1 for i in contended]} ran with other processes "
            f"at or above {percent(config['quiet_threshold'])} of the cores (retries spent); "
            "read those with care."
        ),
        f"- FLOPs per training sample: {r['flops']['per_sample'] / 1e6:.3f} M ("
        + "; ".join(f"{k} {v / 1e6:.3f} M" for k, v in r["flops"]["parts"].items())
        + ")",
        f"- Matmul peak: {peak:.1f} GFLOP/s (float32 `torch.mm` "
        f"{r['peak']['size']}x{r['peak']['size']}, "
        + (
            "best uncontended of the measurements before / after the runs: "
            if peak_clean
            else "CONTENDED: no measurement was uncontended, best of all: "
        )
        + " / ".join(
            f"{p['gflops']:.1f} [others' CPU {percent(p['others_cpu_share'])}]"
            for p in r["peak"]["measurements"]
        )
        + ")",
        (
            "- Same computation check: max |library - bare| per-epoch train loss over the timed "
            f"pairs = {r['loss_check']['max_abs_diff']:.3g} (library epoch losses "
            f"{r['loss_check']['library']}, bare {r['loss_check']['bare']})"
        ),
        (
            "- The FLOP count follows the 3x/1x convention; it slightly overstates the work (the "
            "first layer needs no input gradient, and the student loss matmul's backward needs "
            "only the gradient with respect to the student, not the detached queue)."
        ),
        (
            "- [others' CPU]: the share of all cores that other processes kept busy during that "
            "run (/proc/stat minus this process's CPU time)."
        ),
        "",
    ]
    return "\n".join(lines)


def summarise(runs, per_sample, peak):
    rate = statistics.median(run["samples_per_s"] for run in runs)
    gflops = per_sample * rate / 1e9
    return {
        "runs": runs,
        "median_samples_per_s": rate,
        "median_seconds": statistics.median(run["seconds"] for run in runs),
        "gflops": gflops,
        "percent_of_peak": 100 * gflops / peak,
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows", type=int, default=DEFAULT_ROWS, help="rows of data (default 113400)"
    )
    parser.add_argument("--epochs", type=int, default=2, help="epochs per timed run (default 2)")
    parser.add_argument("--repeats", type=int, default=5, help="timed pairs of runs (default 5)")
    parser.add_argument("--device", default="cpu", help='"cpu" (default), "cuda", "cuda:1", ...')
    parser.add_argument("--architecture", choices=("mlp", "imix"), default="mlp")
    parser.add_argument(
        "--hidden-sizes",
        default=None,
        help="comma-separated encoder widths, e.g. 2048,2048,4096,4096,8192 "
        "(default: the estimator's)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=None, help="default: the estimator's (512)"
    )
    parser.add_argument(
        "--out", default=str(REPO_ROOT / "benchmarks" / "results"), help="results folder"
    )
    parser.add_argument("--note", default="", help="free text added to the report header")
    parser.add_argument(
        "--quiet-threshold",
        type=float,
        default=0.10,
        help="share of the cores used by other processes above which a run is contended "
        "(default 0.10)",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=20.0,
        help="before each run, wait up to this many seconds for a quiet machine "
        "(default 20; 0: never)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=10,
        help="pairs aborted for contention and run again, at most (default 10; 0: never abort)",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=300.0,
        help="no new pair starts after this many seconds once one pair is done (default 300)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.rows < 2 or args.epochs < 1 or args.repeats < 1:
        raise SystemExit("--rows must be >= 2, --epochs and --repeats >= 1")
    device = str(args.device)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {device} requested but CUDA is not available")
    loadavg_start = round(os.getloadavg()[0], 2)
    began = time.perf_counter()

    params = {"architecture": args.architecture, "device": device}
    if args.hidden_sizes:
        params["hidden_sizes"] = tuple(int(w) for w in args.hidden_sizes.split(","))
    if args.batch_size:
        params["batch_size"] = args.batch_size
    reference = estimator(params, args.epochs)
    batch_size = reference.batch_size

    X, source = load_data(args.rows)
    print(f"data: {source}", file=sys.stderr)
    flops = flops_per_sample(params, X.shape[1])

    def quiet():
        return wait_until_quiet(args.quiet_threshold, args.max_wait)

    peaks = []

    def measure_peak(attempts=3):
        """Up to ``attempts`` peak measurements, until one is uncontended."""
        for _ in range(attempts):
            quiet()
            peaks.append(matmul_peak(device))
            share = peaks[-1]["others_cpu_share"]
            print(
                f"matmul peak: {peaks[-1]['gflops']:.1f} GFLOP/s, others' CPU {percent(share)}",
                file=sys.stderr,
            )
            if share is None or share < args.quiet_threshold:
                return

    overall_start, overall_clock = cpu_snapshot(), time.perf_counter()
    measure_peak()

    warmup_rows = min(len(X), WARMUP_BATCHES * batch_size)
    run_library(X[:warmup_rows], params, 1)
    run_bare(X[:warmup_rows], params, 1)

    runs = {"library": [], "bare": []}
    pair_ratios, clean_pairs, loss_diffs, first_losses = [], [], [], None
    aborted, retries_left = [], args.retries
    while len(pair_ratios) < args.repeats:
        if pair_ratios and time.perf_counter() - began > args.time_budget:
            print(f"time budget of {args.time_budget:.0f} s spent: stopping early", file=sys.stderr)
            break
        pair = {}
        # the loops take turns at running first, so that a pair's order cancels out
        order = [("library", run_library), ("bare", run_bare)]
        if len(pair_ratios) % 2:
            order.reverse()
        try:
            for name, runner in order:
                waited = quiet()
                before = cpu_snapshot()
                with Watchdog(args.quiet_threshold, enabled=retries_left > 0):
                    seconds, samples, losses = runner(X, params, args.epochs)
                share = others_cpu_share(before, cpu_snapshot(), seconds)
                pair[name] = {
                    "seconds": seconds,
                    "samples": samples,
                    "samples_per_s": samples / seconds,
                    "epoch_losses": losses,
                    "others_cpu_share": share,
                    "waited_for_quiet_s": waited,
                }
                print(
                    f"pair {len(pair_ratios) + 1}/{args.repeats} {name:7s}: {seconds:7.2f} s, "
                    f"{samples / seconds:9,.0f} samples/s, losses {[round(x, 5) for x in losses]}, "
                    f"others' CPU {percent(share)}, waited {waited:.1f} s",
                    file=sys.stderr,
                )
        except Contended:
            retries_left -= 1
            aborted.append({"pair": len(pair_ratios) + 1,
                            "run": next(name for name, _ in order if name not in pair)})
            print(
                f"pair {len(pair_ratios) + 1}: aborted, other processes took the cores "
                f"({retries_left} retries left)",
                file=sys.stderr,
            )
            continue
        for name, name_runs in runs.items():
            name_runs.append(pair[name])
        pair_ratios.append(pair["library"]["samples_per_s"] / pair["bare"]["samples_per_s"])
        clean_pairs.append(
            all(
                run["others_cpu_share"] is not None
                and run["others_cpu_share"] < args.quiet_threshold
                for run in pair.values()
            )
        )
        loss_diffs.append(
            max(
                abs(a - b)
                for a, b in zip(
                    pair["library"]["epoch_losses"], pair["bare"]["epoch_losses"], strict=True
                )
            )
        )
        first_losses = first_losses or {name: pair[name]["epoch_losses"] for name in pair}

    measure_peak()
    overall = others_cpu_share(overall_start, cpu_snapshot(), time.perf_counter() - overall_clock)
    uncontended = [
        p
        for p in peaks
        if p["others_cpu_share"] is None or p["others_cpu_share"] < args.quiet_threshold
    ]
    peak = max(uncontended or peaks, key=lambda p: p["gflops"])
    library = summarise(runs["library"], flops["per_sample"], peak["gflops"])
    bare = summarise(runs["bare"], flops["per_sample"], peak["gflops"])

    import skorch

    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command_line(),
        "note": args.note,
        "machine": {
            "device_name": device_name(device),
            "cpu": cpu_model(),
            "logical_cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "skorch": skorch.__version__,
            "qmatch_sklearn": __version__,
            "torch_threads": torch.get_num_threads(),
            "loadavg_start": loadavg_start,
            "loadavg_end": round(os.getloadavg()[0], 2),
            "others_cpu_share_overall": overall,
        },
        "config": {
            "device": device,
            "epochs": args.epochs,
            "repeats": args.repeats,
            "warmup_rows": warmup_rows,
            "architecture": reference.architecture,
            "hidden_sizes": flops.pop("hidden_sizes"),
            "embedding_dim": reference.embedding_dim,
            "projection_sizes": [int(width) for width in reference.projection_sizes],
            "queue_size": flops.pop("queue_size"),
            "batch_size": batch_size,
            "random_state": RANDOM_STATE,
            "quiet_threshold": args.quiet_threshold,
            "max_wait": args.max_wait,
            "retries": args.retries,
            "time_budget": args.time_budget,
        },
        "data": {
            "source": source,
            "rows": len(X),
            "n_features": X.shape[1],
            "path": str(COVTYPE_PATH),
        },
        "flops": flops,
        "peak": {**peak, "measurements": peaks},
        "library": library,
        "bare": bare,
        "ratio": library["median_samples_per_s"] / bare["median_samples_per_s"],
        "pair_ratios": pair_ratios,
        "median_pair_ratio": float(np.median(pair_ratios)),
        "clean_pairs": clean_pairs,
        "aborted_attempts": len(aborted),
        "aborted": aborted,
        "loss_check": {
            "max_abs_diff": max(loss_diffs),
            "library": [round(x, 6) for x in first_losses["library"]],
            "bare": [round(x, 6) for x in first_losses["bare"]],
        },
        "total_seconds": time.perf_counter() - began,
    }

    text = markdown(result)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "throughput.md").write_text(text)
    (out / "throughput.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out / 'throughput.md'} and {out / 'throughput.json'}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
