"""Data-parallel pretraining: one process against two under ``torchrun`` (issue #17).

For each table, ``QMatchEncoder()`` (the default network, fixed epochs, no validation)
is fitted by ``torchrun --standalone --nproc-per-node N`` with N = 1 and 2 processes of
one thread each, and by one process of two threads (the same cores as two processes).
Every process passes the same rows; each trains on its half (``batch_size`` rows per
process and step). Reported: rank 0's fit seconds and training rows per second, and a
linear probe (``LogisticRegression`` on the embeddings of a few labeled rows, accuracy
on held-out rows), to check that two processes learn as well as one.

Tables: scikit-learn's digits (1,797 x 64, 20 epochs; probe on a stratified half,
tested on the other) and MNIST (60,000 x 784 train rows, 3 epochs; probe on 1,000
train rows, tested on the 10,000 test rows), read from ``--data-home``. Timings beside
other work mean nothing: run it on an idle machine.

    python -m benchmarks.distributed --data-home ../shared/data      # ~5 minutes, 2 cores
    python -m benchmarks.distributed --tables digits --out /tmp/d    # smoke
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
#: table -> epochs
TABLES = {"digits": 20, "mnist": 3}
#: (processes, threads per process)
LAYOUTS = ((1, 1), (2, 1), (1, 2))


def load(table, data_home):
    """Train rows, their labels and (probe train, probe test) index arrays; or test rows."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if table == "digits":
        X, y = load_digits(return_X_y=True)
        X = StandardScaler().fit_transform(X).astype(np.float32)
        train, test = train_test_split(np.arange(len(y)), stratify=y, random_state=0,
                                       test_size=0.5)
        return X, y, X[train], y[train], X[test], y[test]
    from qmatch_sklearn.datasets import load_mnist

    mnist = load_mnist(data_home=data_home)
    X = mnist.data / np.float32(255)
    X_train, y_train = X[:60_000], mnist.target[:60_000]
    labeled = np.random.RandomState(0).permutation(60_000)[:1000]
    return X_train, y_train, X_train[labeled], y_train[labeled], X[60_000:], mnist.target[60_000:]


def worker(table, data_home, out):
    """One process's fit (under torchrun), timed between two barriers; rank 0 writes."""
    import torch
    import torch.distributed as dist
    from sklearn.linear_model import LogisticRegression

    from qmatch_sklearn import QMatchEncoder

    torch.set_num_threads(int(os.environ["BENCH_THREADS"]))
    dist.init_process_group("gloo")
    X, _, X_probe, y_probe, X_test, y_test = load(table, data_home)
    encoder = QMatchEncoder(max_epochs=TABLES[table], validation_fraction=None, random_state=0)
    dist.barrier()
    start = time.perf_counter()
    encoder.fit(X)
    dist.barrier()
    seconds = time.perf_counter() - start
    if dist.get_rank() == 0:
        probe = LogisticRegression(max_iter=2000).fit(encoder.transform(X_probe), y_probe)
        result = {"seconds": seconds, "rows_per_second": TABLES[table] * len(X) / seconds,
                  "probe_accuracy": probe.score(encoder.transform(X_test), y_test)}
        Path(out).write_text(json.dumps(result))
    dist.destroy_process_group()


def run(table, processes, threads, data_home, out):
    env = {**os.environ, "BENCH_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(processes), "-m", "benchmarks.distributed",
               "--worker", table, "--data-home", str(data_home), "--worker-out", str(out)]
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    return json.loads(Path(out).read_text())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(TABLES))
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", choices=list(TABLES), help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.data_home, args.worker_out)
    import torch

    from ._harness import cpu_model

    lines = [
        "# Data-parallel pretraining: one process against two",
        "",
        f"`python -m benchmarks.distributed` on {cpu_model()}, torch {torch.__version__}, "
        "gloo backend. `QMatchEncoder()` defaults (batch 512 per process), fixed epochs, "
        "no validation; rank 0's fit time between two barriers.",
        "",
        "| table | processes x threads | epochs | fit s | rows/s | vs 1 x 1 | probe accuracy |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    for table in args.tables:
        base = None
        for processes, threads in LAYOUTS:
            result = run(table, processes, threads, args.data_home, args.out / "_worker.json")
            base = base or result["rows_per_second"]
            lines.append(
                f"| {table} | {processes} x {threads} | {TABLES[table]} | "
                f"{result['seconds']:.1f} | {result['rows_per_second']:,.0f} | "
                f"{result['rows_per_second'] / base:.2f} | {100 * result['probe_accuracy']:.2f} |"
            )
            print(lines[-1], flush=True)
    (args.out / "_worker.json").unlink(missing_ok=True)
    (args.out / "distributed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
