"""The numeric pieces against direct formulas: loss, queue, EMA, corruption."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from qmatch_sklearn._corruption import column_permutations, vime_corruption
from qmatch_sklearn._ema import ema_update_
from qmatch_sklearn._engine import all_finite
from qmatch_sklearn._networks import TRUNCATED_STD, lecun_normal_, truncated_normal_
from qmatch_sklearn._queue import EmbeddingQueue
from qmatch_sklearn.methods.qmatch import distribution_matching_loss


def _numpy_qmatch_loss(s, t, Q, tau_s, tau_t):
    s = s / np.linalg.norm(s, axis=1, keepdims=True)
    t = t / np.linalg.norm(t, axis=1, keepdims=True)
    teacher_logits = t @ Q.T / tau_t
    p_t = np.exp(teacher_logits - teacher_logits.max(1, keepdims=True))
    p_t /= p_t.sum(1, keepdims=True)
    student_logits = s @ Q.T / tau_s
    shifted = student_logits - student_logits.max(1, keepdims=True)
    log_p_s = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return float(np.mean(-(p_t * log_p_s).sum(1)))


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 9),
    queue=st.integers(1, 17),
    dim=st.integers(2, 6),
    tau_s=st.sampled_from([0.05, 0.1, 0.2, 1.0]),
    tau_t=st.sampled_from([0.04, 0.1]),
    seed=st.integers(0, 2**16),
)
def test_loss_matches_numpy_formula(batch, queue, dim, tau_s, tau_t, seed):
    rng = np.random.default_rng(seed)
    s, t = rng.normal(size=(batch, dim)), rng.normal(size=(batch, dim))
    t /= np.linalg.norm(t, axis=1, keepdims=True)  # the module hands the loss t normalised
    Q = rng.normal(size=(queue, dim))
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    expected = _numpy_qmatch_loss(s, t, Q, tau_s, tau_t)
    got = distribution_matching_loss(
        torch.tensor(s), torch.tensor(t), torch.tensor(Q), tau_s, tau_t
    ).item()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_loss_gradient_flows_to_student_only():
    s = torch.randn(4, 3, requires_grad=True)
    t = torch.randn(4, 3, requires_grad=True)
    Q = torch.nn.functional.normalize(torch.randn(5, 3), dim=1).requires_grad_(True)
    distribution_matching_loss(s, t, Q, 0.1, 0.04).backward()
    assert s.grad is not None and s.grad.abs().sum() > 0
    assert t.grad is None and Q.grad is None


def test_loss_is_minimal_when_student_matches_teacher_at_equal_temperature():
    Q = torch.nn.functional.normalize(torch.randn(16, 4), dim=1)
    t = torch.nn.functional.normalize(torch.randn(3, 4), dim=1)
    same = distribution_matching_loss(t, t, Q, 0.1, 0.1)
    other = distribution_matching_loss(torch.randn(3, 4), t, Q, 0.1, 0.1)
    assert same < other  # H(p, q) >= H(p, p), with equality iff q == p


def _fifo(queue):
    """The queue's rows newest first (its buffer is a ring whose newest row is ``head``)."""
    return queue.embeddings.roll(-int(queue.head), 0)


def test_queue_starts_as_unit_vectors_and_is_newest_first_fifo():
    queue = EmbeddingQueue(5, 3, generator=torch.Generator().manual_seed(0))
    np.testing.assert_allclose(queue.embeddings.norm(dim=1).numpy(), 1.0, rtol=1e-6)
    old = queue.embeddings.clone()
    address = queue.embeddings.data_ptr()
    first = torch.arange(6.0).reshape(2, 3)
    queue.push(first)
    torch.testing.assert_close(_fifo(queue), torch.cat([first, old[:3]]))
    second = torch.arange(6.0, 15.0).reshape(3, 3)
    queue.push(second)
    # newest batch on top, then the previous batch, then the oldest survivors
    torch.testing.assert_close(_fifo(queue), torch.cat([second, first]))
    # a batch larger than the queue keeps its first rows
    third = torch.arange(18.0).reshape(6, 3)
    queue.push(third)
    torch.testing.assert_close(_fifo(queue), third[:5])
    assert queue.embeddings.data_ptr() == address  # written in place: a fixed address


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 9), batches=st.lists(st.integers(1, 12), min_size=1, max_size=8))
def test_the_ring_holds_what_a_fifo_of_concatenations_holds(size, batches):
    queue = EmbeddingQueue(size, 2, generator=torch.Generator().manual_seed(0))
    reference = queue.embeddings.clone()
    start = 0.0
    for n in batches:
        batch = torch.arange(start, start + 2 * n).reshape(n, 2)
        start += 2 * n
        queue.push(batch)
        reference = torch.cat([batch, reference])[:size]
        torch.testing.assert_close(_fifo(queue), reference)


def test_queue_push_does_not_track_gradients():
    queue = EmbeddingQueue(4, 2)
    queue.push(torch.ones(1, 2, requires_grad=True) * 2)
    assert not queue.embeddings.requires_grad


