"""Building blocks: the encoder f(x) -> z and the small MLP heads.

The encoder follows the paper's "Model Architecture" paragraph (after i-Mix):
fully connected layers with batch normalisation and ReLU, an optional 4-way
maxout on the widest layer (``architecture="imix"``), and a linear layer to
the ``embedding_dim``-dimensional representation z that downstream tasks read.
"""

import math

import torch
from torch import nn

#: Layer widths of the paper's i-Mix encoder (2048-2048-4096-4096-8192, maxout 4).
IMIX_HIDDEN_SIZES = (2048, 2048, 4096, 4096, 8192)
#: Hidden widths of the default ``"mlp"`` encoder: small enough for a CPU.
MLP_HIDDEN_SIZES = (512, 512)
MAXOUT_PIECES = 4


class Maxout(nn.Module):
    """Maximum over consecutive groups of ``pieces`` units (Goodfellow et al., 2013)."""

    def __init__(self, pieces):
        super().__init__()
        self.pieces = pieces

    def forward(self, x):
        return x.unflatten(-1, (-1, self.pieces)).amax(-1)


def hidden_block(n_in, n_out):
    # No bias before batch norm: the norm's shift makes it redundant.
    return [nn.Linear(n_in, n_out, bias=False), nn.BatchNorm1d(n_out), nn.ReLU()]


class MLP(nn.Sequential):
    """Linear -> BatchNorm -> ReLU blocks, then a plain linear output layer.

    This is the reference code's ``MLP([512, 128])`` projection head and the
    shape of every pretext head built on top of the encoder.
    """

    def __init__(self, n_in, sizes):
        layers = []
        for width in sizes[:-1]:
            layers += hidden_block(n_in, width)
            n_in = width
        layers.append(nn.Linear(n_in, sizes[-1]))
        super().__init__(*layers)


class Encoder(nn.Sequential):
    """The representation network f: x -> z.

    Parameters
    ----------
    n_features : int
        Width of the (preprocessed) input rows.
    hidden_sizes : sequence of int
        Widths of the hidden layers.
    embedding_dim : int
        Width of z.
    architecture : {"mlp", "imix"}
        ``"imix"`` replaces the last hidden block by a linear layer followed by
        a 4-way maxout, as in the paper's i-Mix network.

    Notes
    -----
    The first layer is a batch normalisation without learnable scale and
    shift, as the paper's "Data Preprocessing" paragraph describes: training
    normalises with batch statistics and inference with their running
    averages. (The authors' JAX code freezes this layer's statistics at 0/1 so
    it never normalises; we follow the paper. Preprocess in a Pipeline all the
    same.)
    """

    def __init__(self, n_features, hidden_sizes, embedding_dim, architecture="mlp"):
        layers = [nn.BatchNorm1d(n_features, affine=False)]
        n_in = n_features
        blocks = hidden_sizes[:-1] if architecture == "imix" else hidden_sizes
        for width in blocks:
            layers += hidden_block(n_in, width)
            n_in = width
        if architecture == "imix":
            layers += [nn.Linear(n_in, hidden_sizes[-1]), Maxout(MAXOUT_PIECES)]
            n_in = hidden_sizes[-1] // MAXOUT_PIECES
        layers.append(nn.Linear(n_in, embedding_dim))
        super().__init__(*layers)


def build_encoder(n_features, hidden_sizes, embedding_dim, architecture, generator):
    """A LeCun-initialised :class:`Encoder`; ``hidden_sizes=None`` takes the
    architecture's default widths (the estimators validate the widths)."""
    if hidden_sizes is None:
        hidden_sizes = IMIX_HIDDEN_SIZES if architecture == "imix" else MLP_HIDDEN_SIZES
    sizes = tuple(hidden_sizes)
    if architecture == "imix" and sizes[-1] % MAXOUT_PIECES:
        raise ValueError(
            f"architecture='imix' needs a last hidden size divisible by {MAXOUT_PIECES} "
            f"(maxout), got {sizes[-1]}."
        )
    return lecun_normal_(Encoder(n_features, sizes, embedding_dim, architecture), generator)


def isolated_global_rng():
    """Context in which torch's default layer init cannot advance the global RNG.

    ``nn.Linear`` draws its default weights from the global generator when it
    is built; we overwrite them with :func:`lecun_normal_` from a local one, so
    building inside this context leaves the caller's random state as it was.
    """
    return torch.random.fork_rng(devices=[])


@torch.no_grad()
def lecun_normal_(module, generator):
    """Initialise every linear layer as Flax does (the reference's framework).

    Weights ~ truncated normal with variance 1 / fan_in (LeCun normal), biases
    zero. Drawing from ``generator`` keeps the global torch RNG untouched.
    """
    # std of a standard normal truncated to [-2, 2], to correct the variance
    truncated_std = 0.87962566103423978
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            std = math.sqrt(1.0 / layer.in_features) / truncated_std
            nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std, generator=generator)
            if layer.bias is not None:
                layer.bias.zero_()
    return module
