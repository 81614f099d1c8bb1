"""Where the raw dataset files live, how they are checked, and how missing ones are fetched.

A file is accepted when its SHA-256 matches ``RemoteFile.stored_sha256`` (tried first) or that
of its decompressed content matches ``content_sha256``: the same data exists as different
``.gz`` bytes (the project's ``gzip -9 -n`` copies, upstream's, those gzipped on download).
"""

import gzip
import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path


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


def read_table(name):
    """The JSON table ``data/<name>`` shipped with this package (as scikit-learn ships its
    datasets' descriptions beside the code)."""
    return json.loads((files(__package__) / "data" / name).read_text("utf-8"))


#: Every raw file the loaders read, by key (``data/files.json``).
FILES = {key: RemoteFile(**fields) for key, fields in read_table("files.json")["files"].items()}


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
