"""The paper's datasets (Adult, Cover Type, HIGGS, MNIST) and its train/test splits.

Loaders follow ``sklearn.datasets.fetch_*``: raw files under :func:`get_data_home`, checked
against SHA-256 hashes on every load, downloaded when missing. :func:`load_paper_split` cuts a
dataset into the pretext / pretext_val / train / val / test sets of one experiment.
"""

from ._fetch import ChecksumError, get_data_home
from ._loaders import load_adult, load_covtype, load_higgs, load_mnist
from ._splits import load_paper_split

__all__ = [
    "ChecksumError",
    "get_data_home",
    "load_adult",
    "load_covtype",
    "load_higgs",
    "load_mnist",
    "load_paper_split",
]
