"""Dataset loaders and the paper's splits, against the real files in ../shared/data."""

import gzip
import shutil
import urllib.error
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils import Bunch
from sklearn.utils.validation import check_is_fitted

from qmatch_sklearn.datasets import (
    _fetch,
    get_data_home,
    load_adult,
    load_covtype,
    load_higgs,
    load_mnist,
    load_paper_split,
)
from qmatch_sklearn.datasets._loaders import _DESCR
from qmatch_sklearn.datasets._splits import CONFIGS

from .conftest import SHARED_DATA

needs_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason=f"the shared datasets are not at {SHARED_DATA}"
)

# (pretext, pretext_val, train, val, test) sizes, from the paper's Appendix table and the
# reference digest (§7); None: no pretext validation set.
EXPECTED_SIZES = {
    "adult_1p": (8170, 652, 86, 977, 16281),
    "adult_1p_reference": (30932, 652, 325, 977, 16281),
    "covtype_1p": (113400, 37800, 1134, 37800, 429812),
    "covtype_10p": (464809, None, 46480, 23240, 116203),
    "covtype_15k": (11340, None, 11340, 3780, 565892),
    "covtype_15k_reference": (15120, None, 15120, 3780, 565892),
    "higgs_1p": (98000, 10000, 980, 2000, 500000),
    "higgs_1p_sample": (8000, 800, 80, 160, 2024),
    "higgs_5k": (50000, 25000, 5000, 2500, 25000),
    "higgs_5k_reference": (50000, 25000, 5000, 2500, 2500),
    "higgs_10k": (10_000_000, 500_000, 10000, 500_000, 500_000),
    "higgs_100k": (100000, 10000, 100000, 2000, 500000),
    "higgs_100k_reference": (98000, 10000, 98000, 2000, 500000),
    "mnist_1p": (57000, 3000, 600, 6000, 10000),
    "mnist_10p": (60000, None, 10000, 6000, 10000),
    "mnist_10p_reference": (60000, None, 6000, 6000, 10000),
}
SPLITS = ("pretext", "pretext_val", "train", "val", "test")


def load_shared(loader):
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the shared datasets are not at {SHARED_DATA}")
    return loader(data_home=SHARED_DATA)


# Module scope: each file is parsed once (Cover Type takes about a second).
@pytest.fixture(scope="module")
def adult():
    return load_shared(load_adult)


@pytest.fixture(scope="module")
def covtype():
    return load_shared(load_covtype)


@pytest.fixture(scope="module")
def mnist():
    return load_shared(load_mnist)


@pytest.fixture(scope="module")
def higgs_sample():
    if not (SHARED_DATA / "higgs" / "higgs_sas_sample_10984.csv.gz").is_file():
        pytest.skip(f"the HIGGS sample is not in {SHARED_DATA}")
    with pytest.warns(UserWarning, match="10,984-row sample"):
        return load_higgs(data_home=SHARED_DATA)


@pytest.fixture(scope="module")
def datasets(adult, covtype, mnist):
    return {"adult": adult, "covtype": covtype, "mnist": mnist}


def counts(labels):
    values, numbers = np.unique(np.asarray(labels), return_counts=True)
    return dict(zip(values.tolist(), numbers.tolist(), strict=True))


# --- loaders ---------------------------------------------------------------------------


def test_adult_rows_types_and_class_counts(adult):
    assert adult.data.shape == (48842, 14) and isinstance(adult.data, pd.DataFrame)
    assert adult.is_test.sum() == 16281 and not adult.is_test[:32561].any()
    assert counts(adult.target[~adult.is_test]) == {"<=50K": 24720, ">50K": 7841}
    assert counts(adult.target[adult.is_test]) == {"<=50K": 12435, ">50K": 3846}
    assert adult.data["workclass"].dtype == "category" and adult.data["age"].dtype == np.int64
    assert adult.data["workclass"].isna().any()  # "?" is missing, not a category
    assert "?" not in adult.data["workclass"].cat.categories
    assert adult.frame is None and adult.target_names == ["<=50K", ">50K"]


def test_adult_as_frame_adds_target_column(adult):
    framed = load_adult(data_home=SHARED_DATA, as_frame=True)
    assert isinstance(framed.target, pd.Series)
    assert framed.frame.shape == (48842, 15)
    assert framed.frame["income"].tolist() == adult.target.tolist()


