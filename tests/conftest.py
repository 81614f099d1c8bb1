import importlib.util
import os
import warnings
from pathlib import Path

import pytest
import torch
from threadpoolctl import threadpool_limits

# The suite runs two pytest-xdist workers on two cores and fits tiny networks:
# one intra-op thread per worker avoids oversubscription, which made it 3x slower.
# The same holds for BLAS: with two OpenBLAS threads per worker, one
# LogisticRegression on digits embeddings took 19 s instead of 0.25 s.
# threadpool_limits reaches only the thread pools already loaded; the ones loaded
# later (scikit-learn's OpenMP runtime for its gradient boosting, scipy's OpenBLAS)
# read these variables when they load: with two OpenMP threads in each worker, a
# classifier with a boosted member fitted in 28-31 s beside another instead of 4.5 s.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
torch.set_num_threads(1)
threadpool_limits(1)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def fit_tiny_classifier(X, y, **params):
    """``QMatchClassifier`` on a tiny passthrough encoder, seeded, on the CPU, fitted
    with its warnings silenced."""
    from qmatch_sklearn import QMatchClassifier, QMatchEncoder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                random_state=0, device="cpu", **params).fit(X, y)


def record_training_rows(monkeypatch, module, name):
    """Replace ``module.name(C, max_iter, rows, ...)`` (a twin's pseudo-labelling fit)
    by a spy that records a copy of ``rows`` at each call; the list of copies."""
    seen = []
    original = getattr(module, name)

    def spy(C, max_iter, rows, *args, **kwargs):
        seen.append(rows.copy())
        return original(C, max_iter, rows, *args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


def tol_stopping_epoch(losses, share, first, max_epochs):
    """The epoch (1-based) ``tol`` should stop at: the first from ``first`` on, before
    ``max_epochs``, whose training loss fell by less than ``share`` of the epoch before's
    (``losses`` must reach it), else ``max_epochs``."""
    for epoch in range(first, max_epochs):
        before, now = losses[epoch - 2], losses[epoch - 1]
        if before - now < share * abs(before):
            return epoch
    return max_epochs


def tiny_encoder_params(**overrides):
    """A QMatchEncoder configuration that fits in well under a second."""
    params = dict(
        hidden_sizes=(32,),
        embedding_dim=8,
        projection_sizes=(16, 8),
        queue_size=64,
        batch_size=64,
        max_epochs=3,
        validation_fraction=0.1,  # the tests watch early stopping on these small tables
        random_state=0,
        device="cpu",
    )
    params.update(overrides)
    return params


#: Per-method overrides that keep each head tiny.
_TINY_HEADS = {
    "qmatch": {"projection_sizes": (16, 8), "queue_size": 64},
    "simclr": {"projection_sizes": (16, 8)},
    "imix": {"projection_sizes": (16, 8)},
    "simsiam": {"projection_sizes": (16, 16), "predictor_width": 8},
    "dino": {"projection_sizes": (16, 8), "n_prototypes": 32},
}


def tiny_method_params(name, **overrides):
    """Small, fast parameters for any method of ``qmatch_sklearn.METHODS``."""
    params = dict(
        hidden_sizes=(32,), embedding_dim=8, batch_size=64, max_epochs=3,
        validation_fraction=0.1, random_state=0, device="cpu",
    )
    params.update(_TINY_HEADS.get(name, {}))
    params.update(overrides)
    return params


@pytest.fixture
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the shared datasets are not at {SHARED_DATA}")
    return SHARED_DATA


#: Benchmark contenders whose library is a benchmarks extra, not a test one (each
#: imported under the contender's name).
EXTRA_CONTENDERS = ("catboost", "lightgbm", "xgboost")


def installed_contenders(contenders):
    """``contenders`` less those whose benchmarks-extra library is not installed."""
    return [c for c in contenders
            if c not in EXTRA_CONTENDERS or importlib.util.find_spec(c) is not None]
