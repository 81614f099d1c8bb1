"""
The embedding in two dimensions (PCA and t-SNE)
===============================================

``transform`` maps each row to an ``embedding_dim``-dimensional vector (128
by default). Projecting those vectors to 2-D, and colouring them by a label
that pretraining never saw, shows what structure the encoder found. Here the
rows are scikit-learn's digits; the same plots of the raw 64 pixel features
are the reference. The paper's broader-impact note recommends visualising
embeddings like this to find groups, rare in the data, that a
self-supervised encoder may be biased against.
"""

# %%
# Pretrain on all digits (no labels), embed them
# ----------------------------------------------

import os

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE
from sklearn.preprocessing import StandardScaler

from qmatch_sklearn import QMatchEncoder

FAST = os.environ.get("QMATCH_DOCS_FAST", "0") not in ("", "0")

X, y = load_digits(return_X_y=True)
encoder = QMatchEncoder(max_epochs=20 if FAST else 100, random_state=0).fit(X)
Z = encoder.transform(X)
print(f"embedding: {Z.shape}, {Z.dtype}; feature names {encoder.get_feature_names_out()[:3]}...")

# %%
# Projections
# -----------
# PCA is linear and fast; t-SNE keeps neighbourhoods and shows clusters, but
# distances between clusters mean little. Both inputs are standardised first.
# The documentation build runs t-SNE on a subset of the rows.

rows = np.random.RandomState(0).permutation(len(X))[: 800 if FAST else len(X)]
views = {
    "raw pixels": StandardScaler().fit_transform(X),
    "Q-Match embedding": StandardScaler().fit_transform(Z),
}
projections = {}
for name, features in views.items():
    projections[("PCA", name)] = (PCA(n_components=2, random_state=0).fit_transform(features), y)
    tsne = TSNE(n_components=2, init="pca", perplexity=30, random_state=0)
    projections[("t-SNE", name)] = (tsne.fit_transform(features[rows]), y[rows])

# %%
# Coloured by the digit
# ---------------------
# Compare how cleanly the ten digits separate in each panel; a linear probe
# (see the quick start) can only use what is linearly separable in the
# embedding itself, not in these projections.

fig, axes = plt.subplots(2, 2, figsize=(9, 8), layout="constrained")
for ax, ((method, name), (points, labels)) in zip(axes.ravel(), projections.items(), strict=True):
    scatter = ax.scatter(
        points[:, 0], points[:, 1], c=labels, cmap="tab10", s=6, vmin=-0.5, vmax=9.5
    )
    ax.set_title(f"{method} of the {name}")
    ax.set_xticks([])
    ax.set_yticks([])
fig.colorbar(scatter, ax=axes, ticks=range(10), label="digit (not used in pretraining)")
plt.show()
