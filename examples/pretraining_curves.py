"""
Pretraining curves from ``history_``
====================================

Every fitted encoder keeps the skorch :class:`~skorch.history.History` of its
pretraining in ``history_``: one entry per epoch with the training loss, the
loss on the held-out pretext-validation rows (``validation_fraction``), the
epoch's duration and whether it was the best so far. Early stopping watches
``valid_loss``; ``best_epoch_`` is the epoch whose weights the encoder keeps.

This example reads those curves for two encoders on digits, both asking for
a 10% validation split (by default, ``validation_fraction="auto"`` holds one
out only from 2,000 rows on, and digits has 1,797): one with the default
``patience``, one with a short one to show early stopping at work.
"""

# %%
# Two encoders, one with a short patience
# ---------------------------------------

import os

import matplotlib.pyplot as plt
from sklearn.datasets import load_digits

from qmatch_sklearn import QMatchEncoder

FAST = os.environ.get("QMATCH_DOCS_FAST", "0") not in ("", "0")
MAX_EPOCHS = 30 if FAST else 100

X, _ = load_digits(return_X_y=True)
encoders = {
    "patience=32 (default)": QMatchEncoder(
        max_epochs=MAX_EPOCHS, validation_fraction=0.1, random_state=0
    ),
    "patience=3": QMatchEncoder(
        max_epochs=MAX_EPOCHS, validation_fraction=0.1, patience=3, random_state=0
    ),
}
for name, encoder in encoders.items():
    encoder.fit(X)
    print(f"{name}: {encoder.n_epochs_} epochs run, weights of epoch {encoder.best_epoch_} kept")

# %%
# What ``history_`` holds
# -----------------------
# skorch's History can be sliced by key: ``history_[:, "valid_loss"]`` is the
# list of per-epoch validation losses.

history = encoders["patience=32 (default)"].history_
print("keys of one epoch:", sorted(history[-1].keys()))
print("last three validation losses:", [round(float(v), 4) for v in history[-3:, "valid_loss"]])
print(f"mean epoch duration: {sum(history[:, 'dur']) / len(history):.3f} s")

# %%
# Training and validation loss per epoch
# --------------------------------------
# The loss is the cross-entropy H(p_t, p_s) between the teacher's and the
# student's distributions over the ``queue_size`` queue entries: it falls as
# the student learns to match the teacher, towards the teacher's own entropy
# H(p_t) rather than zero (and the target moves, as the teacher and the queue
# follow the student). Both
# encoders share their seed, hence their first epochs; the short patience
# stops as soon as the validation loss stalls for 3 epochs, and the encoder
# keeps the best epoch's weights (the dot), not the last ones.

fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, (name, encoder) in zip(axes, encoders.items(), strict=True):
    epochs = encoder.history_[:, "epoch"]
    ax.plot(epochs, encoder.history_[:, "train_loss"], label="train_loss")
    ax.plot(epochs, encoder.history_[:, "valid_loss"], label="valid_loss")
    best = encoder.best_epoch_
    ax.plot([best], [encoder.history_[best - 1, "valid_loss"]], "ko", label="best epoch (kept)")
    ax.set_title(f"QMatchEncoder, {name}")
    ax.set_xlabel("epoch")
    ax.legend()
axes[0].set_ylabel("Q-Match loss")
fig.tight_layout()
plt.show()
