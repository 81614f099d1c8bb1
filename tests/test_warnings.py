"""Every warning the library gives names the caller's line (``_warnings.warn``), not
the library line that raised it, whichever public method led there."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from qmatch_sklearn import QMatchClassifier, QMatchEncoder
from qmatch_sklearn._warnings import warn

from .conftest import fit_tiny_classifier, tiny_encoder_params


def _frame(n=120, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"income": rng.normal(5e4, 1e4, n), "age": rng.normal(40, 9, n)})
    return frame, (frame["income"] > 5e4).astype(int).to_numpy()


@pytest.fixture(scope="module")
def fitted():
    frame, y = _frame()
    classifier = fit_tiny_classifier(frame, np.where(np.arange(len(y)) % 3 == 0, y, -1))
    encoder = QMatchEncoder(**tiny_encoder_params(passthrough=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder.fit(frame)
    holes = frame.iloc[:5].copy()
    holes.loc[0, "age"] = np.nan
    return classifier, encoder, holes


def _partial_fit_after_fit():
    frame, _ = _frame()
    encoder = QMatchEncoder(**tiny_encoder_params(validation_fraction=None, max_epochs=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder.fit(frame)
    return lambda: encoder.partial_fit(frame)


def _unused_adamw_params():
    frame, y = _frame()
    classifier = QMatchClassifier(QMatchEncoder(**tiny_encoder_params(passthrough=True)),
                                  max_epochs=7, random_state=0, device="cpu")
    return lambda: classifier.fit(frame, np.where(np.arange(len(y)) % 3 == 0, y, -1))


CALLS = {
    # NaN in a column that had none at fit: three public methods, three call depths
    "predict": (lambda f: lambda: f[0].predict(f[2]), r"missing values \(NaN\)"),
    "predict_proba": (lambda f: lambda: f[0].predict_proba(f[2]), r"missing values \(NaN\)"),
    "transform": (lambda f: lambda: f[1].transform(f[2]), r"missing values \(NaN\)"),
    "partial_fit after fit": (lambda f: _partial_fit_after_fit(), "starts a new run"),
    "unused AdamW parameters": (lambda f: _unused_adamw_params(), "not used"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_the_warning_names_the_callers_line(name, fitted):
    make_call, message = CALLS[name]
    call = make_call(fitted)
    with pytest.warns(UserWarning, match=message) as record:
        call()
    ours = [w for w in record if re.search(message, str(w.message))]
    assert ours and all(w.filename == __file__ for w in ours), [w.filename for w in ours]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_the_device_warning_names_the_callers_line():
    frame, _ = _frame()
    encoder = QMatchEncoder(**tiny_encoder_params(device="cuda", max_epochs=1))
    with pytest.warns(UserWarning, match="CUDA is not available") as record:
        encoder.fit(frame)
    assert record[0].filename == __file__


def test_called_from_outside_the_package_it_names_that_line():
    with pytest.warns(UserWarning, match="here") as record:
        warn("here", UserWarning)
    assert record[0].filename == __file__
