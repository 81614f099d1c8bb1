"""The encoder network: its construction (issue #58: no default initialisation
spent) and the batch statistics a validation loss reads (issue #55)."""

import copy

import numpy as np
import pytest
import torch
from torch import nn

from qmatch_sklearn._networks import (
    Encoder,
    batch_statistics,
    build_encoder,
    isolated_global_rng,
    lecun_normal_,
)


@pytest.mark.parametrize("architecture, hidden_sizes", [("mlp", (32, 16)), ("imix", (32, 16))])
def test_the_encoder_is_built_as_default_initialised_layers_overwritten(architecture,
                                                                        hidden_sizes):
    """Built on the meta device and initialised once, the encoder holds exactly what
    building it with torch's default initialisation and overwriting it gives."""
    built = build_encoder(9, hidden_sizes, 4, architecture, torch.Generator().manual_seed(5))
    with isolated_global_rng():
        expected = lecun_normal_(Encoder(9, hidden_sizes, 4, architecture),
                                 torch.Generator().manual_seed(5))
    assert built.state_dict().keys() == expected.state_dict().keys()
    for name, tensor in expected.state_dict().items():
        assert built.state_dict()[name].device.type == "cpu"
        torch.testing.assert_close(built.state_dict()[name], tensor, rtol=0, atol=0, msg=name)
    assert sum(isinstance(layer, nn.BatchNorm1d) for layer in built.modules())


def test_the_encoder_is_built_where_the_caller_builds():
    """Under a meta-device context (the file schema's check of a saved network's
    shapes) nothing is allocated."""
    with torch.device("meta"):
        built = build_encoder(9, (4096, 4096), 4, "mlp", torch.Generator())
    assert {tensor.device.type for tensor in built.state_dict().values()} == {"meta"}


def test_batch_statistics_normalise_by_the_batch_and_leave_the_running_ones():
    """Under ``batch_statistics`` a network's batch norms read each batch's own
    statistics, as in a training step, but do not move their running statistics;
    the network's mode comes back as it was."""
    network = Encoder(6, (8,), 4, "mlp")
    network.eval()
    x = 3 * torch.randn(32, 6, generator=torch.Generator().manual_seed(0)) + 2
    running = {name: value.clone() for name, value in network.state_dict().items()}
    with torch.no_grad(), batch_statistics(network):
        inside = network(x)
        assert network.training
    assert not network.training
    for name, value in network.state_dict().items():
        assert torch.equal(value, running[name]), name
    trained = copy.deepcopy(network).train()
    with torch.no_grad():
        np.testing.assert_allclose(inside, trained(x), atol=1e-6)  # a training step's forward
        assert not torch.allclose(inside, network(x))  # not the running statistics
