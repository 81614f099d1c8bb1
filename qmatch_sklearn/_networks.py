"""Building blocks: the encoder f(x) -> z and the small MLP heads.

The encoder follows the paper's "Model Architecture" paragraph (after i-Mix): fully connected
layers with batch normalisation and ReLU, an optional 4-way maxout on the widest layer
(``architecture="imix"``), and a linear layer to z. ``architecture`` names one of
:data:`ARCHITECTURES` or gives the user's own network; :func:`build_encoder` tells them apart."""

import copy
import math
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

#: Layer widths of the paper's i-Mix encoder (2048-2048-4096-4096-8192, maxout 4).
IMIX_HIDDEN_SIZES = (2048, 2048, 4096, 4096, 8192)
#: Hidden widths of the default ``"mlp"`` encoder: small enough for a CPU.
MLP_HIDDEN_SIZES = (512, 512)
MAXOUT_PIECES = 4


class MissingValues(nn.Module):
    """x -> [x with each NaN replaced by its column's fill value, 1{x_j is NaN} for j in
    ``indicated``]: the input layer of an encoder fitted on rows with missing values.

    Parameters
    ----------
    fill_values : Tensor of shape (n_features,)
        Each column's observed mean at fit.
    indicated : Tensor of int64
        The columns whose missingness was informative at fit
        (:func:`~._table.informative_missingness`): each gets an indicator channel. A
        NaN in another column is filled all the same.
    """

    def __init__(self, fill_values, indicated):
        super().__init__()
        # copies: the arrays may be read-only (a memory-mapped, unpickled estimator)
        self.register_buffer("fill_values", torch.tensor(fill_values, dtype=torch.float32))
        self.register_buffer("indicated", torch.tensor(indicated, dtype=torch.int64))

    @property
    def n_outputs(self):
        return len(self.fill_values) + len(self.indicated)

    def forward(self, x):
        missing = torch.isnan(x)
        filled = torch.where(missing, self.fill_values.to(x.dtype), x)
        return torch.cat([filled, missing[:, self.indicated].to(x.dtype)], dim=1)


class Maxout(nn.Module):
    """Maximum over consecutive groups of ``pieces`` units (Goodfellow et al., 2013)."""

    def __init__(self, pieces):
        super().__init__()
        self.pieces = pieces

    def forward(self, x):
        return x.unflatten(-1, (-1, self.pieces)).amax(-1)


class InputScale(nn.Module):
    """``x -> weight * clip(compression * (x - mean), -BOUND, BOUND)`` per column: the
    encoder's first layer, for the authors' input batch norm with statistics frozen at 0/1.

    ``weight`` is learned; ``mean`` and ``compression`` (at most 1) are fixed from the fit rows
    (:func:`~._table.center_input`), so that sparse and dense rows train alike and no fit row
    of a column of rare values enters beyond ``BOUND`` standard deviations. No shift (the next
    layer has a bias or a batch norm), and no normalisation, which would undo the numeric map's
    bound (:mod:`._table`; docs/design.md, "input batch norm")."""

    #: The largest value a fit row enters with, in its column's standard deviations.
    BOUND = 3.0

    def __init__(self, n_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_features))
        self.register_buffer("mean", torch.empty(n_features))
        self.register_buffer("compression", torch.empty(n_features))
        self.register_buffer("bound", torch.empty(n_features))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        """Weight 1, mean 0, compression 1, bounds float32's largest (finite, as a saved file's
        numbers must be) until :func:`~._table.center_input` sets them."""
        self.weight.fill_(1.0)
        self.mean.zero_()
        self.compression.fill_(1.0)
        self.bound.fill_(torch.finfo(torch.float32).max)

    def forward(self, x):
        bounded = torch.clamp((x - self.mean) * self.compression, -self.bound, self.bound)
        return bounded * self.weight


def hidden_block(n_in, n_out):
    # No bias before batch norm: the norm's shift makes it redundant.
    return [nn.Linear(n_in, n_out, bias=False), nn.BatchNorm1d(n_out), nn.ReLU()]


class MLP(nn.Sequential):
    """Linear -> BatchNorm -> ReLU blocks, then a plain linear output layer: the reference's
    ``MLP([512, 128])`` projection head and the shape of every pretext head."""

    def __init__(self, n_in, sizes):
        layers = []
        for width in sizes[:-1]:
            layers += hidden_block(n_in, width)
            n_in = width
        layers.append(nn.Linear(n_in, sizes[-1]))
        super().__init__(*layers)


