"""Does ``torch.compile`` pay for Q-Match training? (issue #17)

The bare Q-Match step of ``benchmarks.throughput`` (``_bare_qmatch``: the library's
network, loss, AdamW and EMA/queue update in plain torch), eager against its encoder,
projector and teacher compiled with ``torch.compile`` (inductor, default mode), on the
same rows: full batches of ``QMatchEncoder``'s default size (512) only, so that one
compiled graph serves every step. Reported: the median steps/s over interleaved repeats
(after warm-up steps that include compilation), the compiled / eager ratio, and the
compilation time. The library offers no compile option unless this ratio says it pays.
Timings beside other work mean nothing: run it on an idle machine.

    python -m benchmarks.compile                              # ~3 minutes on 2 CPU cores
    python -m benchmarks.compile --steps 5 --repeats 1 --out /tmp/c   # smoke
"""

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from qmatch_sklearn import QMatchEncoder

from . import _bare_qmatch
from ._harness import cpu_model

RESULTS = Path(__file__).parent / "results"
#: name -> encoder parameters: the default network and a narrower one, where overheads
#: weigh more
NETWORKS = {"default (mlp 512-512)": {}, "small (mlp 128-128)": {"hidden_sizes": (128, 128)}}


def make_step(params, n_features, compiled, device):
    """One training step of the bare loop (a closure over its module and optimiser)."""
    estimator = QMatchEncoder(**params, device=device)
    module = _bare_qmatch.build(estimator, n_features, seed=0).to(device)
    if compiled:
        for name in ("encoder", "projector", "teacher"):
            setattr(module, name, torch.compile(getattr(module, name)))
    optimizer = _bare_qmatch.adamw(module, estimator)
    generator = torch.Generator(device).manual_seed(0)

    def step(batch):
        module.train()
        loss = module.loss(batch, generator)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        module.after_step()
        return loss

    return step, estimator.batch_size


def synchronize(device):
    """Wait for the device's queued work: a CUDA step returns when its kernels are
    queued, so an unsynchronised timer times launches, not work."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def steps_per_second(step, batches, device):
    synchronize(device)
    start = time.perf_counter()
    for batch in batches:
        step(batch)
    synchronize(device)
    return len(batches) / (time.perf_counter() - start)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=54)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per repeat")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    where = cpu_model() if args.device == "cpu" else torch.cuda.get_device_name(args.device)
    lines = [
        "# torch.compile against eager, bare Q-Match training step",
        "",
        f"`python -m benchmarks.compile` on {where}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads; float32, {args.features} features, "
        f"{args.steps} timed steps per repeat, {args.repeats} interleaved repeats (median), "
        f"after {args.warmup} warm-up steps (compile time: the warm-up's extra seconds).",
        "",
        "| network | eager steps/s | compiled steps/s | compiled / eager | compile s |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    rng = np.random.default_rng(0)
    for name, params in NETWORKS.items():
        steps, warmups = {}, {}
        batch_size = None
        for compiled in (False, True):
            steps[compiled], batch_size = make_step(params, args.features, compiled, args.device)
        batches = [torch.as_tensor(rng.normal(size=(batch_size, args.features)),
                                   dtype=torch.float32, device=args.device)
                   for _ in range(args.steps)]
        for compiled, step in steps.items():
            synchronize(args.device)
            start = time.perf_counter()
            for batch in batches[: args.warmup]:
                step(batch)
            synchronize(args.device)
            warmups[compiled] = time.perf_counter() - start
        runs = {False: [], True: []}
        for _ in range(args.repeats):
            for compiled, step in steps.items():
                runs[compiled].append(steps_per_second(step, batches, args.device))
        eager, fast = statistics.median(runs[False]), statistics.median(runs[True])
        compile_seconds = warmups[True] - args.warmup / fast
        lines.append(f"| {name} | {eager:.1f} | {fast:.1f} | {fast / eager:.2f} | "
                     f"{compile_seconds:.1f} |")
        print(lines[-1], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
