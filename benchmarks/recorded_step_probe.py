"""The recorded training step on a torch older than the one the library records from: a
probe for lent GPU machines (issue #58).

The library records the pretext step as a CUDA graph (``set_config(cuda_graph=True)``) from
torch 2.13 on only: older torches were read to leave a generator in capture mode after a
failed capture. The lent GPU machines carry an older torch (2.11.0+cu130 on the H200s), where
such a fit trains eagerly and says so. This probe lowers that gate in its own process, and
only there, to measure what recording gives on that torch and what a failed capture does to
it:

1. ``tests/test_cuda.py``'s recorded-step test, every method (losses and weights of the
   recorded fit against the eager one's);
2. the host syncs of one epoch with the step recorded
   (``torch.cuda.set_sync_debug_mode("warn")``), against the eager epoch's;
3. ``benchmarks.precision`` with its recorded column (written to ``--out``);
4. a capture made to fail (a host read inside the step), in a child process, last: whether
   the fit goes on eagerly with finite losses, and whether a later fit still trains.

    python -m benchmarks.recorded_step_probe --out DIR   # on a GPU machine, ~2 minutes
"""

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from qmatch_sklearn import QMatchEncoder, _captured_step, config_context

from . import precision

FAILED_CAPTURE = """
import json, warnings, numpy as np, torch
from qmatch_sklearn import QMatchEncoder, _captured_step, _engine, config_context
_captured_step.MIN_TORCH = (0, 0)
step = _engine.PretextNet._bare_train_step
def reading(self, x):
    loss = step(self, x)
    loss.item()  # a host read: no capture can hold it
    return loss
_engine.PretextNet._bare_train_step = reading
X = np.random.default_rng(0).normal(size=(4096, 54)).astype(np.float32)
report = {}
try:
    with config_context(cuda_graph=True), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = QMatchEncoder(max_epochs=2, device="cuda", random_state=0).fit(X).history_[
            :, "train_loss"]
    report["warned"] = [str(w.message)[:300] for w in caught if "record" in str(w.message)]
    report["losses"] = [float(value) for value in losses]
except Exception as error:
    report["failed_fit"] = repr(error)[:500]
_engine.PretextNet._bare_train_step = step
try:
    later = QMatchEncoder(max_epochs=1, device="cuda", random_state=0).fit(X)
    report["later_fit_loss"] = float(later.history_[-1, "train_loss"])
except Exception as error:
    report["failed_later_fit"] = repr(error)[:500]
print(json.dumps(report))
"""


def host_syncs(device, recorded=False, rows=8192):
    """Seconds of one epoch over ``rows`` rows (512-row steps, after a warm-up fit) and, on
    CUDA, the host syncs ``torch.cuda.set_sync_debug_mode("warn")`` warned of in it (none
    are counted elsewhere); ``gpu_check.sh``'s eager count is this too."""
    X = np.random.default_rng(0).normal(size=(rows, 54)).astype(np.float32)
    cuda = torch.device(device).type == "cuda"
    with config_context(cuda_graph=recorded):
        QMatchEncoder(max_epochs=1, device=device, random_state=0).fit(X[:1024])  # warm-up
        if cuda:
            torch.cuda.set_sync_debug_mode("warn")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                QMatchEncoder(max_epochs=1, device=device, random_state=0).fit(X)
                if cuda:
                    torch.cuda.synchronize(device)
                seconds = time.perf_counter() - start
        finally:
            if cuda:
                torch.cuda.set_sync_debug_mode("default")
    return seconds, sum("synchroniz" in str(w.message) for w in caught)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"torch {torch.__version__}; the library records from {_captured_step.MIN_TORCH}; "
          "this process lowers that gate", flush=True)
    _captured_step.MIN_TORCH = (0, 0)
    status = pytest.main(["-q", "-p", "no:cacheprovider", "tests/test_cuda.py",
                          "-k", "recorded_step_trains"])
    print(f"recorded-step tests: pytest exit {int(status)}", flush=True)
    for recorded in (False, True):
        seconds, syncs = host_syncs("cuda", recorded)
        print(f"one epoch of 8192 rows, {'recorded' if recorded else 'eager'} step: "
              f"{seconds:.3f} s, {syncs} synchronising operations warned", flush=True)
    precision.main(["--device", "cuda", "--out", str(args.out), "--imix-rows", "4096",
                    "--repeats", str(args.repeats)])
    child = subprocess.run([sys.executable, "-c", FAILED_CAPTURE], capture_output=True,
                           text=True, timeout=120)
    print("a failed capture:", child.stdout.strip()[-2000:] or child.stderr[-2000:], flush=True)


if __name__ == "__main__":
    main()