class Encoder(nn.Sequential):
    """The representation network f: x -> z, after an :class:`InputScale` layer.

    Parameters
    ----------
    n_features : int
        Width of the (preprocessed) input rows.
    hidden_sizes : sequence of int
        Widths of the hidden layers.
    embedding_dim : int
        Width of z.
    architecture : {"mlp", "imix"}
        ``"imix"`` ends in a linear layer and a 4-way maxout, as the paper's i-Mix network.
    """

    def __init__(self, n_features, hidden_sizes, embedding_dim, architecture="mlp"):
        imix = architecture == "imix"
        layers = [InputScale(n_features),
                  *MLP(n_features, hidden_sizes if imix else (*hidden_sizes, embedding_dim))]
        if imix:
            layers += [Maxout(MAXOUT_PIECES),
                       nn.Linear(hidden_sizes[-1] // MAXOUT_PIECES, embedding_dim)]
        super().__init__(*layers)


#: The built-in architectures by name, with their default hidden widths.
ARCHITECTURES = {"mlp": MLP_HIDDEN_SIZES, "imix": IMIX_HIDDEN_SIZES}


def build_encoder(n_features, hidden_sizes, embedding_dim, architecture, generator):
    """The encoder network f that ``architecture`` describes, freshly initialised: a
    LeCun-initialised :class:`Encoder` (``hidden_sizes=None``: the architecture's default
    widths), or the user's own by :func:`build_user_encoder`."""
    if not isinstance(architecture, str):
        return build_user_encoder(n_features, hidden_sizes, embedding_dim, architecture, generator)
    if hidden_sizes is None:
        hidden_sizes = ARCHITECTURES[architecture]
    sizes = tuple(hidden_sizes)
    if architecture == "imix" and sizes[-1] % MAXOUT_PIECES:
        raise ValueError(
            f"architecture='imix' needs a last hidden size divisible by {MAXOUT_PIECES} "
            f"(maxout), got {sizes[-1]}."
        )
    # built on meta, skipping the default init that lecun_normal_ overwrites
    device = torch.empty(0).device
    with torch.device("meta"):
        encoder = Encoder(n_features, sizes, embedding_dim, architecture)
    encoder.to_empty(device=device)
    for layer in encoder.modules():
        if not isinstance(layer, nn.Linear) and hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
    return lecun_normal_(encoder, generator)


def build_user_encoder(n_features, hidden_sizes, embedding_dim, architecture, generator):
    """The user's network: a deep copy of a module (as skorch's ``module=``: clones and refits
    never share weights), or what ``architecture(n_features, embedding_dim)`` returns under
    torch's global RNG seeded from ``generator``. A dry run checks its output shape."""
    if hidden_sizes is not None:
        raise ValueError(
            "hidden_sizes sets the widths of the built-in architectures ('mlp', 'imix'); "
            f"with a network of your own (architecture={architecture!r}) leave it None."
        )
    if isinstance(architecture, nn.Module):
        network = copy.deepcopy(architecture)
    else:
        seed = int(torch.randint(2**62, (1,), generator=generator))
        with isolated_global_rng():
            torch.manual_seed(seed)
            network = architecture(n_features, embedding_dim)
        if not isinstance(network, nn.Module):
            raise TypeError(
                f"architecture(n_features, embedding_dim) must return a torch.nn.Module; "
                f"{architecture!r} returned {type(network).__name__}."
            )
    check_encoder_output(network, n_features, embedding_dim)
    return network


def check_encoder_output(network, n_features, embedding_dim):
    """Raise a ValueError unless ``network`` maps (2, n_features) to (2, embedding_dim)."""
    training = network.training
    try:
        with torch.no_grad(), isolated_global_rng():
            parameter = next(network.parameters(), None)
            device = parameter.device if parameter is not None else "cpu"
            shape = tuple(network.eval()(torch.zeros(2, n_features, device=device)).shape)
    finally:
        network.train(training)
    if shape != (2, embedding_dim):
        raise ValueError(
            f"The network given as architecture maps input of shape (batch=2, "
            f"n_features={n_features}) to shape {shape}; expected (batch=2, "
            f"embedding_dim={embedding_dim}). Build it for those widths."
        )


@contextmanager
def batch_statistics(module):
    """``module`` in train mode, its batch norms normalising by each batch's statistics without
    updating their running ones: a loss as training measures it (docs/design.md)."""
    norms = [layer for layer in module.modules()
             if isinstance(layer, nn.modules.batchnorm._BatchNorm) and layer.track_running_stats]
    training = module.training
    module.train()
    for layer in norms:
        layer.track_running_stats = False
    try:
        yield module
    finally:
        for layer in norms:
            layer.track_running_stats = True
        module.train(training)


def isolated_global_rng():
    """Context in which building layers (default init) leaves torch's global RNG as it was."""
    return torch.random.fork_rng(devices=[])


#: Standard deviation of a standard normal truncated to [-2, 2].
TRUNCATED_STD = 0.87962566103423978


@torch.no_grad()
def truncated_normal_(tensor, std, generator):
    """Fill ``tensor`` with N(0, std^2) draws truncated to [-2 std, 2 std], in one pass by the
    inverse normal CDF as ``jax.random.truncated_normal`` (``nn.init.trunc_normal_`` redraws
    the whole tensor until none falls outside): x = std sqrt(2) erfinv(u),
    u ~ U(-erf(sqrt 2), erf(sqrt 2))."""
    bound = math.erf(math.sqrt(2.0))
    tensor.uniform_(-bound, bound, generator=generator).erfinv_()
    return tensor.mul_(std * math.sqrt(2.0)).clamp_(-2.0 * std, 2.0 * std)


@torch.no_grad()
def lecun_normal_(module, generator):
    """Initialise every linear layer as Flax does (the reference's framework): LeCun normal
    weights (truncated, variance 1 / fan_in) from ``generator``, zero biases."""
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            truncated_normal_(layer.weight, layer.in_features**-0.5 / TRUNCATED_STD, generator)
            if layer.bias is not None:
                layer.bias.zero_()
    return module


class EncoderNetworkMixin:
    """Builds the encoder network of an estimator with the ``NETWORK_CONSTRAINTS`` parameters."""

    def _build_encoder(self, n_features, generator, missing=None):
        """The encoder for rows of ``n_features`` columns, behind ``missing`` (a
        :class:`MissingValues` layer) if given."""
        width = n_features if missing is None else missing.n_outputs
        encoder = build_encoder(width, self.hidden_sizes, self.embedding_dim, self.architecture,
                                generator)
        return encoder if missing is None else nn.Sequential(missing, encoder)

    def _encoder_skeleton(self):
        """The fitted encoder's shape, untrained (its weights are about to be loaded)."""
        missing = None
        if self._table_input.fitted_with_missing:
            missing = MissingValues(np.zeros(self._table_input.n_inputs, dtype=np.float32),
                                    self._table_input.indicated_inputs())
        return self._build_encoder(self._table_input.n_inputs, torch.Generator(), missing)
