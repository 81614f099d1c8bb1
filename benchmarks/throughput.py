"""Pretext-training throughput: ``QMatchEncoder.fit`` against a bare torch loop.

What is measured, in one run on the same data:

* **library**: the wall time of a whole ``QMatchEncoder(...).fit(X)`` (input
  validation, network construction, the skorch loop, everything), with the
  default hyper-parameters except ``validation_fraction=None``,
  ``max_epochs=--epochs``, ``random_state=0`` and ``device=--device``;
* **bare**: the same module and loss (built by the estimator's own
  ``_build_pretext`` from the same seeds the estimator draws, so both loops
  compute the same losses), AdamW with the library's two parameter groups, one
  ``torch.randperm`` shuffle per epoch, contiguous slices of ``batch_size``
  rows and, per step, ``train()`` / forward / loss / ``zero_grad`` /
  ``backward`` / ``step`` / ``after_step`` / ``loss.item()``. No skorch, no
  callbacks. Its timer also covers moving the data to the device and building
  the module and optimiser, as the library's does.

Both loops are warmed up once on a few batches, then run alternately
(library, bare, library, bare, ...) ``--repeats`` times; the report gives the
median samples/s of each (rows trained per second of wall time), the ratio
library/bare (goal >= 0.9), and the achieved GFLOP/s as a share of a measured
float32 ``torch.mm`` peak on the same device.

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

    python -m benchmarks.throughput                      # defaults, ~5 min on 2 CPU cores
    python -m benchmarks.throughput --rows 4096 --epochs 1 --repeats 1 --out /tmp/bench  # smoke
    python -m benchmarks.throughput --device cuda --architecture imix --epochs 3   # paper's network

Results go to ``<out>/throughput.md`` (the Markdown table printed to stdout,
with a header describing the machine and the command) and
``<out>/throughput.json`` (the raw numbers); ``--out`` defaults to
``benchmarks/results``.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from qmatch_sklearn import QMatchEncoder, __version__
from qmatch_sklearn._base import draw_seeds
from qmatch_sklearn._engine import _decay_groups

REPO_ROOT = Path(__file__).resolve().parent.parent
COVTYPE_PATH = REPO_ROOT.parent / "shared" / "data" / "covtype" / "covtype.data.gz"
DEFAULT_ROWS = 113_400
N_FEATURES = 54
N_CONTINUOUS = 10
WARMUP_BATCHES = 8
RANDOM_STATE = 0


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
            f"Cover Type: seeded random subset (seed {seed}) of {rows:,} of the {len(frame):,} rows "
            f"of `covtype.data.gz`, first {N_FEATURES} columns, first {N_CONTINUOUS} z-scored"
        )
    else:
        X = np.zeros((rows, N_FEATURES), dtype=np.float32)
        X[:, :N_CONTINUOUS] = rng.standard_normal((rows, N_CONTINUOUS))
        X[np.arange(rows), N_CONTINUOUS + rng.integers(0, 4, rows)] = 1.0
        X[np.arange(rows), N_CONTINUOUS + 4 + rng.integers(0, 40, rows)] = 1.0
        source = (
            f"SYNTHETIC ({COVTYPE_PATH} not found): {rows:,} rows, {N_CONTINUOUS} Gaussian columns, "
            "a 4-way and a 40-way one-hot group"
        )
    continuous = X[:, :N_CONTINUOUS]
    X[:, :N_CONTINUOUS] = (continuous - continuous.mean(0)) / continuous.std(0)
    return np.ascontiguousarray(X, dtype=np.float32), source


def trained_rows_per_epoch(n, batch_size):
    """Rows one epoch trains on: the library skips a last batch of a single row."""
    return n - 1 if n > 1 and n % batch_size == 1 else n


# ----------------------------------------------------------------------------- the two loops


def estimator(params, epochs):
    return QMatchEncoder(
        **params,
        max_epochs=epochs,
        validation_fraction=None,
        random_state=RANDOM_STATE,
    )


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
    """Share of the machine's cores that other processes kept busy during a run."""
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


