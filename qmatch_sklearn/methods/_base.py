"""What a self-supervised method hands to the shared engine."""

from torch import nn


class PretextModule(nn.Module):
    """Base class of a method's network: the encoder plus its pretext parts.

    A method subclasses this with two methods, and pairs it with a loss
    module (the skorch criterion):

    * ``forward(x, generator)`` builds the method's views of the clean batch
      ``x`` (drawing randomness only from ``generator``) and returns the tuple
      of tensors its loss takes;
    * ``after_step(outputs)`` runs after each optimiser step with that tuple
      (momentum teachers, queues); it is not called during validation.

    ``encoder`` is what the fitted estimator keeps for ``transform``.
    """

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, x, generator):  # pragma: no cover - abstract
        raise NotImplementedError

    def after_step(self, outputs):
        """Hook for state updated outside the gradient step; nothing by default."""
