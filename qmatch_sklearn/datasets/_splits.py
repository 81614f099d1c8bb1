"""The paper's dataset splits (Appendix, "Datasets and Splits"), one entry per configuration
of ``data/paper_splits.json``.

Every split is a range of positions in one seeded permutation of a pool of rows: the non-test
rows for Adult and MNIST, which test on their original test files; every row for Cover Type and
HIGGS, whose test set is a range too (or, for Cover Type, the rows left, as in the reference).
"""

from dataclasses import dataclass

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    QuantileTransformer,
    StandardScaler,
)
from sklearn.utils import Bunch, check_random_state

from .._warnings import warn
from ._fetch import read_table
from ._loaders import _DESCR, ADULT_CATEGORICAL, ADULT_NUMERIC, COVTYPE_N_NUMERIC, LOADERS


@dataclass(frozen=True)
class _Config:
    """One configuration: [start, stop) positions in the permuted pool for each split;
    ``pretext_val`` may be ``"val"`` or None, ``test`` ``"file"`` or ``"rest"``."""

    dataset: str
    pretext: tuple
    train: tuple
    val: tuple
    pretext_val: object
    test: object
    source: str

    def ranges(self):
        """The (split name, (start, stop)) pairs that index the permutation."""
        named = {"pretext": self.pretext, "pretext_val": self.pretext_val,
                 "train": self.train, "val": self.val, "test": self.test}
        return {name: span for name, span in named.items() if isinstance(span, tuple)}


def _read_configs():
    """The configurations of ``data/paper_splits.json``, by name (each source followed by
    its note's text)."""
    table = read_table("paper_splits.json")
    configs = {}
    for name, config in table["configs"].items():
        spans = {split: tuple(value) if isinstance(value, list) else value
                 for split, value in config.items() if split not in ("note", "source")}
        note = table["notes"].get(config.get("note"))
        source = config["source"] if note is None else f"{config['source']} {note}"
        configs[name] = _Config(**spans, source=source)
    return configs


CONFIGS = _read_configs()