def run_bare(X, params, epochs):
    """The same module, loss, optimiser and step as the library, in a plain loop."""
    model = estimator(params, epochs)
    device = params["device"]
    batch_size = model.batch_size
    # The seeds fit() draws: identical initial weights, queue, shuffles and corruption.
    init_seed, data_seed, _, _ = draw_seeds(model.random_state, 4)
    synchronize(device)
    start = time.perf_counter()
    data = torch.as_tensor(X, device=device)
    module, criterion = model._build_pretext(data.shape[1], torch.Generator().manual_seed(init_seed))
    module.to(device)
    criterion.to(device)
    named = list(module.named_parameters()) + list(criterion.named_parameters())
    optimizer = torch.optim.AdamW(_decay_groups(named, model.weight_decay), lr=model.lr)
    generator = torch.Generator(device).manual_seed(data_seed)
    n = len(data)
    stop = trained_rows_per_epoch(n, batch_size)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(n, generator=generator, device=data.device)
        shuffled = data[order]
        total, count = 0.0, 0
        for begin in range(0, stop, batch_size):
            xb = shuffled[begin : begin + batch_size]
            module.train()
            outputs = module(xb, generator)
            loss = criterion(*outputs)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            module.after_step(outputs)
            total += loss.item() * len(xb)
            count += len(xb)
        losses.append(total / count)
    synchronize(device)
    seconds = time.perf_counter() - start
    return seconds, stop * epochs, losses


# ----------------------------------------------------------------------------- FLOPs and peak


def linear_forward_flops(module):
    return sum(2 * m.in_features * m.out_features for m in module.modules() if isinstance(m, nn.Linear))


def flops_per_sample(params, n_features):
    """Analytic training FLOPs per row (see the module docstring), with the parts."""
    model = estimator(params, 1)
    module, _ = model._build_pretext(n_features, torch.Generator().manual_seed(0))
    network = linear_forward_flops(module.encoder) + linear_forward_flops(module.projector)
    queue_size, dim = module.queue.embeddings.shape
    loss_matmul = 2 * queue_size * dim
    parts = {
        "student_encoder_projector (3x fwd)": 3 * network,
        "teacher_encoder_projector (1x fwd)": network,
        "loss_student_matmul (3x)": 3 * loss_matmul,
        "loss_teacher_matmul (1x)": loss_matmul,
    }
    n_params = sum(p.numel() for p in module.encoder.parameters()) + sum(
        p.numel() for p in module.projector.parameters()
    )
    return sum(parts.values()), parts, network, loss_matmul, n_params


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


def cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(device):
    if str(device).startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU: {cpu_name()} ({os.cpu_count()} logical cores)"


def command_line():
    argv = getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv]
    argv = list(argv)
    if argv and os.path.isabs(argv[0]):
        argv[0] = os.path.basename(argv[0])
    return shlex.join(argv)


