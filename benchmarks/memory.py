"""Peak memory of ``QMatchEncoder.fit`` and ``transform``, measured per case in a fresh process.

Each case runs in its own Python process (one torch thread) that imports the
library, warms torch up with a tiny fit, builds its input, and then fits (and,
for the sparse cases, transforms). Reported: the input's size, and the
process's peak resident memory (``VmHWM``) above what it held just before the
input was built, i.e. the input itself plus everything fit/transform added,
as MB and as a multiple of the input. The network is the default encoder and
every case trains one epoch (memory does not grow with epochs).

``--library PATH`` measures the library found at PATH (e.g. a ``git worktree``
of an older commit) instead of the installed one, so that two versions are
compared in one run; results go to ``benchmarks/results/memory.md``.

    python -m benchmarks.memory --label "this commit" --library . \\
        --compare "before (9381e4e)=/tmp/old-checkout"
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from ._harness import cpu_model

RESULTS = Path(__file__).parent / "results" / "memory.md"

#: name -> (kind, rows, columns): dense float32, or one-hot CSR with 10 non-zeros a row.
CASES = {
    "dense 300,000 x 100": ("dense", 300_000, 100),
    "one-hot 3,000 x 50,000": ("sparse", 3_000, 50_000),
    "one-hot 30,000 x 50,000": ("sparse", 30_000, 50_000),
}

CHILD = r"""
import json, sys
import numpy as np, scipy.sparse as sp, torch
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
from qmatch_sklearn import QMatchEncoder

def hwm_and_rss():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return [int(fields[k].split()[0]) * 1024 for k in ("VmHWM", "VmRSS")]

kind, n, d = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
QMatchEncoder(max_epochs=1, random_state=0).fit(np.random.rand(64, d).astype(np.float32))
_, before = hwm_and_rss()
rng = np.random.default_rng(0)
if kind == "dense":
    X = rng.standard_normal((n, d), dtype=np.float32)
    size = X.nbytes
else:
    rows = np.repeat(np.arange(n), 10)
    X = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, rng.integers(0, d, len(rows)))),
                      shape=(n, d))
    size = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
encoder = QMatchEncoder(max_epochs=1, random_state=0).fit(X)
if kind != "dense":
    encoder.transform(X)
peak, _ = hwm_and_rss()
print(json.dumps({"input": size, "dense": n * d * 4, "peak": peak - before}))
"""


def measure(library, case):
    kind, n, d = CASES[case]
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(Path(library).resolve()), kind, str(n), str(d)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="this commit")
    parser.add_argument("--library", default=".")
    parser.add_argument("--compare", action="append", default=[],
                        help="LABEL=PATH of another checkout; its sparse 30,000-row case "
                             "is skipped (a version that densifies whole needs ~15 GB)")
    args = parser.parse_args()
    versions = [(args.label, args.library, list(CASES))] + [
        (label, path, [c for c in CASES if c != "one-hot 30,000 x 50,000"])
        for label, path in (item.split("=", 1) for item in args.compare)
    ]
    lines = [
        "# Peak memory of fit (and transform)",
        "",
        f"`python -m benchmarks.memory` on {cpu_model()}, one torch thread, default "
        "`QMatchEncoder`, one epoch (sparse cases: fit, then transform). Peak = the "
        "process's peak resident memory above what it held before the input was built "
        "(the input included), also as a multiple of the input's dense float32 size.",
        "",
        "| version | case | input MB | dense float32 MB | peak MB | peak / dense size |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for label, path, cases in versions:
        for case in cases:
            m = measure(path, case)
            lines.append(
                f"| {label} | {case} | {m['input'] / 1e6:.1f} | {m['dense'] / 1e6:.0f} | "
                f"{m['peak'] / 1e6:.0f} | {m['peak'] / m['dense']:.2f} |"
            )
            print(lines[-1], flush=True)
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
