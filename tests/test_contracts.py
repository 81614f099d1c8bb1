"""Pins that guard refactors of the method contracts (issue #14).

Two fits with the same seed give the same embeddings, and each loss module
gives a pinned value on fixed float64 inputs (the values the loss functions
gave before they became modules). The inputs come from NumPy's PCG64
(portable), so the numbers hold on any machine; embedding checksums would not.
"""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone

from qmatch_sklearn import (
    METHODS,
    QMatchClassifier,
    SupervisedMLPClassifier,
    _corruption,
    save,
)
from qmatch_sklearn.methods._base import TwoViewOutput
from qmatch_sklearn.methods.dino import DINOLoss, DINOOutput
from qmatch_sklearn.methods.qmatch import QMatchLoss, QMatchOutput
from qmatch_sklearn.methods.vicreg import VICRegLoss

from .conftest import tiny_method_params

PINNED_METHODS = ["qmatch", "vicreg", "dino"]


def fixed_tensors(*shapes):
    rng = np.random.default_rng(2024)
    return [torch.tensor(rng.normal(size=shape), dtype=torch.float64) for shape in shapes]


def qmatch_loss_value():
    student, teacher, queue = fixed_tensors((6, 4), (6, 4), (10, 4))
    # the module hands the loss its teacher and queue normalised
    teacher, queue = (torch.nn.functional.normalize(t, dim=1) for t in (teacher, queue))
    loss = QMatchLoss(student_temperature=0.1, teacher_temperature=0.04)
    return loss(QMatchOutput(student, teacher, queue)).item()


def vicreg_loss_value():
    z_a, z_b = fixed_tensors((8, 5), (8, 5))
    loss = VICRegLoss(invariance_weight=25.0, variance_weight=25.0, covariance_weight=1.0)
    return loss(TwoViewOutput(z_a, z_b)).item()


def dino_loss_value():
    s_a, s_b, t_a, t_b, center = fixed_tensors((6, 7), (6, 7), (6, 7), (6, 7), (7,))
    loss = DINOLoss(student_temperature=0.15, teacher_temperature=0.04)
    return loss(DINOOutput(s_a, s_b, t_a, t_b, center)).item()


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


def test_a_loss_module_names_the_shape_it_expected():
    student, teacher, queue = fixed_tensors((6, 4), (6, 3), (10, 4))
    expected = r"QMatchLoss expects teacher of shape \(batch=6, dim=4\), got \(6, 3\)"
    with pytest.raises(ValueError, match=expected):
        QMatchLoss(0.1, 0.04)(QMatchOutput(student, teacher, queue))
    with pytest.raises(ValueError, match=r"DINOLoss expects center of shape \(n_prototypes=7\)"):
        s_a, s_b, t_a, t_b, center = fixed_tensors((6, 7), (6, 7), (6, 7), (6, 7), (5,))
        DINOLoss(0.15, 0.04)(DINOOutput(s_a, s_b, t_a, t_b, center))


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_returns_named_outputs_its_loss_reads(name):
    """forward returns a NamedTuple (fields by name, no positional contract) that the
    method's loss module turns into a scalar."""
    estimator = METHODS[name](**tiny_method_params(name))
    generator = torch.Generator().manual_seed(0)
    module, loss = estimator._build_pretext(5, generator, None)
    assert isinstance(loss, torch.nn.Module)
    outputs = module(torch.randn(16, 5, generator=generator), generator)
    assert isinstance(outputs, tuple) and hasattr(outputs, "_fields")
    value = loss(outputs)
    assert value.shape == () and torch.isfinite(value)


#: Methods without corruption: i-Mix mixes rows instead.
UNCORRUPTED = {"imix"}


@pytest.mark.parametrize("name", sorted(set(METHODS) - UNCORRUPTED))
def test_every_corrupting_method_takes_its_kind_from_corruption_type(name, monkeypatch):
    """The kind is a parameter of every method that corrupts, and goes through the registry."""
    calls = []

    def spy(x, p, generator=None, groups=None, n_groups=None):
        calls.append(p)
        return _corruption.zero_corruption(x, p, generator, groups, n_groups)

    monkeypatch.setitem(_corruption.CORRUPTIONS, "zero", spy)
    estimator = METHODS[name](**tiny_method_params(name, corruption_type="zero"))
    assert estimator.get_params()["corruption_type"] == "zero"
    generator = torch.Generator().manual_seed(0)
    module, loss = estimator._build_pretext(5, generator, None)
    loss(module(torch.randn(16, 5, generator=generator), generator))
    assert calls, f"{name} did not corrupt through corruption_type"


def test_imix_has_no_corruption_parameter():
    assert "corruption_type" not in METHODS["imix"]().get_params()
    assert "feature_groups" not in METHODS["imix"]().get_params()


