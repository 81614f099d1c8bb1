"""The recorded training step's bookkeeping (issue #58), on a CPU: warm-up steps,
one capture, replays, the fall-back when a capture fails, and when fits record at
all. That the recorded step trains as the eager one is in ``tests/test_engine.py``
(the step a graph records, run eagerly) and ``tests/test_cuda.py`` (replayed)."""

import contextlib
import warnings

import pytest
import torch

from qmatch_sklearn import config_context, get_config, set_config
from qmatch_sklearn._captured_step import (
    WARMUP_STEPS,
    CapturedStep,
    captures_steps,
    warn_unrecorded,
)


class FakeGraph:
    """Stands in for ``torch.cuda.CUDAGraph``: capture runs the body once (as a real
    capture records it without running it, and the replay that follows runs it)."""

    def __init__(self):
        self.generators, self.replays = [], 0

    def register_generator_state(self, generator):
        self.generators.append(generator)

    def replay(self):
        self.replays += 1


class FakeStream:
    def __init__(self, device=None):
        self.device = device

    def wait_stream(self, other):
        pass


@pytest.fixture
def fake_cuda(monkeypatch):
    graphs = []

    def new_graph():
        graphs.append(FakeGraph())
        return graphs[-1]

    monkeypatch.setattr(torch.cuda, "Stream", FakeStream)
    monkeypatch.setattr(torch.cuda, "current_stream", FakeStream)
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "device", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", new_graph)
    monkeypatch.setattr(torch.cuda, "graph", lambda graph: contextlib.nullcontext())
    return graphs


class Step:
    """Counts its eager runs and the gradient resets; its loss is the batch's sum."""

    def __init__(self, fail_on_capture=False):
        self.runs, self.resets, self.fail_on_capture = 0, 0, fail_on_capture

    def __call__(self, x):
        self.runs += 1
        if self.fail_on_capture and self.runs == WARMUP_STEPS + 1:
            raise RuntimeError("operation not permitted when stream is capturing")
        return x.sum()

    def zero_grad(self):
        self.resets += 1


def test_warm_up_steps_run_eagerly_then_one_capture_serves_every_later_batch(fake_cuda):
    step, generator = Step(), torch.Generator()
    captured = CapturedStep(step, step.zero_grad, generator, "cuda")
    batches = [torch.full((4,), float(i)) for i in range(WARMUP_STEPS + 3)]
    losses = [float(captured(batch)) for batch in batches]
    assert captured.captured and len(fake_cuda) == 1
    (graph,) = fake_cuda
    assert graph.generators == [generator]  # each replay draws afresh
    assert step.runs == WARMUP_STEPS + 1 and step.resets == WARMUP_STEPS + 1
    assert graph.replays == 3  # the captured batch itself, then two more
    assert losses[:WARMUP_STEPS + 1] == [4.0 * i for i in range(WARMUP_STEPS + 1)]
    assert torch.equal(captured.x, batches[-1])  # replays read the batch's static copy


def test_a_step_that_cannot_be_recorded_warns_once_and_trains_on_eagerly(fake_cuda):
    step = Step(fail_on_capture=True)
    captured = CapturedStep(step, step.zero_grad, torch.Generator(), "cuda")
    for _ in range(WARMUP_STEPS):
        captured(torch.ones(2))
    with pytest.warns(RuntimeWarning, match="could not be recorded.*stream is capturing.*"
                                            "cuda_graph=False"):
        assert float(captured(torch.ones(2))) == 2.0
    assert not captured.captured and captured.failed
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        assert float(captured(torch.ones(3))) == 3.0
    assert step.runs == WARMUP_STEPS + 3


@pytest.mark.parametrize("cuda_graph, device, precision, distributed, recordable, expected", [
    (True, "cuda", "32-true", False, True, True),
    (True, "cuda:1", "bf16-mixed", False, True, True),
    (False, "cuda", "32-true", False, True, False),
    (True, "cpu", "32-true", False, True, False),
    (True, "cuda", "16-mixed", False, True, False),  # the gradient scaler reads the host
    (True, "cuda", "32-true", True, True, False),  # gradients averaged between processes
    (True, "cuda", "32-true", False, False, False),  # i-Mix's draws go through the host
])
def test_fits_record_their_step_only_where_asked_and_able(cuda_graph, device, precision,
                                                         distributed, recordable, expected):
    assert captures_steps(cuda_graph, device, precision, distributed, recordable) is expected


def test_a_torch_whose_generators_break_on_a_failed_capture_never_records(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.12.1+cu126")
    assert not captures_steps(True, "cuda", "32-true", False)
    with pytest.warns(RuntimeWarning, match=r"from torch 2\.13 on; torch 2\.12\.1\+cu126"):
        warn_unrecorded(True, "cuda:0", "32-true", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_unrecorded(False, "cuda", "32-true", False)  # not asked for
        warn_unrecorded(True, "cpu", "32-true", False)  # nothing is recorded on a CPU anyway
        warn_unrecorded(True, "cuda", "16-mixed", False)  # eager on any torch
        warn_unrecorded(True, "cuda", "32-true", False, recordable=False)


def test_the_setting_is_off_by_default_and_a_context_restores_it():
    assert get_config() == {"cuda_graph": False}
    with config_context(cuda_graph=True):
        assert get_config()["cuda_graph"] is True
        set_config()  # None leaves it as it is
        assert get_config()["cuda_graph"] is True
    assert get_config()["cuda_graph"] is False