def markdown(result):
    r = result
    lib, bare = r["library"], r["bare"]
    peak = r["peak"]["gflops"]
    def fmt_runs(runs):
        return ", ".join(
            f"{run['samples_per_s']:,.0f}"
            + ("" if run["others_cpu_share"] is None else f" [{100 * run['others_cpu_share']:.0f}%]")
            for run in runs
        )

    lines = [
        "# Q-Match pretext-training throughput: library vs bare torch loop",
        "",
        f"- Date: {r['date']}",
        f"- Command: `{r['command']}`",
        f"- Machine: {r['machine']['device_name']}; {r['machine']['platform']}",
        f"- Python {r['machine']['python']}, torch {r['machine']['torch']}, "
        f"skorch {r['machine']['skorch']}, qmatch_sklearn {r['machine']['qmatch_sklearn']}; "
        f"torch.get_num_threads() = {r['machine']['torch_threads']}",
        f"- Device: `{r['config']['device']}`",
        f"- Data: {r['data']['source']} ({r['data']['rows']:,} x {r['data']['n_features']} float32)",
        f"- Network: architecture `{r['config']['architecture']}`, hidden sizes "
        f"{tuple(r['config']['hidden_sizes'])}, embedding {r['config']['embedding_dim']}, projector "
        f"{tuple(r['config']['projection_sizes'])}, queue {r['config']['queue_size']}, "
        f"batch {r['config']['batch_size']} ({r['flops']['trainable_params']:,} student parameters)",
        f"- Epochs per run: {r['config']['epochs']}; timed repeats: {r['config']['repeats']} "
        f"(alternating library, bare; after one warm-up of each on {r['config']['warmup_rows']:,} rows)",
        f"- Load average (1 min) at start / end: {r['machine']['loadavg_start']} / "
        f"{r['machine']['loadavg_end']} on {os.cpu_count()} logical cores",
    ]
    if r.get("note"):
        lines.append(f"- Note: {r['note']}")
    lines += [
        "",
        "| loop | samples/s (median) | runs: samples/s [others' CPU] | s per run (median) | GFLOP/s | % of mm peak |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for name, entry in (("library: `QMatchEncoder.fit`", lib), ("bare torch loop", bare)):
        lines.append(
            f"| {name} | {entry['median_samples_per_s']:,.0f} | {fmt_runs(entry['runs'])} | "
            f"{entry['median_seconds']:.2f} | {entry['gflops']:.1f} | {100 * entry['gflops'] / peak:.1f} |"
        )
    lines += [
        "",
        f"**Ratio library / bare (median samples/s): {r['ratio']:.3f}** (goal >= 0.9: "
        f"{'met' if r['ratio'] >= 0.9 else 'NOT met'}); per-pair ratios: "
        + ", ".join(f"{x:.3f}" for x in r["pair_ratios"]),
        "",
        clean_line(r),
        f"- FLOPs per training sample: {r['flops']['per_sample'] / 1e6:.3f} M "
        + "("
        + "; ".join(f"{k} {v / 1e6:.3f} M" for k, v in r["flops"]["parts"].items())
        + ")",
        f"- Matmul peak: {peak:.1f} GFLOP/s (float32 `torch.mm` {r['peak']['size']}x{r['peak']['size']}, "
        f"best of before/after the runs: "
        + " / ".join(
            f"{p['gflops']:.1f}"
            + ("" if p["others_cpu_share"] is None else f" [others' CPU {100 * p['others_cpu_share']:.0f}%]")
            for p in r["peak"]["measurements"]
        )
        + ")",
        f"- Same computation check: max |library - bare| per-epoch train loss over the timed runs = "
        f"{r['loss_check']['max_abs_diff']:.3g} (library epoch losses {r['loss_check']['library']}, "
        f"bare {r['loss_check']['bare']})",
        "- The FLOP count follows the 3x/1x convention; it slightly overstates the work (the first "
        "layer needs no input gradient, the student loss matmul's backward needs only the gradient "
        "with respect to the student, not the detached queue).",
        "- Timings come from a machine that may be shared with other jobs. [others' CPU] is the share "
        "of all cores that other processes kept busy during that run (from /proc/stat minus this "
        "process's CPU time); the alternating order spreads such noise over both loops.",
        "",
    ]
    return "\n".join(lines)


def clean_line(r):
    threshold = f"{100 * r['quiet_threshold']:.0f}%"
    clean = r["clean_pairs"]
    if clean is None:
        return f"- No pair ran with other processes below {threshold} of the cores."
    return (
        f"- Over the {len(clean['pairs'])} of {len(r['pair_ratios'])} pairs where other processes used "
        f"< {threshold} of the cores during both runs: library {clean['library_median_samples_per_s']:,.0f}, "
        f"bare {clean['bare_median_samples_per_s']:,.0f} samples/s (medians), ratio {clean['ratio']:.3f}."
    )


def summarise(runs):
    rates = [run["samples_per_s"] for run in runs]
    return {
        "runs": runs,
        "median_samples_per_s": statistics.median(rates),
        "median_seconds": statistics.median(run["seconds"] for run in runs),
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS, help="rows of data (default 113400)")
    parser.add_argument("--epochs", type=int, default=2, help="epochs per timed run (default 2)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each loop (default 5)")
    parser.add_argument("--device", default="cpu", help='"cpu" (default), "cuda", "cuda:1", ...')
    parser.add_argument("--architecture", choices=("mlp", "imix"), default="mlp")
    parser.add_argument(
        "--hidden-sizes",
        default=None,
        help="comma-separated encoder widths, e.g. 2048,2048,4096,4096,8192 (default: the estimator's)",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="default: the estimator's (512)")
    parser.add_argument("--out", default=str(REPO_ROOT / "benchmarks" / "results"), help="results folder")
    parser.add_argument("--note", default="", help="free text added to the report header")
    parser.add_argument(
        "--quiet-threshold",
        type=float,
        default=0.10,
        help="a run counts as contended when other processes use this share of the cores (default 0.10)",
    )
    parser.add_argument(
        "--max-wait",
        type=float,
        default=20.0,
        help="before each timed run, wait up to this many seconds for other processes to go below "
        "--quiet-threshold (default 20; 0 never waits)",
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

    params = {"architecture": args.architecture, "device": device}
    if args.hidden_sizes:
        params["hidden_sizes"] = tuple(int(w) for w in args.hidden_sizes.split(","))
    if args.batch_size:
        params["batch_size"] = args.batch_size
    reference = estimator(params, args.epochs)
    batch_size = reference.batch_size

    X, source = load_data(args.rows)
    print(f"data: {source}", file=sys.stderr)
    per_sample, parts, network_flops, loss_matmul_flops, n_params = flops_per_sample(params, X.shape[1])

    def quiet():
        return wait_until_quiet(args.quiet_threshold, args.max_wait)

    quiet()
    peaks = [matmul_peak(device)]
    print(f"matmul peak: {peaks[0]['gflops']:.1f} GFLOP/s", file=sys.stderr)

    warmup_rows = min(len(X), WARMUP_BATCHES * batch_size)
    run_library(X[:warmup_rows], params, 1)
    run_bare(X[:warmup_rows], params, 1)

    library_runs, bare_runs, pair_ratios, clean_pairs = [], [], [], []
    loss_diffs, first_losses = [], None
    for repeat in range(args.repeats):
        pair = {}
        for name, runner, runs in (("library", run_library, library_runs), ("bare", run_bare, bare_runs)):
            waited = quiet()
            before = cpu_snapshot()
            seconds, samples, losses = runner(X, params, args.epochs)
            share = others_cpu_share(before, cpu_snapshot(), seconds)
            runs.append(
                {
                    "seconds": seconds,
                    "samples": samples,
                    "samples_per_s": samples / seconds,
                    "epoch_losses": losses,
                    "others_cpu_share": share,
                    "waited_for_quiet_s": waited,
                }
            )
            pair[name] = losses
            print(
                f"repeat {repeat + 1}/{args.repeats} {name:7s}: {seconds:7.2f} s, "
                f"{samples / seconds:9,.0f} samples/s, losses {[round(x, 5) for x in losses]}, "
                f"others' CPU {'n/a' if share is None else f'{100 * share:.0f}%'}, waited {waited:.1f} s",
                file=sys.stderr,
            )
        pair_ratios.append(library_runs[-1]["samples_per_s"] / bare_runs[-1]["samples_per_s"])
        shares = (library_runs[-1]["others_cpu_share"], bare_runs[-1]["others_cpu_share"])
        if all(x is not None and x < args.quiet_threshold for x in shares):
            clean_pairs.append(repeat)
        loss_diffs.append(max(abs(a - b) for a, b in zip(pair["library"], pair["bare"], strict=True)))
        first_losses = first_losses or pair

    quiet()
    peaks.append(matmul_peak(device))
    peak = max(peaks, key=lambda p: p["gflops"])
    library, bare = summarise(library_runs), summarise(bare_runs)
    for entry in (library, bare):
        entry["gflops"] = per_sample * entry["median_samples_per_s"] / 1e9
        entry["percent_of_peak"] = 100 * entry["gflops"] / peak["gflops"]
    clean = None
    if clean_pairs:
        lib_clean = statistics.median(library_runs[i]["samples_per_s"] for i in clean_pairs)
        bare_clean = statistics.median(bare_runs[i]["samples_per_s"] for i in clean_pairs)
        clean = {
            "pairs": clean_pairs,
            "library_median_samples_per_s": lib_clean,
            "bare_median_samples_per_s": bare_clean,
            "ratio": lib_clean / bare_clean,
        }

    import skorch

    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command_line(),
        "note": args.note,
        "machine": {
            "device_name": device_name(device),
            "cpu": cpu_name(),
            "logical_cores": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "skorch": skorch.__version__,
            "qmatch_sklearn": __version__,
            "torch_threads": torch.get_num_threads(),
            "loadavg_start": loadavg_start,
            "loadavg_end": round(os.getloadavg()[0], 2),
        },
        "config": {
            "device": device,
            "epochs": args.epochs,
            "repeats": args.repeats,
            "warmup_rows": warmup_rows,
            "architecture": reference.architecture,
            "hidden_sizes": list(reference._hidden_sizes()),
            "embedding_dim": reference.embedding_dim,
            "projection_sizes": list(reference.projection_sizes),
            "queue_size": reference.queue_size,
            "batch_size": batch_size,
            "random_state": RANDOM_STATE,
        },
        "data": {"source": source, "rows": len(X), "n_features": X.shape[1], "path": str(COVTYPE_PATH)},
        "flops": {
            "per_sample": per_sample,
            "parts": parts,
            "encoder_projector_forward": network_flops,
            "loss_matmul": loss_matmul_flops,
            "trainable_params": n_params,
        },
        "peak": {**peak, "measurements": peaks},
        "library": library,
        "bare": bare,
        "ratio": library["median_samples_per_s"] / bare["median_samples_per_s"],
        "pair_ratios": pair_ratios,
        "quiet_threshold": args.quiet_threshold,
        "clean_pairs": clean,
        "loss_check": {
            "max_abs_diff": max(loss_diffs),
            "library": [round(x, 6) for x in first_losses["library"]],
            "bare": [round(x, 6) for x in first_losses["bare"]],
        },
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
