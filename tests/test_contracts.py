"""Pins that guard refactors of the method contracts (issue #14).

Two fits with the same seed give the same embeddings, and each loss gives a
pinned value on fixed float64 inputs. The inputs come from NumPy's PCG64
(portable), so the numbers hold on any machine; embedding checksums would not.
"""

import numpy as np
import pytest
import torch

from qmatch_sklearn import METHODS
from qmatch_sklearn.methods.dino import dino_loss
from qmatch_sklearn.methods.qmatch import distribution_matching_loss
from qmatch_sklearn.methods.vicreg import vicreg_loss

from .conftest import tiny_method_params

PINNED_METHODS = ["qmatch", "vicreg", "dino"]


def fixed_tensors(*shapes):
    rng = np.random.default_rng(2024)
    return [torch.tensor(rng.normal(size=shape), dtype=torch.float64) for shape in shapes]


def qmatch_loss_value():
    student, teacher, queue = fixed_tensors((6, 4), (6, 4), (10, 4))
    queue = torch.nn.functional.normalize(queue, dim=1)
    return distribution_matching_loss(student, teacher, queue, 0.1, 0.04).item()


def vicreg_loss_value():
    z_a, z_b = fixed_tensors((8, 5), (8, 5))
    return vicreg_loss(z_a, z_b, 25.0, 25.0, 1.0).item()


def dino_loss_value():
    s_a, s_b, t_a, t_b, center = fixed_tensors((6, 7), (6, 7), (6, 7), (6, 7), (7,))
    return dino_loss(s_a, s_b, t_a, t_b, center, 0.15, 0.04).item()


@pytest.mark.parametrize(
    "loss_value, pinned",
    [
        (qmatch_loss_value, 7.798755024705575),
        (vicreg_loss_value, 50.62072654479921),
        (dino_loss_value, 5.935301426007817),
    ],
    ids=PINNED_METHODS,
)
def test_loss_on_fixed_inputs_is_pinned(loss_value, pinned):
    np.testing.assert_allclose(loss_value(), pinned, rtol=1e-12)


@pytest.mark.parametrize("name", PINNED_METHODS)
def test_two_fits_with_the_same_seed_are_identical(name):
    X = np.random.default_rng(0).normal(size=(150, 6)).astype(np.float32)
    cls = METHODS[name]
    params = tiny_method_params(name, max_epochs=2)
    first = cls(**params).fit(X)
    second = cls(**params).fit(X)
    np.testing.assert_array_equal(first.transform(X), second.transform(X))
    assert first.history_[:, "train_loss"] == second.history_[:, "train_loss"]