def test_covtype_shape_dtype_classes_and_flags(covtype):
    assert covtype.data.shape == (581012, 54) and covtype.data.dtype == np.float32
    assert counts(covtype.target) == {
        1: 211840, 2: 283301, 3: 35754, 4: 2747, 5: 9493, 6: 17367, 7: 20510
    }
    assert (covtype.data[:, 10:14].sum(axis=1) == 1).all()
    assert (covtype.data[:, 14:].sum(axis=1) == 1).all()
    assert covtype.is_test is None and len(covtype.feature_names) == 54


def test_mnist_raw_pixels_and_class_counts(mnist):
    assert mnist.data.shape == (70000, 784) and mnist.data.dtype == np.float32
    assert mnist.data.min() == 0 and mnist.data.max() == 255
    train, test = mnist.target[~mnist.is_test], mnist.target[mnist.is_test]
    assert list(counts(train).values()) == [
        5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949
    ]
    assert list(counts(test).values()) == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert mnist.data[:60000].mean() / 255 == pytest.approx(0.1307, abs=1e-4)


def test_higgs_sample_layout(higgs_sample):
    assert higgs_sample.data.shape == (10984, 28) and higgs_sample.data.dtype == np.float32
    names = higgs_sample.feature_names
    assert len(names) == 28 and names[0] == "lepton_pT" and names[-1] == "m_wwbb"
    assert higgs_sample.target.mean() == pytest.approx(0.53, abs=0.005)
    # The b-tag columns take HIGGS's discrete values, so the label did not shift into them.
    assert set(np.round(higgs_sample.data[:, 8].astype(float), 3).tolist()) <= {0.0, 1.087, 2.173}


def test_higgs_sample_as_frame():
    with pytest.warns(UserWarning, match="not suitable for the paper-scale"):
        framed = load_higgs(data_home=SHARED_DATA, as_frame=True)
    assert list(framed.frame.columns[-2:]) == ["m_wwbb", "label"]


# --- files, checksums, downloads -------------------------------------------------------


def test_get_data_home_env_and_default(tmp_path, monkeypatch):
    monkeypatch.setenv("QMATCH_DATA", str(tmp_path / "from_env"))
    assert get_data_home() == str(tmp_path / "from_env")
    monkeypatch.delenv("QMATCH_DATA")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == str(tmp_path / ".cache" / "qmatch_sklearn")
    assert get_data_home(tmp_path / "explicit") == str(tmp_path / "explicit")


