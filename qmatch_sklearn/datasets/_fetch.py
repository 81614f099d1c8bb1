"""Where the raw dataset files live, how they are checked, and how missing ones are fetched.

A file is accepted when its SHA-256 matches ``RemoteFile.stored_sha256`` (tried first) or that
of its decompressed content matches ``content_sha256``: the same data exists as different
``.gz`` bytes (the project's ``gzip -9 -n`` copies, upstream's, those gzipped on download).
"""

import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/"
_MNIST_MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist/"


class ChecksumError(OSError):
    """A dataset file does not match any of its known SHA-256 hashes.

    Raised by the loaders for a file on disk or a download; the message names the expected and
    the actual hashes. An ``OSError``, as a failed download is.
    """


@dataclass(frozen=True)
class RemoteFile:
    """A raw dataset file: its place under the data home, its source and its hashes.

    Attributes
    ----------
    path : str
        Location relative to the data home, e.g. ``"adult/adult.data.gz"``.
    url : str or None
        Public source (gzipped on download unless it ends in ``.gz``); None: never downloaded.
    stored_sha256, content_sha256 : str
        SHA-256 of the stored ``.gz`` file and of its decompressed content (None: unpublished).
    note : str
        Appended to the "file is missing" message.
    """

    path: str
    url: str | None
    stored_sha256: str
    content_sha256: str | None
    note: str = ""


