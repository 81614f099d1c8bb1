"""Data-parallel pretraining under ``torchrun``: two gloo processes on the CPU."""

import subprocess
import sys
from pathlib import Path

import joblib
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline

from qmatch_sklearn import QMatchEncoder
from qmatch_sklearn._budget import epoch_tol
from qmatch_sklearn._distributed import ProcessGroup, current_group, shard

from .conftest import tiny_encoder_params, tol_stopping_epoch
from .distributed_worker import FIT_MODES, PARAMS, digits, encoder, rows_per_epoch

WORKER = Path(__file__).with_name("distributed_worker.py")


def run_two_processes(tmp_path, mode, method):
    """Each rank's saved results of ``distributed_worker.py`` under torchrun."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "2", str(WORKER), str(tmp_path), mode, method]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


@pytest.fixture(scope="module")
def fitted_by_two(tmp_path_factory):
    return run_two_processes(tmp_path_factory.mktemp("fit"), "fit", "qmatch")


def test_every_process_ends_with_the_same_encoder(fitted_by_two):
    """Averaged gradients, one teacher and queue, all-reduced losses: the same
    weights, the same history and the same kept epoch in every process."""
    first, second = fitted_by_two
    np.testing.assert_array_equal(first["Z"], second["Z"])
    assert first["losses"] == second["losses"]
    assert (first["best_epoch"], first["n_epochs"]) == (second["best_epoch"], second["n_epochs"])


def test_tol_stops_every_process_at_the_same_epoch(tmp_path):
    """``tol`` reads the all-reduced training loss and counts each process's own steps:
    every process stops together, at the epoch the shared losses say."""
    first, second = run_two_processes(tmp_path, "tol", "qmatch")
    settings = FIT_MODES["tol"]
    share, judged_from = epoch_tol(settings["tol"], first["rows_per_epoch"],
                                   settings["batch_size"])
    assert share == pytest.approx(0.05)  # 90 steps a process: half of the 1,438 rows
    losses = [train for train, _ in first["losses"]]
    expected = tol_stopping_epoch(losses, share, judged_from, PARAMS["max_epochs"])
    assert first["n_epochs"] == second["n_epochs"] == expected
    assert first["losses"] == second["losses"]


def test_two_processes_learn_as_well_as_one(fitted_by_two):
    """A linear probe on digits reads the embeddings of the two-process run as
    well as those of one process: within two standard errors of the difference of
    two accuracies on the 450 test rows (about 4 points; each process ran half
    the steps per epoch)."""
    X, y = digits()
    single = encoder("qmatch", validation_fraction=0.2).fit(X)

    def probe(Z):
        Z_train, Z_test, y_train, y_test = train_test_split(Z, y, random_state=0, stratify=y)
        return LogisticRegression(max_iter=2000).fit(Z_train, y_train).score(Z_test, y_test)

    # each process trained on its half of the rows
    assert fitted_by_two[0]["rows_per_epoch"] == -(-rows_per_epoch(single) // 2)
    two, one = probe(fitted_by_two[0]["Z"]), probe(single.transform(X))
    n_test = -(-len(y) // 4)
    noise = 2 * np.sqrt(2 * one * (1 - one) / n_test)
    assert two > 0.85 and abs(two - one) <= noise, (two, one, noise)


@pytest.mark.parametrize("method", ["qmatch", "dino"])
def test_queue_teacher_and_centre_stay_identical(tmp_path, method):
    """after_step sees every process's teacher outputs: Q-Match's queue and
    DINO's centre (and both teachers) are identical across processes."""
    first, second = run_two_processes(tmp_path, "partial_fit", method)
    assert first["module"].keys() == second["module"].keys()
    for name, tensor in first["module"].items():
        torch.testing.assert_close(tensor, second["module"][name], rtol=0, atol=0, msg=name)
    np.testing.assert_array_equal(first["Z"], second["Z"])


def test_one_process_is_not_distributed():
    assert current_group() is None


@given(n=st.integers(1, 200), world_size=st.integers(2, 8))
def test_shards_are_equal_and_cover_every_row(n, world_size):
    index = torch.arange(n) * 3
    shares = [shard(index, ProcessGroup(rank, world_size)) for rank in range(world_size)]
    assert len({len(s) for s in shares}) == 1
    assert len(shares[0]) == -(-n // world_size)
    assert set(torch.cat(shares).tolist()) == set(index.tolist())


def test_grid_search_runs_on_a_dask_cluster():
    """GridSearchCV under joblib's Dask backend, on a local cluster of two worker
    processes: the estimators travel to the workers and back, and the scores
    are those of the search in this process."""
    distributed = pytest.importorskip("distributed")
    X, y = digits()
    X, y = X[:400], y[:400]
    pipeline = Pipeline([("enc", QMatchEncoder(**tiny_encoder_params(validation_fraction=None))),
                         ("clf", LogisticRegression(max_iter=500))])
    grid = {"enc__embedding_dim": [4, 8]}
    local = GridSearchCV(pipeline, grid, cv=2).fit(X, y)
    with (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                   dashboard_address=None) as cluster,
          distributed.Client(cluster),
          joblib.parallel_config(backend="dask")):
        remote = GridSearchCV(pipeline, grid, cv=2, n_jobs=-1).fit(X, y)
    np.testing.assert_array_equal(remote.cv_results_["mean_test_score"],
                                  local.cv_results_["mean_test_score"])
    assert remote.best_estimator_.predict(X[:5]).shape == (5,)