def test_offline_error_names_file_url_and_destination(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        load_covtype(data_home=tmp_path, download_if_missing=False)
    message = str(error.value)
    assert "covtype/covtype.data.gz" in message
    assert _fetch.FILES["covtype"].url in message
    assert str(tmp_path / "covtype" / "covtype.data.gz") in message


def test_missing_higgs_mentions_the_sample(tmp_path):
    with pytest.raises(FileNotFoundError, match="higgs_sas_sample_10984"):
        load_higgs(data_home=tmp_path, download_if_missing=False)


def test_corrupt_file_raises_checksum_error(tmp_path):
    target = tmp_path / "adult" / "adult.data.gz"
    target.parent.mkdir()
    target.write_bytes(gzip.compress(b"39, State-gov, 77516\n"))
    with pytest.raises(_fetch.ChecksumError) as error:
        load_adult(data_home=tmp_path)
    message = str(error.value)
    remote = _fetch.FILES["adult.data"]
    assert "adult/adult.data.gz" in message
    assert remote.stored_sha256 in message and remote.content_sha256 in message
    assert _fetch._sha256(target.open("rb")) in message


@needs_data
def test_recompressed_file_passes_on_its_content_hash(tmp_path):
    # Another gzip of the same bytes: the stored hash differs, the content hash matches.
    for name in ("adult.data.gz", "adult.test.gz"):
        content = gzip.decompress((SHARED_DATA / "adult" / name).read_bytes())
        (tmp_path / "adult").mkdir(exist_ok=True)
        (tmp_path / "adult" / name).write_bytes(gzip.compress(content, compresslevel=1))
    assert load_adult(data_home=tmp_path, download_if_missing=False).data.shape == (48842, 14)


def fake_download(served):
    """A stand-in for _fetch._download that serves local bytes by URL and logs the calls."""

    def download(url, destination):
        download.urls.append(url)
        with open(destination, "wb") as out:
            out.write(served(url))

    download.urls = []
    return download


@needs_data
def test_download_puts_verified_files_in_place(tmp_path, monkeypatch, adult):
    def served(url):
        name = url.rsplit("/", 1)[-1]
        if name.startswith("adult"):  # UCI serves Adult uncompressed
            return gzip.decompress((SHARED_DATA / "adult" / f"{name}.gz").read_bytes())
        return (SHARED_DATA / "mnist" / name).read_bytes()

    download = fake_download(served)
    monkeypatch.setattr(_fetch, "_download", download)
    loaded = load_adult(data_home=tmp_path)
    assert download.urls == [_fetch.FILES["adult.data"].url, _fetch.FILES["adult.test"].url]
    assert loaded.target.tolist() == adult.target.tolist()
    assert sorted(p.name for p in (tmp_path / "adult").iterdir()) == [
        "adult.data.gz", "adult.test.gz"
    ]
    load_adult(data_home=tmp_path)  # present now: no second download
    assert len(download.urls) == 2


def test_download_with_wrong_checksum_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(_fetch, "_download", fake_download(lambda url: b"<html>moved</html>"))
    with pytest.raises(_fetch.ChecksumError, match=r"mnist/t10k-labels-idx1-ubyte.gz"):
        _fetch.fetch_file("mnist.test_labels", tmp_path)
    assert list((tmp_path / "mnist").iterdir()) == []


def test_failed_download_says_where_to_put_the_file(tmp_path, monkeypatch):
    def offline(url, destination):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(_fetch, "_download", offline)
    with pytest.raises(OSError) as error:
        load_mnist(data_home=tmp_path)
    message = str(error.value)
    assert "no network" in message and _fetch.FILES["mnist.train_images"].url in message
    assert str(tmp_path / "mnist" / "train-images-idx3-ubyte.gz") in message
    assert list((tmp_path / "mnist").iterdir()) == []


# --- splits ----------------------------------------------------------------------------


def sizes(split):
    return tuple(None if split[name] is None else len(split[name].y) for name in SPLITS)


def assert_test_rows_are_held_out(split):
    test = set(split.test.index.tolist())
    for name in ("pretext", "pretext_val", "train", "val"):
        if split[name] is not None:
            assert test.isdisjoint(split[name].index.tolist()), name


@pytest.mark.parametrize("name", [n for n in EXPECTED_SIZES if not n.startswith("higgs")])
def test_split_sizes_and_held_out_test(name, datasets):
    config = CONFIGS[name]
    split = load_paper_split(name, dataset=datasets[config.dataset])
    assert sizes(split) == EXPECTED_SIZES[name]
    assert_test_rows_are_held_out(split)
    assert set(split.train.index.tolist()) <= set(split.pretext.index.tolist())
    if config.test == "file":  # Adult and MNIST test on their original test file
        assert datasets[config.dataset].is_test[split.test.index].all()
    if config.pretext_val == "val":
        assert split.pretext_val is split.val
    assert name in split.DESCR and split.name == name


@pytest.mark.parametrize("name", [n for n in EXPECTED_SIZES if n.startswith("higgs")])
def test_higgs_split_sizes_at_full_scale(name):
    # A stand-in with HIGGS's 11,000,000 rows: the sizes do not depend on the values.
    n_rows = 11_000_000
    dataset = Bunch(data=np.zeros((n_rows, 1), np.float32), target=np.zeros(n_rows, np.int64),
                    is_test=None, DESCR=_DESCR["higgs"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # full scale: no warning
        split = load_paper_split(name, dataset=dataset)
    assert sizes(split) == EXPECTED_SIZES[name]
    test = split.test.index
    for other in ("pretext", "pretext_val", "train", "val"):
        if split[other] is not None:
            assert not np.isin(split[other].index, test).any(), other
    # The labeled rows lie inside the pretext rows, except for higgs_5k (as in the reference).
    assert np.isin(split.train.index, split.pretext.index).all() != name.startswith("higgs_5k")


def test_higgs_split_on_the_sample_is_scaled_with_a_warning(higgs_sample):
    with pytest.warns(UserWarning, match=r"scaled by .*pretext 1,764.*train 18"):
        split = load_paper_split("higgs_1p", dataset=higgs_sample)
    assert sizes(split) == (1764, 180, 18, 36, 9004)
    assert_test_rows_are_held_out(split)
    assert split.pretext.X.shape == (1764, 28)


def test_higgs_sample_split_uses_every_sample_row_without_scaling(higgs_sample):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exactly the sample's size: nothing to scale
        split = load_paper_split("higgs_1p_sample", dataset=higgs_sample)
    assert sizes(split) == EXPECTED_SIZES["higgs_1p_sample"]
    assert sum(sizes(split)) - len(split.train.y) == len(higgs_sample.target)
    assert_test_rows_are_held_out(split)
    assert len(split.train.y) / len(split.pretext.y) == 0.01  # higgs_1p's label share


def test_splits_are_deterministic_and_leave_the_global_rng_alone(adult, mnist):
    np.random.seed(0)
    state = np.random.get_state()[1].copy()
    first = load_paper_split("adult_1p", random_state=3, dataset=adult)
    again = load_paper_split("adult_1p", random_state=3, dataset=adult)
    other = load_paper_split("adult_1p", random_state=4, dataset=adult)
    fresh = load_paper_split("mnist_1p", random_state=None, dataset=mnist)
    assert (np.random.get_state()[1] == state).all()
    for name in SPLITS:
        np.testing.assert_array_equal(first[name].index, again[name].index)
        pd.testing.assert_frame_equal(first[name].X, again[name].X)
    assert not np.array_equal(first.pretext.index, other.pretext.index)
    assert len(fresh.train.y) == 600
    generator = load_paper_split("adult_1p", random_state=np.random.default_rng(3), dataset=adult)
    assert len(generator.pretext.y) == 8170


def test_random_state_1_reproduces_the_reference_rows(adult, covtype):
    # The reference: np.random.seed(1); np.random.choice(n, size, replace=False).
    np.random.seed(1)
    adult_order = np.random.choice(32561, 32561, replace=False)
    np.random.seed(1)
    covtype_order = np.random.choice(581012, 151200, replace=False)
    split = load_paper_split("adult_1p_reference", random_state=1, dataset=adult)
    np.testing.assert_array_equal(split.pretext.index, adult_order[:30932])
    np.testing.assert_array_equal(split.train.index, adult_order[:325])
    split = load_paper_split("covtype_1p", random_state=1, dataset=covtype)
    np.testing.assert_array_equal(split.train.index, covtype_order[112266:113400])
    np.testing.assert_array_equal(split.val.index, covtype_order[113400:])


def test_adult_preprocessor_is_unfitted_and_fits_on_pretext(adult):
    split = load_paper_split("adult_1p", dataset=adult)
    with pytest.raises(NotFittedError):
        check_is_fitted(split.preprocessor)
    pretext = split.preprocessor.fit_transform(split.pretext.X)
    test = split.preprocessor.transform(split.test.X)  # unseen categories are ignored
    assert pretext.shape[1] == test.shape[1] > 6 + 8
    assert np.isfinite(test).all() and pretext[:, :6].min() >= 0 and pretext[:, :6].max() <= 1


def test_covtype_preprocessor_scales_only_the_quantitative_columns(covtype):
    split = load_paper_split("covtype_15k", dataset=covtype)
    out = split.preprocessor.fit_transform(split.pretext.X)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[:, :10].mean(axis=0), 0, atol=1e-4)
    np.testing.assert_array_equal(out[:, 10:], split.pretext.X[:, 10:])


def test_raw_preprocessor_for_mnist(mnist):
    split = load_paper_split("mnist_10p", dataset=mnist)
    np.testing.assert_array_equal(split.preprocessor.fit_transform(split.train.X), split.train.X)


def test_unknown_configuration_lists_the_valid_names():
    with pytest.raises(ValueError, match="adult_1p_reference"):
        load_paper_split("adult_2p")


@needs_data
def test_load_paper_split_reads_the_files_itself(tmp_path):
    for name in ("adult.data.gz", "adult.test.gz"):
        (tmp_path / "adult").mkdir(exist_ok=True)
        shutil.copy(SHARED_DATA / "adult" / name, tmp_path / "adult" / name)
    split = load_paper_split("adult_1p", tmp_path, download_if_missing=False)
    assert sizes(split) == EXPECTED_SIZES["adult_1p"]


@pytest.mark.parametrize("name, dataset, message", [
    ("adult_1p", "mnist", r"what load_adult\(\) returns: 'adult_1p' splits the adult data"),
    ("higgs_1p_sample", "higgs_array", r"got ndarray"),
    (["adult_1p"], None, r"Unknown configuration \['adult_1p'\]"),
], ids=["another dataset's Bunch", "an array", "a list for a name"])
def test_a_split_of_the_wrong_data_is_refused_by_name(name, dataset, message, mnist,
                                                       higgs_sample):
    given = {"mnist": mnist, "higgs_array": np.asarray(higgs_sample.data), None: None}[dataset]
    with pytest.raises(ValueError, match=message):
        load_paper_split(name, dataset=given)
