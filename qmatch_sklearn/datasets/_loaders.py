"""Loaders of the paper's four datasets, in the style of ``sklearn.datasets.fetch_*``."""

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from .._warnings import warn
from ._fetch import FILES, fetch_file, get_data_home

ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
ADULT_CATEGORICAL = [
    "workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
    "native-country",
]
# The UCI schema order of the 14 features; the 15th field of each row is the label.
ADULT_FEATURES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country",
]
COVTYPE_FEATURES = [
    "Elevation", "Aspect", "Slope", "Horizontal_Distance_To_Hydrology",
    "Vertical_Distance_To_Hydrology", "Horizontal_Distance_To_Roadways", "Hillshade_9am",
    "Hillshade_Noon", "Hillshade_3pm", "Horizontal_Distance_To_Fire_Points",
    *(f"Wilderness_Area_{i}" for i in range(4)),
    *(f"Soil_Type_{i}" for i in range(40)),
]
#: Number of quantitative Cover Type columns; the other 44 are one-hot flags.
COVTYPE_N_NUMERIC = 10
HIGGS_FEATURES = [
    "lepton_pT", "lepton_eta", "lepton_phi", "missing_energy_magnitude", "missing_energy_phi",
    *(f"jet_{j}_{part}" for j in range(1, 5) for part in ("pt", "eta", "phi", "btag")),
    "m_jj", "m_jjj", "m_lv", "m_jlv", "m_bb", "m_wbb", "m_wwbb",
]
# UCI's file: no header, label first; the sample: a header, label last (checksums fix the counts)
_HIGGS_LAYOUTS = {
    "higgs": dict(n_rows=11_000_000, label_column=0, header=None),
    "higgs_sample": dict(n_rows=10_984, label_column=-1, header=0),
}
_CHUNK_ROWS = 100_000

_DESCR = {
    "adult": (
        "UCI Adult (Census Income): 48,842 people (32,561 in adult.data, 16,281 in "
        "adult.test), 6 numeric and 8 categorical features; target: income <=50K or >50K."
    ),
    "covtype": (
        "UCI Covertype: 581,012 30x30 m forest cells, 10 quantitative features, 4 "
        "wilderness-area and 40 soil-type flags; target: cover type 1..7."
    ),
    "higgs": (
        "UCI HIGGS: 11,000,000 simulated collision events, 21 low-level and 7 high-level "
        "kinematic features; target: 1 signal, 0 background."
    ),
    "mnist": (
        "MNIST: 70,000 28x28 grey-scale handwritten digits (60,000 train + 10,000 t10k), "
        "flattened to 784 raw pixel values in 0..255; target: the digit 0..9."
    ),
}


def _make_bunch(data, target, *, name, feature_names, target_column, target_names, is_test,
                as_frame):
    frame = None
    if as_frame:
        if not isinstance(data, pd.DataFrame):
            data = pd.DataFrame(data, columns=feature_names, copy=False)
        target = pd.Series(target, name=target_column)
        frame = pd.concat([data, target], axis=1)
    return Bunch(
        data=data,
        target=target,
        feature_names=list(feature_names),
        target_names=target_names,
        frame=frame,
        DESCR=_DESCR[name],
        is_test=is_test,
    )


def _read_adult_file(path, skiprows):
    frame = pd.read_csv(
        path, header=None, names=[*ADULT_FEATURES, "income"], skipinitialspace=True,
        na_values=["?"], keep_default_na=False, skiprows=skiprows,
    )
    frame["income"] = frame["income"].str.rstrip(".")  # adult.test writes ">50K."
    return frame


