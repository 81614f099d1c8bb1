"""The baselines: each loss against a direct formula, no collapse, pipelines, search spaces."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, log_softmax, softmax
from scipy.stats import beta
from sklearn.datasets import make_blobs
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from qmatch_sklearn import METHODS, QMatchClassifier, paper_param_grid
from qmatch_sklearn.methods import imix
from qmatch_sklearn.methods.dino import dino_loss
from qmatch_sklearn.methods.imix import imix_npair_loss
from qmatch_sklearn.methods.simclr import nt_xent_loss
from qmatch_sklearn.methods.simsiam import simsiam_loss
from qmatch_sklearn.methods.tabnet import tabnet_loss
from qmatch_sklearn.methods.vicreg import vicreg_loss
from qmatch_sklearn.methods.vime import vime_loss

from .conftest import tiny_method_params
from .denoise_method import DenoiseEncoder, DenoiseLoss, DenoiseOutput

rng = np.random.default_rng(0)


def t(a):
    return torch.tensor(a, dtype=torch.float64)


def unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_vime_loss():
    x, r, logits = rng.normal(size=(3, 6, 4))
    mask = rng.random((6, 4)) < 0.4
    p = expit(logits)
    bce = -(mask * np.log(p) + (1 - mask) * np.log(1 - p))
    expected = bce.sum(1).mean() + 2.0 * ((r - x) ** 2).mean()
    got = vime_loss(t(r), t(logits), t(x), torch.tensor(mask), alpha=2.0)
    np.testing.assert_allclose(got.item(), expected, rtol=1e-10)


def test_tabnet_loss_normalises_by_feature_spread_and_masked_count():
    x, r = rng.normal(size=(2, 8, 3))
    x[:, 2] = 5.0  # zero spread: the batch mean stands in
    mask = rng.random((8, 3)) < 0.5
    std = x.std(0)
    scale = np.maximum(np.where(std > 0, std, x.mean(0)), 1e-3)
    expected = (mask * ((r - x) / scale) ** 2).sum() / (mask.sum() + 1e-3)
    got = tabnet_loss(t(r), t(x), torch.tensor(mask))
    np.testing.assert_allclose(got.item(), expected, rtol=1e-10)


def test_nt_xent_loss():
    a, b = rng.normal(size=(2, 5, 3))
    z = unit(np.concatenate([a, b]))
    n, total = len(a), 0.0
    for i in range(2 * n):
        positive = (i + n) % (2 * n)
        logits = np.array([z[i] @ z[j] / 0.5 for j in range(2 * n) if j != i])
        others = [j for j in range(2 * n) if j != i]
        total += -log_softmax(logits)[others.index(positive)]
    np.testing.assert_allclose(nt_xent_loss(t(a), t(b), 0.5).item(), total / (2 * n), rtol=1e-10)


def test_simsiam_loss_and_its_stop_gradient():
    p_a, p_b, z_a, z_b = rng.normal(size=(4, 6, 3))
    cos = lambda u, v: (unit(u) * unit(v)).sum(1).mean()  # noqa: E731
    expected = -(cos(p_a, z_b) + cos(p_b, z_a)) / 2
    tensors = [t(a).requires_grad_() for a in (p_a, p_b, z_a, z_b)]
    loss = simsiam_loss(*tensors)
    np.testing.assert_allclose(loss.item(), expected, rtol=1e-10)
    loss.backward()
    assert tensors[0].grad is not None and tensors[2].grad is None


def test_the_worked_example_s_loss_and_its_stop_gradient():
    # docs/adding_a_method.md's denoising method: mean ||s - sg(t)||^2
    s, t_ = rng.normal(size=(2, 6, 3))
    student, target = t(s).requires_grad_(), t(t_).requires_grad_()
    loss = DenoiseLoss()(DenoiseOutput(student, target))
    np.testing.assert_allclose(loss.item(), ((s - t_) ** 2).mean(), rtol=1e-10)
    loss.backward()
    assert student.grad is not None and target.grad is None


def test_the_worked_example_trains_probes_and_fine_tunes(blobs):
    X, y = blobs
    encoder = DenoiseEncoder(**tiny_method_params("denoise", max_epochs=15,
                                                  validation_fraction=None))
    pipe = Pipeline([("enc", encoder), ("clf", LogisticRegression(max_iter=1000))])
    assert pipe.fit(X[::2], y[::2]).score(X[1::2], y[1::2]) > 0.9
    clf = QMatchClassifier(DenoiseEncoder(**tiny_method_params("denoise")), freeze_encoder=False,
                           lr=1e-2, max_epochs=20, random_state=0, device="cpu")
    assert clf.fit(X, np.where(np.arange(len(y)) % 5 == 0, y, -1)).score(X, y) > 0.8


def test_vicreg_loss():
    a, b = rng.normal(size=(2, 7, 4))

    def var(z):
        return np.maximum(0, 1 - np.sqrt(z.var(0) + 1e-4)).mean()

    def cov(z):
        c = np.cov(z, rowvar=False)
        return (c**2).sum() - (np.diag(c) ** 2).sum()

    expected = 25 * ((a - b) ** 2).mean() + 25 * (var(a) + var(b)) + (cov(a) + cov(b)) / 4
    got = vicreg_loss(t(a), t(b), 25.0, 25.0, 1.0)
    np.testing.assert_allclose(got.item(), expected, rtol=1e-10)


def test_dino_loss():
    s_a, s_b, t_a, t_b = rng.normal(size=(4, 5, 6))
    center = rng.normal(size=6)

    def h(teacher, student):
        p_t = softmax((teacher - center) / 0.04, 1)
        return -(p_t * log_softmax(student / 0.15, 1)).sum(1).mean()

    expected = (h(t_a, s_b) + h(t_b, s_a)) / 2
    got = dino_loss(t(s_a), t(s_b), t(t_a), t(t_b), t(center), 0.15, 0.04)
    np.testing.assert_allclose(got.item(), expected, rtol=1e-10)


def test_imix_npair_loss_targets_both_sources_of_a_mixed_row():
    mixed, clean = rng.normal(size=(2, 5, 3))
    lam = rng.uniform(size=5)
    partner = rng.permutation(5)
    log_p = log_softmax(unit(mixed) @ unit(clean).T / 0.2, axis=1)
    rows = np.arange(5)
    expected = -(lam * log_p[rows, rows] + (1 - lam) * log_p[rows, partner]).mean()
    got = imix_npair_loss(t(mixed), t(clean), t(lam), torch.tensor(partner), 0.2)
    np.testing.assert_allclose(got.item(), expected, rtol=1e-10)


@pytest.fixture(scope="module")
def blobs():
    X, y = make_blobs(n_samples=400, centers=4, n_features=8, random_state=0)
    return X, y


@pytest.mark.parametrize("name", sorted(METHODS))
def test_embedding_does_not_collapse_and_probes_well(name, blobs):
    X, y = blobs
    encoder = METHODS[name](**tiny_method_params(name, max_epochs=15, validation_fraction=None))
    pipe = Pipeline([("enc", encoder), ("clf", LogisticRegression(max_iter=1000))])
    pipe.fit(X[::2], y[::2])
    Z = pipe.named_steps["enc"].transform(X)
    spread = Z.std(axis=0)
    assert spread.max() > 1e-3, f"{name}: every embedding dimension is constant"
    singular = np.linalg.svd(Z - Z.mean(0), compute_uv=False)
    assert (singular > 1e-3 * singular[0]).sum() >= 2, f"{name}: embeddings lie on a line"
    assert pipe.score(X[1::2], y[1::2]) > 0.9  # four well-separated blobs


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_encoder_fine_tunes_in_qmatch_classifier(name, blobs):
    X, y = blobs
    encoder = METHODS[name](**tiny_method_params(name))
    clf = QMatchClassifier(encoder, freeze_encoder=False, lr=1e-2, max_epochs=20, random_state=0,
                           device="cpu")
    assert clf.fit(X, np.where(np.arange(len(y)) % 5 == 0, y, -1)).score(X, y) > 0.8


def test_paper_param_grid():
    grid = paper_param_grid("qmatch", prefix="enc__")
    assert grid == {
        "enc__lr": [1e-5, 1e-4, 1e-3],
        "enc__student_corruption": [0.3, 0.4, 0.5],
        "enc__student_temperature": [0.05, 0.1, 0.2],
        "enc__queue_size": [512, 2048],
    }
    assert paper_param_grid("imix")["temperature"] == [0.04, 0.1, 0.15, 0.2, 0.3]
    for name in ("vime", "tabnet", "simclr", "simsiam", "dino", "vicreg"):
        assert paper_param_grid(name)["corruption"] == [0.3, 0.4, 0.5]
    assert paper_param_grid("supervised") == {"lr": [1e-5, 1e-4, 1e-3, 1e-2]}
    with_downstream = paper_param_grid("vime", prefix="encoder__", downstream_prefix="")
    assert with_downstream["lr"] == [1e-5, 1e-4, 1e-3, 1e-2]
    assert with_downstream["encoder__lr"] == [1e-5, 1e-4, 1e-3]
    # every name in every grid is a real parameter of the estimator
    for name, cls in METHODS.items():
        assert set(paper_param_grid(name)) <= set(cls().get_params())
    with pytest.raises(ValueError, match="Unknown method 'byol'"):
        paper_param_grid("byol")


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([0.2, 1.0, 3.0]))
def test_imix_beta_draws_are_scipys_inverse_cdf_of_the_same_uniforms(seed, alpha):
    """Beta(alpha, alpha) by SciPy's inverse CDF of the generator's uniforms; at
    alpha 1 the uniforms themselves, the same float32 values, kept on the device
    (so that i-Mix's default step can be recorded: ``recordable``)."""
    uniforms = torch.rand(257, generator=torch.Generator().manual_seed(seed))
    lam = imix.beta_draws(alpha, 257, torch.Generator().manual_seed(seed), "cpu")
    expected = beta.ppf(uniforms.numpy(), alpha, alpha).astype(np.float32)
    np.testing.assert_array_equal(lam.numpy(), expected)
    module = imix.IMixModule(torch.nn.Identity(), torch.nn.Identity(), alpha)
    assert module.recordable is (alpha == 1)
