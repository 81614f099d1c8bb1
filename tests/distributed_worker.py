"""One process of a data-parallel pretraining run, launched by ``tests/test_distributed.py``:

    python -m torch.distributed.run --standalone --nproc-per-node 2 \\
        tests/distributed_worker.py OUT_DIR {fit,tol,partial_fit} METHOD

Every process fits the same encoder on the same rows (scikit-learn's digits) over
the gloo backend and saves what the test compares across processes to
``OUT_DIR/rank<r>.pt``.
"""

import sys
from pathlib import Path

#: The encoder of every run: small enough for a CI test, large enough to learn digits.
PARAMS = dict(
    hidden_sizes=(64,), embedding_dim=16, batch_size=64, max_epochs=12, random_state=0,
    device="cpu",
)
#: What a mode changes in fit: "tol" asks each epoch of 90 steps for a fall of 5% (small
#: batches, so that it judges epochs from the fourth on, within ``max_epochs``).
FIT_MODES = {"fit": {}, "tol": dict(batch_size=8, tol=1 - 0.95 ** (1 / 90))}
#: Per-method pretext heads.
HEADS = {
    "qmatch": dict(projection_sizes=(32, 16), queue_size=256),
    "dino": dict(projection_sizes=(32, 16), n_prototypes=32),
}


def digits():
    """Digits' standardised float32 rows and labels."""
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32), y


def rows_per_epoch(fitted):
    """The training rows this process saw in its first epoch."""
    return sum(batch["train_batch_size"] for batch in fitted.history_[0]["batches"]
               if "train_batch_size" in batch)


def encoder(method, **overrides):
    from qmatch_sklearn import METHODS

    return METHODS[method](**{**PARAMS, **HEADS[method], **overrides})


def main(out_dir, mode, method):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    try:
        X, _ = digits()
        if mode in FIT_MODES:
            fitted = encoder(method, validation_fraction=0.2, **FIT_MODES[mode]).fit(X)
            saved = {"Z": fitted.transform(X), "best_epoch": fitted.best_epoch_,
                     "n_epochs": fitted.n_epochs_,
                     "losses": [(r["train_loss"], r["valid_loss"]) for r in fitted.history_],
                     "rows_per_epoch": rows_per_epoch(fitted)}
        else:
            fitted = encoder(method).partial_fit(X[:900]).partial_fit(X[900:])
            saved = {"Z": fitted.transform(X),
                     "module": dict(fitted._partial_net.module_.state_dict())}
        torch.save(saved, Path(out_dir) / f"rank{dist.get_rank()}.pt")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
