"""The harness the studies share: a seeded, resumable grid of cells, one results store.

A study is a grid: each cell (a table and a seed, and whatever else the study
varies) prepares its data once, every contender is run on that data, and each
result is one CSV row appended as soon as it is measured. A (cell, contender)
already in the CSV is skipped, so a study stopped anywhere (``--max-minutes``, a
killed job, the end of a session) resumes where it stopped. What a study writes
itself: its tables (``_fewlabel_tables.py``), its contenders (a function from a
contender's name and the cell's data to a row's measurements) and its report.
"""

import argparse
import csv
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch
from sklearn.metrics import accuracy_score, balanced_accuracy_score
from threadpoolctl import threadpool_limits

SEEDS = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class Store:
    """A results CSV with columns ``fields``, whose rows are told apart by ``key``."""

    path: Path
    fields: list
    key: tuple

    def done(self):
        """The ``key`` tuples (as strings) of the rows already in the CSV."""
        if not self.path.exists():
            return set()
        with self.path.open(newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames != self.fields:
                raise ValueError(
                    f"{self.path} has columns {reader.fieldnames}, expected {self.fields}."
                )
            return {tuple(row[k] for k in self.key) for row in reader}

    def append(self, rows):
        """Append ``rows``, writing the header first into a new file."""
        new = not self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", newline="") as f:
            writer = csv.DictWriter(f, self.fields)
            if new:
                writer.writeheader()
            writer.writerows(rows)


def study_parser(doc, tables, contenders, out, default_tables=None):
    """The flags every grid study takes: which tables, seeds and contenders, where
    the data and the results are, a time budget and a smoke mode."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(tables),
                        default=list(default_tables or tables))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--contenders", nargs="+", choices=contenders,
                        default=list(contenders))
    parser.add_argument("--data-home", default=None,
                        help="folder of the paper datasets' raw files")
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="start no new cell after this many minutes")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS/OpenMP threads")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny networks, 2-3 epochs: tests the harness, not the methods")
    return parser


def run_grid(args, store, cells, prepare, measure, describe, again=False):
    """Run every contender of ``args.contenders`` on every cell not yet in ``store``.

    ``cells`` are dicts of the key's fields other than ``contender``, in the order
    to run them; ``prepare(cell)`` gives the cell's data (None: the cell does not
    apply, skip it), made once for all its contenders and only when one is to run;
    ``measure(contender, data, cell)`` gives a row's measurements, ``describe(row)``
    the line printed once the row is stored. Rows also record the library's commit,
    the machine and when they finished; the whole grid runs on ``args.threads``
    threads. With ``again``, recorded rows are measured again.
    """
    torch.set_num_threads(args.threads)
    start = time.monotonic()
    commit, machine = library_commit(), machine_description()
    done = set() if again else store.done()
    with threadpool_limits(args.threads):
        for cell in cells:
            todo = [c for c in args.contenders
                    if tuple(str({**cell, "contender": c}[k]) for k in store.key) not in done]
            data = None
            for contender in todo:
                minutes = (time.monotonic() - start) / 60
                if args.max_minutes is not None and minutes > args.max_minutes:
                    print(f"stopping: --max-minutes {args.max_minutes} reached", flush=True)
                    return
                data = data if data is not None else prepare(cell)
                if data is None:
                    break
                row = {**cell, "contender": contender, "commit": commit,
                       **measure(contender, data, cell), "machine": machine,
                       "finished": datetime.now(UTC).isoformat(timespec="seconds")}
                store.append([row])
                print(describe(row), flush=True)


def timed(run, *args, digits=2):
    """``run(*args)`` and the seconds it took, rounded to ``digits`` decimals."""
    began = time.perf_counter()
    result = run(*args)
    return result, round(time.perf_counter() - began, digits)


def class_scores(y_true, predicted):
    """Accuracy and balanced accuracy, in percent, to 4 decimals."""
    return {"accuracy": round(100 * accuracy_score(y_true, predicted), 4),
            "balanced_accuracy": round(100 * balanced_accuracy_score(y_true, predicted), 4)}


def split_sizes(data):
    """The labeled, unlabeled and test rows of a few-label split."""
    return {"n_labeled": int(data.labeled.sum()), "n_unlabeled": int((~data.labeled).sum()),
            "n_test": len(data.y_test)}


def library_commit():
    """The short commit of the checkout, ``+dirty`` when ``qmatch_sklearn/`` has changes."""
    root = Path(__file__).resolve().parents[1]

    def git(*args):
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+dirty" if git("status", "--porcelain", "--", "qmatch_sklearn") else "")


def cpu_model():
    """The CPU's model name (``/proc/cpuinfo``), or the platform's machine type; with its
    bf16 matrix units in brackets where it has them (machines of one model name differ)."""
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        return platform.processor() or platform.machine()
    lines = cpuinfo.read_text().splitlines()
    name = next((line.split(":", 1)[1].strip() for line in lines
                 if line.startswith("model name")), platform.machine())
    flags = next((line.split(":", 1)[1].split() for line in lines
                  if line.startswith("flags")), [])
    units = [unit for flag, unit in (("amx_bf16", "AMX"), ("avx512_bf16", "AVX512-BF16"))
             if flag in flags]
    return f"{name} ({', '.join(units)})" if units else name


#: What ``machine_description`` puts before the name of a GPU; reports find a lent GPU
#: machine's rows by it.
GPU_MARK = ", GPU "


def machine_description():
    """CPU model, cores and torch threads; and the GPU where torch sees one (the library's
    ``device="auto"`` trains there)."""
    gpu = f"{GPU_MARK}{torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""
    return f"{cpu_model()}, {os.cpu_count()} cores, {torch.get_num_threads()} thread(s){gpu}"


def markdown_table(header, rows):
    """A markdown table: the header, a rule, then one line per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in rows]
    return lines


def mean_std(values, digits=2, signed=False):
    """'mean ± std (n)' of a Series (sample std); 'value (1)' for a single value;
    ``signed``: the mean with its sign (a gap)."""
    first = values.iloc[0] if len(values) == 1 else values.mean()
    head = f"{first:{'+' if signed else ''}.{digits}f}"
    if len(values) == 1:
        return f"{head} (1)"
    return f"{head} ± {values.std(ddof=1):.{digits}f} ({len(values)})"