def test_an_unknown_corruption_type_is_refused_early():
    X = np.zeros((10, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="'corruption_type' parameter of VIMEEncoder must be"):
        METHODS["vime"](corruption_type="gaussian").fit(X)


def test_corruption_kinds_share_one_signature():
    x = torch.arange(12.0).reshape(4, 3)
    for kind in _corruption.CORRUPTIONS:
        x_tilde, mask = _corruption.corrupt(kind, x, 0.5, torch.Generator().manual_seed(0))
        assert x_tilde.shape == x.shape and mask.dtype == torch.bool and mask.shape == x.shape
        assert torch.equal(x_tilde[~mask], x[~mask])


def small_network(n_features, embedding_dim):
    """A network of the user's own: a factory, importable so that it pickles."""
    return torch.nn.Sequential(
        torch.nn.Linear(n_features, 16), torch.nn.ReLU(), torch.nn.Linear(16, embedding_dim)
    )


def user_params(name="qmatch", **overrides):
    return tiny_method_params(name, **{"hidden_sizes": None, "max_epochs": 2, **overrides})


@pytest.fixture(scope="module")
def X():
    return np.random.default_rng(0).normal(size=(120, 6)).astype(np.float32)


@pytest.mark.parametrize("name", list(METHODS))
def test_a_factory_architecture_trains_with_every_method(name, X):
    encoder = METHODS[name](**user_params(name, architecture=small_network)).fit(X)
    assert isinstance(encoder.network_, torch.nn.Sequential) and len(encoder.network_) == 3
    assert encoder.transform(X).shape == (len(X), 8)


def test_a_factory_architecture_is_seeded_by_random_state(X):
    def fit(seed):
        params = user_params(architecture=small_network, random_state=seed)
        return METHODS["qmatch"](**params).fit(X).transform(X)

    np.testing.assert_array_equal(fit(0), fit(0))
    assert not np.array_equal(fit(0), fit(1))


def test_a_module_architecture_is_copied_at_fit(X):
    network = small_network(6, 8)
    before = {k: v.clone() for k, v in network.state_dict().items()}
    estimator = METHODS["vicreg"](**user_params("vicreg", architecture=network))
    first = estimator.fit(X).transform(X)
    assert estimator.network_ is not network
    assert all(torch.equal(before[k], v) for k, v in network.state_dict().items())
    # a refit starts from the same weights again: same seed, same result
    np.testing.assert_array_equal(estimator.fit(X).transform(X), first)
    clone_ = clone(estimator).fit(X)
    assert clone_.network_ is not estimator.network_
    np.testing.assert_array_equal(clone_.transform(X), first)


def test_a_user_network_of_the_wrong_width_is_refused_early(X):
    def wrong(n_features, embedding_dim):
        return torch.nn.Linear(n_features, embedding_dim + 1)

    with pytest.raises(ValueError, match=r"expected \(batch=2, embedding_dim=8\)"):
        METHODS["qmatch"](**user_params(architecture=wrong)).fit(X)
    with pytest.raises(TypeError, match=r"must return a torch.nn.Module"):
        METHODS["qmatch"](**user_params(architecture=lambda n, d: "mlp")).fit(X)
    with pytest.raises(ValueError, match="leave it None"):
        METHODS["qmatch"](**user_params(architecture=small_network, hidden_sizes=(8,))).fit(X)


def test_an_unknown_architecture_name_is_refused_with_the_choices(X):
    with pytest.raises(ValueError, match=r"'architecture' parameter of QMatchEncoder must be.*"
                                         r"'imix'.*torch.nn.Module"):
        METHODS["qmatch"](architecture="resnet").fit(X)


def test_a_user_architecture_pickles_but_save_refuses_it(X, tmp_path):
    encoder = METHODS["qmatch"](**user_params(architecture=small_network)).fit(X)
    restored = pickle.loads(pickle.dumps(encoder))
    np.testing.assert_array_equal(restored.transform(X), encoder.transform(X))
    with pytest.raises(TypeError, match=r"cannot store 'architecture': it is code"):
        save(encoder, tmp_path / "encoder.safetensors")
    classifier = QMatchClassifier(encoder, freeze_encoder=True, max_epochs=2, device="cpu")
    with pytest.raises(TypeError, match=r"cannot store 'encoder.architecture'"):
        save(classifier, tmp_path / "classifier.safetensors")


@pytest.mark.parametrize("freeze", [True, False])
def test_classifiers_take_a_user_architecture_and_pickle(X, freeze):
    y = (X[:, 0] > 0).astype(int)
    encoder = METHODS["qmatch"](**user_params(architecture=small_network))
    classifiers = [
        QMatchClassifier(encoder, freeze_encoder=freeze, max_epochs=2, random_state=0,
                         device="cpu"),
        SupervisedMLPClassifier(architecture=small_network, embedding_dim=8, max_epochs=2,
                                random_state=0, device="cpu"),
    ]
    for classifier in classifiers:
        classifier.fit(X, y)
        restored = pickle.loads(pickle.dumps(classifier))
        np.testing.assert_array_equal(restored.predict_proba(X), classifier.predict_proba(X))