@settings(max_examples=20, deadline=None)
@given(decay=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_ema_update_matches_formula(decay, seed):
    torch.manual_seed(seed)
    student, teacher = nn.Linear(3, 2), nn.Linear(3, 2)
    expected = [decay * pt.detach() + (1 - decay) * ps.detach()
                for pt, ps in zip(teacher.parameters(), student.parameters(), strict=True)]
    ema_update_(teacher.parameters(), student.parameters(), decay)
    for got, want in zip(teacher.parameters(), expected, strict=True):
        torch.testing.assert_close(got.detach(), want)


@settings(max_examples=20, deadline=None)
@given(decay=st.floats(0.0, 1.0), seed=st.integers(0, 2**16))
def test_the_foreach_ema_is_the_per_tensor_lerp_to_the_bit(decay, seed):
    torch.manual_seed(seed)
    student, teacher = nn.Linear(5, 3), nn.Linear(5, 3)
    expected = [t.detach().clone().lerp_(s.detach(), 1.0 - decay)
                for t, s in zip(teacher.parameters(), student.parameters(), strict=True)]
    ema_update_(teacher.parameters(), student.parameters(), decay)
    for got, want in zip(teacher.parameters(), expected, strict=True):
        assert torch.equal(got.detach(), want)
    with pytest.raises(ValueError, match="2 teacher parameters for 1 student"):
        ema_update_(teacher.parameters(), [student.weight], decay)


@settings(max_examples=25, deadline=None)
@given(p=st.floats(0.05, 0.95), seed=st.integers(0, 2**31 - 1))
def test_corruption_rate_is_p(p, seed):
    x = torch.randn(400, 50)
    _, mask = vime_corruption(x, p, torch.Generator().manual_seed(seed))
    n = mask.numel()
    # 5 standard deviations of a Binomial(n, p) proportion
    assert abs(mask.float().mean().item() - p) < 5 * np.sqrt(p * (1 - p) / n)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 8),
    p=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**31 - 1),
)
def test_corruption_replaces_masked_entries_from_the_same_column(n, d, p, seed):
    x = torch.randn(n, d, dtype=torch.float64)
    original = x.clone()
    x_tilde, mask = vime_corruption(x, p, torch.Generator().manual_seed(seed))
    torch.testing.assert_close(x, original)  # input untouched
    torch.testing.assert_close(x_tilde[~mask], x[~mask])  # kept entries unchanged
    for j in range(d):
        column = set(x[:, j].tolist())
        assert set(x_tilde[mask[:, j], j].tolist()) <= column


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 1100),
    g=st.integers(1, 9),
    levels=st.sampled_from([2, 7, 2**24]),
    seed=st.integers(0, 2**31 - 1),
)
def test_column_permutations_are_the_stable_argsort(n, g, levels, seed):
    """The CPU sort on packed int64 keys is torch's stable argsort of each column,
    ties included (keys drawn from a few levels make many), for batches above and
    below a power of two."""
    generator = torch.Generator().manual_seed(seed)
    keys = torch.randint(0, levels, (n, g), generator=generator).float() / levels
    perm = column_permutations(keys)
    assert perm.dtype == torch.int64 and perm.shape == (n, g)
    assert torch.equal(perm, keys.argsort(dim=0, stable=True))


def test_corruption_extremes_and_determinism():
    x = torch.randn(64, 5)
    same, mask = vime_corruption(x, 0.0, torch.Generator().manual_seed(0))
    assert not mask.any() and torch.equal(same, x)
    shuffled, mask = vime_corruption(x, 1.0, torch.Generator().manual_seed(0))
    assert mask.all()
    # p = 1 replaces every column by a permutation of itself
    torch.testing.assert_close(shuffled.sort(dim=0).values, x.sort(dim=0).values)
    again, _ = vime_corruption(x, 1.0, torch.Generator().manual_seed(0))
    assert torch.equal(shuffled, again)


@settings(max_examples=50, deadline=None)
@given(
    shapes=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=4),
    bad=st.lists(st.sampled_from([np.nan, np.inf, -np.inf]), max_size=3),
    seed=st.integers(0, 2**16),
)
def test_all_finite_agrees_with_isfinite(shapes, bad, seed):
    """The divergence guard's check, one norm per tensor, against an entry-wise test
    (finite entries up to 1e18 in size; past about 1e19 their squares overflow)."""
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 18)).astype(np.float32)
              for shape in shapes]
    for value in bad:
        array = arrays[rng.integers(len(arrays))]
        array.flat[rng.integers(array.size)] = value
    expected = all(np.isfinite(a).all() for a in arrays)
    assert all_finite([torch.from_numpy(a) for a in arrays]) is expected


@settings(max_examples=20, deadline=None)
@given(std=st.floats(1e-4, 10.0), seed=st.integers(0, 2**31 - 1))
def test_truncated_normal_is_the_normal_truncated_at_two_deviations(std, seed):
    """Inside [-2 std, 2 std], with the truncated normal's deviation and quartiles,
    reproducible from the generator, and the global RNG untouched."""
    state = torch.random.get_rng_state()
    x = truncated_normal_(torch.empty(200_000), std, torch.Generator().manual_seed(seed))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert x.abs().max() <= 2 * std
    assert abs(x.mean().item()) < 5 * std / np.sqrt(len(x))
    np.testing.assert_allclose(x.std().item(), std * TRUNCATED_STD, rtol=0.01)
    # the quartiles of N(0, 1) truncated to [-2, 2] (scipy.stats.truncnorm): +-0.6391
    # (one standard error of a quartile of 200,000 draws: 0.0029)
    quartiles = np.quantile(x.numpy(), [0.25, 0.75]) / std
    np.testing.assert_allclose(quartiles, [-0.6391, 0.6391], atol=0.02)
    again = truncated_normal_(torch.empty(200_000), std, torch.Generator().manual_seed(seed))
    assert torch.equal(x, again)


def test_lecun_normal_gives_each_linear_layer_variance_one_over_fan_in():
    layers = lecun_normal_(nn.Sequential(nn.Linear(400, 300), nn.Linear(300, 200)),
                           torch.Generator().manual_seed(0))
    for layer in layers:
        np.testing.assert_allclose(layer.weight.var().item(), 1 / layer.in_features, rtol=0.02)
        assert torch.count_nonzero(layer.bias) == 0