def load_adult(*, data_home=None, download_if_missing=True, as_frame=False):
    """Load UCI Adult: adult.data followed by adult.test, 48,842 rows.

    ``data`` is always a DataFrame, so that ``ColumnTransformer`` can select the string columns
    by dtype: int64 numeric columns, ``category`` ones (categories from both files), NaN for
    a missing value (``?`` in the files).

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder of the raw files, see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the absent ``adult/*.gz`` files from UCI; otherwise raise FileNotFoundError.
    as_frame : bool, default=False
        If True, ``target`` is a pandas Series and ``frame`` holds data and target.

    Returns
    -------
    dataset : Bunch
        ``data`` (DataFrame of shape (48842, 14)); ``target`` (ndarray of str, a Series if
        ``as_frame``: ``"<=50K"`` or ``">50K"``); ``feature_names`` (UCI order);
        ``target_names`` (``["<=50K", ">50K"]``); ``frame`` (with the target as column
        ``income``, or None); ``is_test`` (True for the 16,281 rows of adult.test); ``DESCR``.

    Examples
    --------
    >>> from qmatch_sklearn.datasets import load_adult
    >>> adult = load_adult()  # doctest: +SKIP
    >>> adult.data.shape, int(adult.is_test.sum())  # doctest: +SKIP
    ((48842, 14), 16281)
    """
    train = _read_adult_file(fetch_file("adult.data", data_home, download_if_missing), 0)
    # The first line of adult.test is "|1x3 Cross validator", not a row.
    test = _read_adult_file(fetch_file("adult.test", data_home, download_if_missing), 1)
    data = pd.concat([train, test], ignore_index=True)
    target = data.pop("income").to_numpy(dtype=object)
    data[ADULT_CATEGORICAL] = data[ADULT_CATEGORICAL].astype("category")
    is_test = np.arange(len(data)) >= len(train)
    return _make_bunch(
        data, target, name="adult", feature_names=ADULT_FEATURES, target_column="income",
        target_names=["<=50K", ">50K"], is_test=is_test, as_frame=as_frame,
    )


def _read_numeric_csv(path, *, n_rows, n_columns, label_column, header):
    """float32 features and int64 labels of a numeric CSV of known row count, parsed by chunks
    into arrays allocated once: peak memory is the float32 table plus one chunk."""
    label_column %= n_columns
    feature_columns = [column for column in range(n_columns) if column != label_column]
    features = np.empty((n_rows, n_columns - 1), dtype=np.float32)
    labels = np.empty(n_rows, dtype=np.int64)
    start = 0
    with pd.read_csv(path, header=header, dtype=np.float32, chunksize=_CHUNK_ROWS) as reader:
        for chunk in reader:
            stop = start + len(chunk)
            if chunk.shape[1] != n_columns or stop > n_rows:
                raise ValueError(
                    f"{path} is not the expected table of {n_rows} rows x {n_columns} columns "
                    f"(a chunk ending at row {stop} has {chunk.shape[1]} columns)."
                )
            values = chunk.to_numpy()
            features[start:stop] = values[:, feature_columns]
            labels[start:stop] = values[:, label_column]
            start = stop
    if start != n_rows:
        raise ValueError(f"{path} has {start} rows, expected {n_rows}.")
    return features, labels


def load_covtype(*, data_home=None, download_if_missing=True, as_frame=False):
    """Load UCI Covertype: 581,012 rows x 54 float32 features, target 1..7.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder of the raw files, see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download ``covtype/covtype.data.gz`` from UCI if absent; else raise FileNotFoundError.
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame, ``target`` a Series and ``frame`` both.

    Returns
    -------
    dataset : Bunch
        ``data`` (float32, (581012, 54): 10 quantitative columns, then 4 wilderness-area and
        40 soil-type 0/1 flags); ``target`` (int64, 1..7); ``target_names`` (``[k]`` names
        class ``k + 1``); ``is_test`` (None: no test part); ``feature_names``, ``frame``, ``DESCR``.

    Examples
    --------
    >>> from qmatch_sklearn.datasets import load_covtype
    >>> covtype = load_covtype()  # doctest: +SKIP
    >>> covtype.data.shape, covtype.data.dtype  # doctest: +SKIP
    ((581012, 54), dtype('float32'))
    """
    path = fetch_file("covtype", data_home, download_if_missing)
    data, target = _read_numeric_csv(
        path, n_rows=581_012, n_columns=55, label_column=54, header=None
    )
    return _make_bunch(
        data, target, name="covtype", feature_names=COVTYPE_FEATURES, target_column="Cover_Type",
        target_names=[
            "Spruce/Fir", "Lodgepole Pine", "Ponderosa Pine", "Cottonwood/Willow", "Aspen",
            "Douglas-fir", "Krummholz",
        ],
        is_test=None, as_frame=as_frame,
    )