def _adult_preprocessor():
    return ColumnTransformer([
        ("quantile", QuantileTransformer(n_quantiles=128, random_state=0), ADULT_NUMERIC),
        ("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False), ADULT_CATEGORICAL),
    ])


def _covtype_preprocessor():
    return ColumnTransformer(
        [("scale", StandardScaler(), list(range(COVTYPE_N_NUMERIC)))], remainder="passthrough"
    )


def _raw_preprocessor():
    # The paper feeds MNIST pixels (0..255) and HIGGS features unscaled.
    return FunctionTransformer(feature_names_out="one-to-one")


_PREPROCESSORS = {
    "adult": _adult_preprocessor,
    "covtype": _covtype_preprocessor,
    "higgs": _raw_preprocessor,
    "mnist": _raw_preprocessor,
}


def _permutation(n, random_state):
    if random_state is None:
        random_state = np.random.RandomState()  # fresh OS entropy, never the global generator
    if isinstance(random_state, np.random.Generator):
        return random_state.permutation(n)
    return check_random_state(random_state).permutation(n)


def _row_sets(name, config, is_test, random_state):
    """Row indices of each split that has rows of its own (not an absent or shared pretext_val)."""
    pool = np.flatnonzero(~is_test) if config.test == "file" else np.arange(len(is_test))
    spans = config.ranges()
    needed = max(stop for _, stop in spans.values())
    scale = min(1.0, len(pool) / needed)
    if scale < 1 and config.test == "file":
        raise ValueError(f"{name} needs {needed:,} non-test rows; the dataset has {len(pool):,}.")
    order = pool[_permutation(len(pool), random_state)]
    # Scaling the boundaries, not the sizes, keeps adjacent splits adjacent and disjoint.
    rows = {
        split: order[int(start * scale):int(stop * scale)] for split, (start, stop) in spans.items()
    }
    if config.test == "file":
        rows["test"] = np.flatnonzero(is_test)
    elif config.test == "rest":
        rows["test"] = order[int(needed * scale):]
    if scale < 1:
        sizes = ", ".join(f"{split} {len(r):,}" for split, r in rows.items())
        warn(
            f"{name} needs {needed:,} rows but the dataset has {len(pool):,}; every split is "
            f"scaled by {scale:.4g}: {sizes}. Results on these splits are not comparable "
            "with the paper's.",
            UserWarning,
        )
    empty = [split for split, r in rows.items() if len(r) == 0]
    if empty:
        raise ValueError(f"{name} leaves the split(s) {empty} empty on {len(pool):,} rows.")
    return rows


_SPLITS = ("pretext", "pretext_val", "train", "val", "test")


def _take(dataset, rows):
    if rows is None:
        return None
    data, target = dataset.data, dataset.target
    X = data.iloc[rows] if hasattr(data, "iloc") else data[rows]
    y = target.iloc[rows] if hasattr(target, "iloc") else target[rows]
    return Bunch(X=X, y=y, index=rows)


def load_paper_split(name, data_home=None, random_state=0, *, download_if_missing=True,
                     dataset=None):
    """Load one of the paper's dataset configurations, split into its five sets.

    Sizes follow the paper's Appendix table ("Datasets and Splits"); ``<name>_reference`` is the
    reference code's variant where it differs. ``load_paper_split(name).DESCR`` gives sources.

    ====================== ========= ============ ========= ========= =========
    name                   pretext   pretext_val  train     val       test
    ====================== ========= ============ ========= ========= =========
    adult_1p               8,170     652          86        977       16,281
    adult_1p_reference     30,932    652          325       977       16,281
    covtype_1p             113,400   = val        1,134     37,800    429,812
    covtype_10p            464,809   None         46,480    23,240    116,203
    covtype_15k            11,340    None         11,340    3,780     565,892
    covtype_15k_reference  15,120    None         15,120    3,780     565,892
    higgs_1p               98,000    10,000       980       2,000     500,000
    higgs_1p_sample        8,000     800          80        160       2,024
    higgs_5k               50,000    25,000       5,000     2,500     25,000
    higgs_5k_reference     50,000    25,000       5,000     2,500     2,500
    higgs_10k              10 M      = val        10,000    500,000   500,000
    higgs_100k             100,000   10,000       100,000   2,000     500,000
    higgs_100k_reference   98,000    10,000       98,000    2,000     500,000
    mnist_1p               57,000    3,000        600       6,000     10,000
    mnist_10p              60,000    None         10,000    6,000     10,000
    mnist_10p_reference    60,000    None         6,000     6,000     10,000
    ====================== ========= ============ ========= ========= =========

    As in the reference, ``train`` lies inside ``pretext`` except in ``higgs_5k*``, and ``val``
    does in ``covtype_10p``, ``covtype_15k_reference`` and MNIST; test rows are in no other
    split. On the HIGGS sample (:func:`load_higgs`) every size is scaled down alike, with a
    UserWarning; ``higgs_1p_sample`` (not in the paper) fits those 10,984 rows instead.

    Parameters
    ----------
    name : str
        A key of the table above.
    data_home : str or path-like, default=None
        Folder of the raw files, see :func:`get_data_home`.
    random_state : int, RandomState, Generator or None, default=0
        Seeds the one permutation the splits are cut from: an int seeds a local
        ``np.random.RandomState`` (``1`` reproduces the reference's Adult and Cover Type rows),
        None fresh OS entropy; the global NumPy generator is never used.
    download_if_missing : bool, default=True
        Passed to the dataset's loader.
    dataset : Bunch, default=None
        The matching loader's output (e.g. ``load_covtype()``), to split without reading the
        files again, e.g. for several seeds.

    Returns
    -------
    split : Bunch
        ``pretext``, ``pretext_val``, ``train``, ``val``, ``test``: Bunches of ``X``, ``y`` and
        ``index`` (rows of the loader's output) as the loader gives them; ``pretext_val`` is
        None when absent, or the ``val`` Bunch itself. ``preprocessor``: an unfitted
        transformer to fit on ``pretext.X`` only (Adult: QuantileTransformer(n_quantiles=128)
        and OneHotEncoder(handle_unknown="ignore"); Cover Type: StandardScaler on the 10
        quantitative columns; MNIST and HIGGS: identity, as the paper uses them raw).
        ``name``; ``DESCR``: the sizes and their source.

    Examples
    --------
    >>> from qmatch_sklearn.datasets import load_paper_split
    >>> split = load_paper_split("adult_1p")  # doctest: +SKIP
    >>> len(split.pretext.X), len(split.train.X), len(split.test.X)  # doctest: +SKIP
    (8170, 86, 16281)
    >>> X_pretext = split.preprocessor.fit_transform(split.pretext.X)  # doctest: +SKIP
    """
    if not isinstance(name, str) or name not in CONFIGS:
        raise ValueError(f"Unknown configuration {name!r}; choose one of {sorted(CONFIGS)}.")
    config = CONFIGS[name]
    loader = LOADERS[config.dataset]
    if dataset is None:
        dataset = loader(data_home=data_home, download_if_missing=download_if_missing)
    elif not (isinstance(dataset, Bunch) and dataset.get("DESCR") == _DESCR[config.dataset]):
        # another dataset's rows would be cut by this one's sizes, silently
        raise ValueError(
            f"dataset must be what {loader.__name__}() returns: {name!r} splits the "
            f"{config.dataset} data; got {type(dataset).__name__} "
            f"({str(getattr(dataset, 'DESCR', ''))[:40]!r}...)."
        )
    is_test = dataset.is_test
    if is_test is None:  # no original test file: every row is in the pool
        is_test = np.zeros(len(dataset.target), dtype=bool)
    rows = _row_sets(name, config, np.asarray(is_test), random_state)
    splits = {split: _take(dataset, rows.get(split)) for split in _SPLITS}
    if config.pretext_val == "val":
        splits["pretext_val"] = splits["val"]
    sizes = ", ".join(f"{split} {len(s.y):,}" for split, s in splits.items() if s is not None)
    return Bunch(
        **splits,
        preprocessor=_PREPROCESSORS[config.dataset](),
        name=name,
        DESCR=f"{name} on {config.dataset} ({sizes}). {config.source}",
    )
