"""A pretext training step recorded once as a CUDA graph and replayed (issue #58).

A host-bound step of a couple of hundred kernel launches becomes one launch
(``torch.cuda.graphs``). :func:`~._config.set_config` turns it on (``cuda_graph=True``).
"""

import warnings

import torch

from ._warnings import warn

#: Eager steps before the capture: state and workspaces a capture may not allocate.
WARMUP_STEPS = 3


#: The first torch whose generators survive a failed capture, so the fit can go on eagerly.
MIN_TORCH = (2, 13)


def torch_records_steps():
    """Whether the installed torch is ``MIN_TORCH`` or later."""
    return tuple(int(part) for part in torch.__version__.split(".")[:2]) >= MIN_TORCH


def _asked_and_able(cuda_graph, device, precision, distributed, recordable):
    """``cuda_graph`` on CUDA for a ``recordable`` method, neither ``"16-mixed"`` (whose
    scaler reads the host) nor distributed: all a recorded step needs but the torch."""
    able = recordable and torch.device(device).type == "cuda"
    return bool(cuda_graph) and able and not (precision == "16-mixed" or distributed)


def captures_steps(cuda_graph, device, precision, distributed, recordable=True):
    """Whether a pretext fit records its step: :func:`_asked_and_able` on torch
    ``MIN_TORCH`` or later."""
    return torch_records_steps() and _asked_and_able(cuda_graph, device, precision,
                                                     distributed, recordable)


def warn_unrecorded(cuda_graph, device, precision, distributed, recordable=True):
    """Warn where a fit would record its step (:func:`captures_steps`) but for this torch,
    older than ``MIN_TORCH``: every step then runs eagerly."""
    if not torch_records_steps() and _asked_and_able(cuda_graph, device, precision,
                                                     distributed, recordable):
        warn(f"set_config(cuda_graph=True) records the training step from torch "
             f"{'.'.join(map(str, MIN_TORCH))} on; torch {torch.__version__} trains eagerly.",
             RuntimeWarning)


class CapturedStep:
    """``step(x) -> loss`` run eagerly for ``WARMUP_STEPS`` batches, then recorded as a CUDA
    graph and replayed for every later batch of the same size; ``generator`` is registered
    with it so each replay draws afresh. A failed capture warns once; later steps run eagerly.
    """

    def __init__(self, step, zero_grad, generator, device):
        self.step, self.zero_grad, self.generator = step, zero_grad, generator
        self.device = torch.device(device)
        self.graph = self.x = self.loss = None
        self.eager_steps = 0
        self.failed = False
        self.side_stream = torch.cuda.Stream(self.device)

    @property
    def captured(self):
        """Whether the graph is recorded (its gradients must then stay where they are)."""
        return self.graph is not None

    def __call__(self, x):
        with torch.cuda.device(self.device):  # streams and capture on the fit's GPU
            if self.captured:
                self.x.copy_(x)
                self.graph.replay()
                return self.loss.clone()
            if self.failed or self.eager_steps < WARMUP_STEPS:
                return self._eager(x)
            return self._capture(x)

    def _eager(self, x):
        self.eager_steps += 1
        self.zero_grad()
        if self.failed:
            return self.step(x)
        self.side_stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.side_stream):
            loss = self.step(x)
        torch.cuda.current_stream(self.device).wait_stream(self.side_stream)
        return loss

    def _capture(self, x):
        self.x = x.clone()
        self.zero_grad()
        graph = torch.cuda.CUDAGraph()
        try:
            graph.register_generator_state(self.generator)
            with torch.cuda.graph(graph):
                self.loss = self.step(self.x)
        except RuntimeError as error:
            self.failed, self.x, self.loss = True, None, None
            warnings.warn(
                f"The pretext training step could not be recorded as a CUDA graph ({error}); "
                "training goes on eagerly. qmatch_sklearn.set_config(cuda_graph=False) "
                "skips the attempt.", RuntimeWarning, stacklevel=2)
            return self._eager(x)
        self.graph = graph
        graph.replay()
        return self.loss.clone()