def load_higgs(*, data_home=None, download_if_missing=True, as_frame=False):
    """Load UCI HIGGS: 11,000,000 rows x 28 float32 features, target 0/1.

    When ``higgs/HIGGS.csv.gz`` is absent but the 10,984-row sample
    ``higgs/higgs_sas_sample_10984.csv.gz`` is present, the sample is loaded, with a
    UserWarning: it serves smoke tests, not the paper's protocol.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder of the raw files, see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download ``higgs/HIGGS.csv.gz`` (2.6 GB) from UCI when neither it nor the sample is
        present; otherwise raise FileNotFoundError.
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame, ``target`` a Series and ``frame`` both.

    Returns
    -------
    dataset : Bunch
        ``data`` (float32, (n_samples, 28), unscaled, UCI order: 21 low-level, then 7
        high-level features); ``target`` (int64, 1 signal, 0 background); ``target_names``
        (``["background", "signal"]``); ``is_test`` (None); ``feature_names``, ``frame``, ``DESCR``.

    Examples
    --------
    >>> from qmatch_sklearn.datasets import load_higgs
    >>> higgs = load_higgs()  # doctest: +SKIP
    >>> higgs.data.shape  # doctest: +SKIP
    (11000000, 28)
    """
    home = Path(get_data_home(data_home))
    key = "higgs"
    if not (home / FILES["higgs"].path).exists() and (home / FILES["higgs_sample"].path).exists():
        key = "higgs_sample"
        warn(
            f"{home / FILES['higgs'].path} is absent, so the 10,984-row sample "
            f"{FILES['higgs_sample'].path} is loaded. It is not suitable for the paper-scale "
            "protocol (98k pretext + 500k test rows); use it for smoke tests only.",
            UserWarning,
        )
    path = fetch_file(key, home, download_if_missing)
    data, target = _read_numeric_csv(path, n_columns=29, **_HIGGS_LAYOUTS[key])
    return _make_bunch(
        data, target, name="higgs", feature_names=HIGGS_FEATURES, target_column="label",
        target_names=["background", "signal"], is_test=None, as_frame=as_frame,
    )


def _read_idx(path):
    """The uint8 array of a gzipped IDX file (LeCun's MNIST format)."""
    with gzip.open(path, "rb") as stream:
        raw = stream.read()
    # Header: 0, 0, type 0x08 (unsigned byte), n_dims; then a big-endian int32 per dimension.
    if raw[:3] != b"\x00\x00\x08":
        raise ValueError(f"{path} is not an IDX file of unsigned bytes.")
    n_dims = raw[3]
    shape = np.frombuffer(raw, dtype=">i4", count=n_dims, offset=4)
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * n_dims).reshape(shape)


def load_mnist(*, data_home=None, download_if_missing=True, as_frame=False):
    """Load MNIST: 70,000 rows x 784 float32 raw pixel values (0..255), target 0..9.

    The 60,000 training images, then the 10,000 t10k ones; pixels raw, as the paper feeds them.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder of the raw files, see :func:`get_data_home`.
    download_if_missing : bool, default=True
        Download the absent ``mnist/*-ubyte.gz`` files; otherwise raise FileNotFoundError.
    as_frame : bool, default=False
        If True, ``data`` is a DataFrame, ``target`` a Series and ``frame`` both.

    Returns
    -------
    dataset : Bunch
        ``data`` (float32, (70000, 784), row-major 28x28 images); ``target`` (int64, the
        digit); ``feature_names`` (``pixel_<row>_<column>``); ``target_names`` (None);
        ``is_test`` (True for the 10,000 t10k rows); ``frame``, ``DESCR``.

    Examples
    --------
    >>> from qmatch_sklearn.datasets import load_mnist
    >>> mnist = load_mnist()  # doctest: +SKIP
    >>> mnist.data.shape, int(mnist.data.max())  # doctest: +SKIP
    ((70000, 784), 255)
    """
    images, labels = [], []
    for part in ("train", "test"):
        images.append(_read_idx(fetch_file(f"mnist.{part}_images", data_home, download_if_missing)))
        labels.append(_read_idx(fetch_file(f"mnist.{part}_labels", data_home, download_if_missing)))
    data = np.concatenate([block.reshape(len(block), -1) for block in images], dtype=np.float32)
    target = np.concatenate(labels).astype(np.int64)
    is_test = np.arange(len(data)) >= len(images[0])
    side = images[0].shape[1]
    return _make_bunch(
        data, target, name="mnist",
        feature_names=[f"pixel_{i // side}_{i % side}" for i in range(data.shape[1])],
        target_column="digit", target_names=None, is_test=is_test, as_frame=as_frame,
    )


#: The loader of each dataset, by the name the split configurations use.
LOADERS = {"adult": load_adult, "covtype": load_covtype, "higgs": load_higgs, "mnist": load_mnist}