FILES = {
    "adult.data": RemoteFile(
        "adult/adult.data.gz",
        _UCI + "adult/adult.data",
        "c7a2b4716a97f930123e0baf879188d701e798172631a654fc703d4b082907f3",
        "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    ),
    "adult.test": RemoteFile(
        "adult/adult.test.gz",
        _UCI + "adult/adult.test",
        "8a2c1bffa6e7ce5abfa43881ae5e87c4311ebc2b3cd526c9c40a43f19f06f799",
        "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    ),
    "covtype": RemoteFile(
        "covtype/covtype.data.gz",
        _UCI + "covtype/covtype.data.gz",
        "b22ca13b51814b12ef7fec2fc96a623903e35dab1469a4d1213fe9911d92912c",
        "0a9371cef7c964b5475d6053cc3e0894a5aa6f65ad1ed3ecb01c45aa96217945",
    ),
    # Upstream's own .gz; no hash of the 7.5 GB decompressed CSV is published.
    "higgs": RemoteFile(
        "higgs/HIGGS.csv.gz",
        _UCI + "00280/HIGGS.csv.gz",
        "ea302c18164d4e3d916a1e2e83a9a8d07069fa6ebc7771e4c0540d54e593b698",
        None,
        note=(
            " It is 2.6 GB. For smoke tests only, the 10,984-row sample "
            "higgs/higgs_sas_sample_10984.csv.gz may be placed in the data home instead."
        ),
    ),
    # SHA-256 of the shared copy, checked against the README's md5 (8fd4f7d3...) of the content.
    "higgs_sample": RemoteFile(
        "higgs/higgs_sas_sample_10984.csv.gz",
        None,
        "17f6413f944cf26254a01bcf5d99c6c5f34780ba20cd69e3dbf18e96af7e49ed",
        "21f8b95e4aaed9e631a76d69c724bb0ca94456bc1ac01e18fd81b968dd3c9724",
    ),
    "mnist.train_images": RemoteFile(
        "mnist/train-images-idx3-ubyte.gz",
        _MNIST_MIRROR + "train-images-idx3-ubyte.gz",
        "0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971",
        "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    ),
    "mnist.train_labels": RemoteFile(
        "mnist/train-labels-idx1-ubyte.gz",
        _MNIST_MIRROR + "train-labels-idx1-ubyte.gz",
        "1787548bbe0bff1ec2ecdc0ef292b02df999e2d1a6002d27500982c652b17203",
        "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    ),
    "mnist.test_images": RemoteFile(
        "mnist/t10k-images-idx3-ubyte.gz",
        _MNIST_MIRROR + "t10k-images-idx3-ubyte.gz",
        "1a1a05eab793c14bb050b398624a11b0ffd1a2953baed553b1b9bd079e2a20be",
        "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    ),
    "mnist.test_labels": RemoteFile(
        "mnist/t10k-labels-idx1-ubyte.gz",
        _MNIST_MIRROR + "t10k-labels-idx1-ubyte.gz",
        "b91679a0acfe4ba0e50a2437a903084cba1f5f92592b016a25a7dfd00455798b",
        "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    ),
}


def get_data_home(data_home=None):
    """Return the folder that holds the raw dataset files, creating it if needed.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder to use. None: the environment variable ``QMATCH_DATA`` when it is set,
        else ``~/.cache/qmatch_sklearn``. A leading ``~`` is expanded.

    Returns
    -------
    data_home : str
        The folder, holding e.g. ``adult/adult.data.gz`` and ``higgs/HIGGS.csv.gz``.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from qmatch_sklearn.datasets import get_data_home
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     home = get_data_home(Path(folder) / "qmatch")
    ...     Path(home).is_dir()
    True
    """
    if data_home is None:
        data_home = os.environ.get("QMATCH_DATA", "~/.cache/qmatch_sklearn")
    data_home = Path(data_home).expanduser()
    data_home.mkdir(parents=True, exist_ok=True)
    return str(data_home)


def fetch_file(key, data_home=None, download_if_missing=True):
    """Path of the verified file ``FILES[key]``, downloading it first if it is missing.

    Raises
    ------
    FileNotFoundError
        The file is missing and ``download_if_missing`` is False.
    OSError
        The download failed (e.g. offline); the message says where to put the file.
    ChecksumError
        The file (present or downloaded) matches none of its hashes.
    """
    remote = FILES[key]
    path = Path(get_data_home(data_home)) / remote.path
    if path.exists():
        verify_file(path, remote)
        return path
    if not download_if_missing or remote.url is None:
        reason = "download_if_missing=False" if remote.url else "no public source"
        raise FileNotFoundError(_missing_message(remote, path, reason))
    _download_into_place(remote, path)
    return path


def _missing_message(remote, path, reason):
    source = f"Download it from {remote.url}" if remote.url else "It cannot be downloaded"
    return (
        f"The dataset file {remote.path!r} is not at {path} ({reason}). {source} and "
        f"save it (gzip-compressed) at exactly {path}.{remote.note}"
    )


def _download(url, destination):
    """Copy ``url`` to the file ``destination`` (the one place that touches the network)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(destination, "wb") as out:
        shutil.copyfileobj(response, out)


def _download_into_place(remote, path):
    # to a temporary file beside the target: a failed download never takes the canonical name
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(descriptor)
    partial = Path(partial)
    try:
        try:
            _download(remote.url, partial)
        except OSError as error:  # urllib's URLError is an OSError
            raise OSError(_missing_message(remote, path, f"download failed: {error}")) from error
        if not remote.url.endswith(".gz"):
            _gzip_in_place(partial)
        verify_file(partial, remote)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _gzip_in_place(path):
    compressed = path.with_name(path.name + ".gz")
    # mtime=0 keeps the output identical from one download to the next.
    with open(path, "rb") as raw, gzip.GzipFile(compressed, "wb", compresslevel=9, mtime=0) as out:
        shutil.copyfileobj(raw, out)
    os.replace(compressed, path)


def _sha256(stream):
    digest = hashlib.sha256()
    for block in iter(lambda: stream.read(1 << 20), b""):
        digest.update(block)
    return digest.hexdigest()


def _content_sha256(path):
    try:
        with gzip.open(path, "rb") as stream:
            return _sha256(stream)
    except (OSError, EOFError) as error:  # not gzip, or truncated
        return f"unreadable ({error})"


def verify_file(path, remote):
    """Raise ChecksumError unless ``path`` matches the stored or the content hash of ``remote``."""
    with open(path, "rb") as stream:
        stored = _sha256(stream)
    if stored == remote.stored_sha256:
        return
    content = None if remote.content_sha256 is None else _content_sha256(path)
    if content is not None and content == remote.content_sha256:
        return
    expected = f"SHA-256 {remote.stored_sha256} (stored file)"
    actual = f"{stored} (stored file)"
    if content is not None:
        expected += f" or {remote.content_sha256} (decompressed content)"
        actual += f" and {content} (decompressed content)"
    raise ChecksumError(
        f"Checksum mismatch for the dataset file {remote.path!r} at {path}: expected "
        f"{expected}, got {actual}. The file is corrupt, truncated or a different "
        "version; delete it and load again to download a fresh copy."
    )
