"""A pretext training step recorded once as a CUDA graph and replayed (issue #58).

On a GPU the default network's step is bound by the host: each of its couple of
hundred kernels is launched from Python, and the GPU waits between them. Recorded
as a CUDA graph (PyTorch's whole-network capture: ``torch.cuda.graphs``), a step
is one launch. :func:`~._config.set_config` turns it on (``cuda_graph=True``).
"""

import warnings

import torch

#: Eager steps before the capture: AdamW builds its state, the libraries their
#: workspaces, none of which a capture may allocate.
WARMUP_STEPS = 3


#: The first torch whose generators survive a failed capture (their capture state is
#: kept per capture), so that the fit can go on eagerly.
MIN_TORCH = (2, 13)


def captures_steps(cuda_graph, device, precision, distributed, recordable=True):
    """Whether a pretext fit records its step: asked for (``cuda_graph``), on a CUDA
    ``device`` with torch ``MIN_TORCH`` or later, a ``recordable`` method (see
    ``PretextModule.recordable``), and neither ``precision="16-mixed"`` (its
    gradient scaler reads the host at each step) nor ``distributed`` (gradients
    averaged between processes)."""
    version = tuple(int(part) for part in torch.__version__.split(".")[:2])
    able = recordable and version >= MIN_TORCH and torch.device(device).type == "cuda"
    return bool(cuda_graph) and able and not (precision == "16-mixed" or distributed)


class CapturedStep:
    """``step(x) -> loss`` run eagerly for ``WARMUP_STEPS`` batches on a side stream,
    then recorded as a CUDA graph on a static copy of the batch and replayed for
    every later batch of the same size.

    ``step`` (the corruption, both forwards, the loss, backward, the optimizer's
    step and the method's ``after_step``) reads no host value and keeps its
    state in tensors updated in place (the sync sentinel test holds the pretext
    step to both); its random draws come from ``generator``, registered with the
    graph so that each replay draws afresh, as an eager step would. Before the
    capture ``zero_grad`` sets the gradients to None, so the graph allocates the
    gradients it writes at every replay; an eager step afterwards (the last,
    shorter batch of an epoch) must zero them in place (:attr:`captured`).

    Returns each step's loss as a tensor on the device. A step that cannot be
    recorded warns once, naming the error, and every later step runs eagerly.
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
